/* cmd_dupes.c — `ferry dupes CATALOG`: near-duplicate groups of a catalog as
 * CSV, JSON or an HTML page; optionally moves the non-keepers aside. */
#include "cli.h"
#include "dupes_move.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* pHash: the best pair F1 on the near-duplicate ground truth (DEDUP.md). */
#define DEFAULT_HASH FERRY_HASH_PHASH

static const char help[] =
    "usage: ferry dupes CATALOG.fidx [--hash H] [--threshold N]\n"
    "                   [--format csv|json|html] [-o OUT]\n"
    "                   [--device cpu|cuda[:N[,N...]]|opencl[:N]]\n"
    "                   [--keep RULES] [--reference DIR]... [--exclude PAT]...\n"
    "                   [--decisions FILE]\n"
    "                   [--move-dupes-to DIR [--apply-list FILE] [--apply]]\n"
    "       ferry dupes --undo DIR [--run ID | --list-runs] [--apply]\n"
    "\n"
    "Finds the groups of near-duplicate pictures of a catalog (made by `ferry\n"
    "hash -o`): every pair within Hamming distance N of the hash H, joined into\n"
    "groups (union-find), each with a keeper (--keep). Writes the groups to OUT\n"
    "or stdout.\n"
    "\n"
    "options:\n"
    "  --hash H                ahash, dhash, dhash_v, phash (default), whash,\n"
    "                          colorhash\n"
    "  --threshold N           largest Hamming distance of a duplicate; default\n"
    "                          per hash and size, from docs/DEDUP.md (pHash: 72\n"
    "                          of 256 bits, 10 of 64)\n"
    "  -f, --format csv|json|html\n"
    "                          csv (default): group,keeper,path,distance,width,\n"
    "                          height,size; html: the review page (keepers,\n"
    "                          ticks, bulk choices; saves --decisions), its\n"
    "                          thumbnails in OUT.thumbs/ beside it (embedded on\n"
    "                          stdout)\n"
    "  -o, --output FILE       where to write (default stdout); never the catalog,\n"
    "                          the move list or an undo log (ferry-moves.csv)\n"
    "  --keep RULES            who keeps in a group: criteria, comma-separated,\n"
    "                          the first that differs decides (default\n"
    "                          original,pixels,size,oldest): original (a JPEG\n"
    "                          whose EXIF names the camera, before PNG or\n"
    "                          re-saved copies), pixels, size (larger first),\n"
    "                          oldest, newest (file time), path (first path)\n"
    "  --reference DIR         files under DIR keep before all others and are\n"
    "                          never moved (repeatable)\n"
    "  --exclude PATTERN       leave out files whose absolute path matches the\n"
    "                          shell pattern (a star crosses slashes: '*.png',\n"
    "                          '*/thumbs/*') or is under that folder (repeatable)\n"
    "  --decisions FILE        a review's decisions (the HTML page's \"Save\n"
    "                          decisions\"): groups cut where files were marked\n"
    "                          not duplicates, the keepers chosen there keep,\n"
    "                          files marked to stay are never moved; a file\n"
    "                          changed since refuses the whole file (stale)\n"
    "  --move-dupes-to DIR     move every non-keeper under DIR (its absolute\n"
    "                          path mirrored below DIR; listed in\n"
    "                          DIR/ferry-moves.csv, one run per apply). Dry run\n"
    "                          unless --apply. A keeper is never inside DIR; no\n"
    "                          link inside DIR is followed; nothing is replaced\n"
    "  --apply                 really move (or, with --undo, put back). One\n"
    "                          apply at a time: the catalog and DIR's log are\n"
    "                          locked, another apply is refused. ferry never\n"
    "                          deletes anything.\n"
    "  --apply-list FILE       with --move-dupes-to: move the files a move list names\n"
    "                          (the HTML report's \"Save the move list\": your keepers\n"
    "                          and ticks) instead of every non-keeper; where a line\n"
    "                          has both path and path_b64 (keeper, keeper_b64) they\n"
    "                          must agree\n"
    "  --undo DIR              put back the files the last apply into DIR moved\n"
    "                          (listed; --apply to do it): never over a file, each\n"
    "                          one not put back named (exit 3); a second undo\n"
    "                          puts back the run before. No catalog needed\n"
    "  --run ID                with --undo: that run (`--list-runs` names them)\n"
    "  --list-runs             with --undo: DIR's runs as CSV on stdout (run,\n"
    "                          files, put_back)\n"
    "  --no-robust             the hash alone: do not also match copies turned by\n"
    "                          a right angle, mirrored, cropped or letterboxed\n"
    "                          (found from the catalog's signatures, verified)\n"
    "  --method auto|brute|mih search method (default auto: measured per run)\n"
    "  --threads N             search threads (default: one per core)\n"
    "  --device cpu|cuda[:N[,N...]]|opencl[:N]\n"
    "                          where the pair search runs (default cpu); cuda:\n"
    "                          brute force over all pairs on GPU N, same groups;\n"
    "                          cuda:0,1: shared among GPUs 0 and 1 (up to 8; one\n"
    "                          listed twice: two threads on it), same groups;\n"
    "                          opencl: the same on OpenCL device N (`ferry doctor`\n"
    "                          lists them; any vendor's GPU, or PoCL on the CPU);\n"
    "                          opencl without N: the first GPU, else device 0\n"
    "  --gpu, --no-gpu         the same as --device cuda and --device cpu\n"
    "  -q, --quiet             no summary line\n"
    "\n"
    "exit codes: 0 success, 1 failure (another apply running, a log that cannot\n"
    "be written), 2 bad command line, 3 some files could not be moved (or put\n"
    "back)\n";

#define MAX_REFERENCE 64
static char *refs[MAX_REFERENCE]; /* --reference folders, canonical */
static size_t nref;
static const char *excl[MAX_REFERENCE]; /* --exclude patterns */
static size_t nexcl;

/* --device cuda:LIST: one device number (so->device) or several, comma-
 * separated, the same one more than once allowed (so->devices: the search
 * shared among them). */
static int parse_cuda(const char *list, ferry_search_options *so) {
  int devices[FERRY_MAX_SEARCH_DEVICES], nd = 0;
  for (const char *p = list;; p++) {
    size_t len = strcspn(p, ",");
    char *end = NULL;
    long d = len && len < 4 && p[0] >= '0' && p[0] <= '9' ? strtol(p, &end, 10) : -1;
    if (!len)
      return cli_usage_error("dupes",
                             "--device cuda:%s: an empty device number; cuda:N, or "
                             "several as cuda:0,1",
                             list);
    if (d < 0 || d > 255 || end != p + len)
      return cli_usage_error("dupes",
                             "--device cuda:%s: '%.*s' is not a device number (0..255); "
                             "cuda:N, or several as cuda:0,1",
                             list, (int)len, p);
    if (nd == FERRY_MAX_SEARCH_DEVICES)
      return cli_usage_error("dupes", "--device cuda:%s: at most %d devices", list,
                             FERRY_MAX_SEARCH_DEVICES);
    devices[nd++] = (int)d;
    p += len;
    if (!*p)
      break;
  }
  so->device = devices[0];
  so->ndevices = nd > 1 ? nd : 0; /* one: `device` alone, as before */
  memcpy(so->devices, devices, (size_t)nd * sizeof *devices);
  return 0;
}

/* What a run reads and writes (dupes_main's options). */
typedef struct dupes_args {
  const char *catalog, *format, *out, *keep, *apply_list, *decisions;
  ferry_hash_kind kind;
  int threshold, quiet;
  ferry_search_options *so;
} dupes_args;

/* -o never over one of the run's inputs (the catalog, the move list). */
static int out_over_input(const char *out, const char *input) {
  if (out && input && strcmp(out, "-") && fy_out_guard(out, input) != FERRY_OK)
    return cli_usage_error("dupes", "-o %s", ferry_last_error());
  return 0;
}

/* -o never an undo log: any existing ferry-moves.csv, nor (by its name or
 * another) the one of --move-dupes-to DIR. */
static int out_over_log(const char *out, const char *move_to) {
  if (!out || !strcmp(out, "-"))
    return 0;
  const char *base = strrchr(out, '/');
  struct stat st;
  if (!strcmp(base ? base + 1 : out, FY_MOVES_LOG) && lstat(out, &st) == 0)
    return cli_usage_error("dupes",
                           "-o %s: an undo log of `ferry dupes --move-dupes-to` (a report never "
                           "replaces it: write it elsewhere)",
                           out);
  if (!move_to)
    return 0;
  size_t n = strlen(move_to) + sizeof FY_MOVES_LOG + 2;
  char *log = malloc(n), *a = cli_canonical(out), *b = NULL;
  if (log) {
    snprintf(log, n, "%s/%s", move_to, FY_MOVES_LOG);
    b = cli_canonical(log);
  }
  int same = a && b && !strcmp(a, b), rc = 0;
  if (same)
    rc = cli_usage_error("dupes",
                         "-o %s: the undo log of --move-dupes-to %s (a report never replaces "
                         "it: write it elsewhere)",
                         out, move_to);
  else if (log)
    rc = out_over_input(out, log); /* another name of it */
  free(a), free(b), free(log);
  return rc;
}

/* Loads the catalog, finds the groups, writes them, and moves (mv). */
static int find_and_write(const dupes_args *a, mover *mv) {
  const char *catalog = a->catalog;
  ferry_hash_kind kind = a->kind;
  int quiet = a->quiet, threshold = a->threshold;
  ferry_search_options so = *a->so;
  ferry_catalog *c;
  if (ferry_catalog_load(catalog, &c)) {
    fprintf(stderr, "ferry dupes: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  /* files gone since they were hashed are never listed nor moved */
  size_t gone = 0;
  ferry_catalog_drop_missing(c, &gone);
  if (gone)
    fprintf(stderr,
            "ferry dupes: %zu entries left out: their files are gone since they were hashed "
            "(`ferry index prune %s` drops them; `ferry hash` a moved folder again)\n",
            gone, catalog);
  size_t dropped = 0;
  if (nexcl && ferry_catalog_drop_matching(c, excl, nexcl, &dropped) == FERRY_OK && !quiet)
    fprintf(stderr, "ferry dupes: %zu entries left out by --exclude\n", dropped);
  if (ferry_catalog_size(c) == 0) {
    fprintf(stderr,
            "ferry dupes: %s: no files to compare (%s; make it with `ferry hash DIR -o %s`)\n",
            catalog,
            dropped ? "--exclude left out every file it lists"
            : gone  ? "every file it lists is gone"
                    : "the catalog is empty",
            catalog);
    ferry_catalog_free(c);
    return CLI_FAIL;
  }
  ferry_hash_options ho;
  ferry_catalog_hash_options(c, &ho);
  int bits = kind == FERRY_HASH_COLORHASH ? 14 * ho.colorhash_bits : ho.hash_size * ho.hash_size;
  so.threshold = threshold >= 0 ? threshold : ferry_dupes_default_threshold(kind, ho.hash_size);
  if (so.threshold > bits) {
    ferry_catalog_free(c);
    return cli_usage_error("dupes", "--threshold %d is more than the %d bits of %s", so.threshold,
                           bits, ferry_hash_kind_name(kind));
  }
  if (so.robust && !(ho.kinds & FERRY_HASH_SIGNATURE) && !quiet)
    fprintf(stderr,
            "ferry dupes: %s has no signatures (made by an older ferry, or --hashes without "
            "signature): copies turned, mirrored or cropped are not looked for; `ferry hash "
            "DIR -o %s` adds them\n",
            catalog, catalog);
  ferry_dupes *d;
  double t0 = fy_now();
  if (ferry_dupes_find(c, kind, &so, &d)) {
    fprintf(stderr, "ferry dupes: %s\n", ferry_last_error());
    ferry_catalog_free(c);
    return CLI_FAIL;
  }
  if ((a->keep || nref) && ferry_dupes_keep(d, a->keep, (const char *const *)refs, nref)) {
    fprintf(stderr, "ferry dupes: %s\n", ferry_last_error());
    ferry_dupes_free(d);
    ferry_catalog_free(c);
    return CLI_FAIL;
  }
  ferry_decide_stats ds;
  if (a->decisions && ferry_dupes_decide(d, a->decisions, &ds)) {
    fprintf(stderr, "ferry dupes: --decisions %s\n", ferry_last_error());
    ferry_dupes_free(d);
    ferry_catalog_free(c);
    return CLI_FAIL;
  }
  if (a->decisions && !quiet)
    fprintf(
        stderr,
        "ferry dupes: %s: %zu sets marked not duplicates, %zu keepers chosen, %zu files to stay; "
        "%zu groups became %zu%s\n",
        a->decisions, ds.sets, ds.keepers, ds.stays, ds.groups_before, ferry_dupes_group_count(d),
        ds.passed_over ? " (files no longer in the catalog passed over)" : "");
  double dt = fy_now() - t0;
  int rc = CLI_OK;
  if (ferry_dupes_write(d, a->format, a->out)) {
    fprintf(stderr, "ferry dupes: %s\n", ferry_last_error());
    rc = CLI_FAIL;
  }
  if (!quiet) {
    size_t members = 0;
    for (size_t g = 0; g < ferry_dupes_group_count(d); g++)
      members += ferry_dupes_group(d, g, NULL);
    fprintf(stderr,
            "ferry dupes: %zu groups, %zu files, %llu pairs within %d bits of %s among %zu "
            "files, %zu more joined by signatures (%s, %.2f s)\n",
            ferry_dupes_group_count(d), members, (unsigned long long)ferry_dupes_pair_count(d),
            so.threshold, ferry_hash_kind_name(kind), ferry_catalog_size(c),
            ferry_dupes_signature_joins(d),
            FERRY_DEVICE_IS_OPENCL(so.device) ? "OpenCL"
            : so.ndevices > 1                 ? "GPUs"
            : so.device >= 0                  ? "GPU"
                                              : ferry_search_isa(),
            dt);
  }
  if (rc == CLI_OK && mv) {
    if (a->apply_list)
      rc = cli_move_list(mv, c, d, a->apply_list);
    else
      cli_move_dupes(mv, c, d);
  }
  ferry_dupes_free(d);
  ferry_catalog_free(c);
  return rc;
}

static int dupes_main(int argc, char **argv) {
  for (int k = 1; k < argc; k++)
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
  const char *catalog = NULL, *format = "csv", *out = NULL, *move_to = NULL, *keep = NULL,
             *apply_list = NULL, *undo = NULL, *run = NULL, *decisions = NULL;
  ferry_hash_kind kind = DEFAULT_HASH;
  int threshold = -1, apply = 0, quiet = 0, list_runs = 0;
  ferry_search_options so;
  ferry_search_options_default(&so);
  for (int k = 1; k < argc; k++) {
    const char *s = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
    int takes = !strcmp(s, "--hash") || !strcmp(s, "--threshold") || !strcmp(s, "--format") ||
                !strcmp(s, "-f") || !strcmp(s, "-o") || !strcmp(s, "--output") ||
                !strcmp(s, "--move-dupes-to") || !strcmp(s, "--method") ||
                !strcmp(s, "--threads") || !strcmp(s, "--device") || !strcmp(s, "--keep") ||
                !strcmp(s, "--reference") || !strcmp(s, "--exclude") ||
                !strcmp(s, "--apply-list") || !strcmp(s, "--undo") || !strcmp(s, "--run") ||
                !strcmp(s, "--decisions");
    if (takes && !v)
      return cli_usage_error("dupes", "%s needs a value", s);
    if (takes)
      k++;
    if (!strcmp(s, "--hash")) {
      if (ferry_hash_kind_parse(v, &kind) != FERRY_OK)
        return cli_usage_error("dupes", "--hash: %s", ferry_last_error());
    } else if (!strcmp(s, "--threshold")) {
      if (cli_int("dupes", s, v, 0, 256, &threshold))
        return CLI_USAGE;
    } else if (!strcmp(s, "--format") || !strcmp(s, "-f")) {
      format = v;
      if (strcmp(v, "csv") && strcmp(v, "json") && strcmp(v, "html"))
        return cli_usage_error("dupes", "--format must be csv, json or html, not '%s'", v);
    } else if (!strcmp(s, "-o") || !strcmp(s, "--output")) {
      out = v;
    } else if (!strcmp(s, "--move-dupes-to")) {
      move_to = v;
    } else if (!strcmp(s, "--method")) {
      if (!strcmp(v, "auto"))
        so.method = FERRY_SEARCH_AUTO;
      else if (!strcmp(v, "brute"))
        so.method = FERRY_SEARCH_BRUTE;
      else if (!strcmp(v, "mih"))
        so.method = FERRY_SEARCH_MIH;
      else
        return cli_usage_error("dupes", "--method must be auto, brute or mih, not '%s'", v);
    } else if (!strcmp(s, "--threads")) {
      if (cli_int("dupes", s, v, 1, 1024, &so.threads))
        return CLI_USAGE;
    } else if (!strcmp(s, "--device")) {
      if (!strncmp(v, "cuda:", 5) && strchr(v, ',')) { /* several: the search shared */
        if (parse_cuda(v + 5, &so))
          return CLI_USAGE;
      } else if (cli_device("dupes", v, &so.device)) {
        return CLI_USAGE;
      }
    } else if (!strcmp(s, "--gpu")) {
      so.device = 0;
    } else if (!strcmp(s, "--no-gpu")) {
      so.device = -1;
    } else if (!strcmp(s, "--keep")) {
      unsigned char o[FY_KEEP_MAX];
      int n;
      if (!*v)
        return cli_usage_error("dupes", "--keep needs criteria (default %s)", FERRY_KEEP_DEFAULT);
      if (fy_dupes_parse_keep(v, o, &n))
        return cli_usage_error("dupes", "--keep: %s", ferry_last_error());
      keep = v;
    } else if (!strcmp(s, "--reference")) {
      struct stat rs;
      char *r = stat(v, &rs) == 0 && S_ISDIR(rs.st_mode) ? realpath(v, NULL) : NULL;
      if (!r || nref == MAX_REFERENCE) {
        free(r);
        return cli_usage_error("dupes", "--reference %s: %s", v,
                               r ? "too many reference folders (at most 64)" : "not a folder");
      }
      refs[nref++] = r;
    } else if (!strcmp(s, "--exclude")) {
      if (!*v)
        return cli_usage_error("dupes", "--exclude needs a pattern");
      if (nexcl == MAX_REFERENCE)
        return cli_usage_error("dupes", "--exclude: at most %d patterns", MAX_REFERENCE);
      excl[nexcl++] = v;
    } else if (!strcmp(s, "--apply")) {
      apply = 1;
    } else if (!strcmp(s, "--apply-list")) {
      apply_list = v;
    } else if (!strcmp(s, "--decisions")) {
      decisions = v;
    } else if (!strcmp(s, "--undo")) {
      undo = v;
    } else if (!strcmp(s, "--run")) {
      run = v;
    } else if (!strcmp(s, "--list-runs")) {
      list_runs = 1;
    } else if (!strcmp(s, "--no-robust")) {
      so.robust = 0;
    } else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
      quiet = 1;
    } else if (s[0] == '-' && s[1]) {
      return cli_usage_error("dupes", "unknown option '%s'", s);
    } else if (!catalog) {
      catalog = s;
    } else {
      return cli_usage_error("dupes", "one catalog at a time ('%s' is one too many)", s);
    }
  }
  if ((run || list_runs) && !undo)
    return cli_usage_error("dupes", "%s goes with --undo DIR", run ? "--run" : "--list-runs");
  if (undo && (move_to || apply_list || out || decisions))
    return cli_usage_error("dupes", "--undo DIR puts files back: %s does not go with it",
                           move_to      ? "--move-dupes-to"
                           : apply_list ? "--apply-list"
                           : decisions  ? "--decisions"
                                        : "-o");
  if (undo && run && list_runs)
    return cli_usage_error("dupes", "--run ID or --list-runs, not both");
  if (undo)
    return cli_undo(undo, run, list_runs, apply, quiet, catalog);
  if (!catalog)
    return cli_usage_error("dupes", "needs a catalog (.fidx, from `ferry hash -o`)");
  if (apply && !move_to)
    return cli_usage_error("dupes", "--apply goes with --move-dupes-to DIR (or --undo DIR)");
  if (apply_list && !move_to)
    return cli_usage_error("dupes", "--apply-list goes with --move-dupes-to DIR (where the "
                                    "files it names are moved)");
  if (out_over_input(out, catalog) || out_over_input(out, apply_list) ||
      out_over_input(out, decisions) || out_over_log(out, move_to))
    return CLI_USAGE;
  struct stat st;
  if (stat(catalog, &st) == 0 && S_ISDIR(st.st_mode)) {
    size_t n = strlen(catalog);
    while (n > 1 && catalog[n - 1] == '/')
      n--;
    fprintf(stderr,
            "ferry dupes: %s is a folder; dupes reads a catalog of hashes. Make one, then find "
            "its duplicates:\n  ferry hash %s -o %.*s.fidx\n  ferry dupes %.*s.fidx\n",
            catalog, catalog, (int)n, catalog, (int)n, catalog);
    return CLI_USAGE;
  }
  /* an apply's locks before the catalog is read, kept to its end */
  mover mv;
  if (move_to && cli_mover_open(&mv, move_to, catalog, apply, quiet))
    return CLI_FAIL;
  if (move_to && out_over_log(out, move_to)) { /* the log DIR has now */
    cli_mover_close(&mv);
    return CLI_USAGE;
  }
  dupes_args a = {catalog, format, out, keep, apply_list, decisions, kind, threshold, quiet, &so};
  int rc = find_and_write(&a, move_to ? &mv : NULL);
  mv.stopped = rc && !mv.moved && !mv.failed; /* refused before moving: "0 files" says nothing */
  int mrc = move_to ? cli_mover_close(&mv) : CLI_OK;
  return rc ? rc : mrc;
}

int cmd_dupes(int argc, char **argv) {
  int rc = dupes_main(argc, argv);
  for (size_t i = 0; i < nref; i++)
    free(refs[i]);
  nref = nexcl = 0;
  return rc;
}
