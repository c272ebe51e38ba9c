/* test_hamming_multi.c — the search over several GPUs (src/cuda/hamming_multi.c)
 * on the CPU, without a GPU:
 *
 *  - fy_pair_split: the chunks cover rows 0..n once, in order, on tile
 *    boundaries, with about equal pairs each (n from 2 to 4e9);
 *  - the driver over a fake device (a CPU brute force per row range, its
 *    pairs handed on a few at a time like the device buffer's): devices
 *    {0, 0}, {0, 1, 2}, eight, give the CPU search's pairs in its order;
 *    max_pairs over all devices; the streamed form, its sink never called
 *    twice at once; a device that fails at its start or in the middle
 *    stops the others and is named; every opened search closed;
 *  - the top-k driver over a fake top-k device (a CPU scan per query
 *    block): the CPU's neighbours for lists of 1 to 8 devices, repeated
 *    devices, blocks of every size, n from 0 to below the number of
 *    devices; each block taken once, by whichever device is free (a slow
 *    one takes fewer); a device failing at its start or in a block stops
 *    the others before their next block and is named; fy_topk_block;
 *  - bad device lists refused; the public API with a device list: the
 *    GPU's answer, or its refusal naming the device. */
#include "check.h"
#include "cuda/hamming.h"
#include "hamming_testutil.h"

#include <ferry.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double row_pairs(size_t n, size_t a, size_t b) { /* pairs of rows [a, b) */
  double s = 0;
  for (size_t i = a; i < b; i++)
    s += (double)(n - 1 - i);
  return s;
}

static void test_split(void) {
  static const size_t ns[] = {2, 3, 5, 100, 2047, 2048, 2049, 5000, 100000, 1000003, 20000000};
  static const size_t parts[] = {1, 2, 3, 8, 16, 64, 1455, 4096};
  static const size_t aligns[] = {1, 7, 1024, 2048};
  fy_row_range *r = malloc(4096 * sizeof *r);
  int bad = 0;
  for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
    for (size_t p = 0; p < sizeof parts / sizeof *parts; p++)
      for (size_t g = 0; g < sizeof aligns / sizeof *aligns; g++) {
        size_t n = ns[a], al = aligns[g];
        size_t m = fy_pair_split(n, parts[p], al, r);
        int ok = m >= 1 && m <= parts[p] && r[0].begin == 0 && r[m - 1].end == n;
        double total = (double)n * (double)(n - 1) / 2.0, share = total / (double)parts[p];
        for (size_t k = 0; ok && k < m; k++) {
          ok = r[k].begin < r[k].end && (k == 0 || r[k].begin == r[k - 1].end) &&
               (k == m - 1 || r[k].end % al == 0);
          /* about equal: off by the rows rounding moves (align rows of at
           * most n - 1 pairs at each end), or merged with empty neighbours */
          double area = n > 200000 ? 0 : row_pairs(n, r[k].begin, r[k].end);
          if (ok && n <= 200000 && m == parts[p])
            ok = area <= share + 2.0 * (double)al * (double)(n - 1) + 1 &&
                 area + 2.0 * (double)al * (double)(n - 1) + 1 >= share;
        }
        if (!ok && bad++ < 5)
          fprintf(stderr, "split n=%zu parts=%zu align=%zu: %zu ranges, bad\n", n, parts[p], al, m);
      }
  CHECK_MSG(!bad, "%d partitions wrong", bad);
  CHECK(fy_pair_split(0, 4, 1, r) == 0 && fy_pair_split(1, 4, 1, r) == 0);
  CHECK(fy_pair_split(10, 0, 1, r) == 0);

  /* balance where rounding is small next to a share: 1,000,000 rows in 8
   * parts on 2048-row boundaries, and 20M rows in the search's own count */
  size_t n = 1000000, m = fy_pair_split(n, 8, 2048, r);
  double lo = 1e300, hi = 0;
  for (size_t k = 0; k < m; k++) {
    double a = row_pairs(n, r[k].begin, r[k].end);
    lo = a < lo ? a : lo;
    hi = a > hi ? a : hi;
  }
  CHECK_MSG(m == 8 && hi / lo < 1.05, "1M rows in %zu parts, largest / smallest %.3f", m, hi / lo);
  printf("  split: 1,000,000 rows in %zu parts, largest / smallest %.4f (first %zu rows, last "
         "%zu)\n",
         m, hi / lo, r[0].end, r[m - 1].end - r[m - 1].begin);
  n = 20000000;
  size_t want = fy_pair_split_count(n, 1, 2);
  m = fy_pair_split(n, want, 2048, r);
  double total = (double)n * (double)(n - 1) / 2.0, share = total / (double)want;
  lo = 1e300, hi = 0;
  for (size_t k = 0; k < m; k++) { /* closed form: n - 1 - i summed */
    double a =
        (double)(r[k].end - r[k].begin) * (double)(n - 1) -
        ((double)r[k].end * (r[k].end - 1.0) - (double)r[k].begin * (r[k].begin - 1.0)) / 2.0;
    lo = a < lo ? a : lo;
    hi = a > hi ? a : hi;
  }
  CHECK_MSG(m >= 16 && m <= want && hi <= 1.5 * share && lo >= 0.5 * share,
            "20M rows: %zu of %zu chunks, %.3g..%.3g pairs (share %.3g)", m, want, lo, hi, share);
  printf("  split: 20,000,000 rows, 2 devices: %zu chunks of %.3g..%.3g pairs\n", m, lo, hi);
  /* the counts: several chunks per device, bounded */
  CHECK(fy_pair_split_count(100, 1, 3) == 24);
  CHECK(fy_pair_split_count(4000000000u, 1, 8) == 4096);
  CHECK(fy_pair_split_count(1000000, 4, 1) > fy_pair_split_count(1000000, 1, 1));
  free(r);
}

/* ------------------------------------------------ a fake device on the CPU */

static struct {
  int fail_device;      /* fails there ... */
  int fail_at;          /* ... at its open (0) or its Nth rows call (N >= 1) */
  int opened, closed;   /* searches (atomics) */
  int rows_calls;       /* all devices */
  int in_sink, overlap; /* the streamed sink's calls at once */
  int sleep_us;         /* per rows call: the others are still busy when one fails */
  int slow_device;      /* top-k: only this one sleeps (-1: all) */
  int no_work;          /* rows calls find nothing (the failure tests) */
  int per_device[8];    /* top-k: blocks taken by each device number */
  size_t queries;       /* top-k: queries of all blocks */
} fake = {.fail_device = -1, .slow_device = -1};

typedef struct fake_state {
  int device, words, t, calls;
  const uint64_t *codes;
  size_t n, buffer;
  ferry_pair *buf;
} fake_state;

static int fake_open(int device, const uint64_t *codes, size_t n, int words, int t,
                     size_t buffer_pairs, void **state) {
  if (device == fake.fail_device && fake.fail_at == 0)
    return fy_error(FERRY_EIO, "fake device %d: out of order", device);
  fake_state *s = calloc(1, sizeof *s);
  *s = (fake_state){device, words, t, 0, codes, n, buffer_pairs ? buffer_pairs : 64, NULL};
  s->buf = malloc(s->buffer * sizeof *s->buf);
  __atomic_fetch_add(&fake.opened, 1, __ATOMIC_RELAXED);
  *state = s;
  return FERRY_OK;
}

static int fake_rows(void *state, size_t i0, size_t i1, fy_gpu_pairs_sink sink, void *user) {
  fake_state *s = state;
  __atomic_fetch_add(&fake.rows_calls, 1, __ATOMIC_RELAXED);
  s->calls++;
  if (fake.sleep_us)
    usleep((useconds_t)fake.sleep_us);
  if (s->device == fake.fail_device && s->calls == fake.fail_at)
    return fy_error(FERRY_EIO, "fake device %d: failed in its chunk %d", s->device, s->calls);
  size_t m = 0;
  for (size_t i = i0; i < i1 && !fake.no_work;
       i++) /* j from the end: the sink must not rely on an order */
    for (size_t j = s->n; j-- > i + 1;) {
      int d = 0;
      for (int w = 0; w < s->words; w++)
        d += __builtin_popcountll(s->codes[i * s->words + w] ^ s->codes[j * s->words + w]);
      if (d > s->t)
        continue;
      s->buf[m++] = (ferry_pair){(uint32_t)i, (uint32_t)j, (uint32_t)d};
      if (m == s->buffer) {
        int rc = sink(s->buf, m, user);
        if (rc)
          return rc;
        m = 0;
      }
    }
  return m ? sink(s->buf, m, user) : FERRY_OK;
}

static void fake_close(void *state, fy_gpu_hamming_stats *stats) {
  fake_state *s = state;
  stats->launches += (size_t)s->calls;
  free(s->buf);
  free(s);
  __atomic_fetch_add(&fake.closed, 1, __ATOMIC_RELAXED);
}

static const fy_pairs_backend fake_backend = {fake_open, fake_rows, fake_close};

/* --------------------------------------- a fake top-k device on the CPU */

typedef struct fake_topk {
  int device, words, k, calls;
  const uint64_t *codes;
  size_t n;
} fake_topk;

static int fake_topk_open(int device, const uint64_t *codes, size_t n, int words, int k,
                          void **state) {
  if (device == fake.fail_device && fake.fail_at == 0)
    return fy_error(FERRY_EIO, "fake device %d: out of order", device);
  fake_topk *s = calloc(1, sizeof *s);
  *s = (fake_topk){device, words, k, 0, codes, n};
  __atomic_fetch_add(&fake.opened, 1, __ATOMIC_RELAXED);
  *state = s;
  return FERRY_OK;
}

/* The kernel's way: the k smallest keys (distance << 32 | index), sorted. */
static int fake_topk_rows(void *state, size_t q0, size_t q1, ferry_neighbor *out) {
  fake_topk *s = state;
  __atomic_fetch_add(&fake.rows_calls, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&fake.per_device[s->device], 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&fake.queries, q1 - q0, __ATOMIC_RELAXED);
  s->calls++;
  if (fake.sleep_us && (fake.slow_device < 0 || fake.slow_device == s->device))
    usleep((useconds_t)fake.sleep_us);
  if (s->device == fake.fail_device && s->calls == fake.fail_at)
    return fy_error(FERRY_EIO, "fake device %d: failed in its block %d", s->device, s->calls);
  for (size_t q = q0; q < q1 && !fake.no_work; q++) {
    uint64_t best[FY_GPU_TOPK_MAX_K];
    for (int r = 0; r < s->k; r++)
      best[r] = ~0ull;
    for (size_t j = 0; j < s->n; j++) {
      uint64_t d = 0;
      for (int w = 0; w < s->words; w++)
        d +=
            (uint64_t)__builtin_popcountll(s->codes[q * s->words + w] ^ s->codes[j * s->words + w]);
      uint64_t key = d << 32 | j;
      if (j == q || key >= best[s->k - 1])
        continue;
      int r = s->k - 1;
      for (; r > 0 && best[r - 1] > key; r--)
        best[r] = best[r - 1];
      best[r] = key;
    }
    for (int r = 0; r < s->k; r++)
      out[q * s->k + r] = best[r] == ~0ull
                              ? (ferry_neighbor){UINT32_MAX, UINT32_MAX}
                              : (ferry_neighbor){(uint32_t)best[r], (uint32_t)(best[r] >> 32)};
  }
  return FERRY_OK;
}

static void fake_topk_close(void *state) {
  free(state);
  __atomic_fetch_add(&fake.closed, 1, __ATOMIC_RELAXED);
}

static const fy_topk_backend fake_topk_backend = {fake_topk_open, fake_topk_rows, fake_topk_close};

static void fake_reset(void) {
  fake.opened = fake.closed = fake.rows_calls = 0;
  fake.queries = 0;
  memset(fake.per_device, 0, sizeof fake.per_device);
}

/* A slow sink that notes two calls at once (the driver must not make them). */
static void stream_sink(const ferry_pair *p, size_t n, void *user) {
  if (__atomic_fetch_add(&fake.in_sink, 1, __ATOMIC_ACQ_REL))
    __atomic_store_n(&fake.overlap, 1, __ATOMIC_RELAXED);
  usleep(50); /* calls from two threads would meet here */
  ht_collect(p, n, user);
  __atomic_fetch_sub(&fake.in_sink, 1, __ATOMIC_ACQ_REL);
}

static void test_driver(void) {
  static const struct {
    int words;
    size_t n, clusters;
    int spread, t;
  } cases[] = {{1, 3001, 60, 6, 5}, {1, 16391, 2000, 6, 3}, {4, 1500, 3, 30, 40}};
  static const int lists[][9] = {/* count, then the devices */
                                 {1, 0},
                                 {2, 0, 0},
                                 {3, 0, 1, 2},
                                 {8, 0, 1, 2, 3, 4, 5, 6, 7}};
  for (size_t x = 0; x < sizeof cases / sizeof *cases; x++) {
    size_t n = cases[x].n;
    /* 16,391 codes (many chunks a device; most of the time under TSan): the full tier */
    if (n > 10000 && !check_full_only("the driver over 16,391 codes"))
      continue;
    int words = cases[x].words, t = cases[x].t;
    uint64_t *c = ht_codes(n, words, cases[x].clusters, cases[x].spread);
    ferry_pair *ref = NULL;
    size_t nref = 0;
    CHECK(ht_cpu_pairs(c, n, words, t, FERRY_SEARCH_BRUTE, &ref, &nref) == FERRY_OK);
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
      int nd = lists[l][0];
      const int *dev = &lists[l][1];
      ferry_pair *got = NULL;
      size_t ngot = 0;
      fy_gpu_hamming_stats st;
      fake.opened = fake.closed = 0;
      int rc = fy_pairs_multi_run(&fake_backend, dev, nd, c, n, words, t, 0, 7, NULL, NULL, &got,
                                  &ngot, &st);
      CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
      int ok = ht_same_pairs("several devices", got, ngot, ref, nref);
      CHECK_MSG(ok, "%d-bit n=%zu t=%d on %d devices: %zu pairs, CPU %zu", 64 * words, n, t, nd,
                ngot, nref);
      CHECK(fake.opened == nd && fake.closed == nd);
      printf("  %d-bit n=%zu t=%d, %d fake devices: %zu pairs, %s (%zu chunks)\n", 64 * words, n, t,
             nd, ngot, ok ? "the CPU's" : "DIFFERENT", st.launches);
      free(got);

      /* max_pairs over all devices: refused past the total, taken at it */
      if (nref > 1) {
        got = NULL;
        rc = fy_pairs_multi_run(&fake_backend, dev, nd, c, n, words, t, nref - 1, 7, NULL, NULL,
                                &got, &ngot, NULL);
        CHECK_MSG(rc == FERRY_ETOO_LARGE && !got && !ngot &&
                      strstr(ferry_last_error(), "more than"),
                  "max_pairs %zu: %d %s", nref - 1, rc, ferry_last_error());
        CHECK(fake.opened == fake.closed);
        rc = fy_pairs_multi_run(&fake_backend, dev, nd, c, n, words, t, nref, 0, NULL, NULL, &got,
                                &ngot, NULL);
        CHECK(rc == FERRY_OK && ht_same_pairs("max_pairs", got, ngot, ref, nref));
        free(got);
      }

      /* streamed: every pair once, one sink call at a time */
      ht_collected s = {0};
      fake.overlap = 0;
      rc = fy_pairs_multi_run(&fake_backend, dev, nd, c, n, words, t, 0, 500, stream_sink, &s, NULL,
                              NULL, NULL);
      CHECK(rc == FERRY_OK);
      ht_collected_sort(&s);
      CHECK_MSG(ht_same_pairs("streamed", s.p, s.n, ref, nref),
                "streamed on %d devices: %zu pairs, CPU %zu", nd, s.n, nref);
      CHECK_MSG(!fake.overlap, "the sink was called from two threads at once");
      free(s.p);
    }
    ferry_pairs_free(ref);
    free(c);
  }
}

static void test_failures(void) {
  size_t n = 200000; /* 24 chunks on three devices */
  uint64_t *c = ht_codes(n, 1, 100, 4);
  fake.no_work = 1;
  int dev[3] = {0, 3, 1};
  ferry_pair *got = NULL;
  size_t ngot = 0;
  /* a device that does not start */
  fake.fail_device = 3, fake.fail_at = 0;
  fake.opened = fake.closed = fake.rows_calls = 0;
  int rc =
      fy_pairs_multi_run(&fake_backend, dev, 3, c, n, 1, 4, 0, 0, NULL, NULL, &got, &ngot, NULL);
  CHECK_MSG(rc == FERRY_EIO && !got && !ngot &&
                !strcmp(ferry_last_error(), "cuda:3: fake device 3: out of order"),
            "%d %s", rc, ferry_last_error());
  CHECK(fake.opened == fake.closed);
  printf("  a device that does not start: \"%s\"; %d chunks searched by the others\n",
         ferry_last_error(), fake.rows_calls);
  /* one that fails in its second chunk while the others work: they stop
   * at the end of their chunk, long before the 24 are done */
  fake.fail_at = 2, fake.sleep_us = 20000;
  fake.opened = fake.closed = fake.rows_calls = 0;
  rc = fy_pairs_multi_run(&fake_backend, dev, 3, c, n, 1, 4, 0, 0, NULL, NULL, &got, &ngot, NULL);
  CHECK_MSG(rc == FERRY_EIO && !got &&
                !strcmp(ferry_last_error(), "cuda:3: fake device 3: failed in its chunk 2"),
            "%d %s", rc, ferry_last_error());
  CHECK_MSG(fake.opened == 3 && fake.closed == 3 && fake.rows_calls < 12,
            "opened %d, closed %d, %d chunks", fake.opened, fake.closed, fake.rows_calls);
  printf("  a device failing in its chunk 2: \"%s\"; %d of 24 chunks begun\n", ferry_last_error(),
         fake.rows_calls);
  /* streamed too */
  ht_collected s = {0};
  fake.opened = fake.closed = fake.rows_calls = 0;
  rc = fy_pairs_multi_run(&fake_backend, dev, 3, c, n, 1, 4, 0, 0, stream_sink, &s, NULL, NULL,
                          NULL);
  CHECK(rc == FERRY_EIO && strstr(ferry_last_error(), "cuda:3: ") == ferry_last_error());
  CHECK(fake.opened == 3 && fake.closed == 3 && fake.rows_calls < 12);
  free(s.p);
  fake.fail_device = -1, fake.sleep_us = 0, fake.no_work = 0;
  free(c);
}

/* fy_topk_block: a multiple of 128; never below 65,536 queries unless
 * there are fewer than that per device, then one block per device; as
 * many blocks as a multiple of the devices (the last may be short), at
 * most 16 per device, and 16 per device once n is large. */
static void test_topk_block(void) {
  static const size_t ns[] = {0,      1,      100,     65535,   65536,    100000,
                              131072, 200000, 1000000, 1 << 20, 20000000, 4294967294u};
  int bad = 0;
  for (size_t x = 0; x < sizeof ns / sizeof *ns; x++)
    for (int nd = 1; nd <= FERRY_MAX_SEARCH_DEVICES; nd++) {
      size_t n = ns[x], b = fy_topk_block(n, nd), items = (n + b - 1) / b;
      size_t most = (size_t)nd * 16, per = n / ((size_t)nd * 65536);
      per = per < 1 ? 1 : per > 16 ? 16 : per;
      int ok = b % 128 == 0 && items <= most;
      if (n >= (size_t)nd * 65536) /* big enough blocks, a multiple of the devices */
        ok = ok && b >= 65536 && (items == per * nd || (n >= 128 * most && items + 1 == per * nd));
      else /* few queries: one block per device at most */
        ok = ok && items <= (size_t)nd && (n == 0 || b >= (n + nd - 1) / nd);
      if (!ok && bad++ < 5)
        fprintf(stderr, "top-k blocks: n=%zu on %d devices: %zu of %zu\n", n, nd, items, b);
    }
  CHECK_MSG(!bad, "%d block sizes wrong", bad);
  printf("  top-k blocks: 100,000 codes on 2 devices: %zu of %zu; 2^20 on 2: %zu of %zu; 20M on 8: "
         "%zu of %zu\n",
         (100000 + fy_topk_block(100000, 2) - 1) / fy_topk_block(100000, 2),
         fy_topk_block(100000, 2), ((size_t)1 << 20) / fy_topk_block((size_t)1 << 20, 2),
         fy_topk_block((size_t)1 << 20, 2),
         (20000000 + fy_topk_block(20000000, 8) - 1) / fy_topk_block(20000000, 8),
         fy_topk_block(20000000, 8));
}

/* The top-k driver over the fake: the CPU's neighbours for lists of 1 to 8
 * devices (some repeated), blocks of the default size, of 37 and of 1
 * query, n down to 0 and below the number of devices; every block taken
 * once; every device opened and closed; a slow device takes fewer blocks. */
static void test_topk_driver(void) {
  static const struct {
    int words;
    size_t n, clusters;
    int spread, k;
  } cases[] = {{1, 2003, 200, 6, 8}, {1, 1000, 100, 6, 32}, {4, 777, 40, 30, 5}, {1, 5, 2, 3, 7},
               {1, 3, 1, 2, 2},      {4, 2, 1, 2, 1},       {1, 1, 1, 0, 3},     {1, 0, 1, 0, 4}};
  static const int lists[][9] = {{1, 0},
                                 {2, 0, 0},
                                 {3, 0, 1, 2},
                                 {4, 1, 1, 0, 0},
                                 {5, 4, 3, 2, 1, 0},
                                 {6, 0, 0, 0, 1, 1, 1},
                                 {7, 6, 5, 4, 3, 2, 1, 0},
                                 {8, 0, 1, 2, 3, 4, 5, 6, 7}};
  static const size_t blocks[] = {0, 37, 1};
  for (size_t x = 0; x < sizeof cases / sizeof *cases; x++) {
    size_t n = cases[x].n;
    int words = cases[x].words, k = cases[x].k, bad = 0;
    uint64_t *c = ht_codes(n, words, cases[x].clusters, cases[x].spread);
    ferry_neighbor *ref = malloc((n ? n : 1) * k * sizeof *ref);
    ferry_neighbor *got = malloc((n ? n : 1) * k * sizeof *got);
    CHECK(ht_cpu_topk(c, n, words, k, ref) == FERRY_OK);
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++)
      for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
        int nd = lists[l][0];
        const int *dev = &lists[l][1];
        size_t block = blocks[b] ? blocks[b] : fy_topk_block(n, nd);
        char what[96];
        snprintf(what, sizeof what, "top-k %d-bit n=%zu k=%d, %d devices, blocks of %zu",
                 64 * words, n, k, nd, block);
        fake_reset();
        memset(got, 0xAB, (n ? n : 1) * k * sizeof *got);
        int rc = fy_topk_multi_run(&fake_topk_backend, dev, nd, c, n, words, k, blocks[b], got);
        int ok = rc == FERRY_OK && ht_same_topk(what, got, ref, n, k) && fake.opened == nd &&
                 fake.closed == nd && fake.queries == n &&
                 (size_t)fake.rows_calls == (n + block - 1) / block;
        if (!ok && bad++ < 3)
          fprintf(stderr, "%s: rc %d (%s), opened %d, closed %d, %d blocks of %zu queries\n", what,
                  rc, rc ? ferry_last_error() : "ok", fake.opened, fake.closed, fake.rows_calls,
                  fake.queries);
      }
    CHECK_MSG(!bad, "top-k %d-bit n=%zu k=%d: %d runs wrong", 64 * words, n, k, bad);
    printf("  top-k %d-bit n=%zu k=%d on 1..8 fake devices, 3 block sizes: %s\n", 64 * words, n, k,
           bad ? "DIFFERENT" : "the CPU's");
    free(ref);
    free(got);
    free(c);
  }

  /* handed out as taken: a device that sleeps 50 ms a block takes fewer */
  size_t n = 2003;
  uint64_t *c = ht_codes(n, 1, 200, 6);
  ferry_neighbor *ref = malloc(n * 8 * sizeof *ref), *got = malloc(n * 8 * sizeof *got);
  CHECK(ht_cpu_topk(c, n, 1, 8, ref) == FERRY_OK);
  int two[2] = {0, 1};
  fake_reset();
  fake.slow_device = 1, fake.sleep_us = 50000;
  int rc = fy_topk_multi_run(&fake_topk_backend, two, 2, c, n, 1, 8, 64, got);
  fake.slow_device = -1, fake.sleep_us = 0;
  CHECK(rc == FERRY_OK && ht_same_topk("a slow device", got, ref, n, 8));
  CHECK_MSG(fake.per_device[0] > fake.per_device[1] && fake.rows_calls == 32,
            "cuda:0 took %d blocks, the slow cuda:1 %d", fake.per_device[0], fake.per_device[1]);
  printf("  top-k, 32 blocks: cuda:0 took %d, cuda:1 (50 ms a block) %d\n", fake.per_device[0],
         fake.per_device[1]);

  /* bad arguments: refused before any thread */
  int one[1] = {0};
  fake_reset();
  CHECK(fy_topk_multi_run(&fake_topk_backend, one, 1, c, n, 1, 0, 0, got) == FERRY_EUNSUPPORTED);
  CHECK(fy_topk_multi_run(&fake_topk_backend, one, 1, c, n, 1, 33, 0, got) == FERRY_EUNSUPPORTED);
  CHECK(fy_topk_multi_run(&fake_topk_backend, one, 1, c, n, 2, 8, 0, got) == FERRY_EINVAL);
  CHECK(fy_topk_multi_run(&fake_topk_backend, one, 1, c, n, 1, 8, 0, NULL) == FERRY_EINVAL);
  CHECK(fy_topk_multi_run(&fake_topk_backend, one, 0, c, n, 1, 8, 0, got) == FERRY_EINVAL);
  CHECK(fy_topk_multi_run(NULL, one, 1, c, n, 1, 8, 0, got) == FERRY_EINVAL);
  CHECK(fake.opened == 0);
  free(ref);
  free(got);
  free(c);
}

/* A failing device stops the others before their next block and is named;
 * every opened device is closed. */
static void test_topk_failures(void) {
  size_t n = 48000; /* blocks of 1000: 48 */
  uint64_t *c = ht_codes(n, 1, 100, 4);
  ferry_neighbor *got = malloc(n * 4 * sizeof *got);
  fake.no_work = 1;
  int dev[3] = {0, 3, 1};
  /* a device that does not start */
  fake_reset();
  fake.fail_device = 3, fake.fail_at = 0;
  int rc = fy_topk_multi_run(&fake_topk_backend, dev, 3, c, n, 1, 4, 1000, got);
  CHECK_MSG(rc == FERRY_EIO && !strcmp(ferry_last_error(), "cuda:3: fake device 3: out of order"),
            "%d %s", rc, ferry_last_error());
  CHECK(fake.opened == 2 && fake.closed == 2);
  printf("  top-k, a device that does not start: \"%s\"; %d blocks by the others\n",
         ferry_last_error(), fake.rows_calls);
  /* one that fails in its second block while the others work */
  fake_reset();
  fake.fail_at = 2, fake.sleep_us = 20000;
  rc = fy_topk_multi_run(&fake_topk_backend, dev, 3, c, n, 1, 4, 1000, got);
  CHECK_MSG(rc == FERRY_EIO &&
                !strcmp(ferry_last_error(), "cuda:3: fake device 3: failed in its block 2"),
            "%d %s", rc, ferry_last_error());
  CHECK_MSG(fake.opened == 3 && fake.closed == 3 && fake.rows_calls < 12,
            "opened %d, closed %d, %d blocks", fake.opened, fake.closed, fake.rows_calls);
  printf("  top-k, a device failing in its block 2: \"%s\"; %d of 48 blocks begun\n",
         ferry_last_error(), fake.rows_calls);
  /* the first device, in its first block; eight devices, the same one eight times */
  int eight[8] = {3, 3, 3, 3, 3, 3, 3, 3};
  fake_reset();
  fake.fail_at = 1;
  rc = fy_topk_multi_run(&fake_topk_backend, eight, 8, c, n, 1, 4, 1000, got);
  CHECK_MSG(rc == FERRY_EIO && !strncmp(ferry_last_error(), "cuda:3: fake device 3: failed", 29),
            "%d %s", rc, ferry_last_error());
  CHECK_MSG(fake.opened == 8 && fake.closed == 8 && fake.rows_calls <= 8,
            "opened %d, closed %d, %d blocks", fake.opened, fake.closed, fake.rows_calls);
  fake.fail_device = -1, fake.fail_at = 0, fake.sleep_us = 0, fake.no_work = 0;
  free(got);
  free(c);
}

static void test_lists(void) {
  uint64_t c[4] = {1, 2, 3, 4};
  ferry_pair *p = NULL;
  size_t np = 0;
  int nine[9] = {0}, neg[2] = {0, -1}, ocl[2] = {0, FERRY_DEVICE_OPENCL};
  CHECK(fy_gpu_hamming_pairs_multi(nine, 9, c, 4, 1, 2, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  CHECK(fy_gpu_hamming_pairs_multi(nine, 0, c, 4, 1, 2, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  CHECK(fy_gpu_hamming_pairs_multi(neg, 2, c, 4, 1, 2, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "devices[1] = -1"), "%s", ferry_last_error());
  CHECK(fy_gpu_hamming_pairs_multi(ocl, 2, c, 4, 1, 2, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  CHECK(fy_gpu_hamming_pairs_multi(nine, 2, c, 4, 3, 2, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  CHECK(fy_gpu_hamming_pairs_multi(nine, 2, c, 4, 1, 65, 0, 0, &p, &np, NULL) == FERRY_EINVAL);
  ferry_neighbor nb[4 * 33];
  CHECK(fy_gpu_hamming_topk_multi(neg, 2, c, 4, 1, 2, nb) == FERRY_EINVAL);
  CHECK(fy_gpu_hamming_topk_multi(nine, 2, c, 4, 1, 33, nb) == FERRY_EUNSUPPORTED);

  /* the public API: ndevices over device; out of range refused */
  ferry_search_options o;
  ferry_search_options_default(&o);
  CHECK(o.ndevices == 0);
  o.threshold = 2;
  o.ndevices = FERRY_MAX_SEARCH_DEVICES + 1;
  CHECK(ferry_hamming_pairs(c, 4, 1, &o, &p, &np) == FERRY_EINVAL && !p);
  o.ndevices = 2;
  o.devices[0] = o.devices[1] = 0;
  int rc = ferry_hamming_pairs(c, 4, 1, &o, &p, &np);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", ferry_last_error());
  if (fy_gpu_hamming_available(0) != FERRY_OK) { /* refused, naming the device */
    CHECK_MSG(rc == FERRY_EUNSUPPORTED && !p && !np && !strncmp(msg, "cuda:0: ", 8), "%d %s", rc,
              msg);
    printf("  without a GPU, devices {0, 0}: \"%s\"\n", msg);
    rc = ferry_hamming_topk(c, 4, 1, 2, &o, nb);
    CHECK_MSG(rc == FERRY_EUNSUPPORTED && !strncmp(ferry_last_error(), "cuda:0: ", 8), "%d %s", rc,
              ferry_last_error());
  } else { /* on a GPU: the CPU's pairs */
    CHECK(rc == FERRY_OK && !strcmp(ferry_search_last_method(), "cuda"));
    ferry_pair *ref = NULL;
    size_t nref = 0;
    CHECK(ht_cpu_pairs(c, 4, 1, 2, FERRY_SEARCH_BRUTE, &ref, &nref) == FERRY_OK && nref == 5);
    CHECK(ht_same_pairs("devices {0, 0}", p, np, ref, nref));
    ferry_pairs_free(ref);
    ferry_pairs_free(p);
    ferry_neighbor want[4 * 2];
    CHECK(ht_cpu_topk(c, 4, 1, 2, want) == FERRY_OK);
    rc = ferry_hamming_topk(c, 4, 1, 2, &o, nb);
    CHECK_MSG(rc == FERRY_OK && ht_same_topk("top-k, devices {0, 0}", nb, want, 4, 2), "%d %s", rc,
              ferry_last_error());
  }
}

int main(void) {
  ht_seed(0x2545F4914F6CDD1Dull);
  check_part("fy_pair_split");
  test_split();
  check_part("the driver");
  test_driver();
  check_part("failing devices");
  test_failures();
  check_part("fy_topk_block");
  test_topk_block();
  check_part("the top-k driver");
  test_topk_driver();
  check_part("failing top-k devices");
  test_topk_failures();
  check_part("device lists");
  test_lists();
  return check_done();
}
