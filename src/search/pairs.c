/* pairs.c — ferry_hamming_pairs: checks, the choice between brute force
 * and multi-index hashing, and the merge of the threads' results.
 *
 * The choice is measured, not guessed: brute force is timed on one tile of
 * this data with this CPU's kernel; when the model of multi-index hashing
 * (uniform codes) says it could win, its tables are built and a sample of
 * real queries is timed. The faster of the two extrapolations runs. Real
 * catalogs are far from uniform (near-duplicates crowd a few buckets), which
 * is why the sample runs on the data itself. */
#include "cuda/hamming.h"
#include "opencl/opencl.h"
#include "search/search.h"

#include <stdatomic.h>
#include <string.h>

static _Thread_local const char *last_method = "none";

const char *ferry_search_last_method(void) { return last_method; }

void ferry_search_options_default(ferry_search_options *o) {
  memset(o, 0, sizeof *o);
  o->threshold = 8;
  o->method = FERRY_SEARCH_AUTO;
  o->device = -1;
  o->robust = 1;
  o->ndevices = 0; /* `device` alone */
}

void ferry_pairs_free(ferry_pair *pairs) { free(pairs); }

int fy_pair_cmp(const void *a, const void *b) {
  const ferry_pair *x = a, *y = b;
  if (x->i != y->i)
    return x->i < y->i ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

/* Seconds per pair of brute force here: one off-diagonal tile at the
 * search's threshold (its pairs cost what they will cost; a threshold of -1
 * once timed an unsigned compare that took every pair, 25x the real cost,
 * and made multi-index hashing look faster than it was). */
static double brute_pair_seconds(const fy_codes *c, const fy_kernels *k, int t) {
  size_t tile = c->words == 1 ? 4096 : 2048;
  if (c->n < 2 * tile)
    tile = c->n / 2;
  if (tile < 64)
    return 1e-9;
  fy_pairbuf none = {0};
  double t0 = fy_now();
  k->tile(c, 0, tile, tile, 2 * tile, t, &none);
  double dt = fy_now() - t0;
  free(none.p);
  return dt / ((double)tile * (double)tile);
}

static int run(const fy_codes *c, int t, int threads, const ferry_search_options *o,
               fy_pairbuf *bufs) {
  int bits = 64 * c->words;
  size_t n = c->n;
  ferry_search_method method = o->method;
  fy_mih *mih = NULL;
  int rc = FERRY_OK;
  if (method == FERRY_SEARCH_MIH) {
    double cost;
    int m = fy_mih_choose(n, bits, t, &cost);
    rc = fy_mih_build(c, m ? m : bits / 16, &mih);
    if (rc)
      return rc;
  } else if (method == FERRY_SEARCH_AUTO && n >= 20000 && t < bits) {
    double brute =
        brute_pair_seconds(c, fy_search_kernels(), t) * (double)n * (double)(n - 1) / 2.0 / threads;
    double model_ns;
    int m = fy_mih_choose(n, bits, t, &model_ns);
    if (m && model_ns * 1e-9 / threads < 3 * brute) {
      double t0 = fy_now();
      if (fy_mih_build(c, m, &mih) == FERRY_OK) {
        double build = fy_now() - t0;
        /* time real queries on a sample of the data */
        size_t samples = n < 2000 ? n : 2000;
        fy_pairbuf scratch = {0};
        double t1 = fy_now();
        for (size_t s = 0; s < samples; s++) {
          size_t q = (size_t)((s * 2654435761ull) % n);
          scratch.n = 0;
          fy_mih_query(mih, q, t, &scratch);
        }
        /* a query of the all-pairs run looks at half the pairs, but costs
         * 1.7-2.0x the half of a sampled one (bench/bench_hash.py --sections
         * crossover: 64- and 256-bit codes, thresholds 8-16): 0.9 of a whole */
        double per_query = 0.9 * (fy_now() - t1) / samples;
        free(scratch.p);
        double est = per_query * (double)n / threads;
        fy_log(FERRY_LOG_DEBUG,
               "search: n %zu, t %d, threads %d: brute force ~%.3f s; multi-index (m %d) "
               "model %.3f s, built in %.3f s, ~%.3f s from %zu queries",
               n, t, threads, brute, m, model_ns * 1e-9 / threads, build, est, samples);
        if (est + build > brute) {
          fy_mih_free(mih);
          mih = NULL;
        }
      }
    }
  }
  if (mih) {
    last_method = "mih";
    rc = fy_mih_pairs(mih, t, threads, o->max_pairs, bufs);
    fy_mih_free(mih);
    return rc;
  }
  last_method = "brute";
  return fy_pairs_brute(c, t, threads, o->max_pairs, bufs);
}

/* The argument checks both entry points share. */
static int check_args(const uint64_t *codes, size_t n, int words, const ferry_search_options *o) {
  if (!codes && n)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: NULL argument");
  if (words != 1 && words != 4)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: words must be 1 or 4, not %d", words);
  if (n >= UINT32_MAX)
    return fy_error(FERRY_ETOO_LARGE, "ferry_hamming_pairs: %zu codes (at most 2^32 - 2)", n);
  int t = o->threshold, bits = 64 * words;
  if (t < 0 || t > bits)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: threshold %d not in 0..%d", t, bits);
  return FERRY_OK;
}

/* Runs the CPU search into per-thread buffers (with a sink: streamed). */
static int cpu_search(const uint64_t *codes, size_t n, int words, const ferry_search_options *o,
                      fy_pair_sink sink, void *user, fy_pairbuf **out, int *nthreads) {
  int threads = fy_search_threads(o->threads);
  fy_codes c;
  int rc = fy_codes_init(&c, codes, n, words);
  if (rc)
    return rc;
  fy_pairbuf *bufs = calloc((size_t)threads, sizeof *bufs);
  if (!bufs) {
    fy_codes_free(&c);
    return fy_error(FERRY_ENOMEM, "ferry_hamming_pairs: out of memory");
  }
  for (int i = 0; i < threads; i++)
    bufs[i].sink = sink, bufs[i].user = user;
  rc = run(&c, o->threshold, threads, o, bufs);
  for (int i = 0; rc == FERRY_OK && sink && i < threads; i++)
    if (bufs[i].n)
      sink(bufs[i].p, bufs[i].n, user); /* what each buffer still holds */
  for (int i = 0; rc == FERRY_OK && i < threads; i++)
    if (bufs[i].oom)
      rc = fy_error(FERRY_ENOMEM, "ferry_hamming_pairs: out of memory for the pairs");
  fy_codes_free(&c);
  *out = bufs;
  *nthreads = threads;
  return rc;
}

static void free_bufs(fy_pairbuf *bufs, int threads) {
  for (int i = 0; bufs && i < threads; i++)
    free(bufs[i].p);
  free(bufs);
}

int fy_hamming_pairs_each(const uint64_t *codes, size_t n, int words,
                          const ferry_search_options *options, fy_pair_sink sink, void *user) {
  ferry_search_options o;
  if (options)
    o = *options;
  else
    ferry_search_options_default(&o);
  o.max_pairs = 0;
  int rc = check_args(codes, n, words, &o);
  if (rc || n < 2)
    return rc;
  if (o.ndevices) { /* src/cuda/hamming_multi.c: each device chunk by chunk */
    last_method = "cuda";
    return fy_gpu_hamming_pairs_each_multi(o.devices, o.ndevices, codes, n, words, o.threshold, 0,
                                           sink, user, NULL);
  }
  if (FERRY_DEVICE_IS_OPENCL(o.device)) { /* src/opencl/hamming_cl.c, chunk by chunk */
    last_method = "opencl";
    return fy_cl_hamming_pairs_each(o.device - FERRY_DEVICE_OPENCL, codes, n, words, o.threshold, 0,
                                    sink, user);
  }
  if (o.device >= 0) { /* chunk by chunk, never all the pairs at once */
    last_method = "cuda";
    return fy_gpu_hamming_pairs_each(o.device, codes, n, words, o.threshold, 0, sink, user, NULL);
  }
  fy_pairbuf *bufs = NULL;
  int threads = 0;
  rc = cpu_search(codes, n, words, &o, sink, user, &bufs, &threads);
  free_bufs(bufs, threads);
  return rc;
}

int ferry_hamming_pairs(const uint64_t *codes, size_t n, int words,
                        const ferry_search_options *options, ferry_pair **pairs, size_t *count) {
  ferry_search_options def;
  if (!options) {
    ferry_search_options_default(&def);
    options = &def;
  }
  if (!pairs || !count)
    return fy_error(FERRY_EINVAL, "ferry_hamming_pairs: NULL argument");
  *pairs = NULL;
  *count = 0;
  int rc = check_args(codes, n, words, options);
  if (rc)
    return rc;
  if (options->ndevices) { /* src/cuda/hamming_multi.c: merged, sorted by (i, j) */
    last_method = "cuda";
    return fy_gpu_hamming_pairs_multi(options->devices, options->ndevices, codes, n, words,
                                      options->threshold, options->max_pairs, 0, pairs, count,
                                      NULL);
  }
  if (FERRY_DEVICE_IS_OPENCL(options->device)) { /* src/opencl/hamming_cl.c: sorted too */
    last_method = "opencl";
    return fy_cl_hamming_pairs(options->device - FERRY_DEVICE_OPENCL, codes, n, words,
                               options->threshold, options->max_pairs, 0, pairs, count, NULL);
  }
  if (options->device >= 0) { /* src/cuda/hamming.cu: sorted by (i, j) like below */
    last_method = "cuda";
    return fy_gpu_hamming_pairs(options->device, codes, n, words, options->threshold,
                                options->max_pairs, 0, pairs, count, NULL);
  }
  if (n < 2)
    return FERRY_OK;
  fy_pairbuf *bufs = NULL;
  int threads = 0;
  rc = cpu_search(codes, n, words, options, NULL, NULL, &bufs, &threads);
  size_t total = 0;
  for (int i = 0; i < threads; i++)
    total += bufs[i].n;
  ferry_pair *out = NULL;
  if (rc == FERRY_OK && total) {
    out = malloc(total * sizeof *out);
    if (!out) {
      rc = fy_error(FERRY_ENOMEM, "ferry_hamming_pairs: out of memory for %zu pairs", total);
    } else {
      size_t at = 0;
      for (int i = 0; i < threads; i++) {
        if (bufs[i].n)
          memcpy(out + at, bufs[i].p, bufs[i].n * sizeof *out);
        at += bufs[i].n;
      }
      qsort(out, total, sizeof *out, fy_pair_cmp);
    }
  }
  free_bufs(bufs, threads);
  if (rc) {
    free(out);
    return rc;
  }
  *pairs = out;
  *count = total;
  return FERRY_OK;
}
