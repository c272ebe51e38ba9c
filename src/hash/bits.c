/* bits.c — packing imagehash's boolean arrays into ferry_hash values, the
 * hex strings imagehash prints, and numpy's median. */
#include "hash/haar_core.h"
#include "hash/hash.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void fy_bits_clear(ferry_hash *h, int bits) {
  memset(h, 0, sizeof *h);
  h->bits = bits;
}

void fy_bits_set(ferry_hash *h, int i) {
  /* element i is bit (bits - 1 - i) of the value */
  int b = h->bits - 1 - i;
  h->w[b >> 6] |= (uint64_t)1 << (b & 63);
}

int fy_bits_get(const ferry_hash *h, int i) {
  int b = h->bits - 1 - i;
  return (int)((h->w[b >> 6] >> (b & 63)) & 1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fy_median(const double *v, int n, double *scratch) {
  memcpy(scratch, v, (size_t)n * sizeof *v);
  qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
  if (n & 1)
    return scratch[n / 2];
  /* numpy: mean of the two middle values, (a + b) / 2 */
  return fy_median_mid(scratch[n / 2 - 1], scratch[n / 2]);
}

void fy_bits_above(ferry_hash *h, const double *v, int n, double threshold) {
  fy_bits_clear(h, n);
  for (int i = 0; i < n; i++)
    if (v[i] > threshold)
      fy_bits_set(h, i);
}

/* ------------------------------------------------------------ public */

int ferry_hash_to_hex(const ferry_hash *h, char *out, size_t size) {
  if (!h || !out || h->bits < 1 || h->bits > 256)
    return fy_error(FERRY_EINVAL, "ferry_hash_to_hex: bad hash or buffer");
  int digits = (h->bits + 3) / 4; /* imagehash: ceil(bits / 4) digits */
  if (size < (size_t)digits + 1)
    return fy_error(FERRY_EINVAL, "ferry_hash_to_hex: buffer of %zu bytes < %d", size, digits + 1);
  static const char hex[] = "0123456789abcdef";
  for (int d = 0; d < digits; d++) {
    int nib = digits - 1 - d; /* nibble index from the least significant */
    out[d] = hex[(h->w[nib >> 4] >> ((nib & 15) * 4)) & 15];
  }
  out[digits] = '\0';
  return digits;
}

int ferry_hash_from_hex(const char *hex, int bits, ferry_hash *h) {
  if (!hex || !h || bits < 1 || bits > 256)
    return fy_error(FERRY_EINVAL, "ferry_hash_from_hex: bad arguments");
  size_t len = strlen(hex);
  if (len != (size_t)(bits + 3) / 4)
    return fy_error(FERRY_EINVAL, "'%s' is not a %d-bit hash (%d hex digits expected)", hex, bits,
                    (bits + 3) / 4);
  fy_bits_clear(h, bits);
  for (size_t d = 0; d < len; d++) {
    int c = tolower((unsigned char)hex[d]), v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      return fy_error(FERRY_EINVAL, "'%s' is not a hex string", hex);
    size_t nib = len - 1 - d;
    h->w[nib >> 4] |= (uint64_t)v << ((nib & 15) * 4);
  }
  /* digits beyond `bits` (the top of the first digit) must be zero */
  int top = bits & 63 ? bits & 63 : 64, word = (bits - 1) >> 6;
  if (top < 64 && h->w[word] >> top)
    return fy_error(FERRY_EINVAL, "'%s' has bits above bit %d", hex, bits);
  return FERRY_OK;
}

int ferry_hash_to_bytes(const ferry_hash *h, uint8_t *out, size_t size) {
  if (!h || !out || h->bits < 1 || h->bits > 256)
    return fy_error(FERRY_EINVAL, "ferry_hash_to_bytes: bad hash or buffer");
  int n = (h->bits + 7) / 8;
  if (size < (size_t)n)
    return fy_error(FERRY_EINVAL, "ferry_hash_to_bytes: buffer of %zu bytes < %d", size, n);
  for (int i = 0; i < n; i++) {
    int b = n - 1 - i; /* byte index from the least significant */
    out[i] = (uint8_t)(h->w[b >> 3] >> ((b & 7) * 8));
  }
  return n;
}

int ferry_hash_distance(const ferry_hash *a, const ferry_hash *b) {
  if (!a || !b || a->bits != b->bits)
    return -1;
  int d = 0;
  for (int i = 0; i < 4; i++)
    d += __builtin_popcountll(a->w[i] ^ b->w[i]);
  return d;
}

double fy_mean(const double *v, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += v[i];
  return sum / n;
}
