/* test_fill.c — the fill of batches around skipped files
 * (src/pipeline/fill.c), on simulated epochs: batches settle in order,
 * their own positions first, holes from the pool. Every batch but the
 * last is full (with drop_last every one), no position is delivered
 * twice, a whole batch of bad files still gives full batches, and the
 * planned count bounds the batches delivered. */
#include "check.h"
#include "pipeline/fill.h"

#include <string.h>

#define MAXN 256

/* Runs an epoch of n samples, bad[pos] marking skipped files; sizes[]
 * gets the delivered batches' sizes, got[] their positions in order.
 * Returns the batches delivered. */
static int run(int n, int B, int drop_last, const char *bad, int *sizes, int *got, int *ngot) {
  fy_fill f;
  fy_fill_start(&f, n, B, drop_last);
  int nb = 0;
  *ngot = 0;
  for (int64_t b = 0; b < fy_fill_batches(&f); b++) {
    int count = 0, batch[MAXN];
    if (!fy_fill_is_tail(&f, b))
      for (int k = 0; k < B; k++)
        if (!bad[b * B + k])
          batch[count++] = (int)(b * B + k);
    while (count < B) {
      int64_t p = fy_fill_take(&f, b);
      CHECK(fy_fill_batches(&f) > b); /* the bound never drops below the batch settling */
      if (p < 0)
        break;
      if (!bad[p])
        batch[count++] = (int)p;
    }
    if (fy_fill_settle(&f, b, count)) {
      sizes[nb++] = count;
      memcpy(got + *ngot, batch, (size_t)count * sizeof *batch);
      *ngot += count;
    }
  }
  CHECK(nb == fy_fill_batches(&f));
  CHECK(nb <= fy_fill_planned(n, B, drop_last));
  return nb;
}

static void check_epoch(const char *what, int n, int B, int drop_last, const char *bad) {
  int sizes[MAXN], got[MAXN], ngot, seen[MAXN] = {0}, good = 0;
  int nb = run(n, B, drop_last, bad, sizes, got, &ngot);
  for (int i = 0; i < n; i++)
    good += !bad[i];
  for (int i = 0; i < nb; i++)
    CHECK_MSG(sizes[i] == B || (i == nb - 1 && !drop_last && sizes[i] > 0),
              "%s: batch %d of %d has %d", what, i, nb, sizes[i]);
  for (int i = 0; i < ngot; i++) {
    CHECK_MSG(!bad[got[i]], "%s: bad position %d delivered", what, got[i]);
    CHECK_MSG(seen[got[i]]++ == 0, "%s: position %d delivered twice", what, got[i]);
  }
  /* every good sample is delivered but what drop_last drops (< B) */
  if (drop_last)
    CHECK_MSG(good - ngot >= 0 && good - ngot < B, "%s: %d good, %d delivered", what, good, ngot);
  else
    CHECK_MSG(ngot == good, "%s: %d good, %d delivered", what, good, ngot);
}

int main(void) {
  char bad[MAXN] = {0};
  /* no skipped file: the plain batches, in order */
  int sizes[MAXN], got[MAXN], ngot;
  CHECK(run(47, 8, 0, bad, sizes, got, &ngot) == 6 && sizes[5] == 7 && ngot == 47);
  for (int i = 0; i < 47; i++)
    CHECK(got[i] == i);
  CHECK(run(48, 8, 1, bad, sizes, got, &ngot) == 6);
  CHECK(fy_fill_planned(47, 8, 1) == 5 && fy_fill_planned(47, 8, 0) == 6);

  /* the case: one bad file in the first batch of 48 */
  bad[3] = 1;
  CHECK(run(48, 8, 0, bad, sizes, got, &ngot) == 6 && sizes[0] == 8 && sizes[5] == 7);
  CHECK(got[3] == 4 && got[7] == 40); /* the hole takes the last batch's first */
  check_epoch("one bad", 48, 8, 0, bad);
  CHECK(run(48, 8, 1, bad, sizes, got, &ngot) == 5);
  check_epoch("one bad, drop_last", 48, 8, 1, bad);

  /* a whole batch bad, with and without a tail */
  memset(bad, 0, sizeof bad);
  for (int i = 8; i < 16; i++)
    bad[i] = 1;
  for (int n = 40; n <= 52; n++) {
    check_epoch("batch bad", n, 8, 0, bad);
    check_epoch("batch bad, drop_last", n, 8, 1, bad);
  }

  /* pseudo-random bad files, many sizes */
  unsigned seed = 7;
  for (int trial = 0; trial < 300; trial++) {
    int n = 1 + trial % 120, B = 1 + trial % 13;
    for (int i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      bad[i] = (seed >> 16) % 100 < (unsigned)(trial % 5) * 12;
    }
    check_epoch("random", n, B, trial & 1, bad);
  }
  /* every file bad: nothing delivered */
  memset(bad, 1, sizeof bad);
  CHECK(run(40, 8, 0, bad, sizes, got, &ngot) == 0);
  CHECK(run(40, 8, 1, bad, sizes, got, &ngot) == 0);
  return check_done();
}
