/* mkseeds.c — writes structured seed inputs that the fixtures lack: pack
 * shards and catalog indexes, made by ferry's own writers, in the input
 * layouts fuzz_pack.c and fuzz_catalog.c expect (a mode byte first).
 * Usage: mkseeds CORPUS_DIR (creates CORPUS_DIR/pack and /catalog files). */
#include "catalog/catalog.h"
#include "pack/pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copies file `from` to `to` after `head` (n bytes: a mode byte, maybe a
 * MANIFEST and its NUL). */
static int prefixed_with(const char *from, const char *to, const void *head, size_t n) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  int ok = in && out && fwrite(head, 1, n, out) == n;
  char buf[65536];
  size_t k;
  while (ok && (k = fread(buf, 1, sizeof buf, in)) > 0)
    ok = fwrite(buf, 1, k, out) == k;
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    ok = 0;
  if (!ok)
    fprintf(stderr, "mkseeds: %s -> %s failed\n", from, to);
  return ok ? 0 : 1;
}

/* Copies file `from` to `to` with a leading mode byte. */
static int prefixed(const char *from, const char *to, uint8_t mode) {
  return prefixed_with(from, to, &mode, 1);
}

/* Mode 15 (checksums fixed, the MANIFEST from the input with its checksum
 * line added): "MANIFEST\0SHARD" of a bound pack of id 0x1234. */
static int bound_seed(const char *shard, const char *corpus, int h, int w, int c, int count) {
  char to[4200], head[256];
  snprintf(to, sizeof to, "%s/pack/seed-bound", corpus);
  int n = snprintf(head, sizeof head,
                   "%cferry-pack 2\nid 0000000000001234\nshape %d %d %d\nshards 1\n"
                   "shard-00000.fpk %d\n",
                   15, h, w, c, count);
  return prefixed_with(shard, to, head, (size_t)n + 1); /* the NUL ends the MANIFEST */
}

static int pack_seeds(const char *corpus, const char *tmp) {
  int rc = 0;
  for (int v = 0; v < 3; v++) {
    int h = 1 + v, w = 2 + v, c = v == 1 ? 1 : 3, count = 1 + v;
    uint8_t data[3 * 4 * 3 * 3];
    for (size_t i = 0; i < sizeof data; i++)
      data[i] = (uint8_t)(i * 37 + v);
    int32_t labels[3] = {0, 1, -1};
    const char *paths[3] = {"/a/x.jpg", "b.png", ""};
    if (fy_pack_write_shard(tmp, v == 0 ? 0x1234 : 0, v, h, w, c, count, data, labels, paths)) {
      fprintf(stderr, "mkseeds: %s\n", ferry_last_error());
      return 1;
    }
    char from[4200], to[4200];
    snprintf(from, sizeof from, "%s/shard-%05d.fpk", tmp, v);
    for (int mode = 0; mode < 4 && v > 0; mode += 3) {
      snprintf(to, sizeof to, "%s/pack/seed-%d-%d", corpus, v, mode);
      rc |= prefixed(from, to, (uint8_t)mode);
    }
    if (v == 0) /* a bound pack: a version 2 MANIFEST, its checksum added by the harness */
      rc |= bound_seed(from, corpus, h, w, c, count);
    unlink(from);
  }
  return rc;
}

/* Catalogs: seed-0 (one entry), seed-1 (three, one failed), and seed-2, a
 * partial catalog (rank 1 of 3 over two roots: the header's SHRD block),
 * also as seed-2-fixed with mode 1 (the checksum recomputed over what the
 * fuzzer changed, so that mutations reach the SHRD block's reader). */
static int catalog_seeds(const char *corpus, const char *tmp) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  int rc = 0;
  for (int v = 0; v < 3; v++) {
    ferry_catalog *c = fy_catalog_new(&o);
    const char *roots[] = {"/data", "/srv/more"};
    if (c && v == 2 && fy_catalog_set_share(c, 1, 3, roots, 2))
      rc = 1;
    for (int i = 0; c && i < (v ? 3 : 1); i++) {
      ferry_catalog_entry e;
      memset(&e, 0, sizeof e);
      char path[64];
      snprintf(path, sizeof path, "/data/img%d.jpg", i);
      e.path = path;
      e.size = 1000u + (unsigned)i;
      e.mtime_ns = 1700000000000000000LL + i;
      e.width = 64, e.height = 48;
      e.format = FERRY_FORMAT_JPEG;
      e.status = i == 2 ? FERRY_ECORRUPT : FERRY_OK;
      e.error = i == 2 ? "broken" : "";
      e.kinds = i == 2 ? 0 : 1u | 2u;
      for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
        e.hash[k].w[0] = 0x0123456789abcdefULL * (unsigned)(i + k + 1), e.hash[k].bits = 64;
      if (fy_catalog_add(c, &e))
        rc = 1;
    }
    char from[4200], to[4200];
    snprintf(from, sizeof from, "%s/seed.fidx", tmp);
    if (!c || fy_catalog_save(c, from)) {
      fprintf(stderr, "mkseeds: catalog: %s\n", ferry_last_error());
      rc = 1;
    } else {
      snprintf(to, sizeof to, "%s/catalog/seed-%d", corpus, v);
      rc |= prefixed(from, to, 0);
      if (v == 2) {
        snprintf(to, sizeof to, "%s/catalog/seed-%d-fixed", corpus, v);
        rc |= prefixed(from, to, 1);
      }
    }
    ferry_catalog_free(c);
    unlink(from);
  }
  return rc;
}

/* Journal records as fuzz_catalog's mode 2 takes them: after the header. */
static int journal_seed(const char *corpus, const char *tmp) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  char index[4200], path[4300], to[4200];
  snprintf(index, sizeof index, "%s/j.fidx", tmp);
  snprintf(path, sizeof path, "%s.journal", index);
  fy_journal j;
  if (fy_journal_open(&j, index, &o, 0)) {
    fprintf(stderr, "mkseeds: journal: %s\n", ferry_last_error());
    return 1;
  }
  ferry_catalog_entry e;
  memset(&e, 0, sizeof e);
  e.path = "/data/j.png";
  e.error = "";
  e.width = 3, e.height = 2, e.format = FERRY_FORMAT_PNG, e.kinds = 1;
  e.hash[0].bits = 64, e.hash[0].w[0] = 42;
  int rc = fy_journal_append(&j, &e);
  e.path = "/data/k.jpg", e.status = FERRY_ECORRUPT, e.error = "bad", e.kinds = 0;
  rc |= fy_journal_append(&j, &e);
  fy_journal_close(&j);
  FILE *in = fopen(path, "rb");
  snprintf(to, sizeof to, "%s/catalog/journal-0", corpus);
  FILE *out = fopen(to, "wb");
  char buf[4096];
  size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
  if (!in || !out || n < 32 || fputc(2, out) == EOF || fwrite(buf + 32, 1, n - 32, out) != n - 32)
    rc = 1;
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    rc = 1;
  unlink(path);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mkseeds CORPUS_DIR\n");
    return 2;
  }
  char tmp[] = "/tmp/ferry-seeds-XXXXXX";
  if (!mkdtemp(tmp))
    return perror("mkdtemp"), 1;
  int rc = pack_seeds(argv[1], tmp) | catalog_seeds(argv[1], tmp) | journal_seed(argv[1], tmp);
  rmdir(tmp);
  return rc;
}
