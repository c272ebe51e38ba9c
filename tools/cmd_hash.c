/* cmd_hash.c — `ferry hash PATH... [-o CATALOG.fidx]`: perceptual hashes of
 * image files, printed as CSV or kept in a catalog that later runs update. */
#include "cli.h"

/* Where compatible mode's pixels are not Pillow's (hasher.c decides). */
#define CLI_INEXACT_WHY                                                                            \
  "HEIF, camera raw, 16-bit or compressed BMP, TIFF other than 8-bit grey, RGB or palette, or "    \
  "GIF "                                                                                           \
  "whose first image does not cover the picture: ferry's 8-bit samples are not Pillow's"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: ferry hash PATH... [-o CATALOG.fidx] [options]\n"
    "\n"
    "Perceptual hashes of the image files in PATHs (- reads more PATHs from\n"
    "standard input, one a line; directories are walked,\n"
    "recursively: " FY_IMAGE_EXTENSIONS ", any case; dot files and folders\n"
    "are left out): imagehash's aHash, dHash, vertical dHash, pHash, wHash\n"
    "and colorhash, on every core.\n"
    "\n"
    "Without -o, prints CSV to stdout: path,width,height and one hex column per\n"
    "hash (imagehash's str(hash)). With -o, creates or updates the catalog:\n"
    "new and changed files (size, mtime) are hashed, unchanged ones kept,\n"
    "vanished ones dropped. A file new to the catalog with the name, size and\n"
    "mtime of an entry whose file is gone is taken as that file moved: it keeps\n"
    "its hashes and the old entry goes (a library moved to another folder is\n"
    "not hashed again, nor listed twice). The catalog is replaced atomically;\n"
    "a run that is interrupted loses nothing: the next one resumes from\n"
    "CATALOG.journal.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE       the catalog to create or update\n"
    "  --mode fast|compatible  fast (default): hashes from the JPEG DC\n"
    "                          coefficients or a reduced decode, 10-20x quicker;\n"
    "                          compatible: bit-identical to imagehash 4.3 + Pillow\n"
    "  --hashes LIST           comma-separated ahash,dhash,dhash_v,phash,whash,\n"
    "                          colorhash, signature (catalogs: what `ferry dupes`\n"
    "                          finds turned, mirrored and cropped copies with), or\n"
    "                          all (default)\n"
    "  --hash-size 8|16        256-bit hashes (16, default: they find duplicates\n"
    "                          best) or 64-bit ones (8, imagehash's default)\n"
    "  --colorhash-bits N      colorhash's binbits, 1..18 (default 3)\n"
    "  --threads N             hashing threads (default: one per core this\n"
    "                          process may use, shared among torchrun's\n"
    "                          LOCAL_WORLD_SIZE processes)\n"
    "  --device cpu|cuda[:N]|opencl[:N]\n"
    "                          where the hashes are computed (default cpu);\n"
    "                          cuda: files are decoded on the CPU threads and\n"
    "                          hashed in batches on GPU N, with compatible\n"
    "                          mode's bits (implies --mode compatible: a\n"
    "                          catalog made so equals one made on the CPU with\n"
    "                          --mode compatible, and either updates the other);\n"
    "                          cuda with --mode fast: the GPU's JPEG engine\n"
    "                          decodes part of the JPEGs and the GPU hashes\n"
    "                          them while every core hashes the rest (the\n"
    "                          two paths agree to a few bits, see\n"
    "                          docs/DEDUP.md); a job the cores finish in\n"
    "                          under --engine-min-s seconds stays on the cores;\n"
    "                          opencl: as cuda in compatible mode, on OpenCL\n"
    "                          device N (`ferry doctor` lists them; without N\n"
    "                          the first GPU, else device 0)\n"
    "  --engine-min-s SEC      --device cuda --mode fast: the JPEG engine starts\n"
    "                          only when the cores, half a second in, would take\n"
    "                          longer than SEC for the rest (its start and close\n"
    "                          cost about a second of a core); 0..3600, default\n"
    "                          2.5; 0: at once\n"
    "  --gpu, --no-gpu         the same as --device cuda and --device cpu\n"
    "  --no-recursive          only the files directly inside each directory\n"
    "  --all-files             every regular file, judged by content\n"
    "  --retry-failed          hash again files that failed last time\n"
    "  --prune                 also drop the catalog's entries outside PATHs\n"
    "                          whose files are gone (as `ferry index prune`)\n"
    "  --json                  with -o: the summary (counts, seconds, the files that\n"
    "                          failed) as one JSON object on stdout; messages stay\n"
    "                          on stderr\n"
    "  -q, --quiet             no progress line\n"
    "  --rank R --world-size W  with -o: hash only this process's share of the\n"
    "                          files, into a partial catalog of its own (one per\n"
    "                          rank; `ferry index merge` combines them): a file\n"
    "                          falls to rank crc32(its path under its root) mod\n"
    "                          W, whatever the machine or the walk's order\n"
    "  --shard-from-env        R and W from RANK and WORLD_SIZE (torchrun), else\n"
    "                          SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and\n"
    "                          SLURM_ARRAY_TASK_COUNT (a Slurm array); never read\n"
    "                          without this flag\n"
    "\n"
    "Files that cannot be hashed are reported (\"ferry: FILE: reason\"), kept in\n"
    "the catalog with their error, and never stop the run. A folder that cannot\n"
    "be read is named and its catalog entries are kept; subfolders holding a\n"
    "ferry-moves.csv (`ferry dupes --move-dupes-to` destinations) are left out.\n"
    "exit codes: 0 success, 1 failure, 2 bad command line, 3 finished but some\n"
    "files or folders could not be hashed or read\n";

typedef struct hash_args {
  ferry_index_options idx;
  const char *out;
  const char **paths;
  int npaths, quiet;
  int mode_set;                      /* --mode was given */
  int json;                          /* --json: the summary as a JSON object on stdout */
  int rank_set, world_set, from_env; /* --rank, --world-size, --shard-from-env */
  const char *share_source;          /* where rank and world size came from */
  char **lines;                      /* PATHs read from stdin (`-`) */
  size_t nlines;
} hash_args;

static int cli_hash_kinds(const char *cmd, const char *s, unsigned *kinds) {
  if (!strcmp(s, "all")) {
    *kinds = FERRY_HASH_ALL | FERRY_HASH_SIGNATURE;
    return 0;
  }
  char *copy = strdup(s), *save = NULL;
  unsigned k = 0;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    ferry_hash_kind kind;
    if (!strcmp(t, "signature")) {
      k |= FERRY_HASH_SIGNATURE;
      continue;
    }
    if (ferry_hash_kind_parse(t, &kind) != FERRY_OK) {
      cli_usage_error(cmd,
                      "--hashes: unknown hash '%s' (ahash, dhash, dhash_v, phash, whash, "
                      "colorhash, signature, all)",
                      t);
      free(copy);
      return -1;
    }
    k |= FERRY_HASH_MASK(kind);
  }
  free(copy);
  if (!k) {
    cli_usage_error(cmd, "--hashes needs at least one hash");
    return -1;
  }
  *kinds = k;
  return 0;
}

/* An environment variable as a number in lo..hi; -1 when unset, -2 when
 * not such a number (said). */
static long env_number(const char *name, long lo, long hi) {
  const char *v = getenv(name);
  if (!v || !*v)
    return -1;
  char *end;
  long n = strtol(v, &end, 10);
  if (*end || n < lo || n > hi) {
    cli_usage_error("hash", "--shard-from-env: %s='%s' is not a number in %ld..%ld", name, v, lo,
                    hi);
    return -2;
  }
  return n;
}

/* Two variables that go together, read as numbers: 0 with both in *x and
 * *y, 1 with neither set, -1 when refused (said: a bad value, or one set
 * without the other). */
static int env_pair(const char *nx, long lx, long hx, long *x, const char *ny, long ly, long hy,
                    long *y) {
  *x = env_number(nx, lx, hx);
  *y = env_number(ny, ly, hy);
  if (*x == -2 || *y == -2)
    return -1;
  if ((*x < 0) != (*y < 0))
    return cli_usage_error("hash", "--shard-from-env: %s is set but %s is not (they go together)",
                           *x < 0 ? ny : nx, *x < 0 ? nx : ny),
           -1;
  return *x < 0;
}

/* --shard-from-env: R and W from torchrun's RANK and WORLD_SIZE, else a
 * Slurm array's task id less its MIN and its COUNT; 0, or -1 (said: what
 * is wrong with which variable). */
static int share_from_env(hash_args *a) {
  long r, w;
  int none = env_pair("RANK", 0, 1 << 20, &r, "WORLD_SIZE", 1, 1 << 20, &w);
  if (none < 0)
    return -1;
  a->share_source = "RANK and WORLD_SIZE";
  if (none) {
    long id, min = env_number("SLURM_ARRAY_TASK_MIN", 0, 1L << 30);
    none =
        env_pair("SLURM_ARRAY_TASK_ID", 0, 1L << 30, &id, "SLURM_ARRAY_TASK_COUNT", 1, 1 << 20, &w);
    if (none < 0 || min == -2)
      return -1;
    if (none)
      return cli_usage_error("hash", "--shard-from-env: neither RANK and WORLD_SIZE (torchrun) "
                                     "nor SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (a "
                                     "Slurm array) are set"),
             -1;
    if (min > id)
      return cli_usage_error("hash",
                             "--shard-from-env: SLURM_ARRAY_TASK_ID=%ld is below "
                             "SLURM_ARRAY_TASK_MIN=%ld (a task of the array has an id from MIN "
                             "on)",
                             id, min),
             -1;
    r = id - (min > 0 ? min : 0);
    a->share_source = "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT";
  }
  a->idx.rank = (int)r;
  a->idx.world_size = (int)w;
  return 0;
}

/* --rank, --world-size, --shard-from-env: checked, and where they came from. */
static int share_args(hash_args *a) {
  if (a->from_env && (a->rank_set || a->world_set))
    return cli_usage_error("hash", "--shard-from-env or --rank/--world-size, not both"), -1;
  if (a->from_env) {
    if (share_from_env(a))
      return -1;
  } else if (a->rank_set != a->world_set) {
    return cli_usage_error("hash", "--rank and --world-size go together"), -1;
  } else {
    a->share_source = "--rank and --world-size";
  }
  if (a->idx.rank >= a->idx.world_size)
    return cli_usage_error("hash", "rank %d of world size %d (from %s): a rank is 0..%d",
                           a->idx.rank, a->idx.world_size, a->share_source, a->idx.world_size - 1),
           -1;
  if (a->idx.world_size > 1 && !a->out)
    return cli_usage_error("hash",
                           "a share (rank %d of %d) is hashed into a partial catalog: "
                           "give -o PART.fidx",
                           a->idx.rank, a->idx.world_size),
           -1;
  return 0;
}

static int parse(int argc, char **argv, hash_args *a) {
  ferry_index_options_default(&a->idx);
  a->paths = calloc((size_t)argc, sizeof *a->paths);
  for (int k = 1; k < argc; k++) {
    const char *s = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
    int iv;
#define NEED_VALUE                                                                                 \
  if (!v)                                                                                          \
    return cli_usage_error("hash", "%s needs a value", s), -1;                                     \
  k++
    if (!strcmp(s, "-o") || !strcmp(s, "--output")) {
      NEED_VALUE;
      a->out = v;
    } else if (!strcmp(s, "--mode")) {
      NEED_VALUE;
      if (!strcmp(v, "fast"))
        a->idx.hash.mode = FERRY_HASH_FAST;
      else if (!strcmp(v, "compatible") || !strcmp(v, "compat"))
        a->idx.hash.mode = FERRY_HASH_COMPATIBLE;
      else
        return cli_usage_error("hash", "--mode must be fast or compatible, not '%s'", v), -1;
      a->mode_set = 1;
    } else if (!strcmp(s, "--device")) {
      NEED_VALUE;
      if (cli_device("hash", v, &a->idx.device))
        return -1;
    } else if (!strcmp(s, "--engine-min-s")) {
      NEED_VALUE;
      float sec;
      if (cli_float("hash", s, v, 0, FY_ENGINE_MIN_S_MAX, &sec))
        return -1;
      a->idx.engine_min_s = sec;
    } else if (!strcmp(s, "--gpu")) {
      a->idx.device = 0;
    } else if (!strcmp(s, "--no-gpu")) {
      a->idx.device = -1;
    } else if (!strcmp(s, "--json")) {
      a->json = 1;
    } else if (!strcmp(s, "--hashes")) {
      NEED_VALUE;
      if (cli_hash_kinds("hash", v, &a->idx.hash.kinds))
        return -1;
    } else if (!strcmp(s, "--hash-size")) {
      NEED_VALUE;
      if (cli_int("hash", s, v, 8, 16, &iv))
        return -1;
      if (iv != 8 && iv != 16)
        return cli_usage_error("hash", "--hash-size must be 8 or 16, not %d", iv), -1;
      a->idx.hash.hash_size = iv;
    } else if (!strcmp(s, "--colorhash-bits")) {
      NEED_VALUE;
      if (cli_int("hash", s, v, 1, 18, &a->idx.hash.colorhash_bits))
        return -1;
    } else if (!strcmp(s, "--threads")) {
      NEED_VALUE;
      if (cli_int("hash", s, v, 1, 1024, &a->idx.threads))
        return -1;
    } else if (!strcmp(s, "--no-recursive")) {
      a->idx.recursive = 0;
    } else if (!strcmp(s, "--all-files")) {
      a->idx.all_files = 1;
    } else if (!strcmp(s, "--prune")) {
      a->idx.prune = 1;
    } else if (!strcmp(s, "--retry-failed")) {
      a->idx.retry_failed = 1;
    } else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
      a->quiet = 1;
    } else if (!strcmp(s, "--rank")) {
      NEED_VALUE;
      if (cli_int("hash", s, v, 0, 1 << 20, &a->idx.rank))
        return -1;
      a->rank_set = 1;
    } else if (!strcmp(s, "--world-size")) {
      NEED_VALUE;
      if (cli_int("hash", s, v, 1, 1 << 20, &a->idx.world_size))
        return -1;
      a->world_set = 1;
    } else if (!strcmp(s, "--shard-from-env")) {
      a->from_env = 1;
    } else if (s[0] == '-' && s[1]) {
      return cli_usage_error("hash", "unknown option '%s'", s), -1;
    } else {
      a->paths[a->npaths++] = s;
    }
#undef NEED_VALUE
  }
  if (!a->npaths)
    return cli_usage_error("hash", "needs at least one file or directory (or - for a list on "
                                   "standard input)"),
           -1;
  if (a->json && !a->out)
    return cli_usage_error("hash", "--json is the summary of a catalog update (-o CATALOG.fidx); "
                                   "without -o, stdout holds the hashes as CSV"),
           -1;
  if (share_args(a))
    return -1;
  /* --device cuda alone means compatible mode on the GPU (as before fast
   * mode could use the JPEG engine); --mode fast asks for the engine,
   * which OpenCL has not. */
  if (FERRY_DEVICE_IS_OPENCL(a->idx.device) && a->mode_set && a->idx.hash.mode == FERRY_HASH_FAST)
    return cli_usage_error("hash", "--device opencl hashes in compatible mode only (fast mode's "
                                   "GPU part is nvJPEG's JPEG engine: --device cuda)"),
           -1;
  if (a->idx.device >= 0 && !a->mode_set)
    a->idx.hash.mode = FERRY_HASH_COMPATIBLE;
  return 0;
}

/* ------------------------------------------------------------ progress */

static void progress(void *user, const ferry_index_progress *p) {
  (void)user;
  size_t todo = p->total - (p->done - p->hashed);
  double rate = p->elapsed_s > 0 ? p->hashed / p->elapsed_s : 0;
  double left = rate > 0 ? (double)(todo - p->hashed) / rate : 0;
  fprintf(stderr, "\rferry hash: %zu/%zu files, %zu hashed (%.0f/s), %zu unchanged, %zu failed",
          p->done, p->total, p->hashed, rate, p->reused, p->failed);
  if (p->done < p->total)
    fprintf(stderr, ", %d:%02d left  ", (int)left / 60, (int)left % 60);
  else
    fputs("          \n", stderr);
}

/* The files and folders that failed: said on stderr; kept for --json. */
typedef struct error_list {
  int tty, keep;
  struct {
    char *path, *msg;
  } * v;
  size_t n, cap;
} error_list;

static void report_error(void *user, const char *path, int status, const char *msg) {
  (void)status;
  error_list *e = user;
  fprintf(stderr, "%sferry: %s\n", e->tty ? "\r\033[K" : "", msg);
  if (!e->keep)
    return;
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 16;
    void *g = realloc(e->v, cap * sizeof *e->v);
    if (!g)
      return; /* the list is short of it; stderr has it */
    e->v = g;
    e->cap = cap;
  }
  e->v[e->n].path = strdup(path ? path : "");
  e->v[e->n].msg = strdup(msg ? msg : "");
  e->n++;
}

static void errors_free(error_list *e) {
  for (size_t i = 0; i < e->n; i++)
    free(e->v[i].path), free(e->v[i].msg);
  free(e->v);
}

/* ------------------------------------------------- CSV to stdout */

struct csv_progress {
  int tty;
  double t0;
};

/* "ferry hash: 1234/100000 files (950/s), 1:43 left" on a terminal. */
static void csv_progress(void *user, size_t done, size_t total) {
  struct csv_progress *p = user;
  double dt = fy_now() - p->t0, rate = dt > 0 ? (double)done / dt : 0;
  fprintf(stderr, "\rferry hash: %zu/%zu files (%.0f/s)", done, total, rate);
  if (done < total && rate > 0) {
    int left = (int)((double)(total - done) / rate);
    fprintf(stderr, ", %d:%02d left  ", left / 60, left % 60);
  } else if (done == total) {
    fputs("          \n", stderr);
  }
}

/* Nothing to hash: which names and formats ferry reads, and which of the
 * formats it does not read yet were seen (a walk again, on this path only). */
static int no_images(const hash_args *a) {
  fy_found_list found;
  char **canon;
  char seen[256] = "";
  if (fy_scan(a->paths, a->npaths, a->idx.recursive, 0, &found, &canon) == FERRY_OK) {
    fy_not_read_describe(found.not_read, seen, sizeof seen);
    for (int i = 0; i < a->npaths; i++)
      free(canon[i]);
    free(canon);
    fy_found_free(&found);
  } else {
    fy_error_clear();
  }
  if (seen[0])
    fprintf(stderr,
            "ferry hash: no image files ferry reads: found %s file(s), formats ferry does not "
            "read yet (it reads " FY_IMAGE_FORMATS_READ ": " FY_IMAGE_EXTENSIONS ")\n",
            seen);
  else
    fprintf(stderr, "ferry hash: no image files found (ferry reads " FY_IMAGE_FORMATS_READ ": "
                    "" FY_IMAGE_EXTENSIONS "; " FY_IMAGE_FORMATS_NOT_READ ")\n");
  return CLI_FAIL;
}

static int print_hashes(hash_args *a) {
  /* the CSV has no column for signatures: not computed */
  a->idx.hash.kinds &= ~FERRY_HASH_SIGNATURE;
  if (!a->idx.hash.kinds)
    return cli_usage_error("hash", "--hashes signature is for catalogs (-o CATALOG.fidx)"),
           CLI_USAGE;
  fy_found_list found;
  char **canon;
  if (fy_scan(a->paths, a->npaths, a->idx.recursive, a->idx.all_files, &found, &canon)) {
    fprintf(stderr, "ferry hash: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  for (int i = 0; i < a->npaths; i++)
    free(canon[i]);
  free(canon);
  size_t n = found.n;
  const char **paths = calloc(n + 1, sizeof *paths);
  ferry_hash_result *res = calloc(n + 1, sizeof *res);
  int *status = calloc(n + 1, sizeof *status);
  char **errors = calloc(n + 1, sizeof *errors);
  if (!paths || !res || !status || !errors) {
    fprintf(stderr, "ferry hash: out of memory for %zu files\n", n);
    free(paths), free(res), free(status), free(errors);
    fy_found_free(&found);
    return CLI_FAIL;
  }
  for (size_t i = 0; i < n; i++)
    paths[i] = found.v[i].path;
  ferry_hash_files_report info;
  ferry_hash_files_options run;
  ferry_hash_files_options_default(&run);
  run.threads = a->idx.threads;
  run.device = a->idx.device;
  run.engine_min_s = a->idx.engine_min_s;
  struct csv_progress cp = {isatty(2), fy_now()};
  if (!a->quiet && cp.tty) {
    run.progress = csv_progress;
    run.progress_user = &cp;
  }
  int rc = ferry_hash_files(paths, n, &a->idx.hash, &run, res, status, errors, &info);
  if (info.note[0])
    fprintf(stderr, "ferry hash: %s: hashing on the CPU\n", info.note);
  else if (rc == FERRY_OK && n && a->idx.device >= 0 && a->idx.hash.mode == FERRY_HASH_FAST &&
           !a->quiet)
    fprintf(stderr, "ferry hash: the JPEG engine decoded %zu of %zu files\n", info.engine_files, n);
  if (rc) {
    fprintf(stderr, "ferry hash: %s\n", ferry_last_error());
    free(paths), free(res), free(status), free(errors);
    fy_found_free(&found);
    return CLI_FAIL;
  }
  printf("path,width,height");
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (a->idx.hash.kinds & FERRY_HASH_MASK(k))
      printf(",%s", ferry_hash_kind_name((ferry_hash_kind)k));
  putchar('\n');
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    if (status[i]) {
      fprintf(stderr, "ferry: %s\n", errors[i] ? errors[i] : found.v[i].path);
      failed++;
      continue;
    }
    const char *p = found.v[i].path;
    if (strpbrk(p, ",\"\n")) {
      putchar('"');
      for (; *p; p++) {
        if (*p == '"')
          putchar('"');
        putchar(*p);
      }
      putchar('"');
    } else {
      fputs(p, stdout);
    }
    printf(",%d,%d", res[i].width, res[i].height);
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
      if (res[i].kinds & FERRY_HASH_MASK(k)) {
        char hex[80];
        ferry_hash_to_hex(&res[i].hash[k], hex, sizeof hex);
        printf(",%s", hex);
      }
    putchar('\n');
  }
  /* compatible mode promises imagehash's bits; say where it cannot */
  size_t inexact = 0, first = 0;
  for (size_t i = 0; a->idx.hash.mode == FERRY_HASH_COMPATIBLE && i < n; i++)
    if (!status[i] && !res[i].exact && !inexact++)
      first = i;
  if (inexact)
    fprintf(stderr,
            "ferry hash: %zu file%s not bit-exact with imagehash (" CLI_INEXACT_WHY
            "); the first: %s\n",
            inexact, inexact == 1 ? "" : "s", found.v[first].path);
  for (size_t i = 0; i < n; i++)
    free(errors[i]);
  free(paths), free(res), free(status), free(errors);
  fy_found_free(&found);
  if (fflush(stdout) != 0)
    return CLI_FAIL;
  if (n == 0) {
    return no_images(a);
  }
  return failed ? CLI_PARTIAL : CLI_OK;
}

/* ------------------------------------------------------------ command */

/* PATHs after `-`: the lines of standard input, in its place. */
static int stdin_paths(hash_args *a) {
  int at = -1;
  for (int i = 0; i < a->npaths; i++)
    if (!strcmp(a->paths[i], "-")) {
      if (at >= 0)
        return cli_usage_error("hash", "- (standard input) given twice");
      at = i;
    }
  if (at < 0)
    return CLI_OK;
  if (cli_stdin_lines("hash", &a->lines, &a->nlines))
    return CLI_FAIL;
  if (a->nlines == 0) {
    fprintf(stderr, "ferry hash: standard input: no paths\n");
    return CLI_FAIL;
  }
  if (a->nlines > (size_t)(1 << 30))
    return fprintf(stderr, "ferry hash: standard input: too many paths\n"), CLI_FAIL;
  const char **p = calloc((size_t)a->npaths + a->nlines, sizeof *p);
  if (!p)
    return fprintf(stderr, "ferry hash: out of memory\n"), CLI_FAIL;
  int n = 0;
  for (int i = 0; i < a->npaths; i++)
    if (i != at)
      p[n++] = a->paths[i];
    else
      for (size_t k = 0; k < a->nlines; k++)
        p[n++] = a->lines[k];
  free(a->paths);
  a->paths = p;
  a->npaths = n;
  return CLI_OK;
}

/* --json: the summary of a catalog update, with the files that failed.
 * CLI_OK, or CLI_FAIL when it could not be written. */
static int summary_json(const hash_args *a, const ferry_index_stats *st, const error_list *e,
                        int rc) {
  cli_json j;
  cli_json_begin(&j, stdout);
  cli_json_str(&j, "command", "hash");
  cli_json_path(&j, "catalog", a->out);
  cli_json_str(&j, "mode", a->idx.hash.mode == FERRY_HASH_COMPATIBLE ? "compatible" : "fast");
  char device[24];
  cli_json_str(&j, "device", fy_hash_device_name(a->idx.device, device));
  cli_json_int(&j, "files", (long long)st->files);
  cli_json_int(&j, "hashed", (long long)st->hashed);
  if (a->idx.device >= 0 && a->idx.hash.mode == FERRY_HASH_FAST)
    cli_json_int(&j, "engine_files", (long long)st->engine_files);
  cli_json_int(&j, "unchanged", (long long)st->reused);
  cli_json_int(&j, "resumed", (long long)st->resumed);
  cli_json_int(&j, "failed", (long long)st->failed);
  cli_json_int(&j, "removed", (long long)st->removed);
  cli_json_int(&j, "kept_from_other_folders", (long long)st->kept);
  cli_json_int(&j, "moved", (long long)st->moved);
  cli_json_int(&j, "pruned", (long long)st->pruned);
  cli_json_int(&j, "unread", (long long)st->unread);
  cli_json_int(&j, "unread_kept", (long long)st->unread_kept);
  cli_json_int(&j, "inexact", (long long)st->inexact);
  cli_json_int(&j, "skipped_move_folders", (long long)st->skipped_moves);
  cli_json_int(&j, "rank", a->idx.rank);
  cli_json_int(&j, "world_size", a->idx.world_size);
  cli_json_int(&j, "other_ranks", (long long)st->other_ranks);
  cli_json_num(&j, "seconds", st->seconds);
  cli_json_num(&j, "files_per_s", st->seconds > 0 ? st->hashed / st->seconds : 0.0);
  cli_json_array(&j, "errors");
  for (size_t i = 0; i < e->n; i++) {
    cli_json_object(&j, NULL);
    cli_json_path(&j, "path", e->v[i].path);
    cli_json_str(&j, "error", e->v[i].msg);
    cli_json_close(&j);
  }
  cli_json_close(&j);
  cli_json_int(&j, "exit_code", rc);
  return cli_json_end(&j);
}

/* -o: create or update the catalog, say what changed. */
static int update_catalog(hash_args *a) {
  error_list errs = {isatty(2), a->json, NULL, 0, 0};
  if (!a->quiet && errs.tty)
    a->idx.progress = progress;
  a->idx.on_error = report_error;
  a->idx.error_user = &errs;
  ferry_index_stats st;
  if (a->idx.world_size > 1)
    fprintf(stderr,
            "ferry hash: rank %d of %d (from %s): the files whose path under its root has a "
            "CRC-32 that is %d mod %d, into the partial catalog %s\n",
            a->idx.rank, a->idx.world_size, a->share_source, a->idx.rank, a->idx.world_size,
            a->out);
  int rc = ferry_index_update(a->out, a->paths, a->npaths, &a->idx, &st);
  if (rc) {
    fprintf(stderr, "%sferry hash: %s\n", errs.tty && !a->quiet ? "\n" : "", ferry_last_error());
    errors_free(&errs);
    return CLI_FAIL;
  }
  char engine_note[64] = "";
  if (a->idx.device >= 0 && a->idx.hash.mode == FERRY_HASH_FAST)
    snprintf(engine_note, sizeof engine_note, ", %zu of them by the JPEG engine", st.engine_files);
  if (!a->quiet && !a->json) /* --json: this is the JSON object */
    fprintf(stderr,
            "ferry hash: %s: %zu files (%zu hashed%s, %zu unchanged, %zu resumed, %zu failed, "
            "%zu removed, %zu kept from other folders) in %.1f s\n",
            a->out, st.files, st.hashed, engine_note, st.reused, st.resumed, st.failed, st.removed,
            st.kept, st.seconds);
  if (a->idx.world_size > 1 && !a->json)
    fprintf(stderr, "ferry hash: %zu files left to the other %d ranks\n", st.other_ranks,
            a->idx.world_size - 1);
  if (!a->quiet && !a->json && (st.moved || st.pruned))
    fprintf(stderr,
            "ferry hash: %zu files moved from another folder kept their hashes; %zu entries of "
            "vanished files dropped (--prune)\n",
            st.moved, st.pruned);
  if (st.unread)
    fprintf(stderr,
            "ferry hash: %zu folders or files could not be read (named above); their %zu "
            "catalog entries are kept as they were\n",
            st.unread, st.unread_kept);
  if (st.inexact)
    fprintf(stderr,
            "ferry hash: %zu of the files hashed are not bit-exact with imagehash (" CLI_INEXACT_WHY
            ")\n",
            st.inexact);
  if (st.skipped_moves && !a->quiet)
    fprintf(stderr,
            "ferry hash: %zu `ferry dupes` move destinations walked (they hold ferry-moves.csv): "
            "the files ferry moved there left out\n",
            st.skipped_moves);
  rc = st.failed || st.unread ? CLI_PARTIAL : CLI_OK;
  if (st.files == 0 && st.kept == 0 && st.unread_kept == 0 && st.other_ranks == 0)
    rc = no_images(a);
  if (a->json && summary_json(a, &st, &errs, rc) != CLI_OK)
    rc = CLI_FAIL;
  errors_free(&errs);
  return rc;
}

int cmd_hash(int argc, char **argv) {
  for (int k = 1; k < argc; k++)
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
  hash_args a;
  memset(&a, 0, sizeof a);
  if (parse(argc, argv, &a)) {
    free(a.paths);
    return CLI_USAGE;
  }
  int rc = stdin_paths(&a);
  if (rc == CLI_OK)
    rc = a.out ? update_catalog(&a) : print_hashes(&a);
  cli_free_lines(a.lines, a.nlines);
  free(a.paths);
  return rc;
}
