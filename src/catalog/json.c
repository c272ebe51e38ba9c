/* json.c — JSON through jansson: members built under the project's string
 * contract, values written with its flags, objects streamed by their last
 * array (json.h). */
#include "catalog/json.h"

#include "catalog/text.h"
#include "core/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

json_t *fy_json_text(const char *s) {
  if (!s)
    return json_null();
  if (fy_utf8_valid(s))
    return json_string(s);
  char *u = fy_utf8_lossy(s);
  json_t *v = u ? json_string(u) : NULL;
  free(u);
  return v;
}

json_t *fy_json_num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

int fy_json_set_text(json_t *obj, const char *key, const char *s) {
  return json_object_set_new(obj, key, fy_json_text(s)); /* -1 for a NULL obj or value */
}

int fy_json_set_path(json_t *obj, const char *key, const char *path) {
  if (fy_json_set_text(obj, key, path))
    return -1;
  if (!path || fy_utf8_valid(path))
    return 0;
  char name[128];
  if (snprintf(name, sizeof name, "%s_b64", key) >= (int)sizeof name)
    return -1; /* keys are the project's own short names */
  char *b64 = fy_base64_text((const uint8_t *)path, strlen(path));
  json_t *v = b64 ? json_string(b64) : NULL;
  free(b64);
  return json_object_set_new(obj, name, v);
}

/* The status of a failed jansson dump: the stream's error, else memory. */
static int dump_failed(FILE *f, const char *what) {
  if (ferror(f))
    return fy_error(FERRY_EIO, "%s: write failed", what);
  return fy_error(FERRY_ENOMEM, "%s: out of memory writing JSON", what);
}

int fy_json_write(FILE *f, json_t *v, const char *tail, const char *what) {
  if (!v)
    return fy_error(FERRY_ENOMEM, "%s: out of memory building JSON", what);
  int rc = json_dumpf(v, f, FY_JSON_FLAGS | JSON_ENCODE_ANY);
  json_decref(v);
  if (rc)
    return dump_failed(f, what);
  if (tail)
    fputs(tail, f);
  return ferror(f) ? fy_error(FERRY_EIO, "%s: write failed", what) : FERRY_OK;
}

/* jansson's output to a FILE with the last 3 bytes held back (the head's
 * `[]}`); a failed write is remembered here, as jansson does not look at
 * every answer of its callback (an object's keys). */
typedef struct held_out {
  FILE *f;
  char tail[3];
  size_t ntail;
  int failed;
} held_out;

static int held_write(const char *buf, size_t n, void *user) {
  held_out *h = user;
  char joined[3 + 256];
  while (n) {
    size_t k = n < 256 ? n : 256;
    memcpy(joined, h->tail, h->ntail);
    memcpy(joined + h->ntail, buf, k);
    size_t all = h->ntail + k, out = all > 3 ? all - 3 : 0;
    if (out && fwrite(joined, 1, out, h->f) != out)
      h->failed = 1;
    h->ntail = all - out;
    memcpy(h->tail, joined + out, h->ntail);
    buf += k, n -= k;
  }
  return h->failed ? -1 : 0;
}

int fy_json_stream_begin(FILE *f, json_t *head, const char *key, const char *what) {
  if (!head || json_object_set_new(head, key, json_array())) {
    json_decref(head);
    return fy_error(FERRY_ENOMEM, "%s: out of memory building JSON", what);
  }
  held_out h = {f, "", 0, 0};
  int rc = json_dump_callback(head, held_write, &h, FY_JSON_FLAGS);
  json_decref(head);
  if (h.failed || ferror(f))
    return fy_error(FERRY_EIO, "%s: write failed", what);
  if (rc)
    return fy_error(FERRY_ENOMEM, "%s: out of memory writing JSON", what);
  /* `{..., "KEY": []}`: its "]}" left to the caller, after the elements */
  if (h.ntail != 3 || memcmp(h.tail, "[]}", 3))
    return fy_error(FERRY_EINTERNAL, "%s: unexpected JSON from jansson", what);
  fputc('[', f);
  return ferror(f) ? fy_error(FERRY_EIO, "%s: write failed", what) : FERRY_OK;
}

/* Set when an allocation of jansson's failed on this thread. */
static _Thread_local int jansson_oom;

static void *counted(size_t n) {
  void *p = fy_malloc(n);
  if (!p)
    jansson_oom = 1;
  return p;
}

static void route_jansson(void) {
  json_malloc_t m;
  json_free_t f;
  json_get_alloc_funcs(&m, &f);
  if (m == malloc && f == free) /* jansson's default: free() frees counted()'s memory too */
    json_set_alloc_funcs(counted, free);
}

json_t *fy_json_parse(const char *t, size_t n, int *oom) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, route_jansson);
  json_error_t err;
  memset(&err, 0, sizeof err);
  jansson_oom = 0;
  json_t *v = json_loadb(t, n, 0, &err);
  json_malloc_t m;
  json_free_t f;
  json_get_alloc_funcs(&m, &f); /* still counted()? (a program may set its own later) */
  *oom = !v && (m == counted ? jansson_oom
                             : json_error_code(&err) == json_error_out_of_memory || !err.text[0]);
  return v;
}
