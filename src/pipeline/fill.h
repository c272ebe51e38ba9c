/* fill.h — which samples fill an epoch's batches when files are skipped,
 * decided in plain C for the CPU and the GPU paths alike: every batch but
 * the epoch's last is full (with drop_last, every one).
 *
 * The rule. Batch b first takes its own positions (b*B .. b*B+B-1 of the
 * epoch's order). Its holes (skipped files) take replacements from the
 * pool, in position order: at first the epoch's tail (the positions after
 * the last full batch). When the pool runs out, the epoch's last full
 * batch is given up and its positions become the pool; a replacement
 * that fails too takes the next one. Batches are settled in batch order
 * (b's replacements are fixed before b+1's), so the same files, seed and
 * options give the same samples in the same batches whatever the threads
 * or the timing. With drop_last off, what the pool still holds after the
 * last full batch is the epoch's last batch (short). A batch that finds
 * the pool empty and no batch left to give up is the epoch's last: short,
 * or not delivered with drop_last. The planned count (fy_fill_planned) is
 * an upper bound of the batches delivered; fy_fill_batches says the bound
 * as it stands.
 *
 * No locking: the caller serialises (the loader's ring mutex). */
#ifndef FY_FILL_H
#define FY_FILL_H

#include <stdint.h>

typedef struct fy_fill {
  int64_t n;                   /* samples in the epoch */
  int batch_size;              /* B */
  int drop_last;               /* a short last batch is not delivered */
  int64_t regular;             /* batches with positions of their own (full batches not given up) */
  int64_t pool_next, pool_end; /* the pool: positions [pool_next, pool_end) */
  int64_t settled;             /* batches settled, in order */
  int64_t last;                /* -1, or the number of batches the epoch delivers */
  int in_tail; /* the short last batch takes the pool (it counts, empty pool or not) */
} fy_fill;

/* A new epoch of n samples in batches of batch_size. */
void fy_fill_start(fy_fill *f, int64_t n, int batch_size, int drop_last);
/* Batches an epoch of n samples plans: an upper bound of those delivered. */
int64_t fy_fill_planned(int64_t n, int batch_size, int drop_last);
/* The bound as it stands: batches the epoch may still deliver. */
int64_t fy_fill_batches(const fy_fill *f);
/* Positions below this are batches' own (claimed as such); the ones at or
 * above it are the pool's. */
int64_t fy_fill_own_end(const fy_fill *f);
/* 1 when batch b is the epoch's short last batch made of the pool alone
 * (b == regular, drop_last off): all its places start as holes. */
int fy_fill_is_tail(const fy_fill *f, int64_t b);
/* The next replacement for a hole of batch b, which must be the next to
 * settle (b == settled): a position of the pool, or -1 when there is
 * none: b is then the epoch's last batch (fy_fill_settle says whether it
 * is delivered). Gives up the last full batch when the pool is empty and
 * one after b is left. */
int64_t fy_fill_take(fy_fill *f, int64_t b);
/* Batch b is settled with `count` samples (b == settled): 1 when it is
 * delivered, 0 when it is not (short with drop_last, or empty). */
int fy_fill_settle(fy_fill *f, int64_t b, int count);

#endif
