/* test_epoch_ahead.c — the loader fills its freed slots with the next
 * epoch's first batches (epoch_ahead, ring.h): it does so before the
 * consumer asks; the batches of an epoch started ahead are bit for bit those
 * of a loader that starts it cold; starting another epoch, leaving one
 * early, or holding its last batch across the start changes nothing; the
 * next epoch's error, and the files it skips, wait for that epoch;
 * ferry_loader_stop ends the work ahead, its threads joined. */
#include "check.h"
#include "ferry.h"

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PER (3 * 48 * 40 * 4)
#define MAXN 64

static const char *sample(void) {
  const char *s = getenv("FERRY_SAMPLE");
  return s ? s : "data/sample";
}

static void opts(ferry_loader_options *o, int ahead) {
  ferry_loader_options_default(o);
  o->source = sample();
  o->batch_size = 8;
  o->width = 48;
  o->height = 40;
  o->workers = 3;
  o->prefetch = 2;
  o->crop = FERRY_CROP_RANDOM;
  o->flip_prob = 0.5f;
  o->dtype = FERRY_F32;
  o->normalize = 1;
  o->seed = 11;
  o->epoch_ahead = ahead;
}

typedef struct run {
  uint8_t *img;
  int64_t idx[MAXN];
  int64_t n;
} run;

/* Takes `take` batches (-1: all) of an epoch already started; copies them. */
static void take(ferry_loader *L, int epoch, int batches, run *out) {
  ferry_batch *b;
  int rc = FERRY_OK;
  for (int k = 0; batches < 0 || k < batches; k++) {
    if ((rc = ferry_loader_next(L, &b)) != FERRY_OK)
      break;
    CHECK(b->epoch == epoch && b->index == k);
    CHECK(out->n + b->count <= MAXN);
    memcpy(out->idx + out->n, b->indices, (size_t)b->count * sizeof *b->indices);
    memcpy(out->img + (size_t)out->n * PER, b->data, b->nbytes);
    out->n += b->count;
    ferry_loader_release(L, b);
  }
  CHECK(batches >= 0 || rc == FERRY_END);
}

/* Epoch `epoch` from a loader that starts it cold (no epoch ahead). */
static void cold(int epoch, run *out) {
  ferry_loader_options o;
  opts(&o, 0);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  CHECK(ferry_loader_start_epoch(L, epoch) == FERRY_OK);
  out->n = 0;
  take(L, epoch, -1, out);
  ferry_loader_close(L);
}

static int same(const run *a, const run *b) {
  return a->n == b->n && a->n > 0 && !memcmp(a->idx, b->idx, (size_t)a->n * sizeof *a->idx) &&
         !memcmp(a->img, b->img, (size_t)a->n * PER);
}

/* Starts `epoch` on L, takes all of it into *a and checks it against a
 * cold start (in *c). */
static void check_epoch(ferry_loader *L, int epoch, run *a, run *c) {
  CHECK(ferry_loader_start_epoch(L, epoch) == FERRY_OK);
  a->n = 0;
  take(L, epoch, -1, a);
  cold(epoch, c);
  CHECK_MSG(same(a, c), "epoch %d (%lld samples) differs from a cold start", epoch,
            (long long)a->n);
}

static uint64_t made(ferry_loader *L) {
  ferry_stats st;
  ferry_loader_get_stats(L, &st);
  return st.images + st.skipped;
}

/* Waits up to 10 s for the loader to have made `n` samples. */
static int wait_made(ferry_loader *L, uint64_t n) {
  for (int i = 0; i < 1000 && made(L) < n; i++)
    usleep(10000);
  return made(L) >= n;
}

static void test_ahead_equals_cold(void) {
  run a = {malloc(MAXN * PER), {0}, 0}, c = {malloc(MAXN * PER), {0}, 0};
  ferry_loader_options o;
  opts(&o, 1);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  take(L, 0, -1, &a);
  CHECK(a.n == 48); /* 49 files, one truncated */
  cold(0, &c);
  CHECK(same(&a, &c));
  /* Before the consumer asks: the 2 slots hold epoch 1's first 16 samples. */
  CHECK_MSG(wait_made(L, 49 + 16), "made %llu samples, want 65 (epoch 0's 49 and 16 ahead)",
            (unsigned long long)made(L));
  usleep(50000);
  /* no more: the ring is full (a hole in it took one more, the next epoch's last: fill.h) */
  ferry_stats st;
  ferry_loader_get_stats(L, &st);
  CHECK_MSG(made(L) == 49 + 16 + (st.skipped - 1), "made %llu, skipped %llu",
            (unsigned long long)made(L), (unsigned long long)st.skipped);
  check_epoch(L, 1, &a, &c);
  /* An epoch other than the one ahead: those batches are dropped. */
  CHECK(wait_made(L, 2 * 49 + 16));
  check_epoch(L, 5, &a, &c);
  /* Leaving epoch 5's successor early (2 of 6 batches), then starting the next. */
  CHECK(ferry_loader_start_epoch(L, 6) == FERRY_OK);
  a.n = 0;
  take(L, 6, 2, &a);
  CHECK(a.n >= 15 && a.n <= 16); /* 16 positions, one may be the truncated file */
  check_epoch(L, 7, &a, &c);
  /* The last batch held while the next epoch starts (a loop variable does):
   * it stays as it was while the whole next epoch goes through the rest of
   * the ring. */
  CHECK(ferry_loader_start_epoch(L, 8) == FERRY_OK);
  a.n = 0;
  take(L, 8, 5, &a); /* 49 positions, one bad: 6 full batches (the last position fills a hole) */
  ferry_batch *last, *end;
  CHECK(ferry_loader_next(L, &last) == FERRY_OK && last->epoch == 8 && last->index == 5);
  CHECK(ferry_loader_next(L, &end) == FERRY_END);
  uint8_t *kept = malloc(last->nbytes);
  memcpy(kept, last->data, last->nbytes);
  usleep(100000); /* the one free slot fills ahead */
  check_epoch(L, 9, &a, &c);
  CHECK(last->epoch == 8 && last->index == 5 && !memcmp(kept, last->data, last->nbytes));
  ferry_loader_release(L, last);
  free(kept);
  ferry_loader_close(L);
  free(a.img);
  free(c.img);
}

/* Off: the workers make nothing between epochs. */
static void test_off(void) {
  run a = {malloc(MAXN * PER), {0}, 0};
  ferry_loader_options o;
  opts(&o, 0);
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  take(L, 0, -1, &a);
  usleep(200000);
  CHECK_MSG(made(L) == 49, "epoch_ahead off: %llu samples made, want 49",
            (unsigned long long)made(L));
  ferry_loader_close(L);
  free(a.img);
}

/* A copy of the sample's p00*.jpg files in dir/c0 (dir: a mkdtemp template). */
static int make_copy(char *dir) {
  char cmd[1200];
  if (!mkdtemp(dir))
    return 0;
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/c0' && cp %s/class*/p00*.jpg '%s/c0'/", dir, sample(),
           dir);
  return system(cmd) == 0;
}

static void remove_copy(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
}

/* Epoch 0 of L (unshuffled) whose first file goes bad once batch 0 has read
 * it (5 bytes, not a JPEG; its path into bad): the epoch's end status, with
 * its batches and the images after batch 0. */
static int epoch0_spoiling_first(ferry_loader *L, char *bad, size_t cap, int *batches,
                                 int64_t *images) {
  ferry_batch *b;
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  CHECK(ferry_loader_next(L, &b) == FERRY_OK && b->index == 0);
  snprintf(bad, cap, "%s", ferry_loader_path(L, b->indices[0]));
  FILE *f = fopen(bad, "wb");
  CHECK(f && fwrite("bad!\n", 1, 5, f) == 5 && fclose(f) == 0);
  ferry_loader_release(L, b);
  int rc;
  *batches = 1, *images = 0;
  while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    ++*batches, *images += b->count;
    ferry_loader_release(L, b);
  }
  return rc;
}

/* A file that goes bad after epoch 0 read it: epoch 0 ends well, epoch 1
 * (made ahead) fails at its first batch, with the file's name. */
static void test_error_waits_for_its_epoch(void) {
  char dir[] = "/tmp/ferry_ahead_XXXXXX", bad[512];
  CHECK(make_copy(dir));
  ferry_loader_options o;
  opts(&o, 1);
  o.source = dir;
  o.shuffle = 0;
  o.on_error = FERRY_ON_ERROR_FAIL;
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  int64_t n = ferry_loader_epoch_size(L), images;
  CHECK(n >= 24); /* at least 3 batches: the ahead starts after batch 0 is taken */
  int batches, rc = epoch0_spoiling_first(L, bad, sizeof bad, &batches, &images);
  CHECK_MSG(rc == FERRY_END, "epoch 0 after the file went bad: %s", ferry_last_error());
  CHECK(batches == (int)((n + 7) / 8));
  CHECK(wait_made(L, (uint64_t)n + 1)); /* epoch 1's first sample failed ahead */
  CHECK(ferry_loader_start_epoch(L, 1) == FERRY_OK);
  ferry_batch *b;
  rc = ferry_loader_next(L, &b);
  CHECK_MSG(rc != FERRY_OK && strstr(ferry_last_error(), strrchr(bad, '/') + 1) != NULL,
            "epoch 1: rc %d, %s", rc, ferry_last_error());
  ferry_loader_close(L);
  remove_copy(dir);
}

static int said;
static char said_path[512];
static void count_skip(void *user, const char *path, int status, const char *msg) {
  (void)user, (void)status, (void)msg;
  said++;
  snprintf(said_path, sizeof said_path, "%s", path);
}

/* A file that goes bad after epoch 0 read it, on_error=skip: the epoch ahead
 * skips it, but says so only when that epoch starts; starting another epoch
 * forgets it, and the epoch that reads it again says it. */
static void test_skip_said_when_its_epoch_starts(void) {
  for (int next = 1; next <= 3; next += 2) { /* the epoch ahead, then another */
    char dir[] = "/tmp/ferry_ahead_XXXXXX", bad[512];
    CHECK(make_copy(dir));
    ferry_loader_options o;
    opts(&o, 1);
    o.source = dir;
    o.shuffle = 0;
    o.on_skip = count_skip;
    said = 0;
    ferry_loader *L;
    CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
    int64_t n = ferry_loader_epoch_size(L), images;
    int batches;
    CHECK(epoch0_spoiling_first(L, bad, sizeof bad, &batches, &images) == FERRY_END);
    CHECK(images == n - 8);
    CHECK(wait_made(L, (uint64_t)n + 8)); /* the epoch ahead's first batch, the bad file in it */
    CHECK_MSG(said == 0, "said %d skips before the epoch that skipped them started", said);
    CHECK(ferry_loader_start_epoch(L, next) == FERRY_OK);
    /* started: said at once; another: said when that epoch reads it (maybe already) */
    CHECK_MSG(next != 1 || said == 1, "epoch %d started: said %d", next, said);
    ferry_batch *b;
    CHECK(ferry_loader_next(L, &b) == FERRY_OK && b->count == 8); /* full: filled (fill.h) */
    ferry_loader_release(L, b);
    CHECK_MSG(said == 1 && !strcmp(said_path, bad), "said %d (%s)", said, said_path);
    ferry_loader_close(L);
    remove_copy(dir);
  }
}

static void *nothing(void *arg) { return arg; }

/* This process's threads (Linux), or -1. */
static int tasks(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* ferry_loader_stop after an epoch, its last batch held (a script that
 * ends in its loop): nothing more is made, the epoch ahead included; the
 * held batch stays as it was; next and start_epoch fail; close frees. */
static void test_stop_quiets_the_epoch_ahead(void) {
  run a = {malloc(MAXN * PER), {0}, 0};
  ferry_loader_options o;
  opts(&o, 1);
  ferry_loader *L;
  /* a thread started and joined first: a runtime's helper thread that starts with the first
   * thread created (TSan's) is then in the count before */
  pthread_t t;
  if (pthread_create(&t, NULL, nothing, NULL) == 0)
    pthread_join(t, NULL);
  int before = tasks();
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  take(L, 0, 5, &a); /* 48 good files: 6 full batches */
  ferry_batch *last, *b;
  CHECK(ferry_loader_next(L, &last) == FERRY_OK && last->index == 5);
  uint8_t *kept = malloc(last->nbytes);
  memcpy(kept, last->data, last->nbytes);
  int live = tasks();
  CHECK(ferry_loader_stop(L) == FERRY_OK);
  if (before < 0 || live < 0)
    SKIP("no /proc/self/task: the threads' exit not counted");
  else {
    /* the joined threads' tasks leave /proc at once; a helper thread of the
     * GPU runtime may still be ending (seen once on an H200): up to 2 s */
    int after = tasks();
    for (int i = 0; i < 200 && after != before; i++, after = tasks())
      usleep(10000);
    CHECK_MSG(live >= before + 3 && after == before,
              "%d threads before the loader, %d with it, %d after stop", before, live, after);
  }
  uint64_t n = made(L);
  usleep(200000);
  CHECK_MSG(made(L) == n && n < 49 + 16, "%llu samples made, then %llu after the stop",
            (unsigned long long)n, (unsigned long long)made(L));
  CHECK(!memcmp(kept, last->data, last->nbytes));
  CHECK(ferry_loader_next(L, &b) == FERRY_ESTATE);
  CHECK(ferry_loader_start_epoch(L, 1) == FERRY_ESTATE);
  CHECK(strstr(ferry_last_error(), "stopped") != NULL);
  ferry_loader_release(L, last);
  ferry_loader_close(L);
  free(kept);
  free(a.img);
}

int main(void) {
  test_stop_quiets_the_epoch_ahead();
  test_ahead_equals_cold();
  test_off();
  test_error_waits_for_its_epoch();
  test_skip_said_when_its_epoch_starts();
  return check_done();
}
