/* dupes_list.c — `ferry dupes CATALOG --apply-list FILE --move-dupes-to DIR`:
 * the files a move list names (the HTML report's "Save the move list") moved
 * as dupes_move.c moves non-keepers, each line checked first: its columns
 * agree, its file and keeper are in one group of this run, the keeper is
 * outside DIR, nothing listed both to keep and to move. */
#include "dupes_move.h"

#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The catalog index of `path` (entries are sorted by path), or -1. */
static long find_entry(const ferry_catalog *c, const char *path) {
  size_t lo = 0, hi = ferry_catalog_size(c);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(ferry_catalog_get(c, mid)->path, path);
    if (!cmp)
      return (long)mid;
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

static int hex(int ch) {
  return ch >= '0' && ch <= '9'   ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                  : -1;
}

/* Whether a text column names the bytes a base64 column holds: the same
 * text, or the text the HTML page shows for them (catalog/text.c's
 * fy_html_text: a byte that is not UTF-8, or a control character, as \xNN,
 * a backslash as \\). */
static int agrees(const char *text, const char *bytes) {
  if (!strcmp(text, bytes))
    return 1;
  const unsigned char *t = (const unsigned char *)text, *b = (const unsigned char *)bytes;
  while (*t && *b) {
    int ch = *t++;
    if (ch == '\\' && *t == '\\') {
      t++;
    } else if (ch == '\\' && *t == 'x' && hex(t[1]) >= 0 && hex(t[2]) >= 0) {
      ch = hex(t[1]) * 16 + hex(t[2]);
      t += 3;
    }
    if (ch != *b++)
      return 0;
  }
  return !*t && !*b;
}

/* A line's path (what = "path") or keeper ("keeper"): the base64 column's
 * exact bytes, the text column's, and where both are given they must agree.
 * NULL (and a message) when the line gives none, or a bad one. */
static char *row_path(const char *list, size_t line, char **row, size_t n, int ct, int cb,
                      const char *what) {
  const char *text = ct >= 0 && (size_t)ct < n && row[ct][0] ? row[ct] : NULL;
  const char *code = cb >= 0 && (size_t)cb < n && row[cb][0] ? row[cb] : NULL;
  if (!text && !code) {
    fprintf(stderr, "ferry dupes: %s: line %zu: no %s\n", list, line, what);
    return NULL;
  }
  if (!code)
    return strdup(text);
  size_t len = 0;
  uint8_t *bytes = NULL;
  if (fy_base64_decode(code, &bytes, &len) != FERRY_OK || memchr(bytes, 0, len)) {
    fprintf(stderr, "ferry dupes: %s: line %zu: %s_b64 is not a path in base64: %s\n", list, line,
            what, code);
    free(bytes);
    return NULL;
  }
  char *p = realloc(bytes, len + 1);
  if (!p) {
    free(bytes);
    return NULL;
  }
  p[len] = '\0';
  if (text && !agrees(text, p)) {
    fprintf(stderr,
            "ferry dupes: %s: line %zu: %s says %s but %s_b64 says %s: they disagree (refused; "
            "edit both, or delete the _b64 columns to go by the text)\n",
            list, line, what, text, what, p);
    free(p);
    return NULL;
  }
  return p;
}

/* The columns of the header (a UTF-8 byte order mark before it skipped);
 * 0, or -1 when it is not a move list's. */
static int columns(FILE *f, int *cp, int *ck, int *cpb, int *ckb) {
  char **row = NULL;
  size_t n = 0;
  *cp = *ck = *cpb = *ckb = -1;
  if (fy_csv_row(f, &row, &n) == 1)
    for (size_t i = 0; i < n; i++) {
      const char *h = row[i];
      if (!i && !strncmp(h, "\xef\xbb\xbf", 3)) /* Excel's "CSV UTF-8" */
        h += 3;
      *cp = !strcmp(h, "path") ? (int)i : *cp;
      *ck = !strcmp(h, "keeper") ? (int)i : *ck;
      *cpb = !strcmp(h, "path_b64") ? (int)i : *cpb;
      *ckb = !strcmp(h, "keeper_b64") ? (int)i : *ckb;
    }
  fy_csv_free(row, n);
  return (*cp < 0 && *cpb < 0) || (*ck < 0 && *ckb < 0) ? -1 : 0;
}

int cli_move_list(mover *mv, const ferry_catalog *c, const ferry_dupes *d, const char *list) {
  FILE *f = fy_fopen_regular(list);
  if (!f) {
    fprintf(stderr, "ferry dupes: --apply-list %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  int cp, ck, cpb, ckb;
  if (columns(f, &cp, &ck, &cpb, &ckb) != 0) {
    fclose(f);
    fprintf(stderr,
            "ferry dupes: %s: not a move list (its first line must name the columns path,keeper "
            "or path_b64,keeper_b64: the HTML report's \"Save the move list\" writes one)\n",
            list);
    return CLI_USAGE;
  }
  /* each entry's group in this run, to check that a keeper is one of its file's */
  size_t total = ferry_catalog_size(c);
  uint32_t *group_of = malloc((total ? total : 1) * sizeof *group_of);
  uint8_t *role = calloc(total ? total : 1, 1); /* 1 moved, 2 keeper */
  if (!group_of || !role) {
    fclose(f);
    free(group_of), free(role);
    fprintf(stderr, "ferry dupes: out of memory\n");
    return CLI_FAIL;
  }
  for (size_t i = 0; i < total; i++)
    group_of[i] = UINT32_MAX;
  for (size_t g = 0; g < ferry_dupes_group_count(d); g++) {
    const uint32_t *m;
    size_t k = ferry_dupes_group(d, g, &m);
    for (size_t i = 0; i < k; i++)
      group_of[m[i]] = (uint32_t)g;
  }
  char **row = NULL;
  size_t n = 0, line = 1, refused = 0;
  int r;
  while ((r = fy_csv_row(f, &row, &n)) != 0) {
    line++;
    if (r < 0) {
      fprintf(stderr, "ferry dupes: %s: line %zu: %s\n", list, line, ferry_last_error());
      refused++;
      break;
    }
    if (n == 1 && !row[0][0]) { /* an empty line */
      fy_csv_free(row, n);
      continue;
    }
    char *path = row_path(list, line, row, n, cp, cpb, "path");
    char *keeper = path ? row_path(list, line, row, n, ck, ckb, "keeper") : NULL;
    fy_csv_free(row, n);
    long pi = path ? find_entry(c, path) : -1, ki = keeper ? find_entry(c, keeper) : -1;
    char *kc = keeper && ki >= 0 ? cli_canonical(keeper) : NULL;
    const char *why = !path || !keeper ? NULL
                      : pi < 0         ? "not in the catalog"
                      : ki < 0         ? "its keeper is not in the catalog"
                      : pi == ki       ? "its own keeper"
                      : group_of[pi] == UINT32_MAX || group_of[pi] != group_of[ki]
                          ? "not in its keeper's group here"
                      : ferry_dupes_is_reference(d, (uint32_t)pi) ? "under a --reference folder"
                      : ferry_dupes_stays(d, (uint32_t)pi) ? "kept or left in place by --decisions"
                      : role[pi] == 2 || role[ki] == 1     ? "listed both to keep and to move"
                      : kc && !cli_keeper_outside(kc, mv->root)
                          ? "its keeper is inside the move destination (the library would keep "
                            "no copy)"
                          : "";
    if (why && *why)
      fprintf(stderr, "ferry dupes: %s: line %zu: %s: %s (not moved)\n", list, line, path, why);
    if (!why || *why) {
      refused++;
    } else if (!role[pi]) { /* a file listed twice moves once */
      role[pi] = 1, role[ki] = 2;
      if (!kc) {
        fprintf(stderr, "ferry dupes: %s: the keeper's folder is gone (%s not moved)\n", keeper,
                path);
        mv->failed++;
      } else {
        cli_mover_file(mv, ferry_catalog_get(c, (size_t)pi), kc, ferry_catalog_get(c, (size_t)ki));
      }
    }
    free(kc);
    free(path);
    free(keeper);
  }
  fclose(f);
  free(group_of);
  free(role);
  if (refused)
    fprintf(stderr, "ferry dupes: %zu lines of %s refused\n", refused, list);
  mv->failed += refused;
  return CLI_OK;
}
