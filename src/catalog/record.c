/* record.c — the byte layout of one catalog entry, shared by the index
 * file and the journal (little-endian):
 *
 *   u64 size, i64 mtime_ns, i32 width, i32 height, u8 format, u8 0,
 *   i16 status, u32 kinds, u16 path bytes, u16 error bytes, path, error,
 *   then for each hash in kinds (ascending kind): u16 bits, ceil(bits/64)
 *   u64 words; then, with FERRY_HASH_SIGNATURE in kinds, u16 768 and the
 *   signature: its 24 code words (u64), its 576 thumbnail bytes.
 *
 * The files' CRC-32 is zlib's. */
#include "catalog/catalog.h"

#include <string.h>
#include <zlib.h>

uint32_t fy_crc32(uint32_t crc, const void *data, size_t n) {
  return (uint32_t)crc32_z(crc, (const Bytef *)data, (z_size_t)n);
}

static uint8_t *put(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    *p++ = (uint8_t)(v >> (8 * i));
  return p;
}

static uint64_t get(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static size_t words_of(int bits) { return (size_t)(bits + 63) / 64; }

#define FIXED 40 /* bytes before the strings */
#define SIG_BYTES (FERRY_SIGNATURE_PARTS * 4 * 8 + FERRY_SIGNATURE_THUMB * FERRY_SIGNATURE_THUMB)

size_t fy_record_size(const ferry_catalog_entry *e) {
  size_t n = FIXED + strlen(e->path) + (e->error ? strlen(e->error) : 0);
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (e->kinds & FERRY_HASH_MASK(k))
      n += 2 + 8 * words_of(e->hash[k].bits);
  if (e->kinds & FERRY_HASH_SIGNATURE)
    n += 2 + SIG_BYTES;
  return n;
}

void fy_record_encode(const ferry_catalog_entry *e, uint8_t *out) {
  size_t pl = strlen(e->path), el = e->error ? strlen(e->error) : 0;
  uint8_t *p = out;
  p = put(p, e->size, 8);
  p = put(p, (uint64_t)e->mtime_ns, 8);
  p = put(p, (uint32_t)e->width, 4);
  p = put(p, (uint32_t)e->height, 4);
  p = put(p, (uint8_t)e->format, 1);
  p = put(p, 0, 1);
  p = put(p, (uint16_t)(int16_t)e->status, 2);
  p = put(p, e->kinds, 4);
  p = put(p, pl, 2);
  p = put(p, el, 2);
  p = put(p, 0, 4); /* reserved */
  memcpy(p, e->path, pl);
  p += pl;
  if (el)
    memcpy(p, e->error, el);
  p += el;
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(e->kinds & FERRY_HASH_MASK(k)))
      continue;
    p = put(p, (uint16_t)e->hash[k].bits, 2);
    for (size_t w = 0; w < words_of(e->hash[k].bits); w++)
      p = put(p, e->hash[k].w[w], 8);
  }
  if (e->kinds & FERRY_HASH_SIGNATURE) {
    p = put(p, SIG_BYTES, 2);
    for (int k = 0; k < FERRY_SIGNATURE_PARTS; k++)
      for (int w = 0; w < 4; w++)
        p = put(p, e->signature->code[k][w], 8);
    memcpy(p, e->signature->thumb, sizeof e->signature->thumb);
  }
}

int fy_record_decode(const uint8_t *d, size_t n, ferry_catalog_entry *e, ferry_signature *sig,
                     size_t *path_len, size_t *err_len) {
  memset(e, 0, sizeof *e);
  if (n < FIXED)
    return FERRY_ECORRUPT;
  e->size = get(d, 8);
  e->mtime_ns = (int64_t)get(d + 8, 8);
  e->width = (int)(int32_t)get(d + 16, 4);
  e->height = (int)(int32_t)get(d + 20, 4);
  e->format = (ferry_format)d[24];
  e->status = (int)(int16_t)get(d + 26, 2);
  e->kinds = (unsigned)get(d + 28, 4);
  size_t pl = get(d + 32, 2), el = get(d + 34, 2), at = FIXED;
  if (e->kinds & ~(FERRY_HASH_ALL | FERRY_HASH_SIGNATURE) || pl == 0 || at + pl + el > n)
    return FERRY_ECORRUPT;
  e->path = (const char *)d + at;
  e->error = (const char *)d + at + pl;
  *path_len = pl;
  *err_len = el;
  at += pl + el;
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(e->kinds & FERRY_HASH_MASK(k)))
      continue;
    if (at + 2 > n)
      return FERRY_ECORRUPT;
    int bits = (int)get(d + at, 2);
    at += 2;
    if (bits < 1 || bits > 256 || at + 8 * words_of(bits) > n)
      return FERRY_ECORRUPT;
    e->hash[k].bits = bits;
    for (size_t w = 0; w < words_of(bits); w++, at += 8)
      e->hash[k].w[w] = get(d + at, 8);
  }
  if (e->kinds & FERRY_HASH_SIGNATURE) {
    if (at + 2 + SIG_BYTES > n || get(d + at, 2) != SIG_BYTES)
      return FERRY_ECORRUPT;
    at += 2;
    for (int k = 0; k < FERRY_SIGNATURE_PARTS; k++)
      for (int w = 0; w < 4; w++, at += 8)
        sig->code[k][w] = get(d + at, 8);
    memcpy(sig->thumb, d + at, sizeof sig->thumb);
    at += sizeof sig->thumb;
    e->signature = sig;
  }
  return at == n ? FERRY_OK : FERRY_ECORRUPT;
}

void fy_options_encode(const ferry_hash_options *o, uint8_t out[16]) {
  put(out, (uint32_t)o->mode, 4);
  put(out + 4, o->kinds, 4);
  put(out + 8, (uint32_t)o->hash_size, 4);
  put(out + 12, (uint32_t)o->colorhash_bits, 4);
}

void fy_options_decode(const uint8_t in[16], ferry_hash_options *o) {
  ferry_hash_options_default(o);
  o->mode = (ferry_hash_mode)get(in, 4);
  o->kinds = (unsigned)get(in + 4, 4);
  o->hash_size = (int)get(in + 8, 4);
  o->colorhash_bits = (int)get(in + 12, 4);
}

int fy_options_same(const ferry_hash_options *a, const ferry_hash_options *b) {
  return a->mode == b->mode && a->kinds == b->kinds && a->hash_size == b->hash_size &&
         a->colorhash_bits == b->colorhash_bits;
}
