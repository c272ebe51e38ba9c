/* device_slot.c — a slot's GPU side in the loader's GPU mode (device.c
 * opens it): where the CPU path stages a sample, the per-batch accounting
 * reset when the slot takes a new batch, the completed batch's compaction
 * and kernel launch, the consumer's wait for its kernels and its release.
 * Calls only the GPU layer (cuda/gpu.h), so that run_sample.c and
 * loader.c use it without a circle through device.c. */
#include "pipeline/loader_int.h"

#include <stdio.h>
#include <string.h>

static size_t stage_bytes(const ferry_loader *L) { return (size_t)3 * L->o.width * L->o.height; }

/* The CPU path's samples take staging places in the order they start, not
 * at their place in the batch, so that the batch uploads only as many
 * images as the CPU made (the engine's samples need none): the whole
 * batch's staging is 38.5 MB at 224x224, uploaded per batch once a single
 * sample took the CPU path. Sample k keeps its place if asked again. */
static int stage_place(ferry_loader *L, slot *s, int k) {
  int *of = &L->stage_of[(size_t)s->id * L->o.batch_size + k];
  if (*of == 0)
    *of = __atomic_fetch_add(&L->staged_n[s->id], 1, __ATOMIC_RELAXED) + 1;
  return *of - 1;
}

void *fy_dev_sample_dst(ferry_loader *L, slot *s, int k) {
  return fy_gpu_staging(L->gpu, s->id) + (size_t)stage_place(L, s, k) * stage_bytes(L);
}

void fy_dev_sample_done(ferry_loader *L, slot *s, int k, int64_t idx, int epoch) {
  fy_gpu_sample *smp = &fy_gpu_samples(L->gpu, s->id)[k];
  memset(smp, 0, sizeof *smp);
  smp->src = fy_gpu_staged_src(L->gpu, s->id, stage_place(L, s, k));
  smp->pitch = L->o.width * 3;
  smp->staged = 1;
  smp->flip = 0; /* the CPU path has flipped it already */
  (void)idx, (void)epoch;
}

void fy_dev_slot_reset(ferry_loader *L, slot *s) {
  L->arena_used[s->id] = 0;
  L->temp_used[s->id] = 0;
  L->table_used[s->id] = 0;
  L->staged_n[s->id] = 0;
  memset(&L->stage_of[(size_t)s->id * L->o.batch_size], 0,
         (size_t)L->o.batch_size * sizeof *L->stage_of);
}

int fy_dev_finish(ferry_loader *L, slot *s) {
  fy_gpu_sample *smp = fy_gpu_samples(L->gpu, s->id);
  int j = 0;
  for (int k = 0; k < s->expected; k++) {
    if (s->failed[k])
      continue;
    smp[j] = smp[k];
    smp[j].out_index = j;
    s->labels[j] = s->labels[k];
    s->indices[j] = s->indices[k];
    j++;
  }
  s->batch.count = j;
  s->batch.nbytes = (size_t)j * L->sample_bytes;
  /* staging places the batch took (each sample at most one): the images uploaded */
  int staged = __atomic_load_n(&L->staged_n[s->id], __ATOMIC_RELAXED);
  return fy_gpu_finish(L->gpu, s->id, j, L->table_used[s->id], staged);
}

int fy_dev_ready(ferry_loader *L, slot *s, int timeout_ms) {
  s->batch.data = fy_gpu_output(L->gpu, s->id);
  return fy_gpu_wait_for(L->gpu, s->id, timeout_ms);
}

void fy_dev_release(ferry_loader *L, slot *s, void *stream) {
  if (fy_gpu_release(L->gpu, s->id, stream) != FERRY_OK)
    fy_log(FERRY_LOG_WARNING, "%s", ferry_last_error());
}
