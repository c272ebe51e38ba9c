/* pack_build.c — `ferry pack`: runs the loader over the source (all cores,
 * deterministic transforms, u8 HWC) and writes one shard per batch, or
 * (--store jpeg) re-encodes each image small (pack_jpeg.c), or (--store
 * wds) copies the files into WebDataset shards (pack_wds.c). Every store
 * the same rules: the folder new, empty or this pack's own (PLAN), never
 * the source, inside it or holding one of its inputs; one writer at a
 * time (a lock); temporaries removed by exact name; an interrupted build
 * resumes: complete shards are kept, the rest redone. */
#include "core/user_file.h"
#include "io/source.h"
#include "jobs/jobs.h"
#include "pack/pack.h"
#include "pipeline/loader_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void ferry_pack_options_default(ferry_pack_options *o) {
  memset(o, 0, sizeof *o);
  o->width = o->height = 224;
  o->crop = FERRY_CROP_CENTER;
  o->crop_ratio = 0.875f;
  o->filter = FERRY_FILTER_TRIANGLE;
  o->shard_size = 1024;
  o->store = FERRY_PACK_U8;
  o->quality = 90;
}

/* The settings a pack was made with: resuming with others is refused. */
static void plan_text(const ferry_pack_options *o, int64_t n, char *buf, size_t len) {
  if (o->store == FERRY_PACK_WDS) { /* the files as they are: no size, crop or filter */
    snprintf(buf, len, "ferry-pack-plan 1\nsource %s\nshard_size %d\nsamples %lld\nstore wds\n",
             o->source, o->shard_size, (long long)n);
    return;
  }
  snprintf(buf, len,
           "ferry-pack-plan 1\nsource %s\nsize %d %d\ncrop %d %.6f\nfilter %d\nshard_size %d\n"
           "samples %lld\n",
           o->source, o->height, o->width, (int)o->crop, o->crop_ratio, (int)o->filter,
           o->shard_size, (long long)n);
  /* u8 plans read as before this line existed: resuming one still works */
  if (o->store == FERRY_PACK_JPEG) {
    size_t k = strlen(buf);
    snprintf(buf + k, len - k, "store jpeg quality %d\n", o->quality);
  }
}

/* A directory without a PLAN is a new pack only when it holds nothing else
 * (ferry's own temporaries aside): packing into a folder of the user's
 * would write MANIFEST, PLAN and shard files among theirs. */
static int check_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return fy_error(FERRY_EIO, "%s: cannot open: %s", dir, strerror(errno));
  struct dirent *e;
  char other[256] = "";
  while ((e = readdir(d)) != NULL && !other[0])
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !fy_pack_is_temp(e->d_name))
      snprintf(other, sizeof other, "%s", e->d_name);
  closedir(d);
  if (other[0])
    return fy_error(FERRY_EINVAL,
                    "%s: not empty (it holds %s) and not a ferry pack (no PLAN): pack into a "
                    "new or empty directory",
                    dir, other);
  return FERRY_OK;
}

/* Checks or writes PLAN; sets *id to the pack's (0 for a PLAN written
 * before packs had one: its shards are unbound too). */
static int check_plan(const ferry_pack_options *o, int64_t n, uint64_t *id) {
  char want[8192], path[4200], have[8192];
  plan_text(o, n, want, sizeof want);
  snprintf(path, sizeof path, "%s/PLAN", o->output);
  FILE *f = fy_pack_fopen(path);
  if (!f && errno == EINVAL)
    return fy_error(FERRY_EINVAL, "%s: not a regular file", path);
  if (!f) { /* a new pack: the folder was found empty (check_folder) */
    *id = fy_pack_new_id();
    size_t k = strlen(want);
    snprintf(want + k, sizeof want - k, "id %016llx\n", (unsigned long long)*id);
    return fy_pack_write_small(o->output, "PLAN", want);
  }
  size_t k = fread(have, 1, sizeof have - 1, f);
  have[k] = '\0';
  fclose(f);
  /* the id line is the pack's own, not a setting */
  *id = 0;
  char *line = strstr(have, "\nid ");
  unsigned long long v = 0;
  int end = 0;
  if (line && sscanf(line + 1, "id %16llx\n%n", &v, &end) == 1 && end > 0 && !line[1 + end]) {
    *id = v;
    line[1] = '\0';
  }
  if (strcmp(have, want) != 0)
    return fy_error(FERRY_EINVAL,
                    "%s: holds a pack made with other settings (see its PLAN); "
                    "remove it or choose another directory",
                    o->output);
  return FERRY_OK;
}

/* Whether `dir` holds a pack's PLAN (*own 1), else that it holds nothing
 * (ferry's own temporaries aside): checked before the source is read, so
 * that nothing is written into a folder of the user's. */
static int check_folder(const char *dir, int *own) {
  char path[4200];
  struct stat st;
  snprintf(path, sizeof path, "%s/PLAN", dir);
  *own = lstat(path, &st) == 0;
  return *own ? FERRY_OK : check_empty(dir);
}

/* Input `input` (a file or folder the pack reads) is not in the pack's
 * folder: the name its real path has, taken in `dir`, is not that very
 * file (fy_out_guard), which a shard, PLAN or temporary of that name
 * would replace. */
static int guard_input(const char *dir, const char *input) {
  char *real = realpath(input, NULL);
  if (!real)
    return FERRY_OK; /* gone, or not a path (a pattern): its reader names it */
  const char *base = strrchr(real, '/');
  base = base && base[1] ? base + 1 : real;
  char out[8400];
  snprintf(out, sizeof out, "%s/%s", dir, base);
  free(real);
  return fy_out_guard(out, input);
}

/* No input of the source inside a pack's folder that already holds a pack
 * (a new or empty folder holds none): the source itself, each shard of
 * shards, each file of a folder or a list. */
static int guard_inputs(const char *dir, const char *source, const fy_source *src) {
  int rc = guard_input(dir, source);
  for (int32_t k = 0; rc == FERRY_OK && src->shard && k < src->nshards; k++)
    rc = guard_input(dir, src->shards[k]);
  for (int64_t i = 0; rc == FERRY_OK && !src->shard && i < src->count; i++)
    rc = guard_input(dir, fy_source_path(src, i));
  return rc;
}

/* The samples of the missing shards, in order, as a source of their own
 * (in memory: a name with a newline or a comma stays one path). Absolute
 * paths, as a pack stores them. */
static int todo_source(const ferry_pack_options *o, const fy_source *src, const int *missing,
                       int nmissing, fy_source *todo) {
  memset(todo, 0, sizeof *todo);
  int rc = FERRY_OK;
  for (int m = 0; m < nmissing && rc == FERRY_OK; m++) {
    int64_t a = (int64_t)missing[m] * o->shard_size, b = a + o->shard_size;
    for (int64_t i = a; i < b && i < src->count && rc == FERRY_OK; i++) {
      char *abs = src->shard ? NULL : realpath(fy_source_path(src, i), NULL);
      rc = fy_source_add_from(todo, src, i, abs);
      free(abs);
    }
  }
  if (rc)
    fy_source_free(todo);
  return rc;
}

/* Runs the loader over the to-do samples (taken over), one shard per batch. */
static int pack_missing(const ferry_pack_options *o, uint64_t id, fy_source *todo,
                        const int *missing, int nmissing, int64_t done0, int64_t total) {
  ferry_loader_options lo;
  ferry_loader_options_default(&lo);
  lo.source = o->source;
  lo.batch_size = o->shard_size;
  lo.width = o->width;
  lo.height = o->height;
  lo.crop = o->crop;
  lo.crop_ratio = o->crop_ratio;
  lo.filter = o->filter;
  lo.layout = FERRY_LAYOUT_HWC;
  lo.dtype = FERRY_U8;
  lo.shuffle = 0;
  lo.workers = o->workers;
  lo.prefetch = 2;
  lo.on_error = o->on_error;
  lo.on_skip = o->on_skip;
  lo.on_skip_user = o->on_skip_user;
  ferry_loader *L;
  int rc = fy_loader_open_source(&lo, todo, 1, &L); /* a batch is its shard */
  if (rc)
    return rc;
  const char **paths = malloc(sizeof *paths * (size_t)o->shard_size);
  if (!paths) {
    ferry_loader_close(L);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  ferry_batch *b;
  int m = 0;
  int64_t done = done0;
  while (rc == FERRY_OK && (rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    for (int i = 0; i < b->count; i++)
      paths[i] = ferry_loader_path(L, b->indices[i]);
    rc = m < nmissing ? fy_pack_write_shard(o->output, id, missing[m++], o->height, o->width, 3,
                                            b->count, b->data, b->labels, paths)
                      : fy_error(FERRY_EINTERNAL, "pack: more batches than shards");
    done += o->shard_size;
    if (o->progress)
      o->progress(o->progress_user, done < total ? done : total, total);
    ferry_loader_release(L, b);
  }
  free(paths);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", ferry_last_error());
  ferry_loader_close(L);
  if (rc == FERRY_END && m != nmissing)
    return fy_error(FERRY_EINTERNAL, "pack: %d of %d shards written", m, nmissing);
  return rc == FERRY_END ? FERRY_OK : fy_error(rc, "%s", msg);
}

static int pack_locked(const ferry_pack_options *o);

int ferry_pack_build(const ferry_pack_options *o) {
  if (!o || !o->source || !o->output || o->shard_size < 1 || o->width < 1 || o->height < 1)
    return fy_error(FERRY_EINVAL, "pack: source, output, size and shard size are required");
  if (o->store != FERRY_PACK_U8 && o->store != FERRY_PACK_JPEG && o->store != FERRY_PACK_WDS)
    return fy_error(FERRY_EINVAL,
                    "pack: store must be FERRY_PACK_U8, FERRY_PACK_JPEG or FERRY_PACK_WDS");
  if (o->store == FERRY_PACK_JPEG && (o->quality < 1 || o->quality > 100))
    return fy_error(FERRY_EINVAL, "pack: JPEG quality %d out of range (1..100)", o->quality);
  if (o->crop == FERRY_CROP_RANDOM)
    return fy_error(FERRY_EINVAL, "pack: random crops are augmentation: pack with center or "
                                  "none and crop when loading");
  /* no output over an input: the folder is neither the source nor inside
   * it, checked before anything is made (an empty class folder would shift
   * every label) */
  int rc = fy_out_guard(o->output, o->source);
  if (rc)
    return rc;
  int made = mkdir(o->output, 0755) == 0;
  if (!made && errno != EEXIST)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", o->output, strerror(errno));
  /* One writer a directory: a lock on the directory itself (released
   * when this returns, or when the process dies). */
  int lock = open(o->output, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0) {
    rc = fy_error(FERRY_EIO, "%s: cannot open: %s", o->output, strerror(errno));
  } else if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    rc = fy_error(FERRY_ESTATE, "%s: another ferry pack is writing this directory", o->output);
    made = 0; /* the other writer's now */
  } else {
    rc = pack_locked(o);
  }
  /* a folder this run made and left empty (it failed before writing):
   * removed, still under the lock; rmdir removes only an empty one */
  if (rc && made)
    rmdir(o->output);
  if (lock >= 0)
    close(lock);
  return rc;
}

static int pack_locked(const ferry_pack_options *o) {
  int own;
  int rc = check_folder(o->output, &own);
  if (rc)
    return rc;
  fy_source src;
  rc = fy_source_open(&src, o->source);
  if (rc)
    return rc;
  if (own)
    rc = guard_inputs(o->output, o->source, &src);
  uint64_t id = 0;
  if (rc == FERRY_OK)
    rc = check_plan(o, src.count, &id);
  if (o->store == FERRY_PACK_WDS) {
    if (rc == FERRY_OK) {
      fy_pack_remove_temps(o->output);
      rc = fy_pack_build_wds(o, &src);
    }
    fy_source_free(&src);
    return rc;
  }
  int nshards = (int)((src.count + o->shard_size - 1) / o->shard_size);
  int *missing = malloc(sizeof *missing * (size_t)(nshards ? nshards : 1));
  int nmissing = 0;
  int64_t done = 0;
  if (rc == FERRY_OK && !missing)
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  if (rc == FERRY_OK) {
    fy_pack_remove_temps(o->output);
    for (int k = 0; k < nshards && rc == FERRY_OK; k++) {
      uint32_t c;
      int st = fy_pack_shard_state(o->output, k, id, &c);
      if (st == FY_SHARD_FOREIGN)
        rc = fy_pack_foreign_shard(o->output, k);
      else if (st == FY_SHARD_DONE)
        done += o->shard_size;
      else
        missing[nmissing++] = k;
    }
  }
  if (rc == FERRY_OK && o->progress)
    o->progress(o->progress_user, done < src.count ? done : src.count, src.count);
  if (rc == FERRY_OK && o->store == FERRY_PACK_JPEG) {
    rc = fy_pack_build_jpeg(o, id, &src, missing, nmissing, done);
  } else if (rc == FERRY_OK && nmissing > 0) {
    fy_source todo;
    rc = todo_source(o, &src, missing, nmissing, &todo);
    if (rc == FERRY_OK)
      rc = pack_missing(o, id, &todo, missing, nmissing, done, src.count);
  }
  if (rc == FERRY_OK)
    rc = fy_pack_write_manifest(o->output, o->source, o->height, o->width, nshards, id);
  free(missing);
  fy_source_free(&src);
  return rc;
}
