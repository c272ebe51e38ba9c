/* export.c — ferry_catalog_export: the catalog as CSV or JSON, one entry
 * per line/object, hashes as imagehash's hex strings. */
#include "catalog/catalog.h"
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

static void write_json(const ferry_catalog *c, FILE *f) {
  const ferry_hash_options *o = &c->options;
  fprintf(f,
          "{\"ferry_catalog\": 1, \"options\": {\"mode\": \"%s\", \"hash_size\": %d, "
          "\"colorhash_bits\": %d, \"hashes\": [",
          o->mode == FERRY_HASH_COMPATIBLE ? "compatible" : "fast", o->hash_size,
          o->colorhash_bits);
  int first = 1;
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
    if (o->kinds & FERRY_HASH_MASK(k)) {
      fprintf(f, "%s\"%s\"", first ? "" : ", ", ferry_hash_kind_name((ferry_hash_kind)k));
      first = 0;
    }
  fputs("]},\n \"entries\": [", f);
  for (size_t i = 0; i < c->count; i++) {
    const ferry_catalog_entry *e = &c->entries[i];
    fputs(i ? ",\n  {\"path\": " : "\n  {\"path\": ", f);
    fy_json_string(f, e->path);
    fy_json_path_b64(f, "path_b64", e->path);
    fprintf(f,
            ", \"size\": %llu, \"mtime_ns\": %lld, \"width\": %d, \"height\": %d, "
            "\"format\": \"%s\", \"error\": ",
            (unsigned long long)e->size, (long long)e->mtime_ns, e->width, e->height,
            ferry_format_name(e->format));
    if (e->status)
      fy_json_string(f, e->error);
    else
      fputs("null", f);
    fputs(", \"hashes\": {", f);
    first = 1;
    for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++)
      if (e->kinds & FERRY_HASH_MASK(k)) {
        fprintf(f, "%s\"%s\": \"", first ? "" : ", ", ferry_hash_kind_name((ferry_hash_kind)k));
        hex(f, e, k);
        fputc('"', f);
        first = 0;
      }
    fputs("}}", f);
  }
  fputs("\n ]}\n", f);
}

int ferry_catalog_export(const ferry_catalog *c, const char *out_path, const char *format) {
  if (!c || !format)
    return fy_error(FERRY_EINVAL, "ferry_catalog_export: NULL argument");
  int csv = !strcmp(format, "csv"), json = !strcmp(format, "json");
  if (!csv && !json)
    return fy_error(FERRY_EINVAL, "export format must be csv or json, not '%s'", format);
  fy_catalog_ready(c);
  FILE *f;
  int rc = fy_open_out(out_path, &f);
  if (rc)
    return rc;
  if (csv)
    write_csv(c, f);
  else
    write_json(c, f);
  return fy_close_out(out_path, f);
}
