/* copy.c — fy_copy_stream: memcpy with non-temporal stores (x86-64: AVX2
 * where the CPU has it, else SSE2, both part of this file; elsewhere plain
 * memcpy). */
#include "core/internal.h"
#include "core/testctl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The size of the level-3 (else the largest) cache of CPU 0 from sysfs, in
 * bytes; 0 when unknown. */
static size_t llc_bytes(void) {
  size_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; i++) {
    char path[96], buf[64];
    int level = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f)
      break;
    if (fscanf(f, "%d", &level) != 1)
      level = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!(f = fopen(path, "r")))
      continue;
    if (fgets(buf, sizeof buf, f)) {
      char *end;
      unsigned long long v = strtoull(buf, &end, 10);
      if (*end == 'K')
        v <<= 10;
      else if (*end == 'M')
        v <<= 20;
      if (level > best_level && v > 0) {
        best_level = level;
        best = (size_t)v;
      }
    }
    fclose(f);
  }
  return best;
}

size_t fy_stream_min_bytes(void) {
  static size_t cached; /* 0: not yet known (a race only repeats the work) */
  long mb = 0;
  if (fy_tc_long(FY_TC_STREAM_MIN_MB, &mb)) /* FERRY_STREAM_MIN_MB (tests) */
    return mb ? (size_t)mb << 20 : 1;       /* 0 MB: every ring streams */
  size_t v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (v)
    return v;
  v = llc_bytes();
  if (!v)
    v = (size_t)32 << 20;
  if (v < FY_STREAM_MIN_BYTES)
    v = FY_STREAM_MIN_BYTES;
  __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  return v;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Bytes before dst reaches the alignment a streaming store needs. */
static size_t head_bytes(const void *dst, size_t align, size_t n) {
  size_t h = (align - ((uintptr_t)dst & (align - 1))) & (align - 1);
  return h < n ? h : n;
}

__attribute__((target("avx2"))) static void copy_avx2(uint8_t *d, const uint8_t *s, size_t n) {
  size_t h = head_bytes(d, 32, n);
  memcpy(d, s, h);
  d += h, s += h, n -= h;
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
    __m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
    _mm256_stream_si256((__m256i *)(d + i), a);
    _mm256_stream_si256((__m256i *)(d + i + 32), b);
    _mm256_stream_si256((__m256i *)(d + i + 64), c);
    _mm256_stream_si256((__m256i *)(d + i + 96), e);
  }
  memcpy(d + i, s + i, n - i);
  _mm_sfence();
}

static void copy_sse2(uint8_t *d, const uint8_t *s, size_t n) {
  size_t h = head_bytes(d, 16, n);
  memcpy(d, s, h);
  d += h, s += h, n -= h;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
    __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
    _mm_stream_si128((__m128i *)(d + i), a);
    _mm_stream_si128((__m128i *)(d + i + 16), b);
    _mm_stream_si128((__m128i *)(d + i + 32), c);
    _mm_stream_si128((__m128i *)(d + i + 48), e);
  }
  memcpy(d + i, s + i, n - i);
  _mm_sfence();
}

void fy_copy_stream(void *dst, const void *src, size_t n) {
  if (n < 4096) { /* too short for streaming to pay */
    memcpy(dst, src, n);
    return;
  }
  if (fy_cpu_avx2())
    copy_avx2(dst, src, n);
  else
    copy_sse2(dst, src, n);
}
#else
void fy_copy_stream(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
#endif
