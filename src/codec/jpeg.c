/* jpeg.c — JPEG through libjpeg-turbo: DCT-domain scaling, region-of-interest
 * decoding, CMYK/YCCK, errors turned into messages that name the file. */
#include "codec/jpeg_int.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

static const char *colorspace_name(J_COLOR_SPACE cs) {
  switch (cs) {
  case JCS_GRAYSCALE: return "Gray";
  case JCS_RGB: return "RGB";
  case JCS_YCbCr: return "YCbCr";
  case JCS_CMYK: return "CMYK";
  case JCS_YCCK: return "YCCK";
  default: return "unknown";
  }
}

static void subsampling_name(const struct jpeg_decompress_struct *c, char *out, size_t n) {
  if (c->num_components < 3) {
    snprintf(out, n, "%s", c->num_components == 1 ? "gray" : "");
    return;
  }
  const jpeg_component_info *y = &c->comp_info[0], *cb = &c->comp_info[1], *cr = &c->comp_info[2];
  if (c->num_components != 3 || cb->h_samp_factor != cr->h_samp_factor ||
      cb->v_samp_factor != cr->v_samp_factor || y->h_samp_factor % cb->h_samp_factor ||
      y->v_samp_factor % cb->v_samp_factor) {
    /* no J:a:b name fits: each component's sampling factors, as they are */
    size_t k = 0;
    for (int i = 0; i < c->num_components && k < n; i++)
      k += (size_t)snprintf(out + k, n - k, "%s%dx%d", i ? "," : "", c->comp_info[i].h_samp_factor,
                            c->comp_info[i].v_samp_factor);
    return;
  }
  int h = y->h_samp_factor / cb->h_samp_factor;
  int v = y->v_samp_factor / cb->v_samp_factor;
  if (h == 1 && v == 1)
    snprintf(out, n, "4:4:4");
  else if (h == 2 && v == 1)
    snprintf(out, n, "4:2:2");
  else if (h == 2 && v == 2)
    snprintf(out, n, "4:2:0");
  else if (h == 1 && v == 2)
    snprintf(out, n, "4:4:0");
  else if (h == 4 && v == 1)
    snprintf(out, n, "4:1:1");
  else
    snprintf(out, n, "%dx%d", h, v);
}

int fy_jpeg_probe(const uint8_t *data, size_t size, const char *name, ferry_info *info) {
  struct jpeg_decompress_struct cinfo;
  fy_jerr jerr;
  memset(info, 0, sizeof *info);
  fy_jerr_init(&cinfo, &jerr);
  jpeg_create_decompress(&cinfo);
  fy_jpeg_mem_hook(&cinfo);
  if (setjmp(jerr.jump)) {
    int rc = fy_jerr_status(&jerr, name);
    jpeg_destroy_decompress(&cinfo);
    return rc;
  }
  jpeg_mem_src(&cinfo, data, (unsigned long)size);
  jpeg_read_header(&cinfo, TRUE);
  info->format = FERRY_FORMAT_JPEG;
  info->width = (int)cinfo.image_width;
  info->height = (int)cinfo.image_height;
  info->channels = cinfo.num_components;
  info->bit_depth = cinfo.data_precision;
  info->progressive = cinfo.progressive_mode ? 1 : 0;
  info->arithmetic = cinfo.arith_code ? 1 : 0;
  info->orientation = fy_jpeg_orientation(data, size);
  snprintf(info->colorspace, sizeof info->colorspace, "%s",
           colorspace_name(cinfo.jpeg_color_space));
  subsampling_name(&cinfo, info->subsampling, sizeof info->subsampling);
  jpeg_destroy_decompress(&cinfo);
  return FERRY_OK;
}

/* Adobe-polarity CMYK (as Photoshop writes it, and as Pillow assumes for
 * every CMYK JPEG) to RGB with Pillow's arithmetic, so that results match
 * Image.convert("RGB"). The stored values are inverted: c = 255 - raw. */
static void cmyk_row_to_rgb(const uint8_t *in, uint8_t *out, int w) {
  for (int x = 0; x < w; x++, in += 4, out += 3) {
    int nk = in[3]; /* 255 - k */
    for (int i = 0; i < 3; i++) {
      int c = 255 - in[i];
      int t = c * nk + 128;
      int v = nk - (((t >> 8) + t) >> 8);
      out[i] = (uint8_t)(v < 0 ? 0 : v);
    }
  }
}

static void rgb_row_to_gray(const uint8_t *in, uint8_t *out, int w) {
  for (int x = 0; x < w; x++, in += 3)
    out[x] = fy_luma(in[0], in[1], in[2]);
}

/* Chooses colour conversion: libjpeg does YCbCr/Gray -> RGB itself (as
 * Pillow); CMYK/YCCK come out as CMYK and are converted here; gray output
 * of a colour image goes through RGB with Pillow's weights (convert("L")). */
typedef enum { CONV_NONE, CONV_CMYK, CONV_GRAY_FROM_RGB, CONV_GRAY_FROM_CMYK } conv_kind;

static conv_kind setup_color(struct jpeg_decompress_struct *c, int channels) {
  int cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  if (cmyk) {
    c->out_color_space = JCS_CMYK;
    return channels == 1 ? CONV_GRAY_FROM_CMYK : CONV_CMYK;
  }
  if (channels == 1 && c->jpeg_color_space == JCS_GRAYSCALE) {
    c->out_color_space = JCS_GRAYSCALE;
    return CONV_NONE;
  }
  c->out_color_space = JCS_RGB;
  return channels == 1 ? CONV_GRAY_FROM_RGB : CONV_NONE;
}

typedef struct jpeg_job {
  struct jpeg_decompress_struct cinfo;
  fy_jerr jerr;
} jpeg_job;

/* Decodes rows [y0, y0 + h) of the started decompressor into dst. */
static void read_rows(jpeg_job *j, conv_kind conv, uint8_t *dst, size_t dstride, int h,
                      uint8_t *row) {
  struct jpeg_decompress_struct *c = &j->cinfo;
  int w = (int)c->output_width;
  if (conv == CONV_NONE) {
    /* Straight into dst, several rows a call: libjpeg-turbo's merged
     * upsampler makes two rows at a time, and asked for one it copies the
     * second through a spare row (2-3 % of a loader's time). */
    JSAMPROW rows[16];
    for (int y = 0; y < h;) {
      int n = h - y < 16 ? h - y : 16;
      for (int i = 0; i < n; i++)
        rows[i] = dst + (size_t)(y + i) * dstride;
      JDIMENSION got = jpeg_read_scanlines(c, rows, (JDIMENSION)n);
      if (got == 0) { /* jpeg_mem_src never suspends: no more data */
        j->jerr.truncated = 1;
        longjmp(j->jerr.jump, 1);
      }
      y += (int)got;
    }
    return;
  }
  for (int y = 0; y < h; y++) {
    uint8_t *out = dst + (size_t)y * dstride;
    JSAMPROW rp = conv == CONV_NONE ? out : row;
    while (jpeg_read_scanlines(c, &rp, 1) != 1) {
      /* jpeg_mem_src never suspends; a zero return means no more data. */
      j->jerr.truncated = 1;
      longjmp(j->jerr.jump, 1);
    }
    if (conv == CONV_CMYK) {
      cmyk_row_to_rgb(row, out, w);
    } else if (conv == CONV_GRAY_FROM_RGB) {
      rgb_row_to_gray(row, out, w);
    } else if (conv == CONV_GRAY_FROM_CMYK) {
      uint8_t *rgb = row + (size_t)w * 4;
      cmyk_row_to_rgb(row, rgb, w);
      rgb_row_to_gray(rgb, out, w);
    }
  }
}

/* The loader's fast setting (fy_decoder.fast_decode), only where the
 * decoded region (crop at scale m/8) is larger than the output in both axes:
 * the antialiased downscale that follows hides the difference
 * (docs/ARCHITECTURE.md has the figures). Box chroma upsampling lets
 * libjpeg-turbo fuse it with colour conversion (jdmerge.c), as nvJPEG's
 * engine upsamples; it only matters at full scale (at 1/2 and below the
 * chroma is IDCT-scaled up instead). The fast integer IDCT (JDCT_IFAST)
 * was measured too: no fewer instructions than the AVX2 islow one, and
 * less accurate. */
static void fast_settings(struct jpeg_decompress_struct *c, const fy_codec_req *req,
                          ferry_rect crop, int m) {
  if (!req->fast_decode || req->min_w <= 0 || req->min_h <= 0)
    return;
  if ((int64_t)crop.width * m <= (int64_t)req->min_w * 8 ||
      (int64_t)crop.height * m <= (int64_t)req->min_h * 8)
    return;
  c->do_fancy_upsampling = FALSE;
}

/* The body of the decode; any libjpeg error longjmps out of it. */
static int jpeg_decode_body(jpeg_job *volatile j, fy_decoder *dec, const uint8_t *data, size_t size,
                            const char *name, fy_codec_req *req, fy_decoded *out) {
  struct jpeg_decompress_struct *c = &j->cinfo;
  jpeg_mem_src(c, data, (unsigned long)size);
  jpeg_read_header(c, TRUE);
  int rc = fy_jpeg_check_limits(c, req, name);
  if (rc)
    return rc;
  int sw = (int)c->image_width, sh = (int)c->image_height;
  rc = fy_codec_plan(req, sw, sh);
  if (rc)
    return rc;
  ferry_rect crop = req->crop;
  if (crop.width <= 0 || crop.height <= 0)
    crop = (ferry_rect){0, 0, sw, sh};
  int m = req->allow_dct_scaling
              ? fy_jpeg_pick_scale(crop.width, crop.height, req->min_w, req->min_h)
              : 8;
  c->scale_num = (unsigned)m;
  c->scale_denom = 8;
  c->dct_method = JDCT_ISLOW; /* Pillow's default: results match it */
  conv_kind conv = setup_color(c, req->channels);
  if (req->fast_upsampling)
    c->do_fancy_upsampling = FALSE;
  fast_settings(c, req, crop, m);
  jpeg_start_decompress(c);

  /* Scaled full size and the crop in scaled coordinates. */
  double s = (double)c->output_width / sw, t = (double)c->output_height / sh;
  JDIMENSION xoff = (JDIMENSION)(crop.x * s);
  JDIMENSION xend = (JDIMENSION)((crop.x + crop.width) * s + 0.999999);
  JDIMENSION yoff = (JDIMENSION)(crop.y * t);
  JDIMENSION yend = (JDIMENSION)((crop.y + crop.height) * t + 0.999999);
  if (xend > c->output_width)
    xend = c->output_width;
  if (yend > c->output_height)
    yend = c->output_height;
  JDIMENSION cw = xend - xoff;
  if (xoff > 0 || cw < c->output_width)
    jpeg_crop_scanline(c, &xoff, &cw); /* widens to iMCU boundaries */
  int w = (int)c->output_width, h = (int)(yend - yoff);
  int oc = req->channels;
  size_t rowbytes = (size_t)w * oc, total;
  if (!fy_mul_size(rowbytes, (size_t)h, &total))
    return fy_error(FERRY_ETOO_LARGE, "%s: image too large", name);
  rc = fy_buf_reserve(&dec->pixels, total);
  if (!rc && conv != CONV_NONE)
    rc = fy_buf_reserve(&dec->temp, (size_t)w * 7);
  if (rc)
    return fy_error(rc, "%s: out of memory for a %dx%d image", name, w, h);
  if (yoff > 0)
    jpeg_skip_scanlines(c, yoff);
  read_rows(j, conv, dec->pixels.p, rowbytes, h, dec->temp.p);
  if (yend < c->output_height)
    jpeg_abort_decompress(c); /* rows below the crop are never decoded */
  else
    jpeg_finish_decompress(c);

  out->image = (ferry_image){dec->pixels.p, w, h, oc, rowbytes};
  out->src_w = sw;
  out->src_h = sh;
  out->sx = s;
  out->sy = t;
  out->x0 = xoff / s;
  out->y0 = yoff / t;
  out->scale_num = m;
  out->scale_denom = 8;
  return FERRY_OK;
}

int fy_jpeg_decode(fy_decoder *dec, const uint8_t *data, size_t size, const char *name,
                   const fy_codec_req *req_in, fy_decoded *out) {
  int rc = fy_jpeg_scan_budget(data, size, name);
  if (rc)
    return rc;
  jpeg_job job;
  jpeg_job *volatile j = &job;
  fy_codec_req req = *req_in;
  fy_jerr_init(&j->cinfo, &j->jerr);
  jpeg_create_decompress(&j->cinfo);
  fy_jpeg_mem_hook(&j->cinfo);
  if (setjmp(j->jerr.jump)) {
    /* A header that promised a huge image and then ended is first of all a
     * decompression bomb: say so. */
    rc = fy_jpeg_check_limits(&j->cinfo, &req, name);
    if (rc == FERRY_OK || j->cinfo.image_width == 0)
      rc = fy_jerr_status(&j->jerr, name);
  } else {
    rc = jpeg_decode_body(j, dec, data, size, name, &req, out);
  }
  jpeg_destroy_decompress(&j->cinfo);
  return rc;
}
