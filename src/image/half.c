/* half.c — IEEE binary16 from and to binary32, rounding to nearest even
 * (numpy's astype(float16) bit for bit, NaN payloads included). */
#include "image/image.h"

#include <string.h>

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* |f| < 2^-14: a multiple of 2^-24, the half subnormal step. The float is
 * m * 2^(e - 150) with m's implicit bit set, so the half is m >> (126 - e)
 * rounded to even. */
static uint16_t subnormal_half(uint32_t ax) {
  uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
  if (e < 102) /* below 2^-25, half the step: rounds to 0 */
    return 0;
  uint32_t shift = 126 - e, q = m >> shift, rem = m & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u)))
    q++; /* may reach 0x400, the smallest normal half: still right */
  return (uint16_t)q;
}

uint16_t fy_f32_to_f16(float f) {
  uint32_t x = bits_of(f), ax = x & 0x7fffffffu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  if (ax >= 0x7f800000u) { /* inf, or NaN keeping its top payload bits */
    uint16_t payload = (uint16_t)((ax >> 13) & 0x3ffu);
    if (ax > 0x7f800000u && payload == 0)
      payload = 1; /* a NaN must stay a NaN */
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? payload : 0));
  }
  if (ax >= 0x477ff000u) /* 65520 and up round past 65504 */
    return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u)
    return (uint16_t)(sign | subnormal_half(ax));
  /* Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits
   * half to even; a carry out of the mantissa bumps the exponent, which is
   * the right result. */
  uint32_t odd = (ax >> 13) & 1u;
  ax += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
  return (uint16_t)(sign | (ax >> 13));
}

float fy_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  }
  if (e == 31)
    return float_of(sign | 0x7f800000u | (m << 13));
  return float_of(sign | ((e + 112) << 23) | (m << 13));
}
