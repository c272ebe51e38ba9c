/* sniff.c — image format from magic numbers, and format names. */
#include "codec/codec.h"

#include <string.h>

/* True when `data` starts with the `n` bytes of `magic`. */
static int has_prefix(const uint8_t *data, size_t size, const char *magic, size_t n) {
  return size >= n && memcmp(data, magic, n) == 0;
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
  if (has_prefix(data, size, "II*\0", 4) || has_prefix(data, size, "MM\0*", 4))
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
  case FERRY_FORMAT_UNKNOWN: break;
  }
  return "unknown";
}
