/* test_hash_golden.c — compatible-mode hashes against imagehash's, bit for
 * bit: the committed fixtures (every colour type and JPEG flavour, hash
 * sizes 8 and 16, colorhash binbits 3 and 5), and, when the shared corpus
 * is there, every JPEG/PNG/WebP of photos/, hires/ and dupes/ (one in 9 in
 * the quick tier, every one in make test-full; golden data
 * produced by tests/gen/gen_hash_golden.py with imagehash 4.3 + Pillow). */
#include "hash_check.h"

#include <stdlib.h>

typedef struct goldens {
  hc_golden *v;
  size_t n;
} goldens;

/* (file, colorhash or not, size, kind): the rows of one hashing together */
static int by_run(const void *a, const void *b) {
  const hc_golden *x = a, *y = b;
  int c = strcmp(x->file, y->file);
  if (c)
    return c;
  int cx = x->kind == FERRY_HASH_COLORHASH, cy = y->kind == FERRY_HASH_COLORHASH;
  if (cx != cy)
    return cx - cy;
  if (x->size != y->size)
    return x->size - y->size;
  return (int)x->kind - (int)y->kind;
}

static int load(const char *path, goldens *g) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t cap = 256;
  g->v = malloc(cap * sizeof *g->v);
  g->n = 0;
  hc_golden x;
  while (hc_golden_next(f, &x)) {
    if (g->n == cap)
      g->v = realloc(g->v, (cap *= 2) * sizeof *g->v);
    g->v[g->n++] = x;
  }
  fclose(f);
  qsort(g->v, g->n, sizeof *g->v, by_run);
  return 0;
}

static ferry_hasher *hashers[2][32];

static ferry_hasher *hasher_for(int color, int size) {
  if (size < 1 || size >= 32)
    return NULL;
  if (!hashers[color][size]) {
    ferry_hash_options o;
    ferry_hash_options_default(&o);
    o.mode = FERRY_HASH_COMPATIBLE;
    if (color) {
      o.kinds = FERRY_HASH_MASK(FERRY_HASH_COLORHASH);
      o.colorhash_bits = size;
    } else {
      o.kinds = FERRY_HASH_ALL & ~FERRY_HASH_MASK(FERRY_HASH_COLORHASH);
      o.hash_size = size;
    }
    if (ferry_hasher_new(&o, &hashers[color][size]) != FERRY_OK)
      return NULL;
  }
  return hashers[color][size];
}

static void free_hashers(void) {
  for (int c = 0; c < 2; c++)
    for (int s = 0; s < 32; s++)
      ferry_hasher_free(hashers[c][s]);
}

/* Hashes each (file, size) once and checks every golden row of it. Rows of
 * kind colorhash carry binbits in `size`. every: check one file in `every`
 * (sanitizer builds are slow). Returns the number of mismatches. */
static int check_all(const goldens *g, const char *dir, int every, const char *what) {
  int bad = 0, files = 0, hashes = 0;
  const char *last = "";
  int index = -1;
  for (size_t i = 0; i < g->n;) {
    const hc_golden *r = &g->v[i];
    if (strcmp(r->file, last)) {
      index++;
      last = r->file;
    }
    /* the run of rows with the same file, size and colorhash-ness */
    int color = r->kind == FERRY_HASH_COLORHASH;
    size_t j = i;
    while (j < g->n && !strcmp(g->v[j].file, r->file) && g->v[j].size == r->size &&
           (g->v[j].kind == FERRY_HASH_COLORHASH) == color)
      j++;
    if (index % every) {
      i = j;
      continue;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, r->file);
    /* one hasher per setting, reused: its buffers are the test's speed */
    ferry_hasher *h = hasher_for(color, r->size);
    ferry_hash_result res;
    int rc = h ? ferry_hash_file(h, path, &res) : FERRY_EINVAL;
    CHECK_MSG(rc == FERRY_OK, "%s: %s", path, ferry_last_error());
    for (size_t k = i; rc == FERRY_OK && k < j; k++) {
      char hex[80];
      ferry_hash_to_hex(&res.hash[g->v[k].kind], hex, sizeof hex);
      hashes++;
      if (strcmp(hex, g->v[k].hex)) {
        bad++;
        fprintf(stderr, "%s %s size %d: ferry %s, imagehash %s\n", g->v[k].file,
                ferry_hash_kind_name(g->v[k].kind), g->v[k].size, hex, g->v[k].hex);
      }
    }
    if (rc == FERRY_OK && (res.exact != 1))
      fprintf(stderr, "%s: not marked exact\n", r->file);
    files++;
    i = j;
  }
  printf("%s: %d hashes of %d (file, size) runs, %d differ from imagehash\n", what, hashes, files,
         bad);
  return bad;
}

int main(void) {
  char path[4096];
  const char *fx = check_fixtures();
  goldens g;
  snprintf(path, sizeof path, "%s/hash/golden.csv", fx);
  CHECK_MSG(load(path, &g) == 0 && g.n > 100, "%s missing", path);
  snprintf(path, sizeof path, "%s/hash", fx);
  CHECK(check_all(&g, path, 1, "fixtures") == 0);
  free(g.v);

  const char *corpus = check_corpus("corpus hashes against imagehash");
  if (corpus) {
    snprintf(path, sizeof path, "%s/hash/corpus_golden.csv", fx);
    if (load(path, &g) != 0) {
      SKIP("%s not generated (tests/gen/gen_hash_golden.py --corpus)", path);
    } else {
      /* the quick tier: one file in 9; the full tier (make test-full): every one */
      int every = check_full() ? 1 : 9;
      if (every > 1)
        SKIP("corpus against imagehash: one file in %d here; every one in make test-full", every);
      CHECK(check_all(&g, corpus, every, "corpus") == 0);
      free(g.v);
    }
  }
  free_hashers();
  return check_done();
}
