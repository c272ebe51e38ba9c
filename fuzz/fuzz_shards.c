/* fuzz_shards.c — WebDataset shards (src/io/shards.c): the input written to
 * a scratch file "shard.tar" and opened with fy_shards_open (headers, pax
 * records, GNU long names, grouping by key, label members), every sample
 * then read back with fy_source_read; fy_tar_parse_header on each 512-byte
 * block; and brace patterns through fy_shards_expand_max.
 *
 * Input: one mode byte, then the shard. Mode bit 0 rewrites the checksum of
 * each header the reader will meet (walking the members as it does), so
 * that the fuzzer gets past the checksums to what the headers say. Bit 1:
 * the shard is preceded by a brace pattern and '\n' (at most 256 bytes),
 * expanded with a limit of 1000 names. */
#include "fuzz_util.h"
#include "io/shards.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(void *user, ferry_log_level level, const char *message) {
  (void)user, (void)level, (void)message;
}

/* An octal or base-256 field, loosely (the harness's own guess at where the
 * next header is; the reader decides for itself). */
static uint64_t field(const uint8_t *f, size_t len) {
  uint64_t v = 0;
  if (f[0] & 0x80) {
    for (size_t i = 1; i < len; i++)
      v = v << 8 | f[i];
    return v;
  }
  for (size_t i = 0; i < len && f[i] >= '0' && f[i] <= '7'; i++)
    v = v * 8 + (uint64_t)(f[i] - '0');
  return v;
}

static void fix_checksums(uint8_t *d, size_t n) {
  size_t at = 0;
  while (n >= 512 && at <= n - 512) {
    uint8_t *b = d + at;
    int zero = 1;
    for (int i = 0; i < 512 && zero; i++)
      zero = b[i] == 0;
    if (zero)
      return;
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
      sum += i >= 148 && i < 156 ? ' ' : b[i];
    char c[8];
    snprintf(c, sizeof c, "%06o", sum & 0777777);
    memcpy(b + 148, c, 6);
    b[154] = '\0';
    b[155] = ' ';
    uint64_t size = field(b + 124, 12);
    if (size > n - at - 512)
      return;
    at += 512 + (size_t)((size + 511) / 512 * 512);
  }
}

static void expand(const uint8_t *p, size_t n) {
  char *spec = malloc(n + 1);
  if (!spec)
    return;
  memcpy(spec, p, n);
  spec[n] = '\0';
  char **names;
  size_t count;
  if (fy_shards_expand_max(spec, 1000, &names, &count) == FERRY_OK) {
    if (!count || count > 1000 || names[count] != NULL)
      abort();
    volatile size_t sink = 0;
    for (size_t i = 0; i < count; i++)
      sink += strlen(names[i]);
    (void)sink;
    fy_shards_free_names(names, count);
  } else if (names || count) {
    abort(); /* an error hands back no names */
  }
  free(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int once;
  if (!once) {
    ferry_set_log(quiet, NULL);
    once = 1;
  }
  if (size < 1)
    return 0;
  int mode = data[0];
  data++, size--;
  if (mode & 2) {
    const uint8_t *nl = memchr(data, '\n', size < 257 ? size : 257);
    if (!nl)
      return 0;
    expand(data, (size_t)(nl - data));
    size -= (size_t)(nl - data) + 1;
    data = nl + 1;
  }
  uint8_t *tar = malloc(size ? size : 1);
  if (!tar)
    return 0;
  memcpy(tar, data, size);
  if (mode & 1)
    fix_checksums(tar, size);

  fy_tar_header h;
  for (size_t at = 0; size >= 512 && at <= size - 512; at += 512) {
    int k = fy_tar_parse_header(tar + at, &h);
    if (k == 0 && strlen(h.name) > 256) /* prefix 155 + '/' + name 100 */
      abort();
  }

  char path[4200];
  snprintf(path, sizeof path, "%s/shard.tar", fuzz_tmpdir());
  fuzz_write(path, tar, size);
  free(tar);
  char *shards[] = {path};
  fy_source s;
  memset(&s, 0, sizeof s);
  if (fy_shards_open(&s, "fuzz", shards, 1) == FERRY_OK) {
    fy_buf buf = {0};
    size_t plen = strlen(path);
    for (int64_t i = 0; i < s.count; i++) {
      /* each member lies inside the shard, after its header */
      if (s.shard[i] != 0 || s.member_off[i] < 512 || s.member_len[i] < 0 ||
          (uint64_t)s.member_off[i] + (uint64_t)s.member_len[i] > size || s.labels[i] < -1 ||
          s.labels[i] >= s.num_classes || strncmp(fy_source_path(&s, i), path, plen) ||
          fy_source_path(&s, i)[plen] != ':')
        abort();
      size_t got = 0;
      if (fy_source_read(&s, i, 1 << 20, &buf, &got) == FERRY_OK && got != (size_t)s.member_len[i])
        abort();
    }
    fy_buf_free(&buf);
    fy_source_free(&s);
  }
  return 0;
}
