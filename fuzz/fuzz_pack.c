/* fuzz_pack.c — the pack reader (src/pack/pack_read.c): a MANIFEST and one
 * shard written to a scratch directory, opened with fy_pack_open, then
 * every sample read back.
 *
 * Input: one mode byte, then the shard. Mode bit 0/1 recompute the header
 * and index checksums over the fuzzed bytes (so the fuzzer reaches the
 * index checks), bit 2 takes the MANIFEST from the input too
 * ("MANIFEST\0SHARD"); otherwise the MANIFEST agrees with the header. Bit 3
 * (with bit 2) ends the MANIFEST with its right checksum line, so that the
 * fuzzer reaches what a version 2 MANIFEST says past its checksum. */
#include "fuzz_util.h"
#include "pack/pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void fix_crcs(uint8_t *s, size_t n, int mode) {
  if (n < FY_PACK_HEADER)
    return;
  if (mode & 1)
    wr32(s + 60, fy_crc32c(0, s, 60));
  uint64_t ix = rd32(s + 32) | (uint64_t)rd32(s + 36) << 32;
  if ((mode & 2) && ix < n && n - ix >= 4)
    wr32(s + n - 4, fy_crc32c(0, s + ix, (size_t)(n - ix - 4)));
  if ((mode & 3) == 3)
    wr32(s + 60, fy_crc32c(0, s, 60)); /* the index fix may have touched it */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0];
  data++, size--;
  const uint8_t *man = NULL;
  size_t mlen = 0;
  if (mode & 4) {
    const uint8_t *z = memchr(data, 0, size);
    if (!z)
      return 0;
    man = data, mlen = (size_t)(z - data);
    size -= mlen + 1, data = z + 1;
  }
  uint8_t *shard = malloc(size ? size : 1);
  memcpy(shard, data, size);
  fix_crcs(shard, size, mode);

  const char *dir = fuzz_tmpdir();
  char path[4300];
  snprintf(path, sizeof path, "%s/shard-00000.fpk", dir);
  fuzz_write(path, shard, size);
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  if (man && (mode & 8)) {
    char *text = malloc(mlen + 32);
    memcpy(text, man, mlen);
    size_t n = (size_t)snprintf(text + mlen, 32, "crc32c %08x\n", fy_crc32c(0, man, mlen)) + mlen;
    fuzz_write(path, text, n);
    free(text);
  } else if (man) {
    fuzz_write(path, man, mlen);
  } else {
    char text[256];
    unsigned h = 1, w = 1, c = 3, count = 0;
    if (size >= FY_PACK_HEADER)
      h = rd32(shard + 16), w = rd32(shard + 20), c = rd32(shard + 24), count = rd32(shard + 28);
    int n =
        snprintf(text, sizeof text, "ferry-pack 1\nshape %u %u %u\nshards 1\nshard-00000.fpk %u\n",
                 h, w, c, count);
    fuzz_write(path, text, (size_t)n);
  }
  free(shard);

  fy_pack p;
  if (fy_pack_open(&p, dir) == FERRY_OK) {
    volatile uint8_t sink = 0;
    for (int64_t i = 0; i < p.count; i++) {
      int32_t label;
      size_t len; /* u8 shards: height * width * channels; JPEG shards: each its own */
      const uint8_t *s = fy_pack_sample_len(&p, i, &len, &label);
      sink ^= s[0] ^ s[len - 1];
      fy_pack_entry e;
      fy_pack_entry_get(&p.shards[p.sample_shard[i]], p.sample_index[i], &e);
      for (uint32_t k = 0; k < e.path_len; k++)
        sink ^= (uint8_t)p.shards[p.sample_shard[i]].strings[e.path_off + k];
    }
    (void)sink;
    fy_pack_close(&p);
  }
  return 0;
}
