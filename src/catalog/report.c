/* report.c — ferry_dupes_write: the groups as CSV, JSON, or one offline
 * HTML page (thumbnails embedded as data: URIs, each group's files in a
 * grid, distance to the keeper under each, the keeper outlined; the keeper
 * can be changed and files unticked, and the page exports the move list that
 * `ferry dupes --apply-list` carries out). */
#include "catalog/dupes.h"
#include "catalog/json.h"
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

/* The page: a toolbar (how many files are ticked to move, the move list to
 * save), each group's files in a grid that reflows with the window. Every
 * file has a "keep" choice (one per group, the keeper's preselected) and a
 * "move" box (ticked for the others); a click on a picture opens it large
 * (the file itself, else its thumbnail). The move list follows the ticks:
 * CSV path,keeper,path_b64,keeper_b64 for `ferry dupes --apply-list`. */
static const char style[] =
    "*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:0;background:#f6f6f6;"
    "color:#222}header{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid "
    "#ccc;padding:.6em 1em}h1{font-size:1.15em;margin:0 0 .3em}header p{margin:.2em 0;"
    "font-size:.85em}main{padding:.5em 1em}button{font:inherit;margin-right:.4em}"
    "details textarea{width:100%;height:8em;font-family:monospace;font-size:.8em}"
    ".group{background:#fff;border:1px solid #ddd;border-radius:6px;margin:.8em 0;"
    "padding:.6em}.group h2{font-size:.95em;margin:0 0 .5em}"
    ".members{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}"
    "figure{margin:0;padding:5px;border:3px solid transparent;border-radius:6px;min-width:0}"
    "figure.keeper{border-color:#2a8a3a;background:#eef8ef}"
    "figure.moving{border-color:#c0392b;border-style:dashed;background:#fdf0ee}"
    "figure.moving img{opacity:.6}"
    "figure img{width:100%;height:120px;object-fit:contain;display:block;cursor:zoom-in}"
    "figcaption{font-size:.75em;margin-top:4px;line-height:1.35}"
    "figcaption label{margin-right:.6em;white-space:nowrap;cursor:pointer}"
    ".nb{white-space:nowrap}.path{overflow-wrap:break-word;color:#555}.dist{font-weight:bold}"
    ".noimg{height:120px;display:flex;align-items:center;justify-content:center;background:#eee;"
    "color:#888}#preview{position:fixed;inset:0;z-index:5;background:rgba(0,0,0,.85);"
    "display:flex;flex-direction:column;align-items:center;justify-content:center;"
    "cursor:zoom-out}#preview[hidden]{display:none}#preview img{max-width:95vw;max-height:88vh}"
    "#preview div{color:#eee;font-size:.85em;margin-top:.5em;overflow-wrap:anywhere;"
    "max-width:95vw}";

static const char script[] =
    "function q(s){return /[\",\\n\\r]/.test(s)?'\"'+s.replace(/\"/g,'\"\"')+'\"':s}"
    "function sync(){var rows=['path,keeper,path_b64,keeper_b64'],n=0;"
    "document.querySelectorAll('section.group').forEach(function(g){var keeper=null,"
    "figs=g.querySelectorAll('figure');figs.forEach(function(f){"
    "if(f.querySelector('input.keep').checked)keeper=f;});figs.forEach(function(f){"
    "var m=f.querySelector('input.move'),k=f===keeper;f.classList.toggle('keeper',k);"
    "if(k||f.dataset.reference){m.checked=false;m.disabled=true;}else m.disabled=false;"
    "f.classList.toggle('moving',m.checked);if(m.checked&&keeper){n++;rows.push([q(f.dataset.path),"
    "q(keeper.dataset.path),f.dataset.pathB64,keeper.dataset.pathB64].join(','));}});});"
    "document.getElementById('move-list').value=rows.join('\\n')+'\\n';"
    "document.getElementById('count').textContent=n;"
    "document.body.setAttribute('data-move-count',n);}"
    "window.addEventListener('load',function(){var ok=0,bad=0;"
    "document.querySelectorAll('figure img').forEach(function(i){"
    "if(i.complete&&i.naturalWidth>0)ok++;else bad++;});"
    "document.body.setAttribute('data-thumbs-loaded',ok);"
    "document.body.setAttribute('data-thumbs-broken',bad);"
    "document.querySelectorAll('input.keep').forEach(function(r){r.addEventListener('change',"
    "function(){var g=r.closest('section'),old=g.querySelector('figure.keeper');"
    "if(old&&!old.dataset.reference)old.querySelector('input.move').checked=true;sync();});});"
    "document.querySelectorAll('input.move').forEach(function(c){"
    "c.addEventListener('change',sync);});"
    "var pv=document.getElementById('preview'),big=pv.querySelector('img');"
    "document.querySelectorAll('figure img').forEach(function(i){i.addEventListener('click',"
    "function(){var f=i.closest('figure');big.onerror=function(){big.onerror=null;big.src=i.src;};"
    "big.src=f.dataset.src;pv.querySelector('div').textContent=f.dataset.path;pv.hidden=false;"
    "document.body.setAttribute('data-preview',f.dataset.path);});});"
    "pv.addEventListener('click',function(){pv.hidden=true;big.removeAttribute('src');"
    "document.body.removeAttribute('data-preview');});"
    "document.addEventListener('keydown',function(e){if(e.key==='Escape')pv.click();});"
    "document.getElementById('none').addEventListener('click',function(){"
    "document.querySelectorAll('input.move').forEach(function(c){c.checked=false;});sync();});"
    "document.getElementById('save').addEventListener('click',function(){"
    "var a=document.createElement('a');a.href=URL.createObjectURL(new Blob("
    "[document.getElementById('move-list').value],{type:'text/csv'}));"
    "a.download='ferry-move-list.csv';document.body.appendChild(a);a.click();a.remove();});"
    "sync();});";

/* A path shown in a caption: its text with a line-break opportunity
 * (<wbr>) after every '/', so a long path wraps between folder names, never
 * inside one (the CSS breaks a name only when it alone is wider than the
 * column). */
static void path_text(FILE *f, const char *path) {
  char seg[256];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    seg[n++] = (char)*p;
    /* a long name is written in pieces, each cut between UTF-8 characters */
    int full = n > sizeof seg - 8 && (p[1] & 0xC0) != 0x80;
    if (*p == '/' || full || !p[1]) {
      seg[n] = '\0';
      fy_html_text(f, seg);
      if (*p == '/')
        fputs("<wbr>", f);
      n = 0;
    }
  }
}

/* A file: URL of the path, every byte but unreserved ones and '/'
 * percent-encoded (any name, not only UTF-8, round-trips). */
static void file_url(FILE *f, const char *path) {
  fputs("file://", f);
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '/' || *p == '-' || *p == '.' || *p == '_' || *p == '~';
    if (plain)
      fputc(*p, f);
    else
      fprintf(f, "%%%02X", *p);
  }
}

static void write_member(const ferry_dupes *d, FILE *f, size_t g, uint32_t keeper, uint32_t i,
                         int first) {
  const ferry_catalog_entry *e = entry(d, i);
  int ref = ferry_dupes_is_reference(d, i);
  fprintf(f, "<figure class=\"member%s\" data-path=\"", first ? " keeper" : "");
  fy_html_text(f, e->path);
  fputs("\" data-path-b64=\"", f); /* the exact bytes, for the move list and scripts */
  fy_base64(f, (const uint8_t *)e->path, strlen(e->path));
  fputs("\" data-src=\"", f);
  file_url(f, e->path);
  fprintf(f, "\" data-distance=\"%d\"%s>", ferry_dupes_distance(d, keeper, i),
          ref ? " data-reference=\"1\"" : "");
  uint8_t *jpg;
  size_t n;
  if (fy_thumbnail(e->path, 160, &jpg, &n) == FERRY_OK) {
    fputs("<img alt=\"\" title=\"click: the picture large\" src=\"data:image/jpeg;base64,", f);
    fy_base64(f, jpg, n);
    fputs("\">", f);
    free(jpg);
  } else { /* named, with why (a file gone, damaged, now a device or FIFO: refused at once) */
    char why[1024];
    snprintf(why, sizeof why, "%s", ferry_last_error());
    fy_log(FERRY_LOG_WARNING, "no preview in the report: %s", why);
    fputs("<div class=\"noimg\" title=\"", f);
    fy_html_text(f, why);
    fputs("\">no preview</div>", f);
  }
  fprintf(f,
          "<figcaption><label><input type=\"radio\" class=\"keep\" name=\"keep-%zu\"%s> keep"
          "</label><label><input type=\"checkbox\" class=\"move\"%s> move</label>%s<br>",
          g, first ? " checked" : "", first || ref ? "" : " checked",
          ref ? " <span class=\"nb\">(reference)</span>" : "");
  if (!first)
    fprintf(f, "<span class=\"nb\">distance <span class=\"dist\">%d</span></span> ",
            ferry_dupes_distance(d, keeper, i));
  fprintf(f, "<span class=\"nb\">%d&times;%d</span> <span class=\"nb\">%.1f&nbsp;KiB</span><br>",
          e->width, e->height, (double)e->size / 1024.0);
  fputs("<span class=\"path\">", f);
  path_text(f, e->path);
  fputs("</span></figcaption></figure>\n", f);
}

static int write_html(const ferry_dupes *d, FILE *f, const char *what) {
  (void)what;
  size_t dupes = 0;
  for (size_t g = 0; g < d->ngroups; g++)
    dupes += ferry_dupes_group(d, g, NULL) - 1;
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        "<title>ferry: near-duplicates</title><style>",
        f);
  fputs(style, f);
  fputs("</style><script>", f);
  fputs(script, f);
  char rules[160];
  fprintf(f,
          "</script></head>\n<body data-groups=\"%zu\">\n<header><h1>%zu groups of "
          "near-duplicates (%zu files that are not the keeper)</h1>\n<p>hash %s, Hamming "
          "distance &le; %d%s. The keeper of each group (by %s) is outlined in green. Choose "
          "another with <b>keep</b>; untick <b>move</b> to leave a file where it is; click a "
          "picture to see it large.</p>\n<p><b id=\"count\">0</b> files ticked to move. "
          "<button id=\"save\">Save the move list</button><button id=\"none\">Untick all"
          "</button> then <code>ferry dupes CATALOG --apply-list ferry-move-list.csv "
          "--move-dupes-to DIR</code> (a dry run; add <code>--apply</code> to move, "
          "<code>DIR/ferry-moves.csv</code> lists every move).</p>\n<details><summary>the "
          "move list</summary><textarea id=\"move-list\" readonly></textarea></details>"
          "</header>\n<main>\n",
          d->ngroups, d->ngroups, dupes, ferry_hash_kind_name(d->kind), d->threshold,
          d->robust_joined ? ", or matched turned, mirrored or cropped by their signatures" : "",
          fy_dupes_keep_describe(d, rules, sizeof rules));
  for (size_t g = 0; g < d->ngroups; g++) {
    const uint32_t *m;
    size_t n = ferry_dupes_group(d, g, &m);
    fprintf(f,
            "<section class=\"group\" data-group=\"%zu\" data-size=\"%zu\">"
            "<h2>group %zu: %zu files</h2><div class=\"members\">\n",
            g, n, g, n); /* numbered as in the CSV and JSON outputs */
    for (size_t k = 0; k < n; k++)
      write_member(d, f, g, m[0], m[k], k == 0);
    fputs("</div></section>\n", f);
  }
  fputs("</main>\n<div id=\"preview\" hidden><img alt=\"\"><div></div></div>\n</body></html>\n", f);
  return FERRY_OK;
}

int ferry_dupes_write(const ferry_dupes *d, const char *format, const char *out_path) {
  if (!d || !format)
    return fy_error(FERRY_EINVAL, "ferry_dupes_write: NULL argument");
  int (*writer)(const ferry_dupes *, FILE *, const char *) = !strcmp(format, "csv")    ? write_csv
                                                             : !strcmp(format, "json") ? write_json
                                                             : !strcmp(format, "html") ? write_html
                                                                                       : NULL;
  if (!writer)
    return fy_error(FERRY_EINVAL, "report format must be csv, json or html, not '%s'", format);
  fy_text_out t;
  int rc = fy_open_out(out_path, &t);
  if (rc)
    return rc;
  rc = writer(d, t.f, out_path ? out_path : "<stdout>");
  return fy_close_out(&t, rc);
}
