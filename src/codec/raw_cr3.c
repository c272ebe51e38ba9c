/* raw_cr3.c — a Canon CR3's ISO media boxes walked as LibRaw 0.20's
 * parseCR3 walks them, before LibRaw does (codec.h: fy_raw_cr3_check).
 *
 * LibRaw walks a container's children from its content (plus a header of
 * its own for some) to the end its size claims, whatever the file's size;
 * a size of 0 is "to the end" at the top and an error below; a size of 1
 * means a 64-bit size after the type. It recurses into the container
 * types of its list, and into moov's uuid box when that box carries
 * Canon's UUID. In moov/uuid/CMT1..CMT4 it reads a TIFF header (byte
 * order, 42, IFD at 8) and walks that IFD (parse_tiff_ifd, parse_exif,
 * parse_makernote, parse_gps), offsets from the box's content.
 *
 * What a CR3 did to LibRaw, found by fuzzing and by reading parseCR3
 * (facts, not code), each tried on LibRaw itself:
 * - a CMT box's TIFF whose entries point past the end of the file: a
 *   SIGSEGV in parse_tiff_ifd, as in a DNG, also when moov claimed more
 *   bytes than the file has. Walked by fy_raw_tiff_walk (its IFD, not the
 *   chain, as LibRaw); a box whose header LibRaw refuses (a 64-bit size,
 *   no byte order, not 42, IFD not at 8) is left;
 * - a 64-bit size of 0: LibRaw's walk does not move and never ends (a
 *   104-byte file hung `ferry info`); one that wraps the offset back to an
 *   earlier box loops the same way (tried: hung). Any 64-bit size smaller
 *   than its 16-byte header, or one that wraps, is refused.
 * Past the file's end LibRaw's reads failed with an I/O error on every
 * file tried (a container claiming 2^62 bytes, a 64-bit size cut by the
 * end). This walk reads 0xff there instead (what LibRaw's get4 leaves in
 * its buffer when fread reads nothing) and goes on, so that it is no less
 * strict than LibRaw's reads could be; it refuses a container with a
 * 64-bit size past the end outright, as damaged (its 32-bit sizes end
 * less than 4 GiB on, a few steps of 0xffffffff). The walk keeps
 * LibRaw's stack of box names (its AtomNameStack: the names from the top,
 * 4 bytes each, compared as one C string), so that it adds the same
 * headers at the same places (Canon's uuid 16, stsd 8 and CRAW 82 under
 * moov/trak/mdia/minf/stbl, CCTP 12), to 32 levels as LibRaw does. Boxes
 * of 2 to 7 bytes move on as LibRaw does. */
#include "codec/codec.h"

#include <stdio.h>
#include <string.h>

#define FY_CR3_MAX_DEPTH 32

typedef struct cr3 {
  const uint8_t *d;
  size_t n;
  const char *name;
  char stack[FY_CR3_MAX_DEPTH * 4 + 1]; /* LibRaw's AtomNameStack */
} cr3;

#define STBL "moovtrakmdiaminfstbl"

#define DAMAGED "%s: camera raw: damaged CR3 box structure: "

/* LibRaw's containers. */
static int container(const char *t) {
  static const char *const list[] = {"dinf", "edts", "fiin", "ipro", "iprp", "mdia", "meco",
                                     "mere", "mfra", "minf", "moof", "moov", "mvex", "paen",
                                     "schi", "sinf", "skip", "stbl", "stsd", "strk", "tapt",
                                     "traf", "trak", "CCTP", "CRAW"};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
    if (!strcmp(t, list[i]))
      return 1;
  return 0;
}

/* A box type for a message: bytes outside printable ASCII as '?'. */
static const char *shown(const char *t, char out[5]) {
  for (int i = 0; i < 4; i++)
    out[i] = t[i] >= 0x20 && t[i] < 0x7f ? t[i] : '?';
  out[4] = '\0';
  return out;
}

/* The file, and 0xff past its end (see above). A box header may lie
 * across the end. */
static uint8_t byte(const cr3 *w, uint64_t i) { return i < w->n ? w->d[i] : 0xff; }

static uint64_t be(const cr3 *w, uint64_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v = v << 8 | byte(w, at + (uint64_t)i);
  return v;
}

/* The TIFF of a CMT box whose content starts at c (LibRaw: a 32-bit size,
 * the byte order, 42, IFD at 8; else it reads nothing there). */
static int cmt(const cr3 *w, size_t c, const char *type) {
  if (c + 8 > w->n)
    return FERRY_OK;
  int big = !memcmp(w->d + c, "MM", 2);
  if ((!big && memcmp(w->d + c, "II", 2)) || fy_tiff_u(w->d + c + 2, 2, big) != 42 ||
      fy_tiff_u(w->d + c + 4, 4, big) != 8)
    return FERRY_OK;
  char where[64];
  snprintf(where, sizeof where, " (CR3's %s box at byte %zu)", type, c - 8);
  return fy_raw_tiff_walk(w->d, w->n, c, 8, 0, w->name, where);
}

/* The bytes LibRaw skips in a container before its children, by the
 * stack (the container's own name last). */
static uint64_t skipped(const char *stack) {
  if (!strcmp(stack, "moovuuidCCTP"))
    return 12;
  if (!strcmp(stack, STBL "stsd"))
    return 8;
  if (!strcmp(stack, STBL "stsdCRAW"))
    return 82;
  return 0;
}

/* The boxes from `at` to `end` (the end the parent's size claims, which
 * may lie past the file's: a container LibRaw enters ends less than 4 GiB
 * past it, else it is refused), `depth` levels down (w->stack holds the
 * names above them). */
static int walk(cr3 *w, uint64_t at, uint64_t end, int depth) {
  if (depth >= FY_CR3_MAX_DEPTH)
    return FERRY_OK; /* LibRaw stops there too */
  while (at + 8 <= end) {
    uint64_t size = be(w, at, 4), head = 8;
    char *t = w->stack + 4 * depth, show[5];
    for (int i = 0; i < 4; i++)
      t[i] = (char)byte(w, at + 4 + (uint64_t)i);
    t[4] = '\0';
    if (size == 0) {
      if (depth > 0)
        return FERRY_OK; /* LibRaw: an error, the walk ends */
      size = end - at;
    } else if (size == 1) {
      if (at + 16 > end)
        return FERRY_OK; /* LibRaw: an error */
      size = be(w, at + 8, 8);
      head = 16;
      if (size < 16 || size > UINT64_MAX - at)
        return fy_error(FERRY_ECORRUPT,
                        DAMAGED "the '%s' box at byte %llu has a 64-bit size of %llu (LibRaw "
                                "would walk the file without end)",
                        w->name, shown(t, show), (unsigned long long)at, (unsigned long long)size);
    }
    uint64_t next = at + size, content = at + head, from = content;
    int inside = container(t);
    if (!strcmp(w->stack, "moovuuid")) {
      static const uint8_t id[16] = {0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0,
                                     0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48};
      inside = 1; /* a partial read leaves LibRaw's buffer as it was: Canon's, maybe */
      for (int i = 0; i < 16 && content + (uint64_t)i < w->n; i++)
        inside &= w->d[content + (uint64_t)i] == id[i];
      from += 16;
    }
    int rc = FERRY_OK;
    if (inside) {
      if (next > w->n && head == 16) /* 32-bit sizes end less than 4 GiB past it */
        return fy_error(FERRY_ECORRUPT,
                        DAMAGED "the '%s' box at byte %llu claims %llu bytes, past the end of the "
                                "file (%zu bytes)",
                        w->name, shown(t, show), (unsigned long long)at, (unsigned long long)size,
                        w->n);
      from += skipped(w->stack);
      rc = walk(w, from, next, depth + 1);
      w->stack[4 * depth + 4] = '\0';
    } else if (head == 8 &&
               (!strcmp(w->stack, "moovuuidCMT1") || !strcmp(w->stack, "moovuuidCMT2") ||
                !strcmp(w->stack, "moovuuidCMT3") || !strcmp(w->stack, "moovuuidCMT4"))) {
      rc = cmt(w, (size_t)content, t);
    }
    if (rc)
      return rc;
    at = next;
  }
  return FERRY_OK;
}

int fy_raw_cr3_check(const uint8_t *d, size_t n, const char *name) {
  cr3 w = {.d = d, .n = n, .name = name};
  return walk(&w, 0, n, 0);
}
