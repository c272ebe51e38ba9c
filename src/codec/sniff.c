/* sniff.c — image format from magic numbers, and format names. */
#include "codec/codec.h"

#include <string.h>

/* True when `data` starts with the `n` bytes of `magic`. */
static int has_prefix(const uint8_t *data, size_t size, const char *magic, size_t n) {
  return size >= n && memcmp(data, magic, n) == 0;
}

uint32_t fy_tiff_u(const uint8_t *p, int n, int big) {
  uint32_t v = 0;
  for (int i = 0; i < n; i++)
    v |= (uint32_t)p[big ? n - 1 - i : i] << (8 * i);
  return v;
}

int fy_tiff_magic(const uint8_t *d, size_t n) {
  static const char *const magic[] = {"II*\0", "MM\0*",         /* TIFF */
                                      "IIRO",  "IIRS",  "MMOR", /* Olympus ORF */
                                      "IIU\0"};                 /* Panasonic RW2 */
  for (size_t k = 0; n >= 8 && k < sizeof magic / sizeof magic[0]; k++)
    if (!memcmp(d, magic[k], 4))
      return k < 2 ? 1 : 2;
  return 0;
}

int fy_sniff_raw(const uint8_t *d, size_t n) {
  if (n >= 16 && fy_tiff_magic(d, n) == 2)
    return 1; /* Olympus ORF, Panasonic RW2 */
  if (n >= 16 && !memcmp(d, "FUJIFILMCCD-RAW", 15))
    return 1; /* Fujifilm RAF */
  if (n >= 12 && !memcmp(d + 4, "ftypcrx ", 8))
    return 1; /* Canon CR3 */
  if (fy_tiff_magic(d, n) != 1)
    return 0;
  int big = d[0] == 'M';
  if (n >= 10 && d[8] == 'C' && d[9] == 'R')
    return 1; /* Canon CR2 */
  /* the first IFD: a DNGVersion tag (DNG), or the Make of a camera whose
   * raw files are TIFF-shaped (NEF, ARW, PEF) */
  uint32_t off = fy_tiff_u(d + 4, 4, big);
  if (off < 8 || off > n - 2)
    return 0;
  uint32_t count = fy_tiff_u(d + off, 2, big);
  for (uint32_t i = 0; i < count && off + 2 + 12 * (size_t)(i + 1) <= n; i++) {
    const uint8_t *e = d + off + 2 + 12 * (size_t)i;
    uint32_t tag = fy_tiff_u(e, 2, big);
    if (tag == 50706)
      return 1;
    if (tag == 271) { /* Make, ASCII: inline when 4 bytes or fewer */
      uint32_t len = fy_tiff_u(e + 4, 4, big),
               at = len <= 4 ? (uint32_t)(e + 8 - d) : fy_tiff_u(e + 8, 4, big);
      static const char *const makers[] = {"NIKON", "SONY", "PENTAX", "RICOH"};
      for (size_t k = 0; k < sizeof makers / sizeof makers[0]; k++) {
        size_t m = strlen(makers[k]);
        if (len >= m && at <= n && n - at >= m && !memcmp(d + at, makers[k], m))
          return 1;
      }
    }
  }
  return 0;
}

ferry_format fy_sniff(const uint8_t *data, size_t size) {
  if (!data)
    return FERRY_FORMAT_UNKNOWN;
  /* JPEG: SOI followed by the first marker's 0xFF. */
  if (has_prefix(data, size, "\xFF\xD8\xFF", 3))
    return FERRY_FORMAT_JPEG;
  if (has_prefix(data, size, "\x89PNG\r\n\x1A\n", 8))
    return FERRY_FORMAT_PNG;
  /* WebP: a RIFF container whose form type is WEBP (bytes 4..7 are a size). */
  if (size >= 12 && memcmp(data, "RIFF", 4) == 0 && memcmp(data + 8, "WEBP", 4) == 0)
    return FERRY_FORMAT_WEBP;
  if (has_prefix(data, size, "GIF87a", 6) || has_prefix(data, size, "GIF89a", 6))
    return FERRY_FORMAT_GIF;
  /* "BM" alone would also match text; a BMP has at least its 14-byte file
   * header, so shorter data is not worth naming as BMP. */
  if (size >= 14 && has_prefix(data, size, "BM", 2))
    return FERRY_FORMAT_BMP;
  if (fy_sniff_raw(data, size))
    return FERRY_FORMAT_RAW;
  if (fy_tiff_magic(data, size) == 1)
    return FERRY_FORMAT_TIFF;
  /* HEIF: an ISO media file whose ftyp box names a still-image brand
   * (HEIC from phones, generic HEIF, AVIF); video brands (mp4, qt) are not */
  if (size >= 12 && memcmp(data + 4, "ftyp", 4) == 0) {
    static const char brands[][5] = {"heic", "heix", "heim", "heis", "hevc", "hevx",
                                     "hevm", "hevs", "mif1", "msf1", "avif", "avis"};
    for (size_t i = 0; i < sizeof brands / sizeof brands[0]; i++)
      if (memcmp(data + 8, brands[i], 4) == 0)
        return FERRY_FORMAT_HEIF;
  }
  return FERRY_FORMAT_UNKNOWN;
}

const char *ferry_format_name(ferry_format format) {
  switch (format) {
  case FERRY_FORMAT_JPEG: return "JPEG";
  case FERRY_FORMAT_PNG: return "PNG";
  case FERRY_FORMAT_WEBP: return "WebP";
  case FERRY_FORMAT_GIF: return "GIF";
  case FERRY_FORMAT_BMP: return "BMP";
  case FERRY_FORMAT_TIFF: return "TIFF";
  case FERRY_FORMAT_PACK: return "pack";
  case FERRY_FORMAT_HEIF: return "HEIF";
  case FERRY_FORMAT_RAW: return "camera raw";
  case FERRY_FORMAT_UNKNOWN: break;
  }
  return "unknown";
}
