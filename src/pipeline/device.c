/* device.c — the loader's GPU mode: opening and closing it, the decoder
 * threads that feed the JPEG engine, the engine controller's decisions
 * (engine_ctl.h) put into effect (a slot's own GPU side is device_slot.c). Batches live in device
 * memory. CPU workers decode what they claim into pinned staging (u8, output size); a decoder
 * thread claims chunks of samples and feeds the JPEGs that the hardware
 * engine accepts to nvJPEG, with resampling tables built here. Both kinds
 * of sample meet in one kernel pass per batch (gpu.cu). Work is shared by
 * claiming from the same queue (ring.c): whoever is free takes the next
 * samples, so the split follows the speed of each side; what the engine
 * does not take goes down the CPU path (run_sample.c). */
#include "pipeline/loader_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most samples an engine context claims at once: 64 measured best on
 * an H200 with 16 cores and decode-bound on an H100 over chunks of 32-128
 * (the sweep's script is in git history (b42142f); the figures of 4
 * contexts x 64: bench/CLAIMS.md C17). */
#define CHUNK 64
/* Engine contexts (decoder threads): 4 (chunks of 64, a ring of 6)
 * measured best decode-bound on an H100 over 2-8 contexts and rings of
 * 3-10 (bench/CLAIMS.md C17). */
#define CONTEXTS 4

static void slot_reset(void *L, slot *s);

int fy_dev_open(ferry_loader *L) {
  int n = L->ring.nslots, B = L->o.batch_size, chunk = CHUNK;
  uint64_t per_slot = L->o.device_memory / (uint64_t)n;
  fy_gpu_params p = {.device = L->o.device,
                     .nslots = n,
                     .batch = B,
                     .width = L->o.width,
                     .height = L->o.height,
                     .layout = L->o.layout,
                     .dtype = L->o.dtype,
                     .normalize = L->o.normalize,
                     .arena_bytes = L->o.hw_decode ? (size_t)(per_slot / 4 * 3) : 4096,
                     .temp_bytes = L->o.hw_decode ? (size_t)(per_slot / 4) : 4096,
                     .table_entries = B * 12000,
                     .hw_decode = L->o.hw_decode,
                     .decoders = CONTEXTS,
                     .call_max = chunk < B ? chunk : B};
  memcpy(p.mean, L->o.mean, sizeof p.mean);
  memcpy(p.std, L->o.std, sizeof p.std);
  int rc = fy_gpu_open(&p, &L->gpu);
  if (rc)
    return rc;
  L->gpu_files = calloc((size_t)n * B, sizeof *L->gpu_files);
  L->arena_used = calloc((size_t)n, sizeof *L->arena_used);
  L->temp_used = calloc((size_t)n, sizeof *L->temp_used);
  L->table_used = calloc((size_t)n, sizeof *L->table_used);
  L->staged_n = calloc((size_t)n, sizeof *L->staged_n);
  L->stage_of = calloc((size_t)n * B, sizeof *L->stage_of);
  if (!L->gpu_files || !L->arena_used || !L->temp_used || !L->table_used || !L->staged_n ||
      !L->stage_of)
    return fy_error(FERRY_ENOMEM, "loader: out of memory");
  for (int i = 0; i < n; i++)
    L->ring.slots[i].batch.data = fy_gpu_output(L->gpu, i);
  pthread_mutex_init(&L->dev_mu, NULL);
  L->dev_mu_init = 1;
  L->ring.on_assign = slot_reset; /* a slot's new batch resets its device state */
  L->ring.on_assign_user = L;
  /* A pack needs no decoding: the CPU workers copy its samples. */
  for (int i = 0; fy_gpu_hw_decode(L->gpu) && !L->pack && i < p.decoders; i++) {
    L->dec_args[i].L = L;
    L->dec_args[i].engine = i;
    pthread_mutex_lock(&L->ring.mu);
    L->live++;
    pthread_mutex_unlock(&L->ring.mu);
    if (pthread_create(&L->gpu_tid[i], fy_place_attr(L), fy_dev_decoder_main, &L->dec_args[i]) !=
        0) {
      pthread_mutex_lock(&L->ring.mu);
      L->live--;
      pthread_mutex_unlock(&L->ring.mu);
      return fy_error(FERRY_ENOMEM, "loader: cannot start a GPU decoder thread");
    }
    L->gpu_threads++;
  }
  /* Under the lock: the decoder threads started above read ctl under it
   * (fy_dev_engine_on); until now they see no context on and decode on the CPU. */
  pthread_mutex_lock(&L->ring.mu);
  fy_engine_ctl_init(&L->ctl, L->gpu_threads, n);
  pthread_mutex_unlock(&L->ring.mu);
  return FERRY_OK;
}

void fy_dev_join(ferry_loader *L) {
  for (int i = 0; i < L->gpu_threads; i++)
    pthread_join(L->gpu_tid[i], NULL);
}

void fy_dev_close(ferry_loader *L) {
  L->gpu_threads = 0;
  if (L->dev_mu_init)
    pthread_mutex_destroy(&L->dev_mu);
  L->dev_mu_init = 0;
  for (size_t i = 0; L->gpu_files && i < (size_t)L->ring.nslots * L->o.batch_size; i++)
    fy_buf_free(&L->gpu_files[i]);
  free(L->gpu_files);
  free(L->arena_used);
  free(L->temp_used);
  free(L->table_used);
  free(L->staged_n);
  free(L->stage_of);
  fy_gpu_close(L->gpu);
  L->gpu = NULL;
}

static void slot_reset(void *L, slot *s) { fy_dev_slot_reset(L, s); }

/* ------------------------------------------------------ decoder thread */

typedef struct engine_job {
  int n;
  const uint8_t *data[CHUNK];
  size_t len[CHUNK];
  int w[CHUNK], h[CHUNK];
  uint8_t *dst[CHUNK];
  int64_t pos[CHUNK];
  fy_gpu_sample smp[CHUNK];
} engine_job;

static int plan_locked(ferry_loader *L, slot *s, int epoch, int64_t idx, int w, int h,
                       const fy_box *bx, int32_t *tab, fy_gpu_sample *smp, fy_buf *scratch);

/* Builds the sample's resampling tables and reserves its horizontal-pass
 * space; 0 when they do not fit (the CPU then takes the image). */
static int plan_engine_sample(ferry_loader *L, slot *s, int epoch, int64_t idx, int w, int h,
                              fy_gpu_sample *smp, fy_buf *scratch) {
  fy_box box;
  fy_plan_box(&L->o, L->o.seed, epoch, idx, w, h, &box);
  int32_t *tab = fy_gpu_tables(L->gpu, s->id);
  /* Decoder threads share the slot's tables and arenas. */
  pthread_mutex_lock(&L->dev_mu);
  int ok = plan_locked(L, s, epoch, idx, w, h, &box, tab, smp, scratch);
  pthread_mutex_unlock(&L->dev_mu);
  return ok;
}

static int plan_locked(ferry_loader *L, slot *s, int epoch, int64_t idx, int w, int h,
                       const fy_box *bx, int32_t *tab, fy_gpu_sample *smp, fy_buf *scratch) {
  fy_box box = *bx;
  int used = L->table_used[s->id], cap = L->o.batch_size * 12000;
  fy_axis_table tx, ty;
  if (fy_resize_axis_table(L->o.filter, w, box.x0, box.x1, L->o.width, tab + used, cap - used, &tx,
                           scratch) != FERRY_OK)
    return 0;
  int yat = used + tx.entries;
  if (fy_resize_axis_table(L->o.filter, h, box.y0, box.y1, L->o.height, tab + yat, cap - yat, &ty,
                           scratch) != FERRY_OK)
    return 0;
  size_t temp = (size_t)(ty.last - ty.first) * L->o.width * 3;
  temp = (temp + 255) & ~(size_t)255;
  size_t temp_cap = (size_t)(L->o.device_memory / (uint64_t)L->ring.nslots / 4);
  if (L->temp_used[s->id] + temp > temp_cap)
    return 0;
  memset(smp, 0, sizeof *smp);
  smp->xs = used;
  smp->xk = used + L->o.width;
  smp->xtaps = tx.taps;
  smp->ys = yat;
  smp->yk = yat + L->o.height;
  smp->ytaps = ty.taps;
  smp->row0 = ty.first;
  smp->rows = ty.last - ty.first;
  smp->temp = (int64_t)L->temp_used[s->id];
  smp->flip = fy_plan_flip(&L->o, L->o.seed, epoch, idx);
  L->table_used[s->id] = yat + ty.entries;
  L->temp_used[s->id] += temp;
  return 1;
}

/* Whether the engine should take this file: a baseline JPEG it accepts,
 * upright as stored, within the limits. */
static int engine_wants(ferry_loader *L, int engine, const uint8_t *d, size_t n, int *w, int *h) {
  if (fy_sniff(d, n) != FERRY_FORMAT_JPEG || L->o.filter == FERRY_FILTER_NEAREST)
    return 0;
  if (!L->o.ignore_orientation && fy_jpeg_orientation(d, n) != 1)
    return 0;
  if (!fy_jpeg_structure_ok(d, n))
    return 0; /* damaged: the CPU decodes it and names the damage */
  if (!fy_gpu_jpeg_check(L->gpu, engine, d, n, w, h))
    return 0;
  return !fy_over_pixel_limit((uint64_t)*w, (uint64_t)*h, L->o.max_pixels);
}

static void run_engine(ferry_loader *L, int engine, fy_worker_state *w, slot *s, engine_job *j,
                       int epoch) {
  if (j->n == 0)
    return;
  fy_note_set(w->note, FY_STAGE_ENGINE, NULL, j->n);
  fy_fault_stall(); /* tests: a stalled engine call */
  double t0 = fy_now();
  int rc = fy_gpu_jpeg_decode(L->gpu, engine, j->data, j->len, j->w, j->dst, j->n);
  if (rc == FERRY_OK) { /* each of its images is finished below: counted once, under one lock */
    double call_s = fy_now() - t0;
    pthread_mutex_lock(&L->ring.mu);
    L->stats.gpu_decoded += (uint64_t)j->n;
    L->stats.gpu_chunks++;
    L->stats.gpu_call_s += call_s;
    pthread_mutex_unlock(&L->ring.mu);
  }
  if (rc != FERRY_OK && !__atomic_exchange_n(&L->engine_warned, 1, __ATOMIC_RELAXED))
    fy_log(FERRY_LOG_WARNING,
           "GPU JPEG engine failed on a chunk of %d images (%s); the CPU decodes them", j->n,
           ferry_last_error());
  for (int i = 0; i < j->n; i++) {
    int k = (int)(j->pos[i] - s->number * L->o.batch_size);
    if (rc != FERRY_OK) { /* the CPU decodes them, and names any bad file */
      fy_run_cpu_sample(L, w, s, j->pos[i], epoch);
      continue;
    }
    j->smp[i].src = (uint64_t)(uintptr_t)j->dst[i];
    j->smp[i].pitch = j->w[i] * 3;
    fy_gpu_samples(L->gpu, s->id)[k] = j->smp[i];
    fy_sample_finished(L, s, j->pos[i], FERRY_OK);
  }
}

/* Reserves n bytes of slot s's decode arena; NULL when it is full. */
static uint8_t *arena_take(ferry_loader *L, slot *s, size_t n) {
  n = (n + 255) & ~(size_t)255;
  uint8_t *p = NULL;
  pthread_mutex_lock(&L->dev_mu);
  if (L->arena_used[s->id] + n <= fy_gpu_arena_bytes(L->gpu)) {
    p = fy_gpu_arena(L->gpu, s->id) + L->arena_used[s->id];
    L->arena_used[s->id] += n;
  }
  pthread_mutex_unlock(&L->dev_mu);
  return p;
}

/* Reads and sorts a chunk: engine candidates into the job, the rest to the
 * CPU path right here. */
static void decode_chunk(ferry_loader *L, int engine, fy_worker_state *w, fy_buf *scratch, slot *s,
                         int64_t pos0, int n, int epoch) {
  engine_job j;
  j.n = 0;
  for (int i = 0; i < n; i++) {
    int64_t pos = pos0 + i;
    int k = (int)(pos - s->number * L->o.batch_size);
    int64_t idx = s->order[pos];
    s->labels[k] = L->src.labels[idx];
    s->indices[k] = idx;
    if (__atomic_load_n(&L->bad[idx], __ATOMIC_ACQUIRE)) {
      fy_sample_finished(L, s, pos, FERRY_ECORRUPT);
      continue;
    }
    if (fy_cache_wants(&L->cache, idx)) { /* served from, or kept in, the memory cache */
      fy_run_cpu_sample(L, w, s, pos, epoch);
      continue;
    }
    fy_buf *fb = &L->gpu_files[(size_t)s->id * L->o.batch_size + k];
    size_t len = 0;
    int iw = 0, ih = 0;
    fy_note_set(w->note, FY_STAGE_READ, fy_source_path(&L->src, idx), 0);
    int ok = fy_source_read(&L->src, idx, L->o.max_bytes, fb, &len) == FERRY_OK &&
             engine_wants(L, engine, fb->p, len, &iw, &ih);
    uint8_t *dst = ok ? arena_take(L, s, (size_t)iw * ih * 3) : NULL;
    if (dst && plan_engine_sample(L, s, epoch, idx, iw, ih, &j.smp[j.n], scratch)) {
      j.data[j.n] = fb->p;
      j.len[j.n] = len;
      j.w[j.n] = iw;
      j.dst[j.n] = dst;
      j.pos[j.n++] = pos;
    } else {
      fy_log(FERRY_LOG_DEBUG, "%s to the CPU (engine accepts %d, %dx%d, arena %s)",
             fy_source_path(&L->src, idx), ok, iw, ih, dst ? "ok" : "full or unused");
      fy_run_cpu_sample(L, w, s, pos, epoch);
    }
  }
  run_engine(L, engine, w, s, &j, epoch);
}

int fy_dev_engine_on(const ferry_loader *L, int engine) { return engine < L->ctl.level; }

void fy_dev_asked(ferry_loader *L, int64_t b) {
  int was = L->ctl.level, was_active = L->ctl.active;
  double now = fy_now();
  if (!fy_engine_ctl_step(&L->ctl, now, fy_ring_workers_idle_s(&L->ring, now), L->stats.wait_s,
                          L->nworkers, b >= L->ring.nslots))
    return;
  if (L->ctl.active != was_active)
    fy_log(FERRY_LOG_DEBUG, "CPU workers active %d -> %d of %d: %s (%.1f batches/s, idle %.0f %%)",
           was_active, L->ctl.active, L->ctl.workers, L->ctl.why, L->ctl.rate,
           100 * L->ctl.idle_frac);
  else
    fy_log(FERRY_LOG_DEBUG,
           "JPEG engine contexts %d -> %d: %s (%.1f batches/s, CPU workers idle %.0f %%, the "
           "consumer waiting %.0f %%)",
           was, L->ctl.level, L->ctl.why, L->ctl.rate, 100 * L->ctl.idle_frac,
           100 * L->ctl.wait_frac);
  if (L->ctl.level > was || L->ctl.active > was_active)
    pthread_cond_broadcast(&L->ring.work_cv);
}

void *fy_dev_decoder_main(void *arg) {
  ferry_loader *L = ((fy_dec_arg *)arg)->L;
  int engine = ((fy_dec_arg *)arg)->engine;
  int chunk = CHUNK;
  fy_worker_state w;
  fy_buf scratch = {0};
  memset(&w, 0, sizeof w);
  w.note = &L->dnotes[engine];
  fy_thread_name("ferry-engine");
  pthread_mutex_lock(&L->ring.mu);
  for (;;) {
    slot *s = NULL;
    int n = 0;
    /* Only as many engine contexts decode as help (engine_ctl.h): with
     * a consumer slower than the loader (a training step), engine jobs
     * only lengthen while the step holds the GPU, and a batch waits for
     * its slowest chunk: on an H100, ResNet-50 fed with 3 contexts always
     * on ran at 85-87 % of its synthetic-data rate, with one context at
     * 98.7 % (bench/CLAIMS.md C22); with the controller, ferry's defaults
     * at 98.7 % on an H200 (C20). Decode-bound, every context runs. A
     * context that is off decodes on the CPU, one sample at a time, as a
     * worker does: the cores are then the loader (ResNet-18 there: 12
     * workers fed it 10,600 images/s, 16 workers 13,900). While the memory
     * cache fills, samples take the CPU path too (so that they are kept). */
    int on = fy_dev_engine_on(L, engine);
    int64_t pos =
        fy_ring_claim(&L->ring, w.note, 0, on && !fy_cache_has_room(&L->cache) ? chunk : 1, &s, &n);
    if (pos == FY_CLAIM_AHEAD) {
      fy_loader_make_ahead(L);
      continue;
    }
    if (pos == FY_CLAIM_SETTLE) { /* replacements take the CPU path (fill.h) */
      fy_settle(L, &w);
      continue;
    }
    if (pos < 0)
      break;
    int epoch = s->epoch;
    pthread_mutex_unlock(&L->ring.mu);
    if (on)
      decode_chunk(L, engine, &w, &scratch, s, pos, n, epoch);
    else
      fy_run_cpu_sample(L, &w, s, pos, epoch);
    pthread_mutex_lock(&L->ring.mu);
  }
  fy_note_set(w.note, FY_STAGE_IDLE, NULL, 0);
  L->live--; /* ferry_loader_close waits for this, bounded */
  pthread_cond_broadcast(&L->ring.ready_cv);
  pthread_mutex_unlock(&L->ring.mu);
  fy_worker_state_free(&w);
  fy_buf_free(&scratch);
  return NULL;
}
