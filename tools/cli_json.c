/* cli_json.c — the --json summaries of load, hash and doctor: one JSON
 * object on stdout. Strings go through fy_json_string (catalog/text.c, the
 * project's one JSON string writer); this file keeps commas and nesting. */
#include "cli.h"

#include <math.h>

/* The comma before a member, then "key": (none for an array element). */
static void member(cli_json *j, const char *key) {
  if (j->count[j->depth]++)
    fputs(", ", j->f);
  if (key) {
    fy_json_string(j->f, key);
    fputs(": ", j->f);
  }
}

static void open_level(cli_json *j, const char *key, char c) {
  member(j, key);
  fputc(c, j->f);
  if (j->depth < (int)(sizeof j->count / sizeof j->count[0]) - 1)
    j->depth++;
  j->count[j->depth] = 0;
}

void cli_json_begin(cli_json *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->count[0] = 0;
  fputc('{', f);
}

void cli_json_end(cli_json *j) {
  while (j->depth > 0)
    cli_json_close(j);
  fputs("}\n", j->f);
}

void cli_json_str(cli_json *j, const char *key, const char *v) {
  member(j, key);
  if (v)
    fy_json_string(j->f, v);
  else
    fputs("null", j->f);
}

void cli_json_int(cli_json *j, const char *key, long long v) {
  member(j, key);
  fprintf(j->f, "%lld", v);
}

void cli_json_num(cli_json *j, const char *key, double v) {
  member(j, key);
  if (isfinite(v))
    fprintf(j->f, "%.10g", v);
  else
    fputs("null", j->f);
}

void cli_json_bool(cli_json *j, const char *key, int v) {
  member(j, key);
  fputs(v ? "true" : "false", j->f);
}

void cli_json_null(cli_json *j, const char *key) {
  member(j, key);
  fputs("null", j->f);
}

void cli_json_object(cli_json *j, const char *key) {
  open_level(j, key, '{');
  j->close[j->depth] = '}';
}

void cli_json_array(cli_json *j, const char *key) {
  open_level(j, key, '[');
  j->close[j->depth] = ']';
}

void cli_json_close(cli_json *j) {
  if (j->depth == 0)
    return;
  fputc(j->close[j->depth], j->f);
  j->depth--;
}
