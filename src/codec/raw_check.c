/* raw_check.c — a camera raw's TIFF structures checked before LibRaw
 * reads them. LibRaw (0.20, as Debian ships it) follows IFD entries whose
 * data lies past the end of the file, reads its end-of-file value (-1) as
 * data and indexes tables with it: a 331-byte file with a DNGVersion tag
 * and a CFAPattern entry pointing 33 MB away crashed the process in
 * LibRaw::parse_tiff_ifd (found by fuzz_probe). A file whose IFDs or IFD
 * entries point past its end is damaged by the TIFF specification's own
 * terms, so it is refused here with the reason, and LibRaw never sees it.
 *
 * Where LibRaw reads TIFF structures (its identify() and parseCR3):
 * - TIFFs and the TIFF-shaped raws (DNG, CR2, NEF, ..., ORF, RW2; the
 *   fuzzer reached the crash through an ORF's magic once TIFF's was
 *   checked): the file is one, IFD0's offset at byte 4;
 * - Fujifilm RAF: big-endian offsets in the header; LibRaw parses a TIFF
 *   at the one at byte 100 and at the one at byte 84 plus 12 (the preview
 *   JPEG's EXIF), each where the bytes there give a byte order;
 * - Canon CR3 (ISO media): the boxes CMT1-CMT4 in moov's Canon uuid box,
 *   each a TIFF header (IFD at 8) whose IFD LibRaw walks, but not the
 *   chain of next IFDs (raw_cr3.c finds them as LibRaw walks the boxes).
 * The same TIFF embedded there crashed LibRaw through either container.
 * Offsets inside an embedded TIFF count from its start.
 *
 * Walked in each: the IFD, (outside CR3) the chain of next IFDs, SubIFDs
 * (330) and the EXIF IFD (34665), at most FY_RAW_MAX_IFDS IFDs (a loop
 * ends there). Each IFD must lie in the file, and each entry's data
 * (count x the type's size, when over the 4 bytes held inline) too. Maker
 * notes, whose layouts are the makers' own, are not walked. */
#include "codec/codec.h"

#include <stdio.h>
#include <string.h>

#define FY_RAW_MAX_IFDS 64

typedef struct walk {
  const uint8_t *d; /* the TIFF's first byte, `base` bytes into the file */
  size_t n, base;   /* from d to the end of the file; d's place in it */
  int big, ifds, chain;
  const char *name;
  char where[64]; /* "" in a TIFF; the container's block in a RAF or CR3 */
  uint32_t todo[FY_RAW_MAX_IFDS];
  int ntodo;
} walk;

static uint32_t get(const walk *w, size_t at, int bytes) {
  return fy_tiff_u(w->d + at, bytes, w->big);
}

/* Bytes per value of a TIFF field type (1-13; others read as bytes). */
static unsigned type_size(uint32_t type) {
  static const unsigned size[14] = {1, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4};
  return type < 14 ? size[type] : 1;
}

#define DAMAGED "%s: camera raw: damaged TIFF structure%s: "

static int push(walk *w, uint32_t off) {
  if (w->ntodo + w->ifds >= FY_RAW_MAX_IFDS)
    return fy_error(FERRY_ECORRUPT, DAMAGED "more than %d IFDs (a loop?)", w->name, w->where,
                    FY_RAW_MAX_IFDS);
  w->todo[w->ntodo++] = off;
  return FERRY_OK;
}

static int check_ifd(walk *w, uint32_t off) {
  size_t at0 = w->base, end = w->base + w->n; /* byte positions in the file */
  if (off < 8 || (size_t)off + 2 > w->n)
    return fy_error(FERRY_ECORRUPT,
                    DAMAGED "an IFD at byte %zu, past the end of the file (%zu bytes)", w->name,
                    w->where, at0 + off, end);
  uint32_t count = get(w, off, 2);
  if ((size_t)off + 2 + 12 * (size_t)count > w->n) /* the next-IFD offset may be cut */
    return fy_error(FERRY_ECORRUPT,
                    DAMAGED "the IFD at byte %zu lists %u entries, past the end of the file (%zu "
                            "bytes)",
                    w->name, w->where, at0 + off, count, end);
  for (uint32_t i = 0; i < count; i++) {
    size_t e = (size_t)off + 2 + 12 * (size_t)i;
    uint32_t tag = get(w, e, 2), type = get(w, e + 2, 2), n = get(w, e + 4, 4);
    unsigned long long bytes = (unsigned long long)n * type_size(type);
    if (bytes > 4) {
      uint32_t at = get(w, e + 8, 4);
      if (at > w->n || bytes > w->n - at)
        return fy_error(FERRY_ECORRUPT,
                        DAMAGED "tag %u's data (%llu bytes at byte %zu) runs past the end of the "
                                "file (%zu bytes)",
                        w->name, w->where, tag, bytes, at0 + at, end);
    }
    int rc = FERRY_OK;
    if (tag == 34665 && (type == 4 || type == 13)) /* the EXIF IFD */
      rc = push(w, get(w, e + 8, 4));
    else if (tag == 330 && (type == 4 || type == 13)) /* SubIFDs: inline when one */
      for (uint32_t k = 0; k < n && rc == FERRY_OK; k++)
        rc = push(w, n == 1 ? get(w, e + 8, 4) : get(w, get(w, e + 8, 4) + 4 * (size_t)k, 4));
    if (rc)
      return rc;
  }
  size_t next = (size_t)off + 2 + 12 * (size_t)count;
  uint32_t to = w->chain && next + 4 <= w->n ? get(w, next, 4) : 0;
  return to ? push(w, to) : FERRY_OK;
}

int fy_raw_tiff_walk(const uint8_t *d, size_t n, size_t base, uint32_t first, int chain,
                     const char *name, const char *where) {
  walk w = {.d = d + base,
            .n = n - base,
            .base = base,
            .big = d[base] == 'M',
            .chain = chain,
            .name = name};
  snprintf(w.where, sizeof w.where, "%s", where);
  int rc = push(&w, first);
  while (rc == FERRY_OK && w.ntodo > 0) {
    uint32_t off = w.todo[--w.ntodo];
    w.ifds++;
    rc = check_ifd(&w, off);
  }
  return rc;
}

/* LibRaw's parse_tiff(base): nothing when the 2 bytes at base are no byte
 * order; else a TIFF header there whose IFD0 offset must be in the file. */
static int tiff_at(const uint8_t *d, size_t n, uint32_t base, const char *name, const char *where) {
  if ((size_t)base + 2 > n || (memcmp(d + base, "II", 2) && memcmp(d + base, "MM", 2)))
    return FERRY_OK;
  if ((size_t)base + 8 > n)
    return fy_error(FERRY_ECORRUPT, DAMAGED "a TIFF header at byte %u cut by the end of the file",
                    name, where, base);
  return fy_raw_tiff_walk(d, n, base, fy_tiff_u(d + base + 4, 4, d[base] == 'M'), 1, name, where);
}

/* Fujifilm RAF: LibRaw reads a TIFF at the offset at byte 100 (the raw
 * data's container) and at the one at byte 84 plus 12 (past the preview
 * JPEG's SOI, APP1 header and "Exif\0\0"), both big-endian and taken as
 * 32-bit ints; each must lie in the file. */
static int check_raf(const uint8_t *d, size_t n, const char *name) {
  if (n < 104)
    return fy_error(FERRY_ECORRUPT, "%s: camera raw: damaged RAF header: %zu bytes, fewer than 104",
                    name, n);
  uint32_t data = fy_tiff_u(d + 100, 4, 1), preview = fy_tiff_u(d + 84, 4, 1),
           jpeg = preview + 12u; /* LibRaw's sum, wrapping as it does */
  if (data >= n || data > INT32_MAX)
    return fy_error(FERRY_ECORRUPT,
                    "%s: camera raw: damaged RAF header: the raw data's offset (%u, at byte 100) "
                    "lies past the end of the file (%zu bytes)",
                    name, data, n);
  if (preview && (jpeg >= n || jpeg > INT32_MAX))
    return fy_error(FERRY_ECORRUPT,
                    "%s: camera raw: damaged RAF header: the preview's offset (%u, at byte 84) "
                    "lies past the end of the file (%zu bytes)",
                    name, preview, n);
  char where[64];
  snprintf(where, sizeof where, " (RAF's raw data block at byte %u)", data);
  int rc = tiff_at(d, n, data, name, where);
  snprintf(where, sizeof where, " (RAF's preview at byte %u)", preview);
  return rc ? rc : tiff_at(d, n, jpeg, name, where);
}

int fy_raw_check(const uint8_t *d, size_t n, const char *name) {
  if (fy_tiff_magic(d, n)) /* TIFF, ORF, RW2: byte order at 0, IFD0 at 4 */
    return fy_raw_tiff_walk(d, n, 0, fy_tiff_u(d + 4, 4, d[0] == 'M'), 1, name, "");
  if (n >= 16 && !memcmp(d, "FUJIFILM", 8))
    return check_raf(d, n, name);
  if (n >= 12 && !memcmp(d + 4, "ftypcrx ", 8))
    return fy_raw_cr3_check(d, n, name);
  return FERRY_OK;
}
