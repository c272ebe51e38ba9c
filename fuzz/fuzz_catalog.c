/* fuzz_catalog.c — the catalog index readers: ferry_catalog_load() (the
 * .fidx file) and fy_journal_load() (INDEX.journal, the records of an
 * interrupted run). Mode byte: bit 1 picks the journal (the fuzzed bytes
 * follow a valid journal header), bit 0 recomputes the checksums over the
 * fuzzed bytes so that the fuzzer gets past them to the record decoder. */
#include "catalog/catalog.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOURNAL_HEAD 32

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* Journal records: u32 length, the record, u32 crc32 of length + record. */
static void fix_journal_crcs(uint8_t *d, size_t n) {
  size_t at = JOURNAL_HEAD;
  while (at + 8 <= n) {
    size_t len =
        (size_t)d[at] | (size_t)d[at + 1] << 8 | (size_t)d[at + 2] << 16 | (size_t)d[at + 3] << 24;
    if (len > n - at - 8)
      break;
    put32(d + at + 4 + len, fy_crc32(0, d + at, 4 + len));
    at += 8 + len;
  }
}

/* The header fy_journal_open writes for the default options (made once). */
static const uint8_t *journal_header(void) {
  static uint8_t head[JOURNAL_HEAD];
  static int made;
  if (!made) {
    char index[4200], path[4300];
    snprintf(index, sizeof index, "%s/header.fidx", fuzz_tmpdir());
    snprintf(path, sizeof path, "%s.journal", index);
    ferry_hash_options o;
    ferry_hash_options_default(&o);
    fy_journal j;
    FILE *f = NULL;
    if (fy_journal_open(&j, index, &o, 0) == FERRY_OK) {
      fy_journal_close(&j);
      f = fopen(path, "rb");
    }
    if (!f || fread(head, 1, JOURNAL_HEAD, f) != JOURNAL_HEAD) {
      fprintf(stderr, "fuzz_catalog: cannot make a journal header: %s\n", ferry_last_error());
      abort();
    }
    fclose(f);
    remove(path);
    made = 1;
  }
  return head;
}

static void load_journal(const uint8_t *data, size_t size, int fix) {
  uint8_t *d = malloc(JOURNAL_HEAD + size);
  memcpy(d, journal_header(), JOURNAL_HEAD);
  memcpy(d + JOURNAL_HEAD, data, size);
  if (fix)
    fix_journal_crcs(d, JOURNAL_HEAD + size);
  char index[4200], path[4300];
  snprintf(index, sizeof index, "%s/journaled.fidx", fuzz_tmpdir());
  snprintf(path, sizeof path, "%s.journal", index);
  fuzz_write(path, d, JOURNAL_HEAD + size);
  free(d);
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  ferry_catalog *c = NULL;
  if (fy_journal_load(index, &o, &c) == FERRY_OK && c) {
    volatile size_t n = 0;
    for (size_t i = 0; i < ferry_catalog_size(c); i++)
      n += strlen(ferry_catalog_get(c, i)->path) + strlen(ferry_catalog_get(c, i)->error);
    (void)n;
    ferry_catalog_free(c);
  }
}

static void load_index(const uint8_t *data, size_t size, int fix) {
  uint8_t *copy = malloc(size ? size : 1);
  memcpy(copy, data, size);
  if (fix && size >= 4)
    put32(copy + size - 4, fy_crc32(0, copy, size - 4));
  char path[4200];
  snprintf(path, sizeof path, "%s/index.fidx", fuzz_tmpdir());
  fuzz_write(path, copy, size);
  free(copy);
  ferry_catalog *c = NULL;
  if (ferry_catalog_load(path, &c) == FERRY_OK) {
    volatile size_t n = 0;
    for (size_t i = 0; i < ferry_catalog_size(c); i++) {
      const ferry_catalog_entry *e = ferry_catalog_get(c, i);
      n += strlen(e->path) + strlen(e->error);
    }
    (void)n;
    ferry_catalog_free(c);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0];
  if (mode & 2)
    load_journal(data + 1, size - 1, mode & 1);
  else
    load_index(data + 1, size - 1, mode & 1);
  return 0;
}
