/* report_html.c — the review page (`ferry dupes --format html`): a header
 * with the bulk choices and what the page saves, and the groups as one
 * compact JSON blob that the page's script (review_script.js, embedded by
 * report_page.c, as is its style review_style.css) renders a screenful at a
 * time (never a DOM node per file up front). Thumbnails are made on every
 * core first: written to a sidecar folder beside the page when it goes to a
 * file (PAGE.thumbs/N.jpg, N the file's place in the page: the page stays
 * small and the browser fetches a thumbnail when it comes into view), or,
 * on stdout, embedded as base64 in the blob (decoded only when shown). */
#include "catalog/json.h"
#include "catalog/report_page.h"
#include "catalog/text.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define THUMB_BOX 160

/* The sidecar folder of a page written to out_path (malloc'd): the name
 * without its .html/.htm, plus ".thumbs"; NULL when the page goes to stdout
 * or into a device or FIFO (then the thumbnails are embedded). */
static char *thumbs_dir(const char *out_path) {
  struct stat st;
  if (!out_path || !strcmp(out_path, "-") ||
      (lstat(out_path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) ||
      (stat(out_path, &st) == 0 && !S_ISREG(st.st_mode)))
    return NULL;
  size_t n = strlen(out_path);
  const char *base = strrchr(out_path, '/');
  base = base ? base + 1 : out_path;
  const char *dot = strrchr(base, '.');
  if (dot && dot > base && (!strcmp(dot, ".html") || !strcmp(dot, ".htm")))
    n = (size_t)(dot - out_path);
  char *dir = malloc(n + sizeof ".thumbs");
  if (dir)
    snprintf(dir, n + sizeof ".thumbs", "%.*s.thumbs", (int)n, out_path);
  return dir;
}

/* Opens (making it) the sidecar folder: a folder of ferry's (its mark
 * inside) or a new one; anything else there is refused, never written into. */
static int open_thumbs(const char *dir, int *fd) {
  *fd = -1;
  int made = mkdir(dir, 0755) == 0;
  if (!made && errno != EEXIST)
    return fy_error(FERRY_EIO, "%s: cannot make the thumbnail folder: %s", dir, strerror(errno));
  int d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d < 0)
    return fy_error(FERRY_EINVAL,
                    "%s: is there and is not a folder (the page's thumbnails go there: move it, "
                    "or write the page elsewhere)",
                    dir);
  int m = openat(d, FY_THUMBS_MARK, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (made ? O_CREAT : 0), 0644);
  struct stat st;
  int mine = m >= 0 && fstat(m, &st) == 0 && S_ISREG(st.st_mode);
  static const char say[] = "The thumbnails of a review page of `ferry dupes --format html`; "
                            "`ferry hash` leaves this folder out.\n";
  if (mine && made && write(m, say, sizeof say - 1) != (ssize_t)(sizeof say - 1))
    mine = 0;
  if (m >= 0)
    close(m);
  if (!mine) {
    close(d);
    return fy_error(
        FERRY_EINVAL,
        made ? "%s: cannot write the page's thumbnails there"
             : "%s: a folder that is not a thumbnail folder of ferry's (no " FY_THUMBS_MARK
               " in it): nothing is written into it; move it, or write the page "
               "elsewhere",
        dir);
  }
  *fd = d;
  return FERRY_OK;
}

typedef struct thumb {
  uint8_t *jpg; /* embedded: the JPEG; sidecar: NULL once written */
  size_t n;
  char *why; /* no preview: the reason (malloc'd) */
} thumb;

typedef struct thumb_job {
  const ferry_dupes *d;
  const uint32_t *order; /* page file k -> catalog index */
  size_t count;
  thumb *out;
  int dirfd; /* sidecar, or -1: embedded */
  const char *dir;
  atomic_size_t next;
  atomic_int failed; /* a sidecar write failed: the page is refused */
  char fail[512];
  pthread_mutex_t mu;
} thumb_job;

static int write_thumb(thumb_job *j, size_t k, const uint8_t *jpg, size_t n) {
  char name[32];
  snprintf(name, sizeof name, "%zu.jpg", k);
  int fd = openat(j->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  size_t done = 0;
  while (fd >= 0 && done < n) {
    ssize_t w = write(fd, jpg + done, n - done);
    if (w <= 0)
      break;
    done += (size_t)w;
  }
  int ok = fd >= 0 && done == n;
  int err = errno;
  if (fd >= 0 && close(fd) != 0)
    ok = 0;
  if (!ok) {
    pthread_mutex_lock(&j->mu);
    if (!atomic_load(&j->failed))
      snprintf(j->fail, sizeof j->fail, "%s/%s: %s", j->dir, name, strerror(err ? err : EIO));
    atomic_store(&j->failed, 1);
    pthread_mutex_unlock(&j->mu);
  }
  return ok;
}

static void *thumb_worker(void *arg) {
  thumb_job *j = arg;
  for (;;) {
    size_t k = atomic_fetch_add(&j->next, 1);
    if (k >= j->count || atomic_load(&j->failed))
      return NULL;
    const char *path = j->d->cat->entries[j->order[k]].path;
    uint8_t *jpg;
    size_t n;
    thumb *t = &j->out[k];
    if (fy_thumbnail(path, THUMB_BOX, &jpg, &n) == FERRY_OK) {
      if (j->dirfd >= 0) {
        write_thumb(j, k, jpg, n);
        free(jpg);
      } else {
        t->jpg = jpg;
        t->n = n;
      }
    } else { /* named, with why (a file gone, damaged, now a device or FIFO) */
      t->why = strdup(ferry_last_error());
      fy_log(FERRY_LOG_WARNING, "no preview in the report: %s", t->why ? t->why : path);
    }
  }
}

static int make_thumbs(thumb_job *j) {
  int nt = ferry_default_threads();
  nt = nt < 1 ? 1 : nt > 64 ? 64 : nt;
  if ((size_t)nt > j->count)
    nt = j->count ? (int)j->count : 1;
  pthread_t th[64];
  int started = 0;
  for (int t = 1; t < nt; t++)
    if (pthread_create(&th[started], NULL, thumb_worker, j) == 0)
      started++;
  thumb_worker(j);
  for (int t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  if (atomic_load(&j->failed))
    return fy_error(FERRY_EIO, "cannot write a thumbnail of the page: %s", j->fail);
  return FERRY_OK;
}

/* The folders of the page's files, each once (open addressing over the
 * catalog's path strings: a folder is a path's bytes up to its last '/'). */
typedef struct dirset {
  uint32_t *slot;           /* page file index of the folder's first file + 1; 0 empty */
  uint32_t *dir_of, *first; /* per page file: its folder; per folder: a file of it */
  size_t cap, n;
} dirset;

static size_t dir_len(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? (size_t)(s - p) : 0;
}

static uint64_t fnv(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

static int dirs_build(const ferry_dupes *d, const uint32_t *order, size_t count, dirset *s) {
  s->cap = 64;
  while (s->cap < count * 2 + 2)
    s->cap *= 2;
  s->slot = calloc(s->cap, sizeof *s->slot);
  s->dir_of = malloc((count ? count : 1) * sizeof *s->dir_of);
  s->first = malloc((count ? count : 1) * sizeof *s->first);
  if (!s->slot || !s->dir_of || !s->first)
    return fy_error(FERRY_ENOMEM, "out of memory");
  for (size_t k = 0; k < count; k++) {
    const char *p = d->cat->entries[order[k]].path;
    size_t n = dir_len(p), h = (size_t)fnv(p, n, 14695981039346656037ULL) & (s->cap - 1);
    for (;; h = (h + 1) & (s->cap - 1)) {
      if (!s->slot[h]) { /* a new folder */
        s->slot[h] = (uint32_t)s->n + 1;
        s->first[s->n] = (uint32_t)k;
        s->dir_of[k] = (uint32_t)s->n++;
        break;
      }
      const char *q = d->cat->entries[order[s->first[s->slot[h] - 1]]].path;
      if (dir_len(q) == n && !memcmp(p, q, n)) {
        s->dir_of[k] = s->slot[h] - 1;
        break;
      }
    }
  }
  return FERRY_OK;
}

/* One JSON value into the page's <script> blob: '<' written as \u003c, so
 * that no name ("</script>", "<!--") can end or change the blob. */
static int put(FILE *f, json_t *v, const char *tail) {
  char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  json_decref(v);
  for (const char *c = t; c && *c; c++)
    if (*c == '<')
      fputs("\\u003c", f);
    else
      fputc(*c, f);
  free(t);
  if (tail)
    fputs(tail, f);
  return t ? FERRY_OK : -1;
}

/* A string as the page shows it (fy_shown_text). */
static json_t *shown(const char *s, size_t n) {
  char *c = strndup(s, n), *t = c ? fy_shown_text(c) : NULL;
  json_t *j = t ? json_string(t) : NULL;
  free(c);
  free(t);
  return j;
}

/* A file as a decision names it (decisions.c). */
static json_t *file_ref(const ferry_catalog_entry *e) {
  json_t *o = json_object();
  char mt[32];
  snprintf(mt, sizeof mt, "%lld", (long long)e->mtime_ns);
  int bad = fy_json_set_path(o, "path", e->path);
  bad |= json_object_set_new(o, "size", json_integer((json_int_t)e->size));
  bad |= json_object_set_new(o, "mtime_ns", json_string(mt));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *file_json(const ferry_dupes *d, uint32_t keeper, uint32_t i, uint32_t dir,
                         const thumb *t) {
  const ferry_catalog_entry *e = &d->cat->entries[i];
  size_t dl = dir_len(e->path);
  const char *name = e->path + dl + (e->path[dl] == '/');
  char mt[32];
  snprintf(mt, sizeof mt, "%lld", (long long)e->mtime_ns);
  int flags = (ferry_dupes_is_reference(d, i) ? 1 : 0) | (fy_dupes_decided(d, i) == 1 ? 2 : 0) |
              (fy_dupes_decided(d, i) == 2 ? 4 : 0) | (t->why ? 8 : 0);
  json_t *a = json_array();
  int bad = json_array_append_new(a, json_integer(dir));
  bad |= json_array_append_new(a, shown(name, strlen(name)));
  bad |= json_array_append_new(a, json_integer((json_int_t)e->size));
  bad |= json_array_append_new(a, json_string(mt));
  bad |= json_array_append_new(a, json_integer(e->width));
  bad |= json_array_append_new(a, json_integer(e->height));
  bad |= json_array_append_new(a, json_integer(ferry_dupes_distance(d, keeper, i)));
  bad |= json_array_append_new(a, json_integer(flags));
  if (t->why) {
    bad |= json_array_append_new(a, fy_json_text(t->why));
  } else if (t->jpg) {
    char *b = fy_base64_text(t->jpg, t->n);
    bad |= json_array_append_new(a, b ? json_string(b) : NULL);
    free(b);
  } else {
    bad |= json_array_append_new(a, json_integer(0));
  }
  char *plain = fy_shown_text(e->path);
  if (plain && strcmp(plain, e->path)) { /* the exact bytes beside the shown text */
    char *b = fy_base64_text((const uint8_t *)e->path, strlen(e->path));
    bad |= json_array_append_new(a, b ? json_string(b) : NULL);
    free(b);
  }
  bad |= !plain;
  free(plain);
  if (bad) {
    json_decref(a);
    return NULL;
  }
  return a;
}

static void write_head(const ferry_dupes *d, FILE *f, size_t dupes) {
  char rules[160];
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
        "<title>ferry: near-duplicates</title><style>\n",
        f);
  fputs(fy_report_style, f);
  fprintf(f,
          "</style></head>\n<body>\n<header><h1>%zu groups of near-duplicates (%zu files that "
          "are not the keeper)</h1>\n<p>hash %s, Hamming distance &le; %d%s. The keeper of each "
          "group (by %s) is outlined in green. Choose another with <b>keep</b>; untick "
          "<b>move</b> to leave a file where it is; <b>not a copy</b> takes a file out of its "
          "group, <b>not duplicates</b> a whole group; click a picture to see it large.</p>\n"
          "<p>Keeper of every group: <select id=\"rule\"><option value=\"ferry\">as ferry chose"
          "</option><option value=\"pixels\">the largest picture</option><option "
          "value=\"size\">the largest file</option><option value=\"oldest\">the oldest"
          "</option><option value=\"newest\">the newest</option><option value=\"shortest\">the "
          "shortest path</option></select><button id=\"keep-by\">apply</button> Folder: <input "
          "id=\"folder\" list=\"folders\" placeholder=\"/a/folder\"><button id=\"f-keep\">keep "
          "files there</button><button id=\"f-untick\">untick there</button><button "
          "id=\"f-tick\">tick there</button> <span id=\"folder-count\"></span></p>\n"
          "<p><b id=\"count\">0</b> files ticked to move. <button id=\"save-decisions\">Save "
          "decisions</button><button id=\"save\">Save the move list</button><button "
          "id=\"none\">Untick all</button><button id=\"all\">Tick all</button> then "
          "<code>ferry dupes CATALOG --decisions ferry-decisions.json --move-dupes-to "
          "DIR</code> (a dry run; add <code>--apply</code> to move; later runs with "
          "<code>--decisions</code> keep these choices).</p>\n<p id=\"restored\" hidden>"
          "<b id=\"restored-n\"></b> choices restored, kept by this browser for this report. "
          "<button id=\"forget\">Forget them</button></p>\n<details id=\"lists\"><summary>the "
          "decisions and the move list</summary><textarea id=\"decisions\" readonly></textarea> "
          "<textarea id=\"move-list\" readonly></textarea></details></header>\n"
          "<main><div id=\"space\"></div></main><datalist id=\"folders\"></datalist>\n"
          "<div id=\"preview\" hidden><img alt=\"\"><div></div></div>\n",
          d->ngroups, dupes, ferry_hash_kind_name(d->kind), d->threshold,
          d->robust_joined ? ", or matched turned, mirrored or cropped by their signatures" : "",
          fy_dupes_keep_describe(d, rules, sizeof rules));
}

/* The blob: {"v","id","thumbs","dirs","groups","files","apart"}. */
static int write_blob(const ferry_dupes *d, FILE *f, const uint32_t *order, const uint32_t *kp,
                      size_t count, const thumb *th, const dirset *ds, const char *rel) {
  uint64_t id = fnv(&d->kind, sizeof d->kind, 14695981039346656037ULL);
  id = fnv(&d->threshold, sizeof d->threshold, id);
  for (size_t k = 0; k < count; k++) {
    const ferry_catalog_entry *e = &d->cat->entries[order[k]];
    id = fnv(e->path, strlen(e->path) + 1, id);
    id = fnv(&e->size, sizeof e->size, id);
    id = fnv(&e->mtime_ns, sizeof e->mtime_ns, id);
  }
  fprintf(f,
          "<script type=\"application/json\" id=\"ferry-data\">{\"v\":1,\"id\":\"%016llx\","
          "\"thumbs\":",
          (unsigned long long)id);
  int rc = put(f, rel ? json_string(rel) : json_null(), ",\"dirs\":[");
  for (size_t k = 0; k < ds->n && !rc; k++) {
    const char *p = d->cat->entries[order[ds->first[k]]].path;
    rc = put(f, shown(p, dir_len(p)), k + 1 < ds->n ? "," : "");
  }
  fputs("],\"groups\":[", f);
  for (size_t g = 0; g < d->ngroups; g++)
    fprintf(f, "%s%zu", g ? "," : "", d->gstart[g + 1] - d->gstart[g]);
  fputs("],\"files\":[\n", f);
  for (size_t k = 0; k < count && !rc; k++)
    rc = put(f, file_json(d, kp[k], order[k], ds->dir_of[k], &th[k]), k + 1 < count ? ",\n" : "");
  fputs("],\"apart\":[", f);
  for (size_t s = 0; s < d->napart_sets && !rc; s++) {
    json_t *a = json_array();
    for (size_t k = d->apart_start[s]; k < d->apart_start[s + 1]; k++)
      json_array_append_new(a, file_ref(&d->cat->entries[d->apart[k]]));
    rc = put(f, a, s + 1 < d->napart_sets ? "," : "");
  }
  fputs("]}</script>\n", f);
  return rc ? fy_error(FERRY_ENOMEM, "out of memory") : FERRY_OK;
}

int fy_report_html(const ferry_dupes *d, FILE *f, const char *out_path, const char *what) {
  (void)what;
  size_t count = 0;
  for (size_t g = 0; g < d->ngroups; g++)
    count += ferry_dupes_group(d, g, NULL); /* settles the keepers */
  uint32_t *order = malloc((count ? count : 1) * sizeof *order);
  uint32_t *kp = malloc((count ? count : 1) * sizeof *kp);
  thumb *th = calloc(count ? count : 1, sizeof *th);
  dirset ds = {0};
  char *dir = thumbs_dir(out_path);
  int rc = order && kp && th ? FERRY_OK : fy_error(FERRY_ENOMEM, "out of memory");
  if (!rc) {
    size_t k = 0;
    for (size_t g = 0; g < d->ngroups; g++) {
      const uint32_t *m;
      size_t n = ferry_dupes_group(d, g, &m);
      for (size_t j = 0; j < n; j++, k++)
        order[k] = m[j], kp[k] = m[0];
    }
    rc = dirs_build(d, order, count, &ds);
  }
  thumb_job job = {.d = d, .order = order, .count = count, .out = th, .dirfd = -1, .dir = dir};
  pthread_mutex_init(&job.mu, NULL);
  if (!rc && dir)
    rc = open_thumbs(dir, &job.dirfd);
  if (!rc)
    rc = make_thumbs(&job);
  if (!rc) {
    const char *base = dir ? strrchr(dir, '/') : NULL;
    char *rel = NULL;
    if (dir && (rel = malloc(strlen(dir) + 2)))
      sprintf(rel, "%s/", base ? base + 1 : dir);
    write_head(d, f, count - d->ngroups);
    rc = write_blob(d, f, order, kp, count, th, &ds, rel);
    free(rel);
    fputs("<script>\n", f);
    fputs(fy_report_script, f);
    fputs("</script>\n</body></html>\n", f);
  }
  if (job.dirfd >= 0)
    close(job.dirfd);
  pthread_mutex_destroy(&job.mu);
  for (size_t k = 0; th && k < count; k++) {
    free(th[k].jpg);
    free(th[k].why);
  }
  free(th);
  free(order);
  free(kp);
  free(ds.slot);
  free(ds.dir_of);
  free(ds.first);
  free(dir);
  return rc;
}
