/* report.c — ferry_dupes_write: the groups as CSV, JSON, or the HTML
 * review page (report_html.c). */
#include "catalog/dupes.h"
#include "catalog/json.h"
#include "catalog/report_page.h"
#include "catalog/text.h"

#include <stdlib.h>
#include <string.h>

static const ferry_catalog_entry *entry(const ferry_dupes *d, uint32_t i) {
  return &d->cat->entries[i];
}

static int write_csv(const ferry_dupes *d, FILE *f, const char *what) {
  (void)what;
  fputs("group,keeper,path,distance,width,height,size\n", f);
  for (size_t g = 0; g < d->ngroups; g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m);
    for (size_t k = 0; k < n; k++) {
      const ferry_catalog_entry *e = entry(d, m[k]);
      fprintf(f, "%zu,%d,", g, k == 0);
      fy_csv_field(f, e->path);
      fprintf(f, ",%d,%d,%d,%llu\n", ferry_dupes_distance(d, m[0], m[k]), e->width, e->height,
              (unsigned long long)e->size);
    }
  }
  return FERRY_OK;
}

static json_t *member_json(const ferry_dupes *d, uint32_t keeper, uint32_t i, int is_keeper) {
  const ferry_catalog_entry *e = entry(d, i);
  json_t *j = json_object();
  int bad = fy_json_set_path(j, "path", e->path);
  bad |= json_object_set_new(j, "keeper", json_boolean(is_keeper));
  bad |= json_object_set_new(j, "distance", json_integer(ferry_dupes_distance(d, keeper, i)));
  bad |= json_object_set_new(j, "width", json_integer(e->width));
  bad |= json_object_set_new(j, "height", json_integer(e->height));
  bad |= json_object_set_new(j, "size", json_integer((json_int_t)e->size));
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* One group: {"group": g, "keeper": ..., "members": [...]}, its members
 * written one at a time (a group may hold every file of the catalog). */
static int write_group(const ferry_dupes *d, FILE *f, size_t g, const char *what) {
  const uint32_t *m;
  size_t n = ferry_dupes_group(d, g, &m);
  json_t *head = json_object();
  int bad = json_object_set_new(head, "group", json_integer((json_int_t)g));
  bad |= fy_json_set_path(head, "keeper", entry(d, m[0])->path);
  if (bad) {
    json_decref(head);
    head = NULL;
  }
  int rc = fy_json_stream_begin(f, head, "members", what);
  for (size_t k = 0; k < n && rc == FERRY_OK; k++) {
    if (k)
      fputs(", ", f);
    rc = fy_json_write(f, member_json(d, m[0], m[k], k == 0), NULL, what);
  }
  if (rc == FERRY_OK)
    fputs("]}", f);
  return rc;
}

static int write_json(const ferry_dupes *d, FILE *f, const char *what) {
  json_t *head = json_object();
  int bad = json_object_set_new(head, "hash", json_string(ferry_hash_kind_name(d->kind)));
  bad |= json_object_set_new(head, "threshold", json_integer(d->threshold));
  bad |= json_object_set_new(head, "pairs", json_integer((json_int_t)d->pair_total));
  if (bad) {
    json_decref(head);
    head = NULL;
  }
  int rc = fy_json_stream_begin(f, head, "groups", what);
  for (size_t g = 0; g < d->ngroups && rc == FERRY_OK; g++) {
    fputs(g ? ",\n  " : "\n  ", f);
    rc = write_group(d, f, g, what);
  }
  if (rc == FERRY_OK)
    fputs("\n]}\n", f);
  return rc;
}

int ferry_dupes_write(const ferry_dupes *d, const char *format, const char *out_path) {
  if (!d || !format)
    return fy_error(FERRY_EINVAL, "ferry_dupes_write: NULL argument");
  int html = !strcmp(format, "html");
  int (*writer)(const ferry_dupes *, FILE *, const char *) = !strcmp(format, "csv")    ? write_csv
                                                             : !strcmp(format, "json") ? write_json
                                                                                       : NULL;
  if (!writer && !html)
    return fy_error(FERRY_EINVAL, "report format must be csv, json or html, not '%s'", format);
  fy_text_out t;
  int rc = fy_open_out(out_path, &t);
  if (rc)
    return rc;
  const char *what = out_path ? out_path : "<stdout>";
  rc = html ? fy_report_html(d, t.f, out_path, what) : writer(d, t.f, what);
  return fy_close_out(&t, rc);
}
