/* test_json.c — JSON through jansson (src/catalog/json.c, text.c): names
 * that are not UTF-8 become U+FFFD with `<key>_b64` beside them carrying
 * the exact bytes, base64 against RFC 4648, non-finite numbers as null,
 * streamed objects that parse, and the catalog export and dupes report
 * under every allocation failure (jansson's and ferry's): FERRY_ENOMEM
 * with a message or a complete file, never a crash or a leak. */
#include "catalog/json.h"
#include "catalog/text.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp[1024];

static void test_lossy(void) {
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"", ""},
      {"plain.jpg", "plain.jpg"},
      {"caf\xc3\xa9-\xf0\x9f\x98\x80.jpg", "caf\xc3\xa9-\xf0\x9f\x98\x80.jpg"}, /* valid: kept */
      {"caf\xe9.jpg", "caf\xef\xbf\xbd.jpg"},                                   /* Latin-1 */
      {"o\xc0\xafl", "o\xef\xbf\xbd\xef\xbf\xbdl"},               /* an overlong '/' */
      {"s\xed\xa0\x80", "s\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
      {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
      {"t\xe2\x82x", "t\xef\xbf\xbd\xef\xbf\xbdx"}, /* cut short: each byte */
      {"\xef\xbf\xbd", "\xef\xbf\xbd"},             /* U+FFFD itself: valid */
      {"\xff", "\xef\xbf\xbd"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *got = fy_utf8_lossy(cases[i].in);
    CHECK_MSG(got && !strcmp(got, cases[i].want), "case %zu: %s", i, got ? got : "(null)");
    CHECK(got && fy_utf8_valid(got));
    CHECK(fy_utf8_valid(cases[i].in) == !strcmp(cases[i].in, cases[i].want));
    free(got);
  }
}

static void test_base64(void) {
  static const char *const want[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                     "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (size_t n = 0; n <= 6; n++) {
    char *got = fy_base64_text((const uint8_t *)"foobar", n);
    CHECK_MSG(got && !strcmp(got, want[n]), "%zu: %s", n, got ? got : "(null)");
    free(got);
  }
  uint8_t all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (uint8_t)(255 - i);
  for (size_t n = 250; n <= 256; n++) {
    char *s = fy_base64_text(all, n);
    uint8_t *back = NULL;
    size_t m = 0;
    CHECK(s && fy_base64_decode(s, &back, &m) == FERRY_OK && m == n && !memcmp(back, all, n));
    free(s);
    free(back);
  }
}

/* obj as text (FY_JSON_FLAGS), parsed back strictly. */
static json_t *round_trip(json_t *obj, char *text, size_t cap) {
  char *s = json_dumps(obj, FY_JSON_FLAGS);
  CHECK(s != NULL);
  snprintf(text, cap, "%s", s ? s : "");
  json_error_t err;
  json_t *back = s ? json_loads(s, 0, &err) : NULL;
  CHECK_MSG(back != NULL, "%s", s ? err.text : "no text");
  free(s);
  return back;
}

static void test_members(void) {
  const char *odd = "/pics/caf\xe9 \"q\"\x01\\.jpg";
  json_t *o = json_object();
  CHECK(fy_json_set_path(o, "path", odd) == 0);
  CHECK(fy_json_set_path(o, "ok", "/pics/\xc3\xa9t\xc3\xa9.jpg") == 0);
  CHECK(fy_json_set_path(o, "none", NULL) == 0);
  CHECK(fy_json_set_text(o, "msg", "bad \xff byte") == 0);
  CHECK(json_object_set_new(o, "nan", fy_json_num(NAN)) == 0);
  CHECK(json_object_set_new(o, "inf", fy_json_num(-INFINITY)) == 0);
  CHECK(json_object_set_new(o, "x", fy_json_num(0.1234567890123)) == 0);
  char text[1024];
  json_t *b = round_trip(o, text, sizeof text);
  /* the shape the CLI's tests read: one line, ", " and ": " */
  CHECK_MSG(!strncmp(text, "{\"path\": \"/pics/caf\xef\xbf\xbd \\\"q\\\"\\u0001\\\\.jpg\", ", 40),
            "%s", text);
  CHECK_MSG(strstr(text, "\"x\": 0.123456789") && !strstr(text, "0.1234567890") &&
                !strchr(text, '\n'),
            "%s", text);
  CHECK(fy_utf8_valid(text));
  const char *p = json_string_value(json_object_get(b, "path"));
  CHECK(p && !strcmp(p, "/pics/caf\xef\xbf\xbd \"q\"\x01\\.jpg"));
  const char *b64 = json_string_value(json_object_get(b, "path_b64"));
  uint8_t *bytes = NULL;
  size_t n = 0;
  CHECK(b64 && fy_base64_decode(b64, &bytes, &n) == FERRY_OK && n == strlen(odd) &&
        !memcmp(bytes, odd, n));
  free(bytes);
  /* a UTF-8 name, a NULL one, a message: no _b64 */
  CHECK(json_object_get(b, "ok") && !json_object_get(b, "ok_b64"));
  CHECK(json_is_null(json_object_get(b, "none")) && !json_object_get(b, "none_b64"));
  CHECK(!strcmp(json_string_value(json_object_get(b, "msg")), "bad \xef\xbf\xbd byte"));
  CHECK(!json_object_get(b, "msg_b64"));
  CHECK(json_is_null(json_object_get(b, "nan")) && json_is_null(json_object_get(b, "inf")));
  json_decref(b);
  json_decref(o);
  /* NULL objects and values: -1, nothing leaked */
  CHECK(fy_json_set_path(NULL, "path", odd) == -1);
  CHECK(fy_json_set_text(NULL, "k", "v") == -1);
}

static void test_stream(void) {
  char path[1100];
  snprintf(path, sizeof path, "%s/stream.json", tmp);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f)
    return;
  json_t *head = json_object();
  json_object_set_new(head, "n", json_integer(3));
  CHECK(fy_json_stream_begin(f, head, "items", "stream.json") == FERRY_OK);
  for (int i = 0; i < 3; i++) {
    fputs(i ? ", " : "", f);
    CHECK(fy_json_write(f, json_integer(i), NULL, "stream.json") == FERRY_OK);
  }
  fputs("]}\n", f);
  fclose(f);
  json_error_t err;
  json_t *back = json_load_file(path, 0, &err);
  CHECK_MSG(back && json_integer_value(json_object_get(back, "n")) == 3 &&
                json_array_size(json_object_get(back, "items")) == 3,
            "%s", back ? "shape" : err.text);
  json_decref(back);
  /* out of memory before: said so, nothing written */
  f = fopen(path, "w");
  CHECK(fy_json_stream_begin(f, NULL, "items", "stream.json") == FERRY_ENOMEM);
  CHECK(fy_json_write(f, NULL, NULL, "stream.json") == FERRY_ENOMEM);
  CHECK(strstr(ferry_last_error(), "stream.json: out of memory"));
  CHECK(ftell(f) == 0);
  fclose(f);
}

/* ------------------------------------------- allocation failures */

static long jansson_calls, jansson_fail_at;
static void *failing_malloc(size_t n) {
  return ++jansson_calls == jansson_fail_at ? NULL : malloc(n);
}

static ferry_catalog *small_catalog(void) {
  ferry_hash_options ho;
  ferry_hash_options_default(&ho);
  ho.kinds = FERRY_HASH_MASK(FERRY_HASH_PHASH) | FERRY_HASH_MASK(FERRY_HASH_AHASH);
  ferry_catalog *c = NULL;
  CHECK(ferry_catalog_new(&ho, &c) == FERRY_OK);
  const char *paths[] = {"/pics/a.jpg", "/pics/caf\xe9.jpg", "/pics/\xc3\xa9t\xc3\xa9.jpg",
                         "/pics/bad\x01.jpg"};
  for (int i = 0; i < 4; i++) {
    ferry_catalog_entry e;
    memset(&e, 0, sizeof e);
    e.path = paths[i];
    e.size = 1000 + (uint64_t)i;
    e.mtime_ns = 1700000000000000000LL + i;
    e.format = FERRY_FORMAT_JPEG;
    e.error = "";
    if (i == 3) {
      e.status = FERRY_ECORRUPT;
      e.error = "/pics/bad\x01.jpg: truncated \xe9";
    } else {
      e.width = e.height = 64 + i;
      e.kinds = ho.kinds;
      for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
        if (ho.kinds & FERRY_HASH_MASK(k)) {
          e.hash[k].bits = ho.hash_size * ho.hash_size;
          e.hash[k].w[0] = 0x0123456789abcdefULL ^ (uint64_t)i; /* near: one group */
        }
    }
    CHECK_MSG(ferry_catalog_add(c, &e) == FERRY_OK, "%s", ferry_last_error());
  }
  return c;
}

/* The export's JSON read back: four entries, names and bytes exact. */
static void check_export(const char *path) {
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  CHECK_MSG(j != NULL, "%s: %s (line %d)", path, err.text, err.line);
  json_t *entries = json_object_get(j, "entries");
  CHECK(json_array_size(entries) == 4);
  int b64s = 0;
  for (size_t i = 0; i < json_array_size(entries); i++) {
    json_t *e = json_array_get(entries, i);
    const char *p = json_string_value(json_object_get(e, "path"));
    const char *b = json_string_value(json_object_get(e, "path_b64"));
    CHECK(p != NULL);
    if (b) {
      uint8_t *bytes = NULL;
      size_t n = 0;
      CHECK(fy_base64_decode(b, &bytes, &n) == FERRY_OK && n == 14 &&
            !memcmp(bytes, "/pics/caf\xe9.jpg", 14));
      CHECK(p && !strcmp(p, "/pics/caf\xef\xbf\xbd.jpg"));
      free(bytes);
      b64s++;
    }
  }
  CHECK(b64s == 1);
  json_decref(j);
}

static void test_out_of_memory(void) {
  ferry_catalog *c = small_catalog();
  if (!c)
    return;
  ferry_dupes *d = NULL;
  ferry_search_options so;
  ferry_search_options_default(&so);
  so.threshold = 64;
  CHECK_MSG(ferry_dupes_find(c, FERRY_HASH_PHASH, &so, &d) == FERRY_OK, "%s", ferry_last_error());
  CHECK(d && ferry_dupes_group_count(d) == 1);
  char out[1100];
  snprintf(out, sizeof out, "%s/oom.json", tmp);
  /* a clean run first, read back */
  CHECK(ferry_catalog_export(c, out, "json") == FERRY_OK);
  check_export(out);
  /* jansson's allocations: the Nth fails, for every N until a run needs
   * fewer (json_set_alloc_funcs is the process' setting: this test's own) */
  json_set_alloc_funcs(failing_malloc, free);
  int failures = 0, ok = 0;
  for (int what = 0; what < 2; what++) {
    for (long at = 1; at < 100000; at++) {
      jansson_calls = 0;
      jansson_fail_at = at;
      int rc = what == 0 ? ferry_catalog_export(c, out, "json") : ferry_dupes_write(d, "json", out);
      if (rc == FERRY_OK) {
        CHECK_MSG(jansson_calls < at, "%s: OK though allocation %ld failed",
                  what ? "report" : "export", at);
        ok++;
        break;
      }
      CHECK_MSG(rc == FERRY_ENOMEM && strstr(ferry_last_error(), "out of memory"),
                "%s, allocation %ld: %d %s", what ? "report" : "export", at, rc,
                ferry_last_error());
      failures++;
    }
  }
  jansson_fail_at = 0;
  json_set_alloc_funcs(malloc, free);
  CHECK_MSG(failures > 20 && ok == 2, "%d failures, %d complete", failures, ok);
  CHECK(ferry_catalog_export(c, out, "json") == FERRY_OK);
  check_export(out);
  /* ferry's own allocations (fy_utf8_lossy, fy_base64_text) */
  int mine = 0;
  for (long at = 1; at < 1000; at++) {
    fy_fail_alloc_set(at);
    int rc = ferry_catalog_export(c, out, "json");
    fy_fail_alloc_set(0);
    if (rc == FERRY_OK)
      break;
    CHECK_MSG(rc == FERRY_ENOMEM, "fy_malloc %ld: %d %s", at, rc, ferry_last_error());
    mine++;
  }
  CHECK_MSG(mine >= 2, "%d of ferry's allocations failed", mine);
  ferry_dupes_free(d);
  ferry_catalog_free(c);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/ferry_test_json_XXXXXX");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  test_lossy();
  test_base64();
  test_members();
  test_stream();
  test_out_of_memory();
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  return check_done();
}
