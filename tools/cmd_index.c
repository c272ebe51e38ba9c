/* cmd_index.c — `ferry index export|info|prune CATALOG`: a catalog as CSV
 * or JSON, a summary of it, or the catalog without its vanished files. */
#include "cli.h"

#include <string.h>

static const char help[] =
    "usage: ferry index export CATALOG.fidx [--format csv|json] [-o OUT]\n"
    "       ferry index info CATALOG.fidx\n"
    "       ferry index prune CATALOG.fidx\n"
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
    "\n"
    "exit codes: 0 success, 1 failure (unreadable or damaged catalog), 2 bad\n"
    "command line\n";

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

int cmd_index(int argc, char **argv) {
  for (int k = 1; k < argc; k++)
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
  if (argc < 2)
    return cli_usage_error("index", "needs a subcommand: export, info or prune");
  const char *sub = argv[1], *catalog = NULL, *format = "csv", *out = NULL;
  if (strcmp(sub, "export") && strcmp(sub, "info") && strcmp(sub, "prune"))
    return cli_usage_error("index", "unknown subcommand '%s' (export, info, prune)", sub);
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
  if (cli_refuse_overwrite("index", out, catalog))
    return CLI_USAGE;
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
