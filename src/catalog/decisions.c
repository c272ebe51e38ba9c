/* decisions.c — a review's decisions applied to the groups
 * (ferry_dupes_decide, `ferry dupes --decisions FILE`): the file the HTML
 * page saves (docs/DEDUP.md, "The review page"):
 *
 *   {"ferry_decisions": 1, "decisions": [
 *     {"not_duplicates": [FILE, FILE, ...]},   no two of them in one group
 *     {"keeper": FILE},                        keeps (first in its group)
 *     {"stay": FILE}]}                         never moved
 *   FILE: {"path": "/abs/name", "path_b64": "...", "size": N, "mtime_ns": "N"}
 *
 * path_b64 (the exact bytes) is optional, and when both are there they must
 * agree; mtime_ns is a string of digits (JavaScript's numbers hold 53 bits)
 * or an integer. A file whose size or time is not the catalog's any more
 * makes the file stale: refused whole, naming the decision. A file not in
 * the catalog (gone, left out) is passed over with a warning.
 *
 * Groups are split, not rebuilt: a group holding two or more files of a
 * not_duplicates set is cut into one group per such file, every other
 * member going to the one nearest to it by the hash (the first on a tie);
 * a part of one file is no group. Keepers and stays are per-entry marks
 * that keeper.c's order reads (a chosen keeper first in its group; both
 * never moved: ferry_dupes_stays). */
#include "catalog/dupes.h"
#include "catalog/json.h"
#include "catalog/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define MAX_DECISIONS_BYTES ((uint64_t)1 << 30)

/* The catalog entry of a path (entries are sorted by path), or -1. */
static long find_path(const ferry_catalog *c, const char *path) {
  size_t lo = 0, hi = c->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int r = strcmp(c->entries[mid].path, path);
    if (!r)
      return (long)mid;
    if (r < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

typedef struct reader {
  const char *file; /* the decisions file, for messages */
  const ferry_catalog *cat;
  size_t passed; /* files not in the catalog */
} reader;

/* A FILE object of decision k: *index its catalog entry, or -1 when it is
 * not in the catalog (warned). FERRY_EINVAL for a malformed or stale one. */
static int file_ref(reader *r, size_t k, const char *what, json_t *v, long *index) {
  *index = -1;
  if (!json_is_object(v))
    return fy_error(FERRY_EINVAL,
                    "%s: decision %zu: %s must be an object with path, size and "
                    "mtime_ns",
                    r->file, k, what);
  json_t *p = json_object_get(v, "path"), *pb = json_object_get(v, "path_b64");
  json_t *size = json_object_get(v, "size"), *mt = json_object_get(v, "mtime_ns");
  if ((p && !json_is_string(p)) || (pb && !json_is_string(pb)) || (!p && !pb))
    return fy_error(FERRY_EINVAL,
                    "%s: decision %zu: %s needs \"path\" (a string) or "
                    "\"path_b64\"",
                    r->file, k, what);
  char *path = NULL;
  if (pb) {
    uint8_t *bytes = NULL;
    size_t n = 0;
    if (fy_base64_decode(json_string_value(pb), &bytes, &n) != FERRY_OK || memchr(bytes, 0, n)) {
      free(bytes);
      return fy_error(FERRY_EINVAL, "%s: decision %zu: %s: path_b64 is not base64 of a name",
                      r->file, k, what);
    }
    path = malloc(n + 1);
    if (!path) {
      free(bytes);
      return fy_error(FERRY_ENOMEM, "out of memory");
    }
    memcpy(path, bytes, n);
    path[n] = 0;
    free(bytes);
    /* the text may be the name itself, as the page shows it (\xNN, \\), or
     * as JSON writes a name that is not UTF-8 (U+FFFD: fy_json_set_path) */
    char *as_shown = p ? fy_shown_text(path) : NULL, *lossy = p ? fy_utf8_lossy(path) : NULL;
    const char *text = p ? json_string_value(p) : NULL;
    int agree = !p || !strcmp(path, text) || (as_shown && !strcmp(as_shown, text)) ||
                (lossy && !strcmp(lossy, text));
    free(as_shown);
    free(lossy);
    if (!agree) {
      int rc = fy_error(FERRY_EINVAL,
                        "%s: decision %zu: %s: path '%s' and path_b64 ('%s') disagree (an edit "
                        "of one alone?)",
                        r->file, k, what, json_string_value(p), path);
      free(path);
      return rc;
    }
  } else if (!(path = strdup(json_string_value(p)))) {
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  long long mtime = 0;
  int mt_ok = json_is_integer(mt);
  if (mt_ok) {
    mtime = json_integer_value(mt);
  } else if (json_is_string(mt)) {
    const char *s = json_string_value(mt);
    char *end;
    errno = 0;
    mtime = strtoll(s, &end, 10);
    mt_ok = *s && !*end && !errno;
  }
  if (!json_is_integer(size) || json_integer_value(size) < 0 || !mt_ok) {
    int rc = fy_error(FERRY_EINVAL,
                      "%s: decision %zu: %s %s: needs \"size\" (bytes) and \"mtime_ns\" (digits), "
                      "which tell whether the file changed since",
                      r->file, k, what, path);
    free(path);
    return rc;
  }
  long i = find_path(r->cat, path);
  if (i < 0) {
    fy_log(FERRY_LOG_WARNING,
           "%s: decision %zu: %s is not in the catalog (gone, or left out): "
           "passed over",
           r->file, k, path);
    r->passed++;
    free(path);
    return FERRY_OK;
  }
  const ferry_catalog_entry *e = &r->cat->entries[i];
  if (e->size != (uint64_t)json_integer_value(size) || e->mtime_ns != (int64_t)mtime) {
    int rc = fy_error(FERRY_EINVAL,
                      "%s: decision %zu: %s %s changed since the decisions were saved (then %lld "
                      "bytes, mtime_ns %lld; now %llu bytes, mtime_ns %lld): stale; review a new "
                      "report and save its decisions again",
                      r->file, k, what, path, (long long)json_integer_value(size), mtime,
                      (unsigned long long)e->size, (long long)e->mtime_ns);
    free(path);
    return rc;
  }
  free(path);
  *index = i;
  return FERRY_OK;
}

/* The decisions read: not_duplicates sets (set s: apart[start[s] ..
 * start[s + 1]), catalog indices of files in the catalog) and the marks. */
typedef struct decided {
  uint32_t *apart;
  size_t *start, nsets, napart;
  unsigned char *mark; /* per entry: 1 keeper, 2 stay */
  size_t keepers, stays;
} decided;

static void decided_free(decided *dc) {
  free(dc->apart);
  free(dc->start);
  free(dc->mark);
}

static int read_one(reader *r, size_t k, json_t *dv, decided *dc) {
  if (!json_is_object(dv) || json_object_size(dv) != 1)
    return fy_error(FERRY_EINVAL,
                    "%s: decision %zu: must be an object of one member: not_duplicates, keeper "
                    "or stay",
                    r->file, k);
  const char *key = json_object_iter_key(json_object_iter(dv));
  json_t *v = json_object_iter_value(json_object_iter(dv));
  if (!strcmp(key, "keeper") || !strcmp(key, "stay")) {
    long i;
    int rc = file_ref(r, k, key, v, &i);
    if (rc == FERRY_OK && i >= 0) {
      unsigned char m = key[0] == 'k' ? 1 : 2;
      if (dc->mark[i] != 1) /* a keeper stays a keeper */
        dc->mark[i] = m;
      *(m == 1 ? &dc->keepers : &dc->stays) += 1;
    }
    return rc;
  }
  if (strcmp(key, "not_duplicates"))
    return fy_error(FERRY_EINVAL,
                    "%s: decision %zu: '%s' is not a decision (not_duplicates, keeper, stay)",
                    r->file, k, key);
  if (!json_is_array(v) || json_array_size(v) < 2)
    return fy_error(FERRY_EINVAL,
                    "%s: decision %zu: not_duplicates needs a list of two files or "
                    "more",
                    r->file, k);
  size_t n = json_array_size(v);
  uint32_t *a = realloc(dc->apart, (dc->napart + n) * sizeof *a);
  size_t *st = realloc(dc->start, (dc->nsets + 2) * sizeof *st);
  if (a)
    dc->apart = a;
  if (st)
    dc->start = st;
  if (!a || !st)
    return fy_error(FERRY_ENOMEM, "out of memory");
  if (!dc->nsets)
    dc->start[0] = 0;
  for (size_t j = 0; j < n; j++) {
    long i;
    int rc = file_ref(r, k, "not_duplicates file", json_array_get(v, j), &i);
    if (rc)
      return rc;
    if (i >= 0)
      dc->apart[dc->napart++] = (uint32_t)i;
  }
  dc->start[++dc->nsets] = dc->napart;
  return FERRY_OK;
}

static int read_decisions(const char *file, const ferry_catalog *cat, decided *dc, size_t *passed) {
  fy_buf buf = {0};
  size_t n = 0;
  int rc = fy_read_file(file, MAX_DECISIONS_BYTES, &buf, &n);
  if (rc)
    return rc;
  json_error_t err;
  json_t *root = json_loadb(buf.p, n, 0, &err);
  fy_buf_free(&buf);
  if (!root)
    return fy_error(FERRY_EINVAL,
                    "%s: line %d, column %d: not JSON: %s (not a decisions file "
                    "of the review page)",
                    file, err.line, err.column, err.text);
  json_t *ver = json_object_get(root, "ferry_decisions"),
         *list = json_object_get(root, "decisions");
  if (!json_is_object(root) || !json_is_integer(ver) || !json_is_array(list)) {
    json_decref(root);
    return fy_error(FERRY_EINVAL,
                    "%s: not a decisions file (an object with \"ferry_decisions\": 1 and a "
                    "\"decisions\" list: the review page's \"Save decisions\" writes one)",
                    file);
  }
  long long version = json_integer_value(ver);
  if (version != 1) {
    json_decref(root);
    return fy_error(FERRY_EINVAL, "%s: decisions version %lld: this ferry reads version 1", file,
                    version);
  }
  dc->mark = calloc(cat->count ? cat->count : 1, 1);
  if (!dc->mark) {
    json_decref(root);
    return fy_error(FERRY_ENOMEM, "out of memory");
  }
  reader r = {file, cat, 0};
  for (size_t k = 0; k < json_array_size(list) && rc == FERRY_OK; k++)
    rc = read_one(&r, k + 1, json_array_get(list, k), dc);
  json_decref(root);
  *passed = r.passed;
  return rc;
}

/* The groups as chains (head[g], next[i]) and group_of[i], split by each
 * not_duplicates set, then written back into d's arrays. */
typedef struct chains {
  uint32_t *head, *next, *gof, *tail;
  size_t ng, cap;
} chains;

static int new_group(chains *ch) {
  if (ch->ng == ch->cap) {
    size_t cap = ch->cap * 2 + 16;
    uint32_t *h = realloc(ch->head, cap * sizeof *h);
    if (h)
      ch->head = h;
    uint32_t *t = realloc(ch->tail, cap * sizeof *t);
    if (t)
      ch->tail = t;
    if (!h || !t)
      return -1;
    ch->cap = cap;
  }
  ch->head[ch->ng] = ch->tail[ch->ng] = NONE;
  return (int)ch->ng++;
}

static void append(chains *ch, uint32_t g, uint32_t i) {
  ch->next[i] = NONE;
  ch->gof[i] = g;
  if (ch->tail[g] == NONE)
    ch->head[g] = i;
  else
    ch->next[ch->tail[g]] = i;
  ch->tail[g] = i;
}

/* Group g cut by the files t[0..nt) it holds: t[0] keeps g's number. */
static int split(const ferry_dupes *d, chains *ch, uint32_t g, const uint32_t *t, size_t nt) {
  uint32_t *to = malloc(nt * sizeof *to);
  if (!to)
    return -1;
  to[0] = g;
  for (size_t j = 1; j < nt; j++) {
    int ng = new_group(ch);
    if (ng < 0) {
      free(to);
      return -1;
    }
    to[j] = (uint32_t)ng;
  }
  uint32_t i = ch->head[g];
  ch->head[g] = ch->tail[g] = NONE;
  while (i != NONE) {
    uint32_t nx = ch->next[i];
    size_t best = 0;
    int bd = -1;
    for (size_t j = 0; j < nt; j++) {
      int dist = t[j] == i ? -1 : ferry_dupes_distance(d, t[j], i);
      if (t[j] == i) {
        best = j;
        break;
      }
      if (bd < 0 || dist < bd)
        bd = dist, best = j;
    }
    append(ch, to[best], i);
    i = nx;
  }
  free(to);
  return 0;
}

static _Thread_local const uint32_t *first_of; /* qsort's: each group's first entry */
static int by_first(const void *a, const void *b) {
  uint32_t x = first_of[*(const uint32_t *)a], y = first_of[*(const uint32_t *)b];
  return x < y ? -1 : x > y;
}

static int apply_sets(ferry_dupes *d, const decided *dc) {
  size_t count = d->cat->count ? d->cat->count : 1;
  chains ch = {0};
  ch.next = malloc(count * sizeof *ch.next);
  ch.gof = malloc(count * sizeof *ch.gof);
  int bad = !ch.next || !ch.gof;
  for (size_t i = 0; !bad && i < d->cat->count; i++)
    ch.gof[i] = NONE;
  for (size_t g = 0; !bad && g < d->ngroups; g++) {
    int ng = new_group(&ch);
    bad = ng < 0;
    for (size_t k = d->gstart[g]; !bad && k < d->gstart[g + 1]; k++)
      append(&ch, (uint32_t)ng, d->members[k]);
  }
  uint32_t *t = malloc((dc->napart ? dc->napart : 1) * sizeof *t);
  bad |= !t;
  for (size_t s = 0; !bad && s < dc->nsets; s++) {
    const uint32_t *set = dc->apart + dc->start[s];
    size_t n = dc->start[s + 1] - dc->start[s];
    /* each group that holds two or more of the set: once cut, each of
     * the set's files is alone in its part */
    for (size_t a = 0; a < n && !bad; a++) {
      uint32_t g = ch.gof[set[a]];
      if (g == NONE)
        continue;
      size_t nt = 0;
      for (size_t b = a; b < n; b++) {
        int dup = 0;
        for (size_t c = 0; c < nt; c++)
          dup |= t[c] == set[b];
        if (ch.gof[set[b]] == g && !dup)
          t[nt++] = set[b];
      }
      if (nt >= 2)
        bad = split(d, &ch, g, t, nt) != 0;
    }
  }
  free(t);
  /* groups of two or more, numbered by their first entry (catalog order) */
  uint32_t *first = bad ? NULL : malloc((ch.ng ? ch.ng : 1) * sizeof *first);
  uint32_t *size = bad ? NULL : calloc(ch.ng ? ch.ng : 1, sizeof *size);
  uint32_t *ord = bad ? NULL : malloc((ch.ng ? ch.ng : 1) * sizeof *ord);
  size_t *gstart = NULL;
  uint32_t *members = NULL;
  size_t keep = 0, total = 0;
  if (first && size && ord) {
    for (size_t g = 0; g < ch.ng; g++) {
      first[g] = NONE;
      for (uint32_t i = ch.head[g]; i != NONE; i = ch.next[i]) {
        size[g]++;
        first[g] = i < first[g] ? i : first[g];
      }
      if (size[g] >= 2) {
        ord[keep++] = (uint32_t)g;
        total += size[g];
      }
    }
    first_of = first;
    qsort(ord, keep, sizeof *ord, by_first);
    gstart = malloc((keep + 1) * sizeof *gstart);
    members = malloc((total ? total : 1) * sizeof *members);
  }
  int rc = FERRY_OK;
  if (!gstart || !members) {
    free(gstart);
    free(members);
    rc = fy_error(FERRY_ENOMEM, "out of memory");
  } else {
    size_t at = 0;
    for (size_t k = 0; k < keep; k++) {
      gstart[k] = at;
      for (uint32_t i = ch.head[ord[k]]; i != NONE; i = ch.next[i])
        members[at++] = i;
    }
    gstart[keep] = at;
    free(d->gstart);
    free(d->members);
    d->gstart = gstart;
    d->members = members;
    d->ngroups = keep;
  }
  free(first), free(size), free(ord);
  free(ch.head), free(ch.tail), free(ch.next), free(ch.gof);
  return rc;
}

int ferry_dupes_decide(ferry_dupes *d, const char *file, ferry_decide_stats *stats) {
  if (!d || !file)
    return fy_error(FERRY_EINVAL, "ferry_dupes_decide: NULL argument");
  decided dc = {0};
  size_t passed = 0;
  int rc = read_decisions(file, d->cat, &dc, &passed);
  if (rc == FERRY_OK) {
    fy_dupes_settle(d); /* the groups as they are, then cut */
    size_t before = d->ngroups;
    rc = apply_sets(d, &dc);
    if (rc == FERRY_OK && stats) {
      stats->sets = dc.nsets;
      stats->keepers = dc.keepers;
      stats->stays = dc.stays;
      stats->passed_over = passed;
      stats->groups_before = before;
    }
  }
  if (rc == FERRY_OK) {
    free(d->decided);
    d->decided = dc.mark;
    dc.mark = NULL;
    free(d->apart);
    free(d->apart_start);
    d->apart = dc.apart;
    d->apart_start = dc.start;
    d->napart_sets = dc.nsets;
    dc.apart = NULL;
    dc.start = NULL;
    fy_dupes_order_keepers(d);
    fy_dupes_settle(d);
  }
  decided_free(&dc);
  return rc;
}

int ferry_dupes_stays(const ferry_dupes *d, uint32_t index) {
  return d && index < d->cat->count &&
         ((d->ref && d->ref[index]) || (d->decided && d->decided[index]));
}

int fy_dupes_decided(const ferry_dupes *d, uint32_t index) {
  return d && d->decided && index < d->cat->count ? d->decided[index] : 0;
}
