/* hamming_testutil.h — what the Hamming search tests share (test_gpu_hamming,
 * test_hamming_multi, test_opencl_search; CMakeLists.txt links
 * hamming_testutil.c into those three): random codes, the CPU search's
 * answers to compare with, comparisons that say where two answers differ,
 * a sink that collects streamed pairs. Nothing here CHECKs (check.h's
 * counters are each test's own): the tests check what these return. */
#ifndef FY_HAMMING_TESTUTIL_H
#define FY_HAMMING_TESTUTIL_H

#include <ferry.h>
#include <stddef.h>
#include <stdint.h>

/* The codes' random numbers (splitmix64): each test seeds its own. */
void ht_seed(uint64_t seed);
uint64_t ht_next64(void);

/* n codes of `words` words (malloc'd): clusters > 0 makes near-duplicates
 * (each word taken from a random base code, then 0..spread random bit
 * flips), so that many pairs lie at every distance near the thresholds
 * tested; 0 gives uniform codes. */
uint64_t *ht_codes(size_t n, int words, size_t clusters, int spread);

/* The CPU search's pairs within t (method: FERRY_SEARCH_BRUTE, _AUTO...),
 * sorted by (i, j); ferry_pairs_free them. */
int ht_cpu_pairs(const uint64_t *codes, size_t n, int words, int t, ferry_search_method method,
                 ferry_pair **pairs, size_t *count);
/* The CPU's k nearest of every code into out[n * k]. */
int ht_cpu_topk(const uint64_t *codes, size_t n, int words, int k, ferry_neighbor *out);

/* 1 when the two pair lists are the same, in the same order; else 0, and
 * with `what` the first difference on stderr under that name. */
int ht_same_pairs(const char *what, const ferry_pair *a, size_t na, const ferry_pair *b, size_t nb);
/* The same for two top-k answers of n codes. */
int ht_same_topk(const char *what, const ferry_neighbor *a, const ferry_neighbor *b, size_t n,
                 int k);

/* qsort's order of pairs: by (i, j), the CPU's. */
int ht_pair_cmp(const void *a, const void *b);

/* Pairs handed to a sink: ht_collect as the sink, user an ht_collected
 * zeroed; free(p) after. */
typedef struct ht_collected {
  ferry_pair *p;
  size_t n, cap;
  size_t calls, most; /* sink calls, the most pairs in one */
} ht_collected;
void ht_collect(const ferry_pair *pairs, size_t n, void *user);
/* Sorts them in the CPU's order. */
void ht_collected_sort(ht_collected *c);

#endif
