/* test_gpu_plan.c — the GPU hashes' plan (src/cuda/hash_plan.c), without a
 * GPU: the jobs, arena sizes and upload layout for a few image sizes and
 * hash kinds against hand-computed values (Pillow's Lanczos windows, the
 * 256-byte arena rounding, pywt's levels), and the invariants the kernels
 * rely on for any batch: jobs write only inside their arenas, no two jobs
 * write the same bytes, every grid pixel is written once, stage 2 reads
 * only what stage 1 wrote, tables and job arrays where the layout says, a
 * sizing plan equal to the real one but for the bases, and rounds that fit
 * the budget. */
#include "check.h"
#include "cuda/hash_plan.h"
#include "hash/hash.h"

#include <string.h>

#define MASK(k) FERRY_HASH_MASK(k)
#define U8_BASE ((uint64_t)1 << 32)
#define DBL_BASE ((uint64_t)2 << 32)
#define TAB_BASE ((uint64_t)3 << 32)

static fy_gpu_hash_image img(uintptr_t at, int w, int h, int ch) {
  fy_gpu_hash_image im = {(const uint8_t *)at, w, h, ch, (size_t)w * ch + 7 * (ch == 3)};
  return im;
}

static void set_bases(fy_hash_plan *P, int real) {
  P->u8_base = real ? U8_BASE : 0;
  P->dbl_base = real ? DBL_BASE : 0;
  P->tab_base = real ? TAB_BASE : 0;
}

/* The byte range [lo, hi] a pass job writes. */
static void pass_extent(const fy_hp_pass *j, uint64_t *lo, uint64_t *hi) {
  *lo = j->dst;
  *hi = j->dst + (uint64_t)((j->lines - 1) * j->dl + (j->out - 1) * j->dp);
}

/* An 8 x 8 L image hashed at size 8: Pillow's crop shortcut, a copy. */
static void test_copy(void) {
  fy_hash_plan P;
  memset(&P, 0, sizeof P);
  fy_gpu_hash_image im = img(0x1000, 8, 8, 1);
  CHECK(fy_hash_plan_all(&P, &im, 1, MASK(FERRY_HASH_AHASH), 8) == FERRY_OK);
  CHECK(P.ngray == 0 && P.nstage[0] == 1 && P.nstage[1] == 0 && P.nsteps == 0 && P.nhash == 1);
  CHECK(P.u8_bytes == 256 && P.dbl_bytes == 0);
  CHECK(P.ntabref == 1 && P.tab_entries == 16); /* identity: 8 starts, 8 weights of 1 << 22 */
  CHECK(P.tabref[0]->in == -8 && P.tabref[0]->taps == 1 && P.tabref[0]->v[3] == 3 &&
        P.tabref[0]->v[8 + 3] == 1 << FY_HP_PREC);
  const fy_hp_pass *j = &P.stage[0][0];
  CHECK(j->src == 0x1000 && j->sl == 1 && j->sp == 8 && j->dst == 0 && j->dl == 1 && j->dp == 8);
  CHECK(j->lines == 8 && j->out == 8 && j->taps == 1 && j->shift == 0 && !j->warp && j->line_fast);
  CHECK(P.hash[0].grid[0] == 0 && P.hash[0].s == 8 && P.hash[0].kinds == MASK(FERRY_HASH_AHASH));
  CHECK(fy_hash_plan_image_bytes(&P, &im, MASK(FERRY_HASH_AHASH), 8) == 256 + 16 * 4);
  CHECK(P.nstage[0] == 0 && P.nhash == 0 && P.tab_entries == 0); /* left reset */
  fy_hash_plan_free(&P);
}

/* 100 x 50 RGB, aHash 8: L conversion, then horizontal-then-vertical (the
 * height shrinks by 42, not more than twice the width's 92). Lanczos
 * windows (support 3 x scale): 100 -> 8 reads at most 75 pixels (output 3:
 * centre 43.75, [int(6.75), int(81.75)) = [6, 81)), 50 -> 8 at most 38. */
static void test_horizontal_first(void) {
  fy_hash_plan P;
  memset(&P, 0, sizeof P);
  fy_gpu_hash_image im = img(0x10000, 100, 50, 3); /* pitch 307 */
  set_bases(&P, 1);
  CHECK(fy_hash_plan_all(&P, &im, 1, MASK(FERRY_HASH_AHASH), 8) == FERRY_OK);
  CHECK(P.ngray == 1 && P.gray[0].src == 0x10000 && P.gray[0].dst == U8_BASE &&
        P.gray[0].pitch == 307 && P.gray[0].w == 100 && P.gray[0].h == 50);
  /* arena: L 5000 -> 5120, grid 64 -> 256, intermediate 8 x 50 -> 512 */
  CHECK(P.u8_bytes == 5120 + 256 + 512);
  CHECK(P.hash[0].grid[0] == U8_BASE + 5120);
  CHECK(P.ntabref == 2 && P.tabref[0]->taps == 75 && P.tabref[1]->taps == 38);
  CHECK(P.tabref[0]->entries == 8 + 8 * 75 && P.tabref[1]->entries == 8 + 8 * 38);
  CHECK(P.tab_entries == 608 + 312 && P.tabref[1]->off == 608);
  CHECK(P.nstage[0] == 1 && P.nstage[1] == 1);
  const fy_hp_pass *h = &P.stage[0][0], *v = &P.stage[1][0];
  CHECK(h->src == U8_BASE && h->sl == 100 && h->sp == 1 && h->dst == U8_BASE + 5376 && h->dl == 8 &&
        h->dp == 1 && h->lines == 50 && h->out == 8 && h->warp && !h->line_fast);
  CHECK(h->start == TAB_BASE && h->k == TAB_BASE + 8 * 4);
  CHECK(v->src == U8_BASE + 5376 && v->sl == 1 && v->sp == 8 && v->dst == U8_BASE + 5120 &&
        v->dl == 1 && v->dp == 8 && v->lines == 8 && v->out == 8 && v->line_fast);
  CHECK(v->start == TAB_BASE + 608 * 4 && v->taps == 38 && v->shift == 0);
  fy_hash_plan_free(&P);
}

/* 20 x 200 L, aHash 8: the height shrinks more than twice the width, so
 * vertical (over the 20 columns) then horizontal. 200 -> 8 reads 150
 * pixels at most, 20 -> 8 reads 15. */
static void test_vertical_first(void) {
  fy_hash_plan P;
  memset(&P, 0, sizeof P);
  fy_gpu_hash_image im = img(0x10000, 20, 200, 1);
  CHECK(fy_hash_plan_all(&P, &im, 1, MASK(FERRY_HASH_AHASH), 8) == FERRY_OK);
  CHECK(P.ngray == 0 && P.u8_bytes == 256 + 256); /* grid 64, intermediate 20 x 8 */
  CHECK(P.nstage[0] == 1 && P.nstage[1] == 1);
  const fy_hp_pass *v = &P.stage[0][0], *h = &P.stage[1][0];
  CHECK(v->src == 0x10000 && v->sl == 1 && v->sp == 20 && v->dst == 256 && v->dl == 1 &&
        v->dp == 20 && v->lines == 20 && v->out == 8 && v->taps == 150 && v->line_fast);
  CHECK(h->src == 256 && h->sl == 20 && h->sp == 1 && h->dst == 0 && h->dl == 8 && h->dp == 1 &&
        h->lines == 8 && h->out == 8 && h->taps == 15 && !h->warp && !h->line_fast);
  fy_hash_plan_free(&P);
}

/* wHash 8 of a 64 x 64 L image: a copy to the 64 x 64 grid, wavedec2 to
 * 1 x 1 (6 steps), waverec2 (6), wavedec2 to 8 x 8 (3). */
static void test_haar(void) {
  fy_hash_plan P;
  memset(&P, 0, sizeof P);
  fy_gpu_hash_image im = img(0x10000, 64, 64, 1);
  set_bases(&P, 1);
  CHECK(fy_hash_plan_all(&P, &im, 1, MASK(FERRY_HASH_WHASH), 8) == FERRY_OK);
  CHECK(P.u8_bytes == 4096 && P.nstage[0] == 1 && P.nsteps == 15);
  /* levels 64^2 .. 1 doubles (32768, 8192, 2048, 512, then 256 three
   * times) and bands 3 x 32^2 .. 3 x 1 (24576, 6144, 1536, 512, 256, 256) */
  CHECK(P.dbl_bytes == 44288 + 33280);
  const int type[15] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2};
  const int half[15] = {32, 16, 8, 4, 2, 1, 1, 2, 4, 8, 16, 32, 32, 16, 8};
  int ok = 1;
  for (int k = 0; k < 15; k++) {
    const fy_hp_haar *j = &P.steps[k].v[0];
    ok &= P.steps[k].n == 1 && j->type == type[k] && j->h == half[k];
    ok &= j->from_u8 == (k == 0) && j->zero == (k == 6);
    ok &= k == 0 ? j->in == P.hash[0].grid[FERRY_HASH_WHASH] : j->in >= DBL_BASE;
    if (k > 0 && k != 12) /* each step reads what the previous wrote (12 starts again at 64^2) */
      ok &= j->in == P.steps[k - 1].v[0].out;
  }
  CHECK_MSG(ok, "Haar steps not as pywt runs them");
  CHECK(P.steps[11].v[0].out == DBL_BASE);       /* waverec2 ends in level 0 */
  CHECK(P.steps[12].v[0].in == DBL_BASE);        /* which wavedec2 reads */
  CHECK(P.hash[0].wlow == P.steps[14].v[0].out); /* the 8 x 8 approximation */
  CHECK(fy_hash_plan_layout(&P) == FERRY_OK);
  CHECK(P.wtot[0] == 1024 && P.wtot[4] == 32 && P.wtot[5] == 32 && P.wtot[14] == 64);
  fy_hash_plan_free(&P);
}

/* Invariants over a batch of every kind and shape. */
static void check_invariants(fy_hash_plan *P, const fy_gpu_hash_image *im, int n, unsigned kinds,
                             int s) {
  const uint64_t u8_end = P->u8_base + P->u8_bytes, dbl_end = P->dbl_base + P->dbl_bytes;
  const uint64_t tab_end = P->tab_base + (uint64_t)P->tab_entries * 4;
  int inside = 1, overlap = 0;
  size_t nj = P->nstage[0] + P->nstage[1];
  for (size_t a = 0; a < nj; a++) {
    const fy_hp_pass *x = a < P->nstage[0] ? &P->stage[0][a] : &P->stage[1][a - P->nstage[0]];
    uint64_t lo, hi;
    pass_extent(x, &lo, &hi);
    inside &= lo >= P->u8_base && hi < u8_end;
    inside &= x->start >= P->tab_base && x->k == x->start + (uint64_t)x->out * 4;
    inside &= x->k + (uint64_t)x->out * x->taps * 4 <= tab_end;
    for (size_t b = a + 1; b < nj; b++) {
      const fy_hp_pass *y = b < P->nstage[0] ? &P->stage[0][b] : &P->stage[1][b - P->nstage[0]];
      uint64_t lo2, hi2;
      pass_extent(y, &lo2, &hi2);
      overlap += lo <= hi2 && lo2 <= hi;
    }
  }
  for (size_t g = 0; g < P->ngray; g++) {
    uint64_t lo = P->gray[g].dst, hi = lo + (uint64_t)P->gray[g].w * P->gray[g].h;
    inside &= lo >= P->u8_base && hi <= u8_end;
    for (size_t a = 0; a < nj; a++) { /* no pass writes an L image */
      const fy_hp_pass *x = a < P->nstage[0] ? &P->stage[0][a] : &P->stage[1][a - P->nstage[0]];
      uint64_t l2, h2;
      pass_extent(x, &l2, &h2);
      overlap += l2 < hi && lo <= h2;
    }
  }
  for (size_t k = 0; k < P->nsteps; k++)
    for (size_t i = 0; i < P->steps[k].n; i++) {
      const fy_hp_haar *j = &P->steps[k].v[i];
      const uint64_t q = (uint64_t)j->h * j->h * 8;
      inside &= j->out >= P->dbl_base && j->out + q <= dbl_end;
      inside &= j->from_u8 ? j->in >= P->u8_base && j->in < u8_end
                           : j->in >= P->dbl_base && j->in < dbl_end;
      if (j->type != 2)
        inside &= j->bands >= P->dbl_base && j->bands + 3 * q <= dbl_end;
    }
  CHECK_MSG(inside, "a job reaches outside its arena");
  CHECK_MSG(overlap == 0, "%d pairs of jobs write the same bytes", overlap);

  /* every pixel of every grid written exactly once; stage 2 reads stage 1 */
  int cover = 1, reads = 1;
  for (int i = 0; i < n; i++) {
    const fy_hp_hash *hj = &P->hash[i];
    const int wn = fy_whash_scale(im[i].width, im[i].height, s);
    const int gw[5] = {s, s + 1, s, 4 * s, wn}, gh[5] = {s, s, s + 1, 4 * s, wn};
    for (int k = 0; k < 5; k++) {
      if (!(kinds & MASK(k)))
        continue;
      static unsigned char hit[256 * 256];
      const size_t px = (size_t)gw[k] * gh[k];
      memset(hit, 0, px);
      for (size_t a = 0; a < nj; a++) {
        const fy_hp_pass *x = a < P->nstage[0] ? &P->stage[0][a] : &P->stage[1][a - P->nstage[0]];
        if (x->dst != hj->grid[k])
          continue;
        for (int l = 0; l < x->lines; l++)
          for (int o = 0; o < x->out; o++) {
            long long at = l * x->dl + o * x->dp;
            if (at < 0 || (size_t)at >= px)
              cover = 0;
            else
              hit[at]++;
          }
      }
      for (size_t p = 0; p < px; p++)
        cover &= hit[p] == 1;
    }
  }
  for (size_t b = 0; b < P->nstage[1]; b++) {
    const fy_hp_pass *y = &P->stage[1][b];
    const fy_hp_table *t = NULL;
    for (size_t i = 0; i < P->ntabref; i++)
      if (P->tab_base + (uint64_t)P->tabref[i]->off * 4 == y->start)
        t = P->tabref[i];
    if (!t) {
      reads = 0;
      continue;
    }
    int hi_pos = 0; /* the furthest position a window reads */
    for (int i = 0; i < y->out; i++)
      if (t->v[i] - y->shift + y->taps - 1 > hi_pos)
        hi_pos = t->v[i] - y->shift + y->taps - 1;
    const uint64_t last = y->src + (uint64_t)((y->lines - 1) * y->sl + (long long)hi_pos * y->sp);
    int found = 0;
    for (size_t a = 0; a < P->nstage[0]; a++) {
      uint64_t lo, hi;
      pass_extent(&P->stage[0][a], &lo, &hi);
      found |= y->src == lo && last <= hi;
    }
    reads &= found;
  }
  CHECK_MSG(cover, "a grid pixel is written other than once");
  CHECK_MSG(reads, "a second-stage job reads what no first-stage job wrote");

  /* layout: begins padded to 32, offsets aligned and in order, the upload */
  CHECK(fy_hash_plan_layout(P) == FERRY_OK);
  int lay = 1;
  for (int k = 0; k < 2; k++) {
    long long t = 0;
    for (size_t i = 0; i < P->nstage[k]; i++) {
      const fy_hp_pass *j = &P->stage[k][i];
      long long items = (long long)j->lines * j->out * (j->warp ? 32 : 1);
      lay &= j->begin == t && j->begin % 32 == 0;
      t += (items + 31) / 32 * 32;
    }
    lay &= P->tot[k] == t;
  }
  for (size_t k = 0; k < P->nsteps; k++) {
    long long t = 0;
    for (size_t i = 0; i < P->steps[k].n; i++) {
      lay &= P->steps[k].v[i].begin == t;
      t += ((long long)P->steps[k].v[i].h * P->steps[k].v[i].h + 31) / 32 * 32;
    }
    lay &= P->wtot[k] == t;
  }
  size_t at = (size_t)P->tab_entries * 4;
  size_t offs[2 + 1 + 64 + 1], sizes[2 + 1 + 64 + 1], no = 0;
  for (int k = 0; k < 2; k++)
    offs[no] = P->off_p[k], sizes[no++] = P->nstage[k] * sizeof(fy_hp_pass);
  offs[no] = P->off_g, sizes[no++] = P->ngray * sizeof(fy_hp_gray);
  for (size_t k = 0; k < P->nsteps && k < 64; k++)
    offs[no] = P->off_w[k], sizes[no++] = P->steps[k].n * sizeof(fy_hp_haar);
  offs[no] = P->off_h, sizes[no++] = P->nhash * sizeof(fy_hp_hash);
  for (size_t i = 0; i < no; i++) {
    lay &= offs[i] % 256 == 0 && offs[i] >= at;
    at = offs[i] + sizes[i];
  }
  lay &= P->bytes >= at && P->bytes % 256 == 0;
  CHECK_MSG(lay, "the upload's layout is off");
  unsigned char *buf = calloc(1, P->bytes);
  fy_hash_plan_write(P, buf);
  int same = P->nstage[0] == 0 ||
             !memcmp(buf + P->off_p[0], P->stage[0], P->nstage[0] * sizeof(fy_hp_pass));
  same &= !memcmp(buf + P->off_h, P->hash, P->nhash * sizeof(fy_hp_hash));
  for (size_t i = 0; i < P->ntabref; i++)
    same &=
        !memcmp(buf + (size_t)P->tabref[i]->off * 4, P->tabref[i]->v, P->tabref[i]->entries * 4);
  if (P->nsteps)
    same &= !memcmp(buf + P->off_w[P->nsteps - 1], P->steps[P->nsteps - 1].v,
                    P->steps[P->nsteps - 1].n * sizeof(fy_hp_haar));
  CHECK_MSG(same, "the upload does not hold the jobs and tables");
  free(buf);
}

/* The sizing plan (bases 0) and the real one differ only by the bases. */
static void check_rebased(fy_hash_plan *P, const fy_gpu_hash_image *im, int n, unsigned kinds,
                          int s) {
  set_bases(P, 0);
  CHECK(fy_hash_plan_all(P, im, n, kinds, s) == FERRY_OK);
  size_t n0 = P->nstage[0], u8 = P->u8_bytes, dbl = P->dbl_bytes;
  int tabs = P->tab_entries;
  fy_hp_pass *first = malloc(n0 * sizeof *first);
  memcpy(first, P->stage[0], n0 * sizeof *first);
  uint64_t wlow0 = P->hash[n - 1].wlow;
  set_bases(P, 1);
  CHECK(fy_hash_plan_all(P, im, n, kinds, s) == FERRY_OK);
  CHECK(P->nstage[0] == n0 && P->u8_bytes == u8 && P->dbl_bytes == dbl && P->tab_entries == tabs);
  int ok = 1;
  for (size_t i = 0; i < n0; i++) {
    const fy_hp_pass *a = &first[i], *b = &P->stage[0][i];
    ok &= b->dst - a->dst == U8_BASE && b->start - a->start == TAB_BASE && b->taps == a->taps;
    ok &= b->src == a->src || b->src - a->src == U8_BASE; /* the input, or an L image */
  }
  CHECK_MSG(ok, "the sizing plan and the real one differ");
  CHECK(!(kinds & MASK(FERRY_HASH_WHASH)) || P->hash[n - 1].wlow - wlow0 == DBL_BASE);
  free(first);
}

static void test_batch(void) {
  fy_gpu_hash_image im[6] = {img(0x100000, 640, 480, 3), img(0x200000, 37, 1000, 1),
                             img(0x300000, 1000, 37, 3), img(0x400000, 9, 9, 1),
                             img(0x500000, 64, 64, 1),   img(0x600000, 640, 480, 3)};
  for (int s = 8; s <= 16; s += 8)
    for (unsigned kinds = 1; kinds <= FY_GPU_HASH_KINDS; kinds = kinds * 2 + 1) {
      fy_hash_plan P;
      memset(&P, 0, sizeof P);
      check_rebased(&P, im, 6, kinds, s);
      check_invariants(&P, im, 6, kinds, s);
      CHECK(P.nhash == 6 && P.ngray == 3);
      /* image 5 repeats image 0's size: no new table */
      set_bases(&P, 0);
      fy_hash_plan_all(&P, im, 5, kinds, s);
      int t5 = P.tab_entries;
      fy_hash_plan_all(&P, im, 6, kinds, s);
      CHECK(P.tab_entries == t5);
      fy_hash_plan_free(&P);
    }
}

/* Rounds: the first image always, then as many as fit the budget. */
static void test_rounds(void) {
  fy_hash_plan P;
  memset(&P, 0, sizeof P);
  fy_gpu_hash_image im[3] = {img(0x100000, 300, 200, 3), img(0x200000, 120, 90, 1),
                             img(0x300000, 50, 70, 3)};
  const unsigned kinds = FY_GPU_HASH_KINDS;
  size_t b[3], in = 0;
  for (int i = 0; i < 3; i++) {
    b[i] = fy_hash_plan_image_bytes(&P, &im[i], kinds, 8);
    set_bases(&P, 0);
    CHECK(fy_hash_plan_all(&P, &im[i], 1, kinds, 8) == FERRY_OK);
    CHECK(b[i] == P.u8_bytes + P.dbl_bytes + (size_t)P.tab_entries * 4 && b[i] > 0);
  }
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 0, b[0] + b[1], 100, &in) == 2 && in == 0);
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 0, b[0] + b[1] - 1, 100, &in) == 1);
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 0, 1, 100, &in) == 1); /* over, but alone */
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 0, (size_t)-1, 2, &in) == 2);
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 0, (size_t)-1, 100, &in) == 3);
  size_t staged = 0;
  for (int i = 0; i < 3; i++)
    staged += fy_hp_align256(im[i].pitch * (size_t)(im[i].height - 1) +
                             (size_t)im[i].width * im[i].channels);
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 1, (size_t)-1, 100, &in) == 3 && in == staged);
  /* with staging counted, the budget that fit two images no longer does */
  CHECK(fy_hash_plan_round(&P, im, 3, kinds, 8, 1, b[0] + b[1], 100, &in) == 1);
  fy_hash_plan_free(&P);
}

/* The kernels' output words into results: only the kinds asked for, in
 * grid order, four words each, at the hash size's bit count. */
static void test_results(void) {
  fy_gpu_hash_image im[2] = {{(const uint8_t *)1, 7, 3, 1, 7}, {(const uint8_t *)1, 5, 9, 3, 15}};
  uint64_t words[2 * FY_HP_NGRID * 4];
  for (size_t i = 0; i < sizeof words / sizeof *words; i++)
    words[i] = 0x1000 * i + 7;
  ferry_hash_result out[2];
  memset(out, 0xEE, sizeof out);
  const unsigned kinds = FERRY_HASH_MASK(FERRY_HASH_AHASH) | FERRY_HASH_MASK(FERRY_HASH_PHASH);
  fy_hash_plan_results(im, 2, kinds, 16, words, out);
  for (int i = 0; i < 2; i++) {
    CHECK(out[i].width == im[i].width && out[i].height == im[i].height);
    CHECK(out[i].kinds == kinds && out[i].exact == 1);
    for (int k = 0; k < FY_HP_NGRID; k++) {
      const int want = (kinds >> k) & 1;
      CHECK(out[i].hash[k].bits == (want ? 256 : 0));
      for (int q = 0; q < 4; q++)
        CHECK(out[i].hash[k].w[q] == (want ? words[((size_t)i * FY_HP_NGRID + k) * 4 + q] : 0));
    }
  }
}

int main(void) {
  test_results();
  test_copy();
  test_horizontal_first();
  test_vertical_first();
  test_haar();
  test_batch();
  test_rounds();
  return check_done();
}
