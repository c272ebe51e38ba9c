/* gif.c — GIF header probe and decode with giflib: the first image only
 * (an animation's first frame), read from memory record by record (an
 * animation's later frames are never decoded).
 *
 * Pixels are the palette's colours (the image's local colour table, else
 * the global one; an index past the table is black, as in Pillow's padded
 * palette); transparency is ignored, as Pillow's convert("RGB") of a
 * palette image does. Interlaced images are put in row order. Where the
 * first image does not cover the logical screen, the rest is the
 * background colour (fy_gif_pillow_exact says such files, and files
 * without any colour table, may differ from Pillow's). */
#include "codec/codec.h"

#include <gif_lib.h>
#include <stdio.h>
#include <string.h>

static const char *nm(const char *name) { return name ? name : "<memory>"; }

typedef struct gif_mem {
  const uint8_t *data;
  size_t size, pos;
} gif_mem;

static int gif_read(GifFileType *g, GifByteType *buf, int n) {
  gif_mem *m = g->UserData;
  if (n <= 0 || m->pos >= m->size)
    return 0;
  size_t k = (size_t)n < m->size - m->pos ? (size_t)n : m->size - m->pos;
  memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return (int)k;
}

static int gif_fail(const char *name, int err) {
  const char *why = GifErrorString(err);
  int st = err == D_GIF_ERR_NOT_ENOUGH_MEM ? FERRY_ENOMEM : FERRY_ECORRUPT;
  return fy_error(st, "%s: GIF: %s", name, why ? why : "damaged data");
}

static int gif_open(gif_mem *m, const uint8_t *data, size_t size, const char *name,
                    GifFileType **out) {
  *m = (gif_mem){data, size, 0};
  int err = 0;
  *out = DGifOpen(m, gif_read, &err);
  return *out ? FERRY_OK : gif_fail(name, err);
}

static void gif_close(GifFileType *g) {
  int err;
  DGifCloseFile(g, &err);
}

/* Moves to the first image's descriptor (g->Image): extensions skipped. */
static int first_image(GifFileType *g, const char *name) {
  for (;;) {
    GifRecordType t;
    if (DGifGetRecordType(g, &t) == GIF_ERROR)
      return gif_fail(name, g->Error);
    if (t == IMAGE_DESC_RECORD_TYPE)
      return DGifGetImageDesc(g) == GIF_ERROR ? gif_fail(name, g->Error) : FERRY_OK;
    if (t == EXTENSION_RECORD_TYPE) {
      int code;
      GifByteType *ext;
      if (DGifGetExtension(g, &code, &ext) == GIF_ERROR)
        return gif_fail(name, g->Error);
      while (ext)
        if (DGifGetExtensionNext(g, &ext) == GIF_ERROR)
          return gif_fail(name, g->Error);
      continue;
    }
    if (t == TERMINATE_RECORD_TYPE)
      return fy_error(FERRY_ECORRUPT, "%s: GIF: no image in the file", name);
    return fy_error(FERRY_ECORRUPT, "%s: GIF: damaged data (unknown record)", name);
  }
}

int fy_gif_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  name = nm(name);
  gif_mem m;
  GifFileType *g;
  int rc = gif_open(&m, data, size, name, &g);
  if (rc)
    return rc;
  if (g->SWidth <= 0 || g->SHeight <= 0)
    rc = fy_error(FERRY_ECORRUPT, "%s: GIF: screen of %dx%d", name, g->SWidth, g->SHeight);
  if (!rc) {
    memset(info, 0, sizeof *info);
    info->format = FERRY_FORMAT_GIF;
    info->width = g->SWidth;
    info->height = g->SHeight;
    info->channels = 1;
    info->bit_depth = 8;
    info->orientation = 1;
    snprintf(info->colorspace, sizeof info->colorspace, "Palette");
  }
  gif_close(g);
  return rc;
}

int fy_gif_pillow_exact(const uint8_t *data, size_t size) {
  gif_mem m;
  GifFileType *g;
  if (gif_open(&m, data, size, "<memory>", &g))
    return 1;
  int exact = 1;
  if (first_image(g, "<memory>") == FERRY_OK) {
    const GifImageDesc *d = &g->Image;
    exact = (d->ColorMap || g->SColorMap) && d->Left == 0 && d->Top == 0 && d->Width == g->SWidth &&
            d->Height == g->SHeight;
  }
  gif_close(g);
  return exact;
}

/* Reads the first image's rows (in row order) into idx (screen size), its
 * rectangle clipped to the screen; the rest is the background index. */
static int read_indices(GifFileType *g, const char *name, uint8_t *idx, uint8_t *line) {
  const GifImageDesc *d = &g->Image;
  int sw = g->SWidth, sh = g->SHeight;
  memset(idx, g->SBackGroundColor, (size_t)sw * sh);
  if (d->Width <= 0 || d->Height <= 0)
    return fy_error(FERRY_ECORRUPT, "%s: GIF: an image of %dx%d", name, d->Width, d->Height);
  static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
  int passes = d->Interlace ? 4 : 1;
  for (int p = 0; p < passes; p++) {
    for (int y = d->Interlace ? start[p] : 0; y < d->Height; y += d->Interlace ? step[p] : 1) {
      if (DGifGetLine(g, line, d->Width) == GIF_ERROR)
        return gif_fail(name, g->Error);
      int row = d->Top + y;
      if (row < 0 || row >= sh || d->Left >= sw)
        continue;
      int x0 = d->Left < 0 ? -d->Left : 0;
      int n = d->Width - x0;
      if (d->Left + x0 + n > sw)
        n = sw - d->Left - x0;
      if (n > 0)
        memcpy(idx + (size_t)row * sw + d->Left + x0, line + x0, (size_t)n);
    }
  }
  return FERRY_OK;
}

int fy_gif_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                  const fy_codec_req *req, fy_decoded *out) {
  name = nm(name);
  if (req->channels != 1 && req->channels != 3)
    return fy_error(FERRY_EINVAL, "%s: GIF: channels must be 1 or 3, not %d", name, req->channels);
  gif_mem m;
  GifFileType *g;
  int rc = gif_open(&m, data, size, name, &g);
  if (rc)
    return rc;
  int sw = g->SWidth, sh = g->SHeight;
  if (sw <= 0 || sh <= 0)
    rc = fy_error(FERRY_ECORRUPT, "%s: GIF: screen of %dx%d", name, sw, sh);
  else if (fy_over_pixel_limit((uint64_t)sw, (uint64_t)sh, req->max_pixels))
    rc = fy_pixel_limit_error(name, "GIF", (uint64_t)sw, (uint64_t)sh, req->max_pixels);
  if (!rc)
    rc = first_image(g, name);
  const GifImageDesc *d = &g->Image;
  size_t n = (size_t)sw * sh, total = 0;
  if (!rc && d->Width > 65535)
    rc = fy_error(FERRY_ECORRUPT, "%s: GIF: an image %d wide", name, d->Width);
  if (!rc && !fy_mul_size(n, (size_t)req->channels, &total))
    rc = fy_error(FERRY_ETOO_LARGE, "%s: GIF image %dx%d is too large", name, sw, sh);
  if (!rc &&
      (fy_buf_reserve(&dec->temp, n + (size_t)d->Width) || fy_buf_reserve(&dec->pixels, total)))
    rc = fy_error(FERRY_ENOMEM, "%s: out of memory for a %dx%d GIF image", name, sw, sh);
  if (!rc)
    rc = read_indices(g, name, dec->temp.p, (uint8_t *)dec->temp.p + n);
  if (!rc) {
    /* the palette as RGB, then as Pillow's L; past the table: black */
    uint8_t pal[256][3] = {{0}}, lum[256] = {0};
    const ColorMapObject *cm = d->ColorMap ? d->ColorMap : g->SColorMap;
    for (int i = 0; i < 256; i++) {
      if (cm && i < cm->ColorCount) {
        pal[i][0] = cm->Colors[i].Red, pal[i][1] = cm->Colors[i].Green;
        pal[i][2] = cm->Colors[i].Blue;
      } else if (!cm) {
        pal[i][0] = pal[i][1] = pal[i][2] = (uint8_t)i; /* no table: the index as grey */
      }
      lum[i] = fy_luma(pal[i][0], pal[i][1], pal[i][2]);
    }
    const uint8_t *idx = dec->temp.p;
    uint8_t *px = dec->pixels.p;
    for (size_t i = 0; i < n; i++) {
      if (req->channels == 1)
        px[i] = lum[idx[i]];
      else
        memcpy(px + 3 * i, pal[idx[i]], 3);
    }
  }
  gif_close(g);
  if (rc)
    return rc;
  fy_decoded_whole(out, dec->pixels.p, sw, sh, req->channels);
  return FERRY_OK;
}
