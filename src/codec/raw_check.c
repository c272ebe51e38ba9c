/* raw_check.c — a TIFF-shaped camera raw's structure checked before LibRaw
 * reads it. LibRaw (0.20, as Debian ships it) follows IFD entries whose
 * data lies past the end of the file, reads its end-of-file value (-1) as
 * data and indexes tables with it: a 331-byte file with a DNGVersion tag
 * and a CFAPattern entry pointing 33 MB away crashed the process in
 * LibRaw::parse_tiff_ifd (found by fuzz_probe). A file whose IFDs or IFD
 * entries point past its end is damaged by the TIFF specification's own
 * terms, so it is refused here with the reason, and LibRaw never sees it.
 *
 * Walked: IFD0 and the chain of next IFDs, SubIFDs (330) and the EXIF IFD
 * (34665), at most FY_RAW_MAX_IFDS IFDs in all (a loop ends there), in
 * TIFFs and the TIFF-shaped raws (ORF, RW2; fuzz_probe reached the same
 * crash through an ORF's magic once TIFF's was checked). Each
 * IFD must lie in the file, and each entry's data (count x the type's
 * size, when over the 4 bytes held inline) too. Maker notes, whose layouts
 * are the makers' own, are not walked. */
#include "codec/codec.h"


#define FY_RAW_MAX_IFDS 64

typedef struct walk {
  const uint8_t *d;
  size_t n;
  int big, ifds;
  const char *name;
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

#define DAMAGED "%s: camera raw: damaged TIFF structure: "

static int push(walk *w, uint32_t off) {
  if (w->ntodo + w->ifds >= FY_RAW_MAX_IFDS)
    return fy_error(FERRY_ECORRUPT, DAMAGED "more than %d IFDs (a loop?)", w->name,
                    FY_RAW_MAX_IFDS);
  w->todo[w->ntodo++] = off;
  return FERRY_OK;
}

static int check_ifd(walk *w, uint32_t off) {
  if (off < 8 || (size_t)off + 2 > w->n)
    return fy_error(FERRY_ECORRUPT,
                    DAMAGED "an IFD at byte %u, past the end of the file (%zu bytes)", w->name, off,
                    w->n);
  uint32_t count = get(w, off, 2);
  if ((size_t)off + 2 + 12 * (size_t)count > w->n) /* the next-IFD offset may be cut */
    return fy_error(FERRY_ECORRUPT,
                    DAMAGED "the IFD at byte %u lists %u entries, past the end of the file (%zu "
                            "bytes)",
                    w->name, off, count, w->n);
  for (uint32_t i = 0; i < count; i++) {
    size_t e = (size_t)off + 2 + 12 * (size_t)i;
    uint32_t tag = get(w, e, 2), type = get(w, e + 2, 2), n = get(w, e + 4, 4);
    unsigned long long bytes = (unsigned long long)n * type_size(type);
    if (bytes > 4) {
      uint32_t at = get(w, e + 8, 4);
      if (at > w->n || bytes > w->n - at)
        return fy_error(FERRY_ECORRUPT,
                        DAMAGED "tag %u's data (%llu bytes at byte %u) runs past the end of the "
                                "file (%zu bytes)",
                        w->name, tag, bytes, at, w->n);
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
  uint32_t to = next + 4 <= w->n ? get(w, next, 4) : 0;
  return to ? push(w, to) : FERRY_OK;
}

int fy_raw_tiff_check(const uint8_t *d, size_t n, const char *name) {
  walk w = {.d = d, .n = n, .name = name};
  /* TIFF's own magic, and the TIFF-shaped raws' (Olympus ORF, Panasonic
   * RW2): the byte order in the first two bytes, IFD0's offset at byte 4 */
  if (!fy_tiff_magic(d, n))
    return FERRY_OK; /* not TIFF-shaped (RAF, CR3): LibRaw's own reading */
  w.big = d[0] == 'M';
  int rc = push(&w, get(&w, 4, 4));
  while (rc == FERRY_OK && w.ntodo > 0) {
    uint32_t off = w.todo[--w.ntodo];
    w.ifds++;
    rc = check_ifd(&w, off);
  }
  return rc;
}
