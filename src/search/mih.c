/* mih.c — multi-index hashing (Norouzi, Punjani, Fleet, CVPR 2012): exact
 * range search without comparing every pair.
 *
 * A code is cut into m substrings, each indexed in its own table (a
 * counting sort: bucket offsets for every substring value, ids sorted by
 * value). If two codes are within r = m q + a (0 <= a < m), then one of the
 * first a + 1 substrings is within q, or one of the others within q - 1
 * (otherwise the distance would be at least (a + 1)(q + 1) + (m - a - 1) q
 * > r). So each query probes, in table t, every bucket within that radius
 * of its own substring, and checks the codes found there. A pair is
 * reported from the smaller index only, and only from the first table
 * whose radius it meets, so it comes out exactly once. */
#include "search/search.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define MIH_MAX_M 16
#define MIH_MAX_BITS 26 /* 2^26 buckets: 256 MiB of offsets per table */

struct fy_mih {
  const fy_codes *c;
  int m, bits;
  int start[MIH_MAX_M], len[MIH_MAX_M];
  uint64_t mask[MIH_MAX_M][4]; /* the substring's bits, per word */
  uint32_t *off[MIH_MAX_M];    /* 2^len + 1 bucket starts */
  uint32_t *ids[MIH_MAX_M];    /* n ids, bucket by bucket, ascending */
  uint64_t *codes[MIH_MAX_M];  /* the codes in the same order: a bucket's
                                  candidates are checked from contiguous
                                  memory instead of one cache miss each */
};

/* Bits [start, start + len) of a code (len <= 32). */
static inline uint32_t substring(const uint64_t *code, int start, int len) {
  int w = start >> 6, b = start & 63;
  uint64_t v = code[w] >> b;
  if (b + len > 64)
    v |= code[w + 1] << (64 - b);
  return (uint32_t)(v & ((1ull << len) - 1));
}

static void layout(fy_mih *h, int m, int bits) {
  h->m = m;
  h->bits = bits;
  int at = 0;
  for (int t = 0; t < m; t++) {
    int len = bits / m + (t < bits % m); /* lengths differ by at most one */
    h->start[t] = at;
    h->len[t] = len;
    memset(h->mask[t], 0, sizeof h->mask[t]);
    for (int b = at; b < at + len; b++)
      h->mask[t][b >> 6] |= 1ull << (b & 63);
    at += len;
  }
}

/* Radius of table t for a search within r. */
static int radius(int m, int r, int t) {
  int q = r / m, a = r % m;
  return t <= a ? q : q - 1;
}

int fy_mih_build(const fy_codes *c, int m, fy_mih **out) {
  *out = NULL;
  int bits = 64 * c->words;
  if (m < 1 || m > MIH_MAX_M || (bits + m - 1) / m > MIH_MAX_BITS || c->n > UINT32_MAX - 1)
    return fy_error(FERRY_EINVAL, "search: %d substrings of %d-bit codes not supported", m, bits);
  fy_mih *h = calloc(1, sizeof *h);
  if (!h)
    return fy_error(FERRY_ENOMEM, "search: out of memory");
  h->c = c;
  layout(h, m, bits);
  size_t n = c->n;
  for (int t = 0; t < m; t++) {
    size_t buckets = (size_t)1 << h->len[t];
    h->off[t] = calloc(buckets + 1, sizeof(uint32_t));
    h->ids[t] = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!h->off[t] || !h->ids[t]) {
      fy_mih_free(h);
      return fy_error(FERRY_ENOMEM, "search: out of memory for the index tables");
    }
    uint32_t *off = h->off[t];
    for (size_t i = 0; i < n; i++)
      off[substring(c->aos + i * c->words, h->start[t], h->len[t]) + 1]++;
    for (size_t b = 0; b < buckets; b++)
      off[b + 1] += off[b];
    /* fill in index order: ids within a bucket come out ascending */
    uint32_t *fill = malloc(buckets * sizeof(uint32_t));
    if (!fill) {
      fy_mih_free(h);
      return fy_error(FERRY_ENOMEM, "search: out of memory for the index tables");
    }
    memcpy(fill, off, buckets * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++)
      h->ids[t][fill[substring(c->aos + i * c->words, h->start[t], h->len[t])]++] = (uint32_t)i;
    free(fill);
    h->codes[t] = malloc((n ? n : 1) * c->words * sizeof(uint64_t));
    if (!h->codes[t]) {
      fy_mih_free(h);
      return fy_error(FERRY_ENOMEM, "search: out of memory for the index tables");
    }
    for (size_t k = 0; k < n; k++)
      memcpy(h->codes[t] + k * c->words, c->aos + (size_t)h->ids[t][k] * c->words,
             c->words * sizeof(uint64_t));
  }
  *out = h;
  return FERRY_OK;
}

void fy_mih_free(fy_mih *h) {
  if (!h)
    return;
  for (int t = 0; t < h->m; t++) {
    free(h->off[t]);
    free(h->ids[t]);
    free(h->codes[t]);
  }
  free(h);
}

/* ------------------------------------------------------------ probing */

/* Calls visit(ctx, bucket) for every value within `rho` bits of key
 * (len-bit keys): the key, then one flipped bit, two, ... */
typedef struct probe_ctx {
  const fy_mih *h;
  size_t q;
  int t, r;
  int rho[MIH_MAX_M];
  uint32_t lo; /* report only ids > lo (pairs) */
  int all;     /* report every id but the query's (neighbours) */
  fy_pairbuf *out;
  size_t probes, cands; /* counters, for sampling */
  int count_only;
} probe_ctx;

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) &&       \
    !defined(FERRY_NO_CLONES)
#define FY_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define FY_POPCNT_CLONES
#endif

FY_POPCNT_CLONES
static void visit(probe_ctx *p, uint32_t bucket) {
  const fy_mih *h = p->h;
  const fy_codes *c = h->c;
  const uint32_t *off = h->off[p->t], *ids = h->ids[p->t];
  uint32_t b0 = off[bucket], b1 = off[bucket + 1];
  p->probes++;
  if (b0 == b1)
    return;
  /* Scan the bucket's codes (contiguous) first; the id, in another array,
   * is read only for the rare code within range. */
  p->cands += b1 - b0;
  if (p->count_only)
    return;
  const uint64_t *a = c->aos + p->q * c->words, *sorted = h->codes[p->t];
  for (uint32_t k = b0; k < b1; k++) {
    const uint64_t *b = sorted + (size_t)k * c->words;
    if (c->words == 1 && __builtin_popcountll(a[0] ^ b[0]) > p->r)
      continue; /* the common case */
    uint32_t j = ids[k];
    if (j == p->q || (!p->all && j <= p->lo))
      continue;
    uint64_t x[4];
    int d = 0;
    for (int w = 0; w < c->words; w++) {
      x[w] = a[w] ^ b[w];
      d += __builtin_popcountll(x[w]);
    }
    if (d > p->r)
      continue;
    /* found in an earlier table already? */
    int seen = 0;
    for (int t = 0; t < p->t && !seen; t++) {
      int dt = 0;
      for (int w = 0; w < c->words; w++)
        dt += __builtin_popcountll(x[w] & h->mask[t][w]);
      seen = dt <= p->rho[t];
    }
    if (!seen)
      fy_pairbuf_push(p->out, (uint32_t)p->q, j, (uint32_t)d);
  }
}

/* Visits a batch of buckets in three passes so that their cache misses
 * overlap: prefetch the offsets, then the codes, then scan. */
#define BATCH 256
static void visit_batch(probe_ctx *p, const uint32_t *keys, int nkeys) {
  const fy_mih *h = p->h;
  const uint32_t *off = h->off[p->t];
  const uint64_t *codes = h->codes[p->t];
  int words = h->c->words;
  for (int i = 0; i < nkeys; i++)
    __builtin_prefetch(off + keys[i]);
  for (int i = 0; i < nkeys; i++)
    __builtin_prefetch(codes + (size_t)off[keys[i]] * words);
  for (int i = 0; i < nkeys; i++)
    visit(p, keys[i]);
}

/* Every key within rho bits of `key` (len-bit keys): the key itself, then
 * one flipped bit, two, ... */
static void probe_ball(probe_ctx *p, uint32_t key, int len, int rho) {
  uint32_t keys[BATCH];
  int nkeys = 0, pos[32];
  keys[nkeys++] = key;
  for (int w = 1; w <= rho && w <= len; w++) {
    for (int i = 0; i < w; i++)
      pos[i] = i;
    for (;;) {
      uint32_t mask = 0;
      for (int i = 0; i < w; i++)
        mask |= 1u << pos[i];
      keys[nkeys++] = key ^ mask;
      if (nkeys == BATCH) {
        visit_batch(p, keys, nkeys);
        nkeys = 0;
      }
      int i = w - 1;
      while (i >= 0 && pos[i] == len - w + i)
        i--;
      if (i < 0)
        break;
      pos[i]++;
      for (int k = i + 1; k < w; k++)
        pos[k] = pos[k - 1] + 1;
    }
  }
  visit_batch(p, keys, nkeys);
}

static void query(probe_ctx *p, size_t q, uint32_t lo) {
  const fy_mih *h = p->h;
  const uint64_t *a = h->c->aos + q * h->c->words;
  p->q = q;
  p->lo = lo;
  for (int t = 0; t < h->m; t++) {
    if (p->rho[t] < 0)
      continue;
    p->t = t;
    probe_ball(p, substring(a, h->start[t], h->len[t]), h->len[t], p->rho[t]);
  }
}

static void setup(probe_ctx *p, const fy_mih *h, int r, fy_pairbuf *out) {
  memset(p, 0, sizeof *p);
  p->h = h;
  p->r = r;
  p->out = out;
  for (int t = 0; t < h->m; t++)
    p->rho[t] = radius(h->m, r, t);
}

void fy_mih_query(const fy_mih *h, size_t q, int r, fy_pairbuf *out) {
  probe_ctx p;
  setup(&p, h, r, out);
  p.all = 1;
  query(&p, q, 0);
}

/* ------------------------------------------------------------ all pairs */

typedef struct mih_job {
  const fy_mih *h;
  int r;
  size_t max_pairs;
  atomic_size_t next, total;
  atomic_int stop;
  fy_pairbuf *bufs;
} mih_job;

static void mih_worker(void *arg, int index) {
  mih_job *j = arg;
  fy_pairbuf *out = &j->bufs[index];
  probe_ctx p;
  setup(&p, j->h, j->r, out);
  size_t n = j->h->c->n, chunk = 256;
  for (;;) {
    size_t q0 = atomic_fetch_add(&j->next, chunk);
    if (q0 >= n || atomic_load(&j->stop))
      return;
    size_t q1 = q0 + chunk < n ? q0 + chunk : n, before = out->n;
    for (size_t q = q0; q < q1; q++)
      query(&p, q, (uint32_t)q);
    if (fy_pairs_over(out, before, &j->total, j->max_pairs)) {
      atomic_store(&j->stop, 1);
      return;
    }
  }
}

int fy_mih_pairs(const fy_mih *h, int r, int threads, size_t max_pairs, fy_pairbuf *bufs) {
  mih_job j;
  memset(&j, 0, sizeof j);
  j.h = h;
  j.r = r;
  j.max_pairs = max_pairs;
  j.bufs = bufs;
  atomic_init(&j.next, 0);
  atomic_init(&j.total, 0);
  atomic_init(&j.stop, 0);
  fy_parallel(threads, mih_worker, &j);
  for (int i = 0; i < threads; i++)
    if (bufs[i].oom)
      return fy_error(FERRY_ENOMEM, "search: out of memory for the pairs found");
  if (atomic_load(&j.stop))
    return fy_error(FERRY_ETOO_LARGE, "search: more than %zu pairs within distance %d", max_pairs,
                    r);
  return FERRY_OK;
}

double fy_mih_probes(const fy_mih *h, int r) {
  double probes = 0;
  for (int t = 0; t < h->m; t++) {
    int rho = radius(h->m, r, t);
    for (int d = 0; d <= rho && d <= h->len[t]; d++) {
      double c = 1; /* C(len, d) */
      for (int i = 1; i <= d; i++)
        c = c * (h->len[t] - d + i) / i;
      probes += c;
    }
  }
  return probes;
}

void fy_mih_sample(const fy_mih *h, int r, size_t samples, double *probes, double *cands) {
  probe_ctx p;
  setup(&p, h, r, NULL);
  p.count_only = 1;
  size_t n = h->c->n;
  if (samples > n)
    samples = n;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t s = 0; s < samples; s++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    size_t q = (size_t)(state >> 33) % n;
    query(&p, q, (uint32_t)q);
  }
  *probes = samples ? (double)p.probes / samples : 0;
  *cands = samples ? (double)p.cands / samples : 0;
}

/* ------------------------------------------------------------ planning */

static double choose(double n, double k) { /* C(n, k) */
  double r = 1;
  for (int i = 1; i <= (int)k; i++)
    r = r * (n - k + i) / i;
  return r;
}

int fy_mih_choose(size_t n, int bits, int r, double *cost_ns) {
  /* costs per probe and per candidate: a probe is a random access into a
   * large table (a cache miss), a candidate a random access to a code */
  const double c_probe = 25.0, c_cand = 8.0;
  int best = 0;
  double best_cost = INFINITY;
  for (int m = 2; m <= MIH_MAX_M; m++) {
    if ((bits + m - 1) / m > MIH_MAX_BITS || bits / m < 4)
      continue;
    double probes = 0, cands = 0;
    for (int t = 0; t < m; t++) {
      int len = bits / m + (t < bits % m), rho = radius(m, r, t);
      if (rho < 0)
        continue;
      double ball = 0;
      for (int d = 0; d <= rho && d <= len; d++)
        ball += choose(len, d);
      probes += ball;
      cands += (double)n * ball / ldexp(1.0, len) / 2; /* half are below the query */
    }
    double cost = (double)n * (probes * c_probe + cands * c_cand) +
                  (double)m * (ldexp(1.0, (bits + m - 1) / m) + (double)n) * 2.0;
    if (cost < best_cost) {
      best_cost = cost;
      best = m;
    }
  }
  *cost_ns = best_cost;
  return best;
}
