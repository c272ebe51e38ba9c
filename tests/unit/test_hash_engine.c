/* test_hash_engine.c — fast-mode hashing with the GPU's JPEG engine
 * (src/hash/engine.c) beside the CPU.
 *
 * Everywhere:
 *  - a fast-mode catalog with device 0 and colorhash among the kinds is
 *    made on the CPU alone (the engine declines colorhash) and equals the
 *    CPU's; without a GPU the same holds for every kind set, and the engine
 *    refuses to start with a reason.
 * With a GPU (and its JPEG engine):
 *  - the engine threads alone over photos, hires, bad (data/sample and the
 *    fixtures when the corpus is absent): every file answered exactly once,
 *    with the CPU's status (a bad file fails with the CPU's error); the
 *    engine decoded files; its hashes against compatible mode's (imagehash
 *    bits) at sizes 8 and 16: differing bits per hash kind, bounded;
 *  - `ferry hash --device cuda --mode fast` (FERRY_BIN): the CPU's rows in
 *    the CPU's order, the engine's count on stderr (how many depends on
 *    timing: reported, not asserted);
 *  - a catalog made so, then updated: nothing hashed the second time.
 * Without CUDA or a GPU the GPU parts print "SKIPPED ..." with the reason. */
#define _POSIX_C_SOURCE 200809L
#include "catalog_check.h"
#include "check.h"
#include "core/testctl.h"
#include "cuda/hash_gpu.h"
#include "file_list.h"
#include "hash/engine.h"
#include "hash/hash.h"

#include <dirent.h>
#include <ferry.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GPU_KINDS FY_GPU_HASH_KINDS

/* Every file but the corpus's notes (MANIFEST.csv, README.md). */
static int not_notes(const char *name) { return !strstr(name, ".csv") && !strstr(name, ".md"); }

static int have_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directories the tests read: the corpus's, else the bundled sample
 * and the fixtures. */
static int test_dirs(const char **dirs, char buf[3][4096]) {
  const char *corpus = getenv("FERRY_CORPUS");
  const char *names[3] = {"photos", "hires", "bad"};
  int n = 0;
  for (int i = 0; corpus && i < 3; i++) {
    snprintf(buf[i], 4096, "%s/%s", corpus, names[i]);
    if (have_dir(buf[i]))
      dirs[n++] = buf[i];
  }
  if (n)
    return n;
  const char *sample = getenv("FERRY_SAMPLE"), *fixtures = getenv("FERRY_FIXTURES");
  snprintf(buf[0], 4096, "%s", sample ? sample : "data/sample");
  dirs[n++] = buf[0];
  if (fixtures) {
    snprintf(buf[1], 4096, "%s", fixtures);
    dirs[n++] = buf[1];
  }
  printf("  (corpus absent: %s%s%s)\n", buf[0], fixtures ? " and " : "", fixtures ? buf[1] : "");
  return n;
}

/* Catalogs of dir with device 0 and on the CPU; `same` asks for identical
 * exports (the engine not in use), else equal file and failure counts. */
/* The log's lines, for the engine's start decision. */
static char engine_log[4096];
static void keep_log(void *user, ferry_log_level level, const char *message) {
  (void)user, (void)level;
  size_t n = strlen(engine_log);
  snprintf(engine_log + n, sizeof engine_log - n, "%s\n", message);
}

/* engine_min_s (ferry_index_options; FERRY_HASH_ENGINE_MIN_S before): a
 * small job stays on the cores (the engine's start and close cost more
 * than it saves there), and says so; a value out of 0..3600 is refused,
 * named, before anything is hashed. */
static void engine_held_back(const char *dir) {
  char tmp[] = "/tmp/ferry-engmin-XXXXXX", idx[256];
  if (!mkdtemp(tmp)) {
    SKIP("engine held back: no temporary directory");
    return;
  }
  snprintf(idx, sizeof idx, "%s/c.fidx", tmp);
  ferry_index_stats st;
  engine_log[0] = '\0';
  ferry_set_log(keep_log, NULL);
  ferry_index_options o;
  ferry_index_options_default(&o);
  CHECK(o.engine_min_s == 2.5);
  o.hash.mode = FERRY_HASH_FAST;
  o.hash.kinds = GPU_KINDS;
  o.device = 0;
  o.on_error = quiet_error;
  o.engine_min_s = 3600;
  CHECK_MSG(ferry_index_update(idx, &dir, 1, &o, &st) == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(st.engine_files == 0 && st.hashed == st.files && st.files > 0,
            "held back: %zu of %zu files by the engine", st.engine_files, st.files);
  CHECK_MSG(strstr(engine_log, "JPEG engine of cuda:0 is not started: the cores") != NULL,
            "log: %s", engine_log);
  unlink(idx);
  o.engine_min_s = -1;
  CHECK(ferry_index_update(idx, &dir, 1, &o, &st) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "engine_min_s -1 is not 0..3600 seconds") != NULL, "%s",
            ferry_last_error());
  CHECK(access(idx, F_OK) != 0); /* refused before anything was written */
  unlink(idx);
  ferry_set_log(NULL, NULL);
  rmdir(tmp);
}

static void catalogs(const char *dir, unsigned kinds, int same, const char *what, int want_engine) {
  char tmp[] = "/tmp/ferry-engcat-XXXXXX", g[256], c[256], gc[256], cc[256];
  if (!mkdtemp(tmp)) {
    SKIP("%s: no temporary directory", what);
    return;
  }
  snprintf(g, sizeof g, "%s/gpu.fidx", tmp);
  snprintf(c, sizeof c, "%s/cpu.fidx", tmp);
  snprintf(gc, sizeof gc, "%s/gpu.csv", tmp);
  snprintf(cc, sizeof cc, "%s/cpu.csv", tmp);
  ferry_index_stats gs, cs, again;
  CHECK_MSG(index_dir(g, dir, 0, FERRY_HASH_FAST, kinds, &gs) == FERRY_OK, "%s: %s", what,
            ferry_last_error());
  CHECK_MSG(index_dir(c, dir, -1, FERRY_HASH_FAST, kinds, &cs) == FERRY_OK, "%s: %s", what,
            ferry_last_error());
  CHECK_MSG(index_dir(g, dir, 0, FERRY_HASH_FAST, kinds, &again) == FERRY_OK, "%s: %s", what,
            ferry_last_error());
  char *a = export_csv(g, gc), *b = export_csv(c, cc);
  int identical = a && b && !strcmp(a, b);
  printf("  %s: %zu files, %zu failed, %zu by the engine (CPU: %zu, %zu failed); export %s the "
         "CPU's; again: %zu hashed, %zu unchanged\n",
         what, gs.files, gs.failed, gs.engine_files, cs.files, cs.failed,
         identical ? "identical to" : "differs from", again.hashed, again.reused);
  CHECK(cs.engine_files == 0 && again.engine_files == 0);
  if (want_engine) /* the engine started first: it claimed the first chunks */
    CHECK_MSG(gs.engine_files > 0, "%s", what);
  CHECK(gs.files > 0 && gs.files == cs.files && gs.failed == cs.failed);
  CHECK(gs.hashed == gs.files && again.hashed == 0 && again.reused == gs.files);
  if (same)
    CHECK_MSG(identical, "%s", what);
  free(a);
  free(b);
  const char *files[] = {g, c, gc, cc};
  for (int i = 0; i < 4; i++)
    unlink(files[i]);
  rmdir(tmp);
}

/* ------------------------------------------------- engine threads alone */

typedef struct feed {
  list *files;
  size_t next;
  pthread_mutex_t mu;
  int *calls, *status, *engine;
  ferry_hash_result *res;
} feed;

static size_t f_claim(void *user, size_t max, size_t *ids) {
  feed *f = user;
  pthread_mutex_lock(&f->mu);
  size_t m = 0;
  while (m < max && f->next < f->files->n)
    ids[m++] = f->next++;
  pthread_mutex_unlock(&f->mu);
  return m;
}

static const char *f_path(void *user, size_t id) { return ((feed *)user)->files->v[id]; }

static void f_done(void *user, size_t id, int status, const ferry_hash_result *r, const char *error,
                   int on_engine) {
  feed *f = user;
  __atomic_fetch_add(&f->calls[id], 1, __ATOMIC_RELAXED);
  f->engine[id] = on_engine;
  f->status[id] = status;
  if (!status)
    f->res[id] = *r;
  CHECK_MSG(status == FERRY_OK || (error && strstr(error, f->files->v[id])),
            "error without the file name: %s", error ? error : "(none)");
}

static ferry_hasher *hasher(ferry_hash_mode mode, int s, unsigned kinds) {
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = mode;
  o.hash_size = s;
  o.kinds = kinds;
  ferry_hasher *h = NULL;
  CHECK(ferry_hasher_new(&o, &h) == FERRY_OK);
  return h;
}

static void engine_alone(list *files, int s, unsigned kinds) {
  feed f = {files, 0, PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, NULL};
  f.calls = calloc(files->n, sizeof *f.calls);
  f.engine = calloc(files->n, sizeof *f.engine);
  f.status = calloc(files->n, sizeof *f.status);
  f.res = calloc(files->n, sizeof *f.res);
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  o.mode = FERRY_HASH_FAST;
  o.hash_size = s;
  o.kinds = kinds;
  fy_engine_feed fd = {f_claim, f_path, f_done, &f};
  fy_hash_engine *e = NULL;
  int rc = fy_hash_engine_start(0, &o, 0, &fd, &e);
  if (rc) {
    SKIP("JPEG engine (size %d): %s", s, ferry_last_error());
    free(f.calls), free(f.status), free(f.res), free(f.engine);
    return;
  }
  double t0 = fy_now();
  fy_engine_stats st;
  fy_hash_engine_finish(e, &st);
  double dt = fy_now() - t0;
  ferry_hasher *fast = hasher(FERRY_HASH_FAST, s, kinds);
  ferry_hasher *compat = hasher(FERRY_HASH_COMPATIBLE, s, kinds);
  long bits[FERRY_HASH_KIND_COUNT] = {0}, within4[FERRY_HASH_KIND_COUNT] = {0}, n = 0;
  int worst[FERRY_HASH_KIND_COUNT] = {0};
  size_t once = 0, status_same = 0, cpu_files = 0, cpu_same = 0;
  /* signatures of engine-decoded files against the CPU's fast ones */
  long sig_n = 0, sig_bits = 0;
  double sig_thumb = 0;
  int sig_worst = 0, sig_far = 0;
  int listed = 0;
  for (size_t i = 0; i < files->n; i++) {
    once += f.calls[i] == 1;
    ferry_hash_result cf, cc;
    int rf = ferry_hash_file(fast, files->v[i], &cf);
    status_same += (rf == FERRY_OK) == (f.status[i] == FERRY_OK);
    if (rf != FERRY_OK || f.status[i] != FERRY_OK)
      continue;
    CHECK_MSG(f.res[i].width == cf.width && f.res[i].height == cf.height &&
                  (f.res[i].kinds & kinds) == kinds,
              "%s: %dx%d kinds %x", files->v[i], f.res[i].width, f.res[i].height, f.res[i].kinds);
    if (f.engine[i] && (kinds & FERRY_HASH_SIGNATURE)) {
      int d = 0, t = 0;
      for (int w = 0; w < 4; w++)
        d += __builtin_popcountll(f.res[i].signature.code[0][w] ^ cf.signature.code[0][w]);
      for (int p = 0; p < FERRY_SIGNATURE_THUMB * FERRY_SIGNATURE_THUMB; p++)
        t += abs(f.res[i].signature.thumb[p] - cf.signature.thumb[p]);
      sig_n++, sig_bits += d;
      sig_thumb += (double)t / (FERRY_SIGNATURE_THUMB * FERRY_SIGNATURE_THUMB);
      sig_worst = d > sig_worst ? d : sig_worst;
      if (d > 64 && sig_far++ < 5)
        printf("    signature far from the CPU's: %s, %d bits\n", files->v[i], d);
    }
    if (!f.engine[i]) { /* the engine thread's CPU fallback: fast mode, bit for bit */
      cpu_files++;
      int eq = 1;
      for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
        if (kinds & FERRY_HASH_MASK(k))
          eq &= ferry_hash_distance(&f.res[i].hash[k], &cf.hash[k]) == 0;
      if (kinds & FERRY_HASH_SIGNATURE)
        eq &= !memcmp(&f.res[i].signature, &cf.signature, sizeof cf.signature);
      cpu_same += eq;
    }
    /* the agreement of the engine's own hashes (the CPU's fast path has its
     * tests and figures elsewhere) */
    if (!f.engine[i] || ferry_hash_file(compat, files->v[i], &cc) != FERRY_OK)
      continue;
    n++;
    int far = 0;
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
      if (!(kinds & FERRY_HASH_MASK(k)))
        continue;
      int d = ferry_hash_distance(&f.res[i].hash[k], &cc.hash[k]);
      bits[k] += d;
      within4[k] += d <= 4;
      if (d > worst[k])
        worst[k] = d;
      if (d > far)
        far = d;
    }
    if (far > s * s / 8 && ++listed <= 12)
      printf("    far from compatible mode: %s (%dx%d), up to %d bits\n", files->v[i], cc.width,
             cc.height, far);
  }
  printf("  engine threads alone, size %d%s: %zu files in %.2f s, %zu by the engine, %zu on the "
         "CPU; answered once: %zu, status as the CPU's: %zu\n",
         s, kinds & FERRY_HASH_MASK(FERRY_HASH_COLORHASH) ? ", colorhash too (RGB)" : "", files->n,
         dt, st.engine, st.cpu, once, status_same);
  CHECK(once == files->n && status_same == files->n);
  CHECK(st.engine > 0 && st.engine + st.cpu == files->n);
  printf("  hashed on the CPU by the engine threads: %zu, equal to fast mode's hashes: %zu\n",
         cpu_files, cpu_same);
  CHECK(cpu_same == cpu_files);
  printf("  engine-decoded files against compatible mode (imagehash's bits), %ld files:\n", n);
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(kinds & FERRY_HASH_MASK(k)) || !n)
      continue;
    double mean = (double)bits[k] / n;
    printf("    %-8s mean %.2f bits, %.1f%% within 4, worst %d\n",
           ferry_hash_kind_name((ferry_hash_kind)k), mean, 100.0 * within4[k] / n, worst[k]);
    /* measured on an H100: 0.00-0.10 (size 8), 0.07-0.91 (size 16) over
     * the corpus's 365 engine files, up to 0.31 over data/sample's 45; the
     * DC path of the CPU: 0.5-0.9 and 1.5-3.8. Breakage (the grayscale
     * luma bug) showed as 30-40 bits on a few files: means over 1. */
    CHECK_MSG(mean <= (s == 8 ? 0.5 : 1.5), "%s mean %.2f",
              ferry_hash_kind_name((ferry_hash_kind)k), mean);
  }
  if (kinds & FERRY_HASH_SIGNATURE) {
    /* the engine's grid (integer cells of the full-size luma) against the
     * CPU's (the JPEG's DC picture): close, not equal */
    printf("    signature, %ld files: whole code mean %.2f bits of 256 (worst %d), thumbnail "
           "mean %.2f levels\n",
           sig_n, sig_n ? (double)sig_bits / sig_n : 0.0, sig_worst,
           sig_n ? sig_thumb / sig_n : 0.0);
    CHECK(sig_n > 0);
    CHECK_MSG(sig_n && (double)sig_bits / sig_n <= 16 && sig_thumb / sig_n <= 4,
              "engine signatures far from the CPU's");
  }
  ferry_hasher_free(fast);
  ferry_hasher_free(compat);
  free(f.calls), free(f.status), free(f.res), free(f.engine);
}

/* ---------------------------------------------- colorhash counts on GPU */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static int same_counts(const fy_color_counts *a, const fy_color_counts *b) {
  return !memcmp(a, b, sizeof *a);
}

/* GPU counts of RGB pixels against fy_color_count_rgb on the same pixels:
 * synthetic images (noise, every (max, min) pair, padded rows) and the
 * corpus JPEGs decoded on the CPU. */
static void color_counts(list *files) {
  fy_gpu_colorer *gc = NULL;
  if (fy_gpu_colorer_new(0, &gc) != FERRY_OK) {
    SKIP("GPU colour counts: %s", ferry_last_error());
    return;
  }
  fy_color_tables t;
  memset(&t, 0, sizeof t);
  CHECK(fy_color_tables_init(&t) == FERRY_OK);
  int images = 0, same = 0;
  for (int k = 0; k < 40 + (int)files->n; k++) {
    ferry_image im;
    memset(&im, 0, sizeof im);
    uint8_t *px = NULL;
    int w, h;
    size_t pitch;
    if (k < 40) { /* synthetic */
      w = 1 + (int)(next32() % (k < 20 ? 64 : 3000));
      h = 1 + (int)(next32() % (k < 20 ? 64 : 700));
      pitch = (size_t)w * 3 + (k % 3) * 7;
      px = malloc(pitch * h);
      for (size_t i = 0; i < pitch * h; i++)
        px[i] = k % 4 == 0 ? (uint8_t)(i * 37 / 3) : (uint8_t)next32();
    } else {
      if (ferry_decode_file(files->v[k - 40], NULL, &im) != FERRY_OK || im.channels != 3)
        goto next; /* not an RGB image: nothing to count here */
      w = im.width, h = im.height, pitch = im.stride;
      px = NULL;
    }
    {
      const uint8_t *src = px ? px : im.data;
      size_t bytes = pitch * (size_t)(h - 1) + (size_t)w * 3;
      void *d = NULL;
      fy_color_counts cpu, gpu;
      memset(&cpu, 0, sizeof cpu);
      fy_color_count_rgb(&t, src, w, h, pitch, NULL, 0, &cpu);
      int rc = fy_gpu_hash_device_alloc(0, bytes, &d);
      if (!rc)
        rc = fy_gpu_hash_device_upload(0, d, src, bytes);
      fy_gpu_hash_image gi = {d, w, h, 3, pitch};
      if (!rc)
        rc = fy_gpu_color_counts(gc, &gi, 1, &gpu);
      fy_gpu_hash_device_free(0, d);
      images++;
      int ok = rc == FERRY_OK && same_counts(&cpu, &gpu);
      same += ok;
      if (!ok && images - same <= 5)
        fprintf(stderr,
                "  colour counts differ: %s (%dx%d): rc %d, black %llu/%llu colors %llu/%llu\n",
                k < 40 ? "synthetic" : files->v[k - 40], w, h, rc, (unsigned long long)cpu.black,
                (unsigned long long)gpu.black, (unsigned long long)cpu.colors,
                (unsigned long long)gpu.colors);
    }
  next:
    free(px);
    ferry_image_free(&im);
  }
  printf("  GPU colorhash counts: %d RGB images (40 synthetic, the rest decoded corpus files), %d "
         "equal to the CPU's\n",
         images, same);
  CHECK(images > 40 && same == images);
  fy_color_tables_free(&t);
  fy_gpu_colorer_free(gc);
}

/* ------------------------------------------------------------- CLI */

static void cli(const char *dir, int want_engine) {
  const char *bin = getenv("FERRY_BIN");
  if (!bin) {
    SKIP("ferry hash --device cuda --mode fast: FERRY_BIN not set");
    return;
  }
  char tmp[] = "/tmp/ferry-engcli-XXXXXX", cmd[8192], out_c[256], out_g[256], err_g[256];
  if (!mkdtemp(tmp))
    return;
  snprintf(out_c, sizeof out_c, "%s/cpu.csv", tmp);
  snprintf(out_g, sizeof out_g, "%s/gpu.csv", tmp);
  snprintf(err_g, sizeof err_g, "%s/gpu.err", tmp);
  const char *h = "--hashes ahash,dhash,phash,whash --hash-size 8";
  snprintf(cmd, sizeof cmd, "'%s' hash --mode fast %s '%s' > '%s' 2>/dev/null", bin, h, dir, out_c);
  int rc_c = system(cmd);
  snprintf(cmd, sizeof cmd, "'%s' hash --device cuda --mode fast %s '%s' > '%s' 2> '%s'", bin, h,
           dir, out_g, err_g);
  int rc_g = system(cmd);
  char *a = slurp(out_c), *b = slurp(out_g), *err = slurp(err_g);
  /* the same rows (path, width, height) in the same order */
  size_t rows = 0, same = 0;
  for (char *p = a, *q = b; p && q && *p && *q; rows++) {
    char *pe = strchr(p, '\n'), *qe = strchr(q, '\n');
    if (!pe || !qe)
      break;
    const char *pc = p, *qc = q;
    for (int commas = 0; pc < pe && commas < 3; pc++)
      commas += *pc == ',';
    for (int commas = 0; qc < qe && commas < 3; qc++)
      commas += *qc == ',';
    same += pc - p == qc - q && !memcmp(p, q, (size_t)(pc - p));
    p = pe + 1;
    q = qe + 1;
  }
  const char *line = err ? strstr(err, "the JPEG engine decoded ") : NULL;
  long engine = line ? strtol(line + strlen("the JPEG engine decoded "), NULL, 10) : -1;
  printf("  ferry hash --device cuda --mode fast %s%s: exit %d (CPU %d), %zu rows, %zu as the "
         "CPU's; engine decoded %ld\n",
         dir, want_engine ? " (engine first)" : "", rc_g, rc_c, rows, same, engine);
  /* how many the engine took depends on timing (the cores start first and
   * may finish a small directory before the GPU is up), unless it starts
   * first */
  CHECK(rc_g == rc_c && rows > 1 && same == rows && engine >= (want_engine ? 1 : 0));
  free(a), free(b), free(err);
  unlink(out_c), unlink(out_g), unlink(err_g);
  rmdir(tmp);
}

/* fy_gpu_listed asks the driver's list and CUDA_VISIBLE_DEVICES, never
 * CUDA: run before anything starts CUDA, the variable restored after. */
static void listed_checks(void) {
  if (fy_gpu_listed(0) == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), "without CUDA")) {
    printf("  fy_gpu_listed: built without CUDA, says so\n");
    return;
  }
  const char *had = getenv("CUDA_VISIBLE_DEVICES");
  char old[256];
  snprintf(old, sizeof old, "%s", had ? had : "");
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  CHECK(fy_gpu_listed(0) == FERRY_EUNSUPPORTED &&
        strstr(ferry_last_error(), "CUDA_VISIBLE_DEVICES is empty"));
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  CHECK(fy_gpu_listed(1) == FERRY_EUNSUPPORTED && strstr(ferry_last_error(), "no CUDA device 1"));
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  int driver_lists_none = 0;
  if (d) {
    driver_lists_none = 1;
    for (struct dirent *e; (e = readdir(d));)
      driver_lists_none &= e->d_name[0] == '.';
    closedir(d);
  }
  CHECK(fy_gpu_listed(0) == (driver_lists_none ? FERRY_EUNSUPPORTED : 1));
  CHECK(fy_gpu_listed(-1) == FERRY_EUNSUPPORTED);
  if (had)
    setenv("CUDA_VISIBLE_DEVICES", old, 1);
  else
    unsetenv("CUDA_VISIBLE_DEVICES");
  printf("  fy_gpu_listed: CUDA_VISIBLE_DEVICES empty, a device past it, device -1\n");
}

int main(void) {
  listed_checks();
  char buf[3][4096];
  const char *dirs[3];
  int nd = test_dirs(dirs, buf);
  const char *sample = getenv("FERRY_SAMPLE");
  const char *small = sample ? sample : "data/sample";
  int gpu = fy_gpu_hash_available(0) == FERRY_OK;
  char why[512];
  snprintf(why, sizeof why, "%s", gpu ? "" : ferry_last_error());
  printf("test_hash_engine: fast-mode hashing with the GPU's JPEG engine\n");
  /* every hash, colorhash included: without a GPU the CPU does it all, bit
   * for bit; with one the engine takes part */
  catalogs(small, FERRY_HASH_ALL, !gpu, "fast catalog, device 0, every hash", 0);
  if (!gpu) {
    ferry_hash_options o;
    ferry_hash_options_default(&o);
    o.kinds = GPU_KINDS;
    fy_engine_feed fd = {f_claim, f_path, f_done, NULL};
    fy_hash_engine *e = (fy_hash_engine *)1;
    CHECK(fy_hash_engine_start(0, &o, 0, &fd, &e) != FERRY_OK && e == NULL &&
          ferry_last_error()[0]);
    catalogs(small, GPU_KINDS, 1, "fast catalog, device 0, no GPU", 0);
    SKIP("test_hash_engine GPU parts: %s", why);
    return check_done();
  }
  list files = {0};
  for (int i = 0; i < nd; i++)
    list_walk(dirs[i], not_notes, &files);
  color_counts(&files);
  engine_alone(&files, 8, GPU_KINDS);
  engine_alone(&files, 16, GPU_KINDS);
  engine_alone(&files, 8, FERRY_HASH_ALL);
  engine_alone(&files, 16, GPU_KINDS | FERRY_HASH_SIGNATURE);
  list_free(&files);
  cli(dirs[0], 0);
  engine_held_back(dirs[0]);
  /* the engine first (the test control FERRY_HASH_ENGINE_FIRST: in the
   * environment for the command, set here for this process): it takes the
   * first chunks, so the catalog and CSV paths surely see its results */
  setenv("FERRY_HASH_ENGINE_FIRST", "1", 1);
  CHECK(fy_tc_set(FY_TC_HASH_ENGINE_FIRST, "1") == FERRY_OK);
  cli(dirs[0], 1);
  for (int i = 0; i < nd; i++) {
    char what[4200];
    snprintf(what, sizeof what, "fast catalog of %s, engine first", dirs[i]);
    catalogs(dirs[i], GPU_KINDS, 0, what,
             strstr(dirs[i], "/photos") || strstr(dirs[i], "/hires") || strstr(dirs[i], "sample"));
  }
  unsetenv("FERRY_HASH_ENGINE_FIRST");
  fy_tc_set(FY_TC_HASH_ENGINE_FIRST, NULL);
  return check_done();
}
