/* export.c — ferry_catalog_export: the catalog as CSV or JSON (through
 * jansson, catalog/json.c), one entry per line/object, hashes as
 * imagehash's hex strings. */
#include "catalog/catalog.h"
#include "catalog/json.h"
#include "catalog/text.h"

#include <string.h>

static void hex(FILE *f, const ferry_catalog_entry *e, int k) {
  char h[80] = "";
  if (e->kinds & FERRY_HASH_MASK(k))
    ferry_hash_to_hex(&e->hash[k], h, sizeof h);
  fputs(h, f);
}

static void write_csv(const ferry_catalog *c, FILE *f) {
  fputs("path,size,mtime_ns,width,height,format,status,error", f);
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (c->options.kinds & FERRY_HASH_MASK(k))
      fprintf(f, ",%s", ferry_hash_kind_name((ferry_hash_kind)k));
  fputc('\n', f);
  for (size_t i = 0; i < c->count; i++) {
    const ferry_catalog_entry *e = &c->entries[i];
    fy_csv_field(f, e->path);
    fprintf(f, ",%llu,%lld,%d,%d,%s,%s,", (unsigned long long)e->size, (long long)e->mtime_ns,
            e->width, e->height, ferry_format_name(e->format), e->status ? "error" : "ok");
    fy_csv_field(f, e->error);
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
      if (c->options.kinds & FERRY_HASH_MASK(k)) {
        fputc(',', f);
        hex(f, e, k);
      }
    fputc('\n', f);
  }
}

/* The catalog's settings: what every entry's hashes were made with. */
static json_t *options_json(const ferry_hash_options *o) {
  json_t *j = json_object(), *kinds = json_array();
  int bad = json_object_set_new(
      j, "mode", json_string(o->mode == FERRY_HASH_COMPATIBLE ? "compatible" : "fast"));
  bad |= json_object_set_new(j, "hash_size", json_integer(o->hash_size));
  bad |= json_object_set_new(j, "colorhash_bits", json_integer(o->colorhash_bits));
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (o->kinds & FERRY_HASH_MASK(k))
      bad |= json_array_append_new(kinds, json_string(ferry_hash_kind_name((ferry_hash_kind)k)));
  bad |= json_object_set_new(j, "hashes", kinds);
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

static json_t *entry_json(const ferry_catalog_entry *e) {
  json_t *j = json_object(), *hashes = json_object();
  int bad = fy_json_set_path(j, "path", e->path);
  bad |= json_object_set_new(j, "size", json_integer((json_int_t)e->size));
  bad |= json_object_set_new(j, "mtime_ns", json_integer((json_int_t)e->mtime_ns));
  bad |= json_object_set_new(j, "width", json_integer(e->width));
  bad |= json_object_set_new(j, "height", json_integer(e->height));
  bad |= json_object_set_new(j, "format", json_string(ferry_format_name(e->format)));
  bad |= fy_json_set_text(j, "error", e->status ? e->error : NULL);
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (e->kinds & FERRY_HASH_MASK(k)) {
      char h[80] = "";
      ferry_hash_to_hex(&e->hash[k], h, sizeof h);
      bad |= json_object_set_new(hashes, ferry_hash_kind_name((ferry_hash_kind)k), json_string(h));
    }
  bad |= json_object_set_new(j, "hashes", hashes);
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* {"ferry_catalog": 1, "options": {...}, "entries": [{...}, ...]}: one
 * entry built and written at a time (a catalog may hold 100M). */
static int write_json(const ferry_catalog *c, FILE *f, const char *what) {
  json_t *head = json_object();
  int bad = json_object_set_new(head, "ferry_catalog", json_integer(1));
  bad |= json_object_set_new(head, "options", options_json(&c->options));
  if (bad) {
    json_decref(head);
    head = NULL;
  }
  int rc = fy_json_stream_begin(f, head, "entries", what);
  for (size_t i = 0; i < c->count && rc == FERRY_OK; i++) {
    fputs(i ? ",\n  " : "\n  ", f);
    rc = fy_json_write(f, entry_json(&c->entries[i]), NULL, what);
  }
  if (rc == FERRY_OK)
    fputs("\n]}\n", f);
  return rc;
}

int ferry_catalog_export(const ferry_catalog *c, const char *out_path, const char *format) {
  if (!c || !format)
    return fy_error(FERRY_EINVAL, "ferry_catalog_export: NULL argument");
  int csv = !strcmp(format, "csv"), json = !strcmp(format, "json");
  if (!csv && !json)
    return fy_error(FERRY_EINVAL, "export format must be csv or json, not '%s'", format);
  fy_catalog_ready(c);
  fy_text_out t;
  int rc = fy_open_out(out_path, &t);
  if (rc)
    return rc;
  if (csv) {
    write_csv(c, t.f);
    return fy_close_out(&t, FERRY_OK);
  }
  rc = write_json(c, t.f, out_path ? out_path : "<stdout>");
  return fy_close_out(&t, rc);
}
