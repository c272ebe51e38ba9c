/* report.c — ferry_dupes_write: the groups as CSV, JSON, or one offline
 * HTML page (thumbnails embedded as data: URIs, side by side per group,
 * distance to the keeper under each, the keeper outlined). */
#include "catalog/dupes.h"
#include "catalog/text.h"

#include <stdlib.h>
#include <string.h>

static const ferry_catalog_entry *entry(const ferry_dupes *d, uint32_t i) {
  return &d->cat->entries[i];
}

static void write_csv(const ferry_dupes *d, FILE *f) {
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
}

static void write_json(const ferry_dupes *d, FILE *f) {
  fprintf(f, "{\"hash\": \"%s\", \"threshold\": %d, \"pairs\": %llu, \"groups\": [",
          ferry_hash_kind_name(d->kind), d->threshold, (unsigned long long)d->pair_total);
  for (size_t g = 0; g < d->ngroups; g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m);
    fprintf(f, "%s\n  {\"group\": %zu, \"keeper\": ", g ? "," : "", g);
    fy_json_string(f, entry(d, m[0])->path);
    fy_json_path_b64(f, "keeper_b64", entry(d, m[0])->path);
    fputs(", \"members\": [", f);
    for (size_t k = 0; k < n; k++) {
      const ferry_catalog_entry *e = entry(d, m[k]);
      fputs(k ? ", {\"path\": " : "{\"path\": ", f);
      fy_json_string(f, e->path);
      fy_json_path_b64(f, "path_b64", e->path);
      fprintf(f,
              ", \"keeper\": %s, \"distance\": %d, \"width\": %d, \"height\": %d, "
              "\"size\": %llu}",
              k ? "false" : "true", ferry_dupes_distance(d, m[0], m[k]), e->width, e->height,
              (unsigned long long)e->size);
    }
    fputs("]}", f);
  }
  fputs("\n]}\n", f);
}

static const char style[] =
    "body{font-family:system-ui,sans-serif;margin:1.5em;background:#fafafa;color:#222}"
    "h1{font-size:1.3em}.group{background:#fff;border:1px solid #ddd;border-radius:6px;"
    "margin:1em 0;padding:.8em}.group h2{font-size:1em;margin:0 0 .6em}"
    ".members{display:flex;flex-wrap:wrap;gap:12px}"
    "figure{margin:0;width:180px;padding:6px;border:3px solid transparent;border-radius:6px}"
    "figure.keeper{border-color:#2a8a3a;background:#eef8ef}"
    "figure img{max-width:160px;max-height:160px;display:block;margin:auto}"
    "figcaption{font-size:.75em;word-break:break-all;margin-top:4px}"
    ".badge{display:inline-block;background:#2a8a3a;color:#fff;border-radius:3px;"
    "padding:0 4px;font-weight:bold}.dist{font-weight:bold}.noimg{width:160px;height:60px;"
    "display:flex;align-items:center;justify-content:center;background:#eee;color:#888}";

/* Counts the thumbnails that decoded (for automated checks: the body's
 * data-thumbs-loaded attribute, and a line at the top). */
static const char script[] = "window.addEventListener('load',function(){var ok=0,bad=0;"
                             "document.querySelectorAll('figure img').forEach(function(i){"
                             "if(i.complete&&i.naturalWidth>0)ok++;else bad++;});"
                             "document.body.setAttribute('data-thumbs-loaded',ok);"
                             "document.body.setAttribute('data-thumbs-broken',bad);});";

static void write_member(const ferry_dupes *d, FILE *f, uint32_t keeper, uint32_t i, int first) {
  const ferry_catalog_entry *e = entry(d, i);
  fprintf(f, "<figure class=\"member%s\" data-path=\"", first ? " keeper" : "");
  fy_html_text(f, e->path);
  if (!fy_utf8_valid(e->path)) { /* the exact bytes, for scripts */
    fputs("\" data-path-b64=\"", f);
    fy_base64(f, (const uint8_t *)e->path, strlen(e->path));
  }
  fprintf(f, "\" data-distance=\"%d\">", ferry_dupes_distance(d, keeper, i));
  uint8_t *jpg;
  size_t n;
  if (fy_thumbnail(e->path, 160, &jpg, &n) == FERRY_OK) {
    fputs("<img alt=\"\" src=\"data:image/jpeg;base64,", f);
    fy_base64(f, jpg, n);
    fputs("\">", f);
    free(jpg);
  } else {
    fputs("<div class=\"noimg\">no preview</div>", f);
  }
  fputs("<figcaption>", f);
  if (first)
    fputs("<span class=\"badge\">keeper</span> ", f);
  else
    fprintf(f, "distance <span class=\"dist\">%d</span> ", ferry_dupes_distance(d, keeper, i));
  fprintf(f, "%d&times;%d, %.1f KiB<br>", e->width, e->height, (double)e->size / 1024.0);
  fy_html_text(f, e->path);
  fputs("</figcaption></figure>\n", f);
}

static void write_html(const ferry_dupes *d, FILE *f) {
  size_t dupes = 0;
  for (size_t g = 0; g < d->ngroups; g++)
    dupes += ferry_dupes_group(d, g, NULL) - 1;
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>ferry: near-duplicates</title><style>",
        f);
  fputs(style, f);
  fputs("</style><script>", f);
  fputs(script, f);
  char rules[160];
  fprintf(f,
          "</script></head>\n<body data-groups=\"%zu\">\n<h1>%zu groups of near-duplicates "
          "(%zu files that are not the keeper)</h1>\n<p>hash %s, Hamming distance &le; %d. "
          "The keeper of each group (by %s) is outlined; distances are to the keeper.</p>\n",
          d->ngroups, d->ngroups, dupes, ferry_hash_kind_name(d->kind), d->threshold,
          fy_dupes_keep_describe(d, rules, sizeof rules));
  for (size_t g = 0; g < d->ngroups; g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m);
    fprintf(f,
            "<section class=\"group\" data-group=\"%zu\" data-size=\"%zu\">"
            "<h2>group %zu: %zu files</h2><div class=\"members\">\n",
            g, n, g, n); /* numbered as in the CSV and JSON outputs */
    for (size_t k = 0; k < n; k++)
      write_member(d, f, m[0], m[k], k == 0);
    fputs("</div></section>\n", f);
  }
  fputs("</body></html>\n", f);
}

int ferry_dupes_write(const ferry_dupes *d, const char *format, const char *out_path) {
  if (!d || !format)
    return fy_error(FERRY_EINVAL, "ferry_dupes_write: NULL argument");
  void (*writer)(const ferry_dupes *, FILE *) = !strcmp(format, "csv")    ? write_csv
                                                : !strcmp(format, "json") ? write_json
                                                : !strcmp(format, "html") ? write_html
                                                                          : NULL;
  if (!writer)
    return fy_error(FERRY_EINVAL, "report format must be csv, json or html, not '%s'", format);
  FILE *f;
  int rc = fy_open_out(out_path, &f);
  if (rc)
    return rc;
  writer(d, f);
  return fy_close_out(out_path, f);
}
