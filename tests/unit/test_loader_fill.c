/* test_loader_fill.c — fixed-shape batches through the loader (fill.c,
 * run_sample.c's fy_settle): data/sample plus 16 truncated copies in a row
 * (17 bad files of 65, two whole batches of 8 bad in the unshuffled
 * order). Every batch but an epoch's last is full, with drop_last every
 * one; no sample twice; labels with their samples; the same indices and
 * pixels in the same batches with 1, 2 or 4 workers and any ring length,
 * over two epochs (the second made ahead); the skipped files counted and
 * each named once (an epoch that has its full batches reads no further:
 * files after them are not read, so not named). */
#include "check.h"
#include "ferry.h"

#include <stdlib.h>
#include <string.h>

#define MAXN 80
#define PX (3 * 24 * 24)

static const char *sample(void) {
  const char *s = getenv("FERRY_SAMPLE");
  return s ? s : "data/sample";
}

static int said;
static void on_skip(void *user, const char *path, int rc, const char *msg) {
  (void)user, (void)rc, (void)msg, (void)path;
  __atomic_fetch_add(&said, 1, __ATOMIC_RELAXED);
}

typedef struct epoch_run {
  int64_t idx[MAXN];
  uint8_t px[MAXN * PX];
  int sizes[MAXN], nb, n;
} epoch_run;

static void run(const char *dir, int workers, int prefetch, int shuffle, int drop_last,
                epoch_run *out /* [2] */, uint64_t *skipped) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = dir;
  o.batch_size = 8;
  o.width = o.height = 24;
  o.workers = workers;
  o.prefetch = prefetch;
  o.shuffle = shuffle;
  o.seed = 9;
  o.drop_last = drop_last;
  o.on_skip = on_skip;
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  if (!L)
    return;
  for (int e = 0; e < 2; e++) {
    epoch_run *r = &out[e];
    r->nb = r->n = 0;
    CHECK(ferry_loader_start_epoch(L, e) == FERRY_OK);
    ferry_batch *b;
    int rc;
    while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
      CHECK(b->index == r->nb && r->n + b->count <= MAXN);
      r->sizes[r->nb++] = b->count;
      for (int i = 0; i < b->count && r->n + i < MAXN; i++) {
        r->idx[r->n + i] = b->indices[i];
        CHECK(b->labels[i] == ferry_loader_label(L, b->indices[i]));
      }
      memcpy(r->px + (size_t)r->n * PX, b->data, (size_t)b->count * PX);
      r->n += b->count;
      ferry_loader_release(L, b);
    }
    CHECK_MSG(rc == FERRY_END, "epoch %d after %d batches: %s", e, r->nb, ferry_last_error());
    CHECK(r->nb <= ferry_loader_num_batches(L)); /* the planned count: an upper bound */
  }
  ferry_stats st;
  ferry_loader_get_stats(L, &st);
  *skipped = st.skipped;
  ferry_loader_close(L);
}

static void check_shape(const epoch_run *r, int drop_last, const char *what) {
  int seen[MAXN] = {0};
  for (int i = 0; i < r->nb; i++)
    CHECK_MSG(r->sizes[i] == 8 || (!drop_last && i == r->nb - 1 && r->sizes[i] > 0),
              "%s: batch %d of %d holds %d", what, i, r->nb, r->sizes[i]);
  for (int i = 0; i < r->n; i++)
    CHECK_MSG(r->idx[i] >= 0 && r->idx[i] < MAXN && seen[r->idx[i]]++ == 0, "%s: sample %lld twice",
              what, (long long)r->idx[i]);
  CHECK_MSG(r->n == 48, "%s: %d samples, want the 48 good ones", what, r->n);
}

int main(void) {
  char dir[] = "/tmp/ferry_fill_XXXXXX", cmd[1400];
  if (!mkdtemp(dir)) {
    CHECK(0);
    return check_done();
  }
  /* 16 copies of a photo cut to 3000 bytes, q00..q15: after class1's p*.jpg */
  snprintf(cmd, sizeof cmd,
           "cp -r %s/class* '%s'/ && for i in 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15; "
           "do head -c 3000 %s/class1/p0001.jpg > '%s/class1/'q$i.jpg; done",
           sample(), dir, sample(), dir);
  CHECK(system(cmd) == 0);
  static epoch_run ref[2], got[2];
  for (int drop = 0; drop < 2; drop++)
    for (int shuffle = 0; shuffle < 2; shuffle++) {
      const int cfg[][2] = {{1, 2}, {2, 4}, {4, 3}, {4, 1}};
      for (int c = 0; c < 4; c++) {
        uint64_t skipped = 0;
        said = 0;
        run(dir, cfg[c][0], cfg[c][1], shuffle, drop, c ? got : ref, &skipped);
        char what[96];
        snprintf(what, sizeof what, "workers %d, ring %d, shuffle %d, drop_last %d", cfg[c][0],
                 cfg[c][1], shuffle, drop);
        epoch_run *r = c ? got : ref;
        for (int e = 0; e < 2; e++)
          check_shape(&r[e], drop, what);
        /* unshuffled, the bad files lie before good ones: all are read, each named
         * once, counted in both epochs; shuffled, the epoch may end before the last */
        if (!shuffle) {
          CHECK_MSG(said == 17, "%s: %d files named, want 17 once each", what, said);
          CHECK_MSG(skipped >= 34, "%s: %llu skipped", what, (unsigned long long)skipped);
        } else {
          CHECK_MSG(said >= 1 && said <= 17 && skipped >= (uint64_t)said,
                    "%s: %d named, %llu skipped", what, said, (unsigned long long)skipped);
        }
        for (int e = 0; c && e < 2; e++) {
          CHECK_MSG(got[e].nb == ref[e].nb && got[e].n == ref[e].n &&
                        !memcmp(got[e].sizes, ref[e].sizes, sizeof(int) * (size_t)ref[e].nb) &&
                        !memcmp(got[e].idx, ref[e].idx, sizeof(int64_t) * (size_t)ref[e].n),
                    "%s: epoch %d not the same batches as with 1 worker", what, e);
          CHECK_MSG(!memcmp(got[e].px, ref[e].px, (size_t)ref[e].n * PX),
                    "%s: epoch %d pixels differ", what, e);
        }
      }
    }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  return check_done();
}
