/* pack_jpeg.c — `ferry pack --store jpeg`: each image decoded (upright),
 * resized so that its short side is the pack's size (aspect kept, never
 * enlarged, Pillow-exact resampler) and re-encoded as a small baseline
 * JPEG (libjpeg-turbo, 4:2:0, no Huffman optimisation). Workers claim the
 * samples of the missing shards in order; whichever finishes a shard's
 * last sample writes that shard (atomically, as for u8 shards), so the
 * others keep encoding meanwhile. */
#include "codec/codec.h"
#include "image/image.h"
#include "io/source.h"
#include "jobs/jobs.h"
#include "pack/pack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct jpack_shard {
  int64_t first; /* source index of its first sample */
  int n;         /* samples it covers in the source */
  int left;      /* not processed yet */
  uint8_t **jpeg;
  size_t *len;
} jpack_shard;

typedef struct jpack {
  const ferry_pack_options *o;
  uint64_t id; /* the pack's */
  const fy_source *src;
  char **abs; /* per claimed sample: absolute source path, set by the worker */
  const int *missing;
  int nmissing;
  jpack_shard *shards;
  int64_t total; /* samples of the missing shards */
  int64_t next;  /* next position to claim */
  int64_t done, all;
  pthread_mutex_t mu;
  int rc;
  char msg[1024];
} jpack;

typedef struct jworker {
  jpack *J;
  fy_buf file, resized;
  fy_decoder dec;
  fy_resize_ctx rs;
} jworker;

/* The output size for an upright w x h source: torchvision Resize(s) —
 * short side s, long side s * long / short truncated — unless the short
 * side is already s or less (never enlarged). */
static void target_size(int w, int h, int s, int *ow, int *oh) {
  if ((w < h ? w : h) <= s) {
    *ow = w;
    *oh = h;
  } else if (w < h) {
    *ow = s;
    *oh = (int)((int64_t)s * h / w);
  } else {
    *oh = s;
    *ow = (int)((int64_t)s * w / h);
  }
}

/* Decodes, resizes and encodes one source image. */
static int make_sample(jworker *w, int64_t idx, const char *path, uint8_t **out, size_t *len) {
  const ferry_pack_options *o = w->J->o;
  int s = o->width < o->height ? o->width : o->height;
  size_t n = 0;
  int rc = w->J->src->shard ? fy_source_read(w->J->src, idx, 1ull << 30, &w->file, &n)
                            : fy_read_file(path, 1ull << 30, &w->file, &n);
  if (rc)
    return rc;
  ferry_decode_options dopt;
  ferry_decode_options_default(&dopt);
  /* DCT scaling only down to what still keeps the short side >= s */
  dopt.min_width = dopt.min_height = s;
  fy_decoded d;
  rc = fy_decode(&w->dec, w->file.p, n, path, &dopt, NULL, NULL, &d);
  if (rc)
    return rc;
  int ow, oh;
  target_size(d.src_w, d.src_h, s, &ow, &oh);
  const uint8_t *px = d.image.data;
  size_t stride = d.image.stride;
  if (ow != d.image.width || oh != d.image.height) {
    rc = fy_buf_reserve(&w->resized, (size_t)ow * oh * 3);
    if (rc == FERRY_OK)
      rc = fy_resize_u8(d.image.data, d.image.width, d.image.height, d.image.stride, 3, NULL,
                        w->resized.p, ow, oh, (size_t)ow * 3, o->filter, &w->rs);
    if (rc)
      return fy_error(rc, "%s: %s", path, ferry_last_error());
    px = w->resized.p;
    stride = (size_t)ow * 3;
  }
  return fy_jpeg_encode(px, ow, oh, stride, o->quality, path, out, len);
}

/* Writes shard m (its samples all processed): the ones that failed under
 * on_error skip are left out. Called without the lock. */
static int write_shard(jpack *J, int m) {
  jpack_shard *sh = &J->shards[m];
  const ferry_pack_options *o = J->o;
  const uint8_t **samples = malloc(sizeof *samples * (size_t)sh->n);
  size_t *lens = malloc(sizeof *lens * (size_t)sh->n);
  int32_t *labels = malloc(sizeof *labels * (size_t)sh->n);
  const char **paths = malloc(sizeof *paths * (size_t)sh->n);
  int rc = samples && lens && labels && paths ? FERRY_OK : fy_error(FERRY_ENOMEM, "out of memory");
  int k = 0;
  for (int i = 0; rc == FERRY_OK && i < sh->n; i++) {
    if (!sh->jpeg[i])
      continue;
    int64_t idx = sh->first + i;
    samples[k] = sh->jpeg[i];
    lens[k] = sh->len[i];
    labels[k] = J->src->labels[idx];
    paths[k] = J->abs[idx - J->shards[0].first] ? J->abs[idx - J->shards[0].first]
                                                : fy_source_path(J->src, idx);
    k++;
  }
  if (rc == FERRY_OK)
    rc = fy_pack_write_shard_var(o->output, J->id, J->missing[m], FY_PACK_KIND_JPEG, o->height,
                                 o->width, 3, k, samples, lens, labels, paths);
  free(samples);
  free(lens);
  free(labels);
  free(paths);
  return rc;
}

/* Position pos of the to-do sequence: shard m, sample i within it. */
static void locate(const jpack *J, int64_t pos, int *m, int *i) {
  int lo = 0, hi = J->nmissing - 1;
  int64_t S = J->o->shard_size;
  /* every shard but possibly the source's last is full: pos / S is exact */
  lo = (int)(pos / S);
  if (lo > hi)
    lo = hi;
  *m = lo;
  *i = (int)(pos - (int64_t)lo * S);
}

static void fail(jpack *J, int rc) {
  if (J->rc == FERRY_OK) {
    J->rc = rc;
    snprintf(J->msg, sizeof J->msg, "%s", ferry_last_error());
  }
}

static void *worker_run(void *arg) {
  jworker *w = arg;
  jpack *J = w->J;
  pthread_mutex_lock(&J->mu);
  while (J->rc == FERRY_OK && J->next < J->total) {
    int64_t pos = J->next++;
    pthread_mutex_unlock(&J->mu);
    int m, i;
    locate(J, pos, &m, &i);
    jpack_shard *sh = &J->shards[m];
    int64_t idx = sh->first + i;
    const char *path = fy_source_path(J->src, idx);
    /* absolute, as u8 packs store them (the loader reports these) */
    char *abs = J->src->shard ? NULL : realpath(path, NULL);
    J->abs[idx - J->shards[0].first] = abs;
    uint8_t *jpeg = NULL;
    size_t len = 0;
    int rc = make_sample(w, idx, abs ? abs : path, &jpeg, &len);
    pthread_mutex_lock(&J->mu);
    if (rc && J->o->on_error == FERRY_ON_ERROR_FAIL) {
      fail(J, rc);
    } else if (rc && J->o->on_skip) {
      J->o->on_skip(J->o->on_skip_user, abs ? abs : path, rc, ferry_last_error());
    } else if (rc) {
      fy_log(FERRY_LOG_WARNING, "skipped %s", ferry_last_error());
    }
    sh->jpeg[i] = jpeg;
    sh->len[i] = len;
    if (--sh->left > 0 || J->rc != FERRY_OK)
      continue;
    pthread_mutex_unlock(&J->mu);
    rc = write_shard(J, m);
    for (int k = 0; k < sh->n; k++) {
      free(sh->jpeg[k]);
      sh->jpeg[k] = NULL;
    }
    pthread_mutex_lock(&J->mu);
    if (rc) {
      fail(J, rc);
      continue;
    }
    J->done += J->o->shard_size;
    if (J->o->progress)
      J->o->progress(J->o->progress_user, J->done < J->all ? J->done : J->all, J->all);
  }
  pthread_mutex_unlock(&J->mu);
  return NULL;
}

int fy_pack_build_jpeg(const ferry_pack_options *o, uint64_t id, const fy_source *src,
                       const int *missing, int nmissing, int64_t done0) {
  if (nmissing == 0)
    return FERRY_OK;
  jpack J;
  memset(&J, 0, sizeof J);
  J.o = o;
  J.id = id;
  J.src = src;
  J.missing = missing;
  J.nmissing = nmissing;
  J.done = done0;
  J.all = src->count;
  J.shards = calloc((size_t)nmissing, sizeof *J.shards);
  int rc = J.shards ? FERRY_OK : fy_error(FERRY_ENOMEM, "out of memory");
  for (int m = 0; rc == FERRY_OK && m < nmissing; m++) {
    jpack_shard *sh = &J.shards[m];
    sh->first = (int64_t)missing[m] * o->shard_size;
    int64_t left = src->count - sh->first;
    sh->n = sh->left = (int)(left < o->shard_size ? left : o->shard_size);
    sh->jpeg = calloc((size_t)sh->n, sizeof *sh->jpeg);
    sh->len = calloc((size_t)sh->n, sizeof *sh->len);
    if (!sh->jpeg || !sh->len)
      rc = fy_error(FERRY_ENOMEM, "out of memory");
    J.total += sh->n;
  }
  /* one absolute path per source sample from the first missing shard on */
  int64_t span = rc == FERRY_OK ? src->count - J.shards[0].first : 0;
  if (rc == FERRY_OK && !(J.abs = calloc((size_t)(span ? span : 1), sizeof *J.abs)))
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nw = o->workers ? o->workers : cores > 0 ? (int)cores : 1;
  if (nw > J.total)
    nw = (int)J.total;
  jworker *ws = rc == FERRY_OK ? calloc((size_t)nw, sizeof *ws) : NULL;
  pthread_t *th = rc == FERRY_OK ? calloc((size_t)nw, sizeof *th) : NULL;
  if (rc == FERRY_OK && (!ws || !th))
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  int started = 0;
  if (rc == FERRY_OK) {
    pthread_mutex_init(&J.mu, NULL);
    for (; started < nw; started++) {
      ws[started].J = &J;
      if (pthread_create(&th[started], NULL, worker_run, &ws[started]) != 0)
        break;
    }
    if (started == 0)
      rc = fy_error(FERRY_ENOMEM, "pack: cannot start a worker thread");
    for (int i = 0; i < started; i++)
      pthread_join(th[i], NULL);
    pthread_mutex_destroy(&J.mu);
    if (rc == FERRY_OK && J.rc != FERRY_OK)
      rc = fy_error(J.rc, "%s", J.msg);
  }
  for (int i = 0; ws && i < nw; i++) {
    fy_buf_free(&ws[i].file);
    fy_buf_free(&ws[i].resized);
    fy_decoder_free(&ws[i].dec);
    fy_resize_ctx_free(&ws[i].rs);
  }
  free(ws);
  free(th);
  for (int m = 0; J.shards && m < nmissing; m++) {
    for (int k = 0; J.shards[m].jpeg && k < J.shards[m].n; k++)
      free(J.shards[m].jpeg[k]);
    free(J.shards[m].jpeg);
    free(J.shards[m].len);
  }
  for (int64_t i = 0; J.abs && i < span; i++)
    free(J.abs[i]);
  free(J.abs);
  free(J.shards);
  return rc;
}
