/* cmd_index.c — `ferry index export|info|prune CATALOG`: a catalog as CSV
 * or JSON, a summary of it, or the catalog without its vanished files;
 * `ferry index merge OUT PART...`: partial catalogs into one. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: ferry index export CATALOG.fidx [--format csv|json] [-o OUT]\n"
    "       ferry index info CATALOG.fidx\n"
    "       ferry index prune CATALOG.fidx\n"
    "       ferry index merge OUT.fidx PART.fidx... [--strict]\n"
    "\n"
    "export: every entry of the catalog (path, size, mtime_ns, width, height,\n"
    "format, status, error and one hex column per hash, as imagehash prints\n"
    "it) as CSV (default) or JSON, to OUT or stdout.\n"
    "info: the catalog's hash settings, how many files, how many failed.\n"
    "prune: drops the entries whose files no longer exist and says how many;\n"
    "the catalog is replaced atomically (on any error it stays as it was).\n"
    "A library moved elsewhere needs no prune: `ferry hash NEW -o CATALOG`\n"
    "takes each moved file's hashes over (same name, size and mtime) and drops\n"
    "its old entry.\n"
    "merge: the catalogs PART... into OUT, each path once (in several parts: the\n"
    "entry with the newer mtime, then the later part). Parts of a sharded run\n"
    "(`ferry hash --rank R --world-size W -o PART`) must be of one run (the\n"
    "same world size and roots, each rank once) with the same hash settings;\n"
    "a rank no part holds is named (\"rank 2 of 3 missing: its files are not\n"
    "in OUT\"), the rest is written and the exit code is 3 (--strict: exit 1,\n"
    "nothing written). OUT is a whole catalog, replaced atomically; a partial\n"
    "catalog as OUT is refused unless it is among the parts (named as it is\n"
    "there: an update in place; a link to a part is refused). A part holding\n"
    "files outside its share (another rank's, or under none of its roots) is\n"
    "refused, named with the first such file: nothing is written.\n"
    "export -o OUT: never the catalog itself, nor a link to it.\n"
    "\n"
    "exit codes: 0 success, 1 failure (unreadable or damaged catalog, parts\n"
    "that do not go together), 2 bad command line, 3 merged with ranks missing\n";

static int info(const char *path) {
  ferry_catalog *c;
  if (ferry_catalog_load(path, &c)) {
    fprintf(stderr, "ferry index: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  ferry_hash_options o;
  ferry_catalog_hash_options(c, &o);
  size_t n = ferry_catalog_size(c), failed = 0;
  for (size_t i = 0; i < n; i++)
    failed += ferry_catalog_get(c, i)->status != FERRY_OK;
  printf("%s: %zu files, %zu failed\nmode %s, hash size %d, colorhash bits %d, hashes", path, n,
         failed, o.mode == FERRY_HASH_COMPATIBLE ? "compatible" : "fast", o.hash_size,
         o.colorhash_bits);
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (o.kinds & FERRY_HASH_MASK(k))
      printf(" %s", ferry_hash_kind_name((ferry_hash_kind)k));
  putchar('\n');
  int rank, world, nroots;
  const char *const *roots;
  if (ferry_catalog_share(c, &rank, &world, &roots, &nroots)) {
    printf("partial catalog: rank %d of %d over", rank, world);
    for (int r = 0; r < nroots; r++)
      printf("%s %s", r ? "," : "", roots[r]);
    putchar('\n');
  }
  ferry_catalog_free(c);
  return CLI_OK;
}

static int prune(const char *path) {
  size_t removed = 0;
  if (ferry_index_prune(path, &removed)) {
    fprintf(stderr, "ferry index: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  fprintf(stderr, "ferry index: %s: %zu entries of vanished files dropped\n", path, removed);
  return CLI_OK;
}

static int merge(int argc, char **argv) {
  const char *out = NULL;
  const char **parts = calloc((size_t)argc, sizeof *parts);
  int nparts = 0;
  ferry_merge_options mo = {0, NULL, NULL};
  if (!parts) {
    fprintf(stderr, "ferry index: out of memory\n");
    return CLI_FAIL;
  }
  for (int k = 2; k < argc; k++) {
    const char *s = argv[k];
    if (!strcmp(s, "--strict")) {
      mo.strict = 1;
    } else if (s[0] == '-' && s[1]) {
      free(parts);
      return cli_usage_error("index", "merge: unknown option '%s' (--strict)", s);
    } else if (!out) {
      out = s;
    } else {
      parts[nparts++] = s;
    }
  }
  if (!out || !nparts) {
    free(parts);
    return cli_usage_error("index", "merge needs OUT.fidx and at least one PART.fidx");
  }
  ferry_merge_stats st;
  int rc = ferry_index_merge(out, parts, nparts, &mo, &st);
  free(parts);
  if (rc) {
    fprintf(stderr, "ferry index: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  fprintf(stderr,
          "ferry index: %s: %zu files from %d parts (%zu paths in more than one: the "
          "newer mtime kept)",
          out, st.entries, nparts, st.conflicts);
  if (st.world_size > 1)
    fprintf(stderr, "; %d of %d ranks", st.world_size - st.missing, st.world_size);
  fputc('\n', stderr);
  return st.missing ? CLI_PARTIAL : CLI_OK;
}

int cmd_index(int argc, char **argv) {
  for (int k = 1; k < argc; k++)
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
  if (argc < 2)
    return cli_usage_error("index", "needs a subcommand: export, info, prune or merge");
  const char *sub = argv[1], *catalog = NULL, *format = "csv", *out = NULL;
  if (!strcmp(sub, "merge"))
    return merge(argc, argv);
  if (strcmp(sub, "export") && strcmp(sub, "info") && strcmp(sub, "prune"))
    return cli_usage_error("index", "unknown subcommand '%s' (export, info, prune, merge)", sub);
  for (int k = 2; k < argc; k++) {
    const char *s = argv[k];
    if (!strcmp(s, "--format") || !strcmp(s, "-o") || !strcmp(s, "--output")) {
      if (k + 1 >= argc)
        return cli_usage_error("index", "%s needs a value", s);
      if (!strcmp(s, "--format"))
        format = argv[++k];
      else
        out = argv[++k];
    } else if (s[0] == '-' && s[1]) {
      return cli_usage_error("index", "unknown option '%s'", s);
    } else if (!catalog) {
      catalog = s;
    } else {
      return cli_usage_error("index", "one catalog at a time ('%s' is one too many)", s);
    }
  }
  if (!catalog)
    return cli_usage_error("index", "needs a catalog (.fidx)");
  if (!strcmp(sub, "info"))
    return info(catalog);
  if (!strcmp(sub, "prune"))
    return prune(catalog);
  if (strcmp(format, "csv") && strcmp(format, "json"))
    return cli_usage_error("index", "--format must be csv or json, not '%s'", format);
  if (out && fy_out_guard(out, catalog) != FERRY_OK) { /* never over the catalog it reads */
    fprintf(stderr, "ferry index: %s\n", ferry_last_error());
    return CLI_USAGE;
  }
  ferry_catalog *c;
  if (ferry_catalog_load(catalog, &c)) {
    fprintf(stderr, "ferry index: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  int rc = ferry_catalog_export(c, out, format);
  ferry_catalog_free(c);
  if (rc) {
    fprintf(stderr, "ferry index: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  return CLI_OK;
}
