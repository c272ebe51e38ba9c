/* hamming_testutil.c — the Hamming search tests' shared helpers (see
 * hamming_testutil.h). */
#include "hamming_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

void ht_seed(uint64_t seed) { rng = seed; }

uint64_t ht_next64(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t *ht_codes(size_t n, int words, size_t clusters, int spread) {
  uint64_t *c = malloc((n ? n : 1) * words * sizeof *c);
  uint64_t *base = malloc((clusters ? clusters : 1) * words * sizeof *base);
  if (!c || !base) {
    fprintf(stderr, "ht_codes: out of memory for %zu codes\n", n);
    abort();
  }
  for (size_t k = 0; k < (clusters ? clusters : 1) * words; k++)
    base[k] = ht_next64();
  for (size_t i = 0; i < n; i++) {
    for (int w = 0; w < words; w++)
      c[i * words + w] = clusters ? base[(ht_next64() % clusters) * words + w] : ht_next64();
    if (clusters) {
      int flips = (int)(ht_next64() % (uint64_t)(spread + 1));
      for (int f = 0; f < flips; f++) {
        unsigned bit = (unsigned)(ht_next64() % (64u * words));
        c[i * words + bit / 64] ^= 1ull << (bit % 64);
      }
    }
  }
  free(base);
  return c;
}

int ht_cpu_pairs(const uint64_t *codes, size_t n, int words, int t, ferry_search_method method,
                 ferry_pair **pairs, size_t *count) {
  ferry_search_options o;
  ferry_search_options_default(&o);
  o.threshold = t;
  o.method = method;
  return ferry_hamming_pairs(codes, n, words, &o, pairs, count);
}

int ht_cpu_topk(const uint64_t *codes, size_t n, int words, int k, ferry_neighbor *out) {
  ferry_search_options o;
  ferry_search_options_default(&o);
  return ferry_hamming_topk(codes, n, words, k, &o, out);
}

int ht_same_pairs(const char *what, const ferry_pair *a, size_t na, const ferry_pair *b,
                  size_t nb) {
  if (na != nb) {
    if (what)
      fprintf(stderr, "%s: %zu pairs against %zu\n", what, na, nb);
    return 0;
  }
  for (size_t k = 0; k < na; k++)
    if (a[k].i != b[k].i || a[k].j != b[k].j || a[k].distance != b[k].distance) {
      if (what)
        fprintf(stderr, "%s: pair %zu: (%u,%u,%u) against (%u,%u,%u)\n", what, k, a[k].i, a[k].j,
                a[k].distance, b[k].i, b[k].j, b[k].distance);
      return 0;
    }
  return 1;
}

int ht_same_topk(const char *what, const ferry_neighbor *a, const ferry_neighbor *b, size_t n,
                 int k) {
  for (size_t x = 0; x < n * (size_t)k; x++)
    if (a[x].index != b[x].index || a[x].distance != b[x].distance) {
      if (what)
        fprintf(stderr, "%s: code %zu, neighbour %zu: (%u at %u) against (%u at %u)\n", what, x / k,
                x % k, a[x].index, a[x].distance, b[x].index, b[x].distance);
      return 0;
    }
  return 1;
}

int ht_pair_cmp(const void *a, const void *b) {
  const ferry_pair *x = a, *y = b;
  if (x->i != y->i)
    return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

void ht_collect(const ferry_pair *pairs, size_t n, void *user) {
  ht_collected *c = user;
  c->calls++;
  c->most = n > c->most ? n : c->most;
  if (c->n + n > c->cap) {
    size_t cap = (c->n + n) * 2;
    ferry_pair *p = realloc(c->p, cap * sizeof *p);
    if (!p) {
      fprintf(stderr, "ht_collect: out of memory for %zu pairs\n", cap);
      abort();
    }
    c->p = p;
    c->cap = cap;
  }
  memcpy(c->p + c->n, pairs, n * sizeof *pairs);
  c->n += n;
}

void ht_collected_sort(ht_collected *c) {
  if (c->n > 1)
    qsort(c->p, c->n, sizeof *c->p, ht_pair_cmp);
}
