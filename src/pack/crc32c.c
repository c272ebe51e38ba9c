/* crc32c.c — CRC-32C for pack checksums: SSE4.2's crc32 instruction when
 * the CPU has it (several GB/s), else a table-driven loop. */
#include "pack/pack.h"

#include <string.h>

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) {
  /* bitwise form of the reflected polynomial 0x82F63B78; computed per byte
   * with a small nibble table to stay short and table-init free */
  static const uint32_t nib[16] = {0x00000000, 0x105EC76F, 0x20BD8EDE, 0x30E349B1,
                                   0x417B1DBC, 0x5125DAD3, 0x61C69362, 0x7198540D,
                                   0x82F63B78, 0x92A8FC17, 0xA24BB5A6, 0xB21572C9,
                                   0xC38D26C4, 0xD3D3E1AB, 0xE330A81A, 0xF36E6F75};
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    crc = (crc >> 4) ^ nib[crc & 15];
    crc = (crc >> 4) ^ nib[crc & 15];
  }
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = (uint32_t)c;
  for (; n; n--, p++)
    c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}
#endif

uint32_t fy_crc32c(uint32_t crc, const void *data, size_t n) {
  crc = ~crc;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2"))
    return ~crc_hw(crc, data, n);
#endif
  return ~crc_sw(crc, data, n);
}
