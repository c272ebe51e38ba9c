/* hash_check.h — helpers shared by the hash tests: golden CSV reading and
 * hashing a file with given options. */
#ifndef FY_HASH_CHECK_H
#define FY_HASH_CHECK_H

#include "check.h"
#include "ferry.h"

#include <stdio.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define HC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HC_SANITIZED 1
#endif
#endif
#ifndef HC_SANITIZED
#define HC_SANITIZED 0
#endif

/* One golden line: file,size,kind,hex (size: hash size, or colorhash's
 * binbits for kind colorhash). */
typedef struct hc_golden {
  char file[256];
  int size;
  ferry_hash_kind kind;
  char hex[80];
} hc_golden;

/* Reads the next line; 1 on success, 0 at the end. */
static inline int hc_golden_next(FILE *f, hc_golden *g) {
  char line[512], kind[32];
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "file,", 5))
      continue;
    if (sscanf(line, "%255[^,],%d,%31[^,],%79s", g->file, &g->size, kind, g->hex) == 4 &&
        ferry_hash_kind_parse(kind, &g->kind) == FERRY_OK)
      return 1;
  }
  return 0;
}

/* Hashes `path` with the given mode, size and colorhash bits; returns the
 * hex of `kind` in out (empty on error, the error printed). */
static inline int hc_hash_hex(const char *path, ferry_hash_mode mode, int size, int cbits,
                              ferry_hash_kind kind, char *out, size_t n) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = mode;
  o.hash_size = size;
  o.colorhash_bits = cbits;
  ferry_hasher *h;
  out[0] = '\0';
  if (ferry_hasher_new(&o, &h) != FERRY_OK)
    return -1;
  ferry_hash_result r;
  int rc = ferry_hash_file(h, path, &r);
  if (rc == FERRY_OK)
    ferry_hash_to_hex(&r.hash[kind], out, n);
  else
    fprintf(stderr, "%s\n", ferry_last_error());
  ferry_hasher_free(h);
  return rc;
}

#endif
