/* cli_json.c — the --json summaries (load, hash, info, doctor): one JSON
 * object on stdout, built as a jansson tree member by member and written
 * once at the end (src/catalog/json.c: strings, file names, the flags). */
#include "cli.h"

#define LEVELS ((int)(sizeof((cli_json *)0)->level / sizeof((cli_json *)0)->level[0]))

/* v (its reference taken) into the open level: under `key` in an object,
 * appended to an array (key NULL). 0, or -1 (no memory, no level, a member
 * without a name), which also makes cli_json_end fail. */
static int add(cli_json *j, const char *key, json_t *v) {
  json_t *at = j->depth < LEVELS ? j->level[j->depth] : NULL;
  int rc;
  if (json_is_array(at)) {
    rc = json_array_append_new(at, v); /* v taken even when it fails */
  } else if (json_is_object(at) && key) {
    rc = json_object_set_new(at, key, v);
  } else {
    json_decref(v);
    rc = -1;
  }
  if (rc)
    j->failed = 1;
  return rc;
}

void cli_json_begin(cli_json *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->failed = 0;
  j->level[0] = json_object();
  if (!j->level[0])
    j->failed = 1;
}

int cli_json_end(cli_json *j) {
  json_t *root = j->level[0];
  j->level[0] = NULL;
  j->depth = 0;
  if (j->failed || !root) {
    json_decref(root);
    fputs("ferry: out of memory building the JSON summary\n", stderr);
    return CLI_FAIL;
  }
  if (fy_json_write(j->f, root, "\n", "the JSON summary") != FERRY_OK) {
    fprintf(stderr, "ferry: %s\n", ferry_last_error());
    return CLI_FAIL;
  }
  return CLI_OK;
}

void cli_json_drop(cli_json *j) {
  json_decref(j->level[0]);
  j->level[0] = NULL;
  j->depth = 0;
}

void cli_json_str(cli_json *j, const char *key, const char *v) { add(j, key, fy_json_text(v)); }

void cli_json_path(cli_json *j, const char *key, const char *path) {
  json_t *at = j->depth < LEVELS ? j->level[j->depth] : NULL;
  if (!key || !json_is_object(at) || fy_json_set_path(at, key, path))
    j->failed = 1;
}

void cli_json_int(cli_json *j, const char *key, long long v) { add(j, key, json_integer(v)); }

void cli_json_num(cli_json *j, const char *key, double v) { add(j, key, fy_json_num(v)); }

void cli_json_bool(cli_json *j, const char *key, int v) { add(j, key, json_boolean(v)); }

void cli_json_null(cli_json *j, const char *key) { add(j, key, json_null()); }

/* A container added where we are, then the level new members go into (a
 * borrowed reference: its parent holds it). */
static void open_level(cli_json *j, const char *key, json_t *v) {
  int rc = add(j, key, v);
  j->depth++;
  if (j->depth < LEVELS)
    j->level[j->depth] = rc ? NULL : v;
  else
    j->failed = 1;
}

void cli_json_object(cli_json *j, const char *key) { open_level(j, key, json_object()); }

void cli_json_array(cli_json *j, const char *key) { open_level(j, key, json_array()); }

void cli_json_close(cli_json *j) {
  if (j->depth > 0)
    j->depth--;
}
