/* shards.c — WebDataset shards: brace patterns, the tar headers of each
 * shard (POSIX ustar, pax extended headers, GNU long names), members grouped
 * into samples by key as WebDataset groups them.
 *
 * The tar format is read here rather than through libarchive because the
 * loader needs each image member's byte range (it reads samples by
 * position, several threads at once, with pread), which a streaming reader
 * does not give. Stream shards (pipe:, http(s), .tar.gz: io/shard_stream.c)
 * are read once into memory and walked by the same code. */
#include "io/shards.h"

#include "catalog/json.h"
#include "core/user_file.h"
#include "io/shard_fd.h"
#include "io/shard_stream.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && !strcasecmp(s + n - m, tail);
}

static const char *const compressed[] = {".tar.gz", ".tgz",     ".tar.bz2",
                                         ".tar.xz", ".tar.zst", ".tar.lz4"};

int fy_shards_spec(const char *spec) {
  if (!spec)
    return 0;
  if (ends_with(spec, ".tar") || !strncmp(spec, "pipe:", 5) || !strncmp(spec, "s3://", 5))
    return 1;
  for (size_t i = 0; i < sizeof compressed / sizeof *compressed; i++)
    if (ends_with(spec, compressed[i]))
      return 1;
  return 0;
}

/* ------------------------------------------------------------ braces */

void fy_shards_free_names(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}

/* "{a..b}" numbers: 1 and the bounds and the width to pad to (0 = none),
 * or 0 when the inside is not a range. */
static int parse_range(const char *in, size_t len, long long *a, long long *b, int *width) {
  const char *dots = NULL;
  for (size_t i = 0; i + 1 < len; i++)
    if (in[i] == '.' && in[i + 1] == '.') {
      dots = in + i;
      break;
    }
  if (!dots)
    return 0;
  size_t la = (size_t)(dots - in), lb = len - la - 2;
  if (!la || !lb || la > 18 || lb > 18)
    return 0;
  for (size_t i = 0; i < la; i++)
    if (!isdigit((unsigned char)in[i]))
      return 0;
  for (size_t i = 0; i < lb; i++)
    if (!isdigit((unsigned char)dots[2 + i]))
      return 0;
  *a = strtoll(in, NULL, 10);
  *b = strtoll(dots + 2, NULL, 10);
  int padded = (la > 1 && in[0] == '0') || (lb > 1 && dots[2] == '0');
  *width = padded ? (int)(la > lb ? la : lb) : 0;
  return 1;
}

/* One brace group of a pattern and where the expansion stands in it. */
typedef struct group {
  const char *lit; /* the text before the group (from the previous one) */
  size_t lit_len;
  const char *in; /* inside the braces */
  size_t len;
  int range, width;
  long long a, b, v;   /* range: bounds, the current number */
  size_t cur, cur_len; /* list: the current item, at in + cur */
} group;

static void group_first(group *g) {
  if (g->range) {
    g->v = g->a;
    return;
  }
  const char *e = memchr(g->in, ',', g->len);
  g->cur = 0;
  g->cur_len = e ? (size_t)(e - g->in) : g->len;
}

/* The next alternative; 0 when the group is done (then back at its first). */
static int group_next(group *g) {
  if (g->range) {
    if (g->v == g->b) {
      g->v = g->a;
      return 0;
    }
    g->v += g->a <= g->b ? 1 : -1;
    return 1;
  }
  size_t at = g->cur + g->cur_len;
  if (at >= g->len) {
    group_first(g);
    return 0;
  }
  g->cur = at + 1;
  const char *e = memchr(g->in + g->cur, ',', g->len - g->cur);
  g->cur_len = e ? (size_t)(e - (g->in + g->cur)) : g->len - g->cur;
  return 1;
}

/* The current alternative's text: its length, written to out when not NULL
 * (out has room for it; a number has at most 20 characters). */
static size_t group_text(const group *g, char *out) {
  if (g->range) {
    char num[32];
    int k = snprintf(num, sizeof num, "%0*lld", g->width, g->v);
    if (out)
      memcpy(out, num, (size_t)k);
    return (size_t)k;
  }
  if (out)
    memcpy(out, g->in + g->cur, g->cur_len);
  return g->cur_len;
}

/* The groups of `spec`, checked, and the number of names they make: all
 * the errors are found here, before any name is made, so that a pattern
 * of too many names is refused at once (and a pattern of many groups costs
 * no recursion). */
static int parse_groups(const char *spec, size_t max, group **out, size_t *ngroups, size_t *count) {
  size_t ng = 0;
  for (const char *p = spec; *p; p++)
    ng += *p == '{';
  group *g = calloc(ng ? ng : 1, sizeof *g);
  if (!g)
    return fy_error(FERRY_ENOMEM, "out of memory expanding shard names");
  size_t k = 0, total = 1;
  const char *at = spec;
  int rc = FERRY_OK;
  for (;;) {
    const char *open = strchr(at, '{'), *stray = strchr(at, '}');
    if (stray && (!open || stray < open)) {
      rc = fy_error(FERRY_EINVAL, "%s: '}' without '{'", spec);
      break;
    }
    if (!open)
      break;
    const char *close = strchr(open, '}');
    if (!close) {
      rc = fy_error(FERRY_EINVAL, "%s: '{' without '}'", spec);
      break;
    }
    group *x = &g[k++];
    x->lit = at;
    x->lit_len = (size_t)(open - at);
    x->in = open + 1;
    x->len = (size_t)(close - x->in);
    if (memchr(x->in, '{', x->len)) {
      rc = fy_error(FERRY_EINVAL, "%s: nested braces are not expanded", spec);
      break;
    }
    size_t n = 1;
    if (parse_range(x->in, x->len, &x->a, &x->b, &x->width)) {
      unsigned long long d =
          x->a <= x->b ? (unsigned long long)(x->b - x->a) : (unsigned long long)(x->a - x->b);
      x->range = 1;
      n = d >= max ? max + 1 : (size_t)d + 1;
    } else if (memchr(x->in, ',', x->len)) {
      for (size_t i = 0; i < x->len; i++)
        n += x->in[i] == ',';
    } else {
      rc = fy_error(FERRY_EINVAL,
                    "%s: '{%.*s}' is neither a range {A..B} of numbers nor a list {X,Y}", spec,
                    (int)x->len, x->in);
      break;
    }
    if (n > max / total) {
      rc = fy_error(FERRY_ETOO_LARGE, "%s: more than %zu shards", spec, max);
      break;
    }
    total *= n;
    group_first(x);
    at = close + 1;
  }
  if (rc) {
    free(g);
    return rc;
  }
  *out = g;
  *ngroups = k;
  *count = total;
  return FERRY_OK;
}

int fy_shards_expand_max(const char *spec, size_t max, char ***v, size_t *n) {
  *v = NULL;
  *n = 0;
  group *g = NULL;
  size_t ng = 0, count = 0;
  int rc = parse_groups(spec, max ? max : 1, &g, &ng, &count);
  if (rc)
    return rc;
  const char *tail = ng ? g[ng - 1].in + g[ng - 1].len + 1 : spec;
  size_t tail_len = strlen(tail);
  char **names = calloc(count + 1, sizeof *names);
  size_t made = 0;
  while (names && made < count) {
    size_t len = tail_len;
    for (size_t k = 0; k < ng; k++)
      len += g[k].lit_len + group_text(&g[k], NULL);
    char *s = malloc(len + 1), *w = s;
    if (!s)
      break;
    for (size_t k = 0; k < ng; k++) {
      memcpy(w, g[k].lit, g[k].lit_len);
      w += g[k].lit_len;
      w += group_text(&g[k], w);
    }
    memcpy(w, tail, tail_len + 1);
    names[made++] = s;
    for (size_t k = ng; k-- > 0;) /* the last group turns fastest */
      if (group_next(&g[k]))
        break;
  }
  free(g);
  if (!names || made < count) {
    fy_shards_free_names(names, made);
    return fy_error(FERRY_ENOMEM, "out of memory expanding shard names");
  }
  *v = names;
  *n = count;
  return FERRY_OK;
}

int fy_shards_expand(const char *spec, char ***v, size_t *n) {
  return fy_shards_expand_max(spec, FY_MAX_SHARDS, v, n);
}

/* ------------------------------------------------------------ tar */

/* A numeric field: octal digits (spaces before them, then a space or a NUL;
 * what follows a NUL is not read, and an empty field is 0, as Python's
 * tarfile, webdataset's reader, takes them), or GNU's base-256 (the first
 * byte's high bit set). -1 when neither. */
static int64_t tar_number(const uint8_t *f, size_t len) {
  if (f[0] & 0x80) {
    if (f[0] != 0x80) /* negative, or more than 63 bits */
      return -1;
    uint64_t v = 0;
    for (size_t i = 1; i < len; i++) {
      if (v >> 55)
        return -1;
      v = v << 8 | f[i];
    }
    return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
  }
  size_t i = 0;
  while (i < len && f[i] == ' ')
    i++;
  uint64_t v = 0;
  for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
    if (v >> 60)
      return -1;
    v = v * 8 + (uint64_t)(f[i] - '0');
  }
  for (; i < len && f[i] != '\0'; i++)
    if (f[i] != ' ')
      return -1;
  return (int64_t)v;
}

int fy_tar_parse_header(const uint8_t b[512], fy_tar_header *h) {
  int zero = 1;
  for (int i = 0; i < 512 && zero; i++)
    zero = b[i] == 0;
  if (zero)
    return 1;
  /* the checksum: every byte, its own field counted as spaces; as unsigned
   * bytes, or signed as some old writers summed them (tar and tarfile take
   * either) */
  int64_t want = tar_number(b + 148, 8);
  int64_t sum = 0, ssum = 0;
  for (int i = 0; i < 512; i++) {
    int c = i >= 148 && i < 156 ? ' ' : b[i];
    sum += c;
    ssum += c < 128 ? c : c - 256;
  }
  int64_t size = tar_number(b + 124, 12);
  if (want < 0 || (want != sum && want != ssum) || size < 0)
    return -1;
  h->size = (uint64_t)size;
  h->type = (char)b[156];
  /* ustar ("ustar\0" + "00") keeps a prefix at 345; GNU's "ustar  " does not */
  size_t n = 0;
  if (!memcmp(b + 257, "ustar\0", 6) && b[345]) {
    size_t lp = strnlen((const char *)b + 345, 155);
    memcpy(h->name, b + 345, lp);
    h->name[lp] = '/';
    n = lp + 1;
  }
  size_t ln = strnlen((const char *)b, 100);
  memcpy(h->name + n, b, ln);
  h->name[n + ln] = '\0';
  return 0;
}

/* What a pax extended header's records ("LEN key=value\n") say of the next
 * member: its "path" (into name, *has_name 1) and its "size" (a member of
 * 8 GiB and more keeps its size there, the header's field then 0). Later
 * records win; a malformed record ends the scan. */
static void pax_records(const char *p, size_t n, char *name, size_t cap, int *has_name,
                        uint64_t *size, int *has_size) {
  size_t at = 0;
  while (at < n) {
    size_t len = 0, i = at;
    while (i < n && isdigit((unsigned char)p[i]) && len < n)
      len = len * 10 + (size_t)(p[i++] - '0');
    if (i >= n || p[i] != ' ' || len == 0 || len > n - at)
      return;
    const char *rec = p + i + 1, *end = p + at + len; /* end: just past '\n' */
    if (end[-1] != '\n')
      return;
    if ((size_t)(end - rec) > 5 && !memcmp(rec, "path=", 5)) {
      size_t vl = (size_t)(end - 1 - (rec + 5));
      if (vl < cap) {
        memcpy(name, rec + 5, vl);
        name[vl] = '\0';
        *has_name = 1;
      }
    } else if ((size_t)(end - rec) > 5 && !memcmp(rec, "size=", 5)) {
      const char *v = rec + 5;
      uint64_t x = 0;
      int ok = v < end - 1;
      for (; ok && v < end - 1; v++)
        if (!isdigit((unsigned char)*v) || x > (uint64_t)INT64_MAX / 10)
          ok = 0;
        else
          x = x * 10 + (uint64_t)(*v - '0');
      if (ok && x <= (uint64_t)INT64_MAX) {
        *size = x;
        *has_size = 1;
      }
    }
    at += len;
  }
}

/* ------------------------------------------------------------ samples */

/* What a sample's members give while its key lasts. */
typedef struct pending {
  char key[4096];
  int has_key;
  int image_rank; /* lower is preferred; INT32_MAX: none */
  char image_ext[4096];
  int64_t off, len;
  int label_rank;
  int32_t label;
  int64_t begin, end; /* the key's members: their first header, the end of the last's data */
} pending;

/* Members passed over, counted, the first one named ("shard:member"). */
typedef struct tally {
  size_t n;
  char first[8200];
} tally;

static void tally_add(tally *t, const char *shard, const char *name) {
  if (!t->n++)
    snprintf(t->first, sizeof t->first, "%s:%s", shard, name);
}

typedef struct lister {
  fy_source *src;
  tally no_image;               /* samples without an image member */
  tally bad_label;              /* cls/label members that are no integer label */
  tally big_label;              /* label members too large to read */
  tally unnamed;                /* members not named KEY.EXT: no sample's */
  int64_t streamed, stream_max; /* stream shards' bytes held, and their bound */
} lister;

/* Image extensions in WebDataset's order of preference, then the rest
 * ferry reads; INT32_MAX when `ext` is not an image. */
static int image_rank(const char *ext) {
  static const char *const order[] = {"jpg", "jpeg", "png",  "webp", "jpe", "jfif", "tif", "tiff",
                                      "bmp", "gif",  "heic", "heif", "hif", "avif", "dng", "cr2",
                                      "cr3", "nef",  "arw",  "orf",  "rw2", "raf",  "pef"};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++)
    if (!strcasecmp(ext, order[i]))
      return (int)i;
  return INT32_MAX;
}

static int label_rank(const char *ext) {
  static const char *const order[] = {"cls", "label", "txt", "json"};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++)
    if (!strcasecmp(ext, order[i]))
      return (int)i;
  return INT32_MAX;
}

/* An integer label from a label member's n bytes: the whole text as one
 * integer (spaces around it allowed: "7\n"), or a JSON object (jansson)
 * whose top-level "label" member (without one, its "cls" member) is an
 * integer; "label" or "cls" anywhere else (nested, inside a string) does
 * not count.
 * -1 (unlabelled, as in a list file) is taken as it is; -2 when there is
 * no integer in -1..FY_MAX_LABEL; -3 when out of memory. */
static int32_t parse_label(const char *t, size_t n) {
  const char *p = t, *stop = t + n;
  while (p < stop && isspace((unsigned char)*p))
    p++;
  if (p < stop && *p != '{') {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v < -1 || v > FY_MAX_LABEL)
      return -2;
    while (end < stop && isspace((unsigned char)*end))
      end++;
    return end == stop ? (int32_t)v : -2;
  }
  int oom;
  json_t *root = fy_json_parse(t, n, &oom);
  if (!root)
    return oom ? -3 : -2;
  json_t *v = json_object_get(root, "label");
  if (!v)
    v = json_object_get(root, "cls");
  int32_t label = -2;
  if (json_is_integer(v) && json_integer_value(v) >= -1 && json_integer_value(v) <= FY_MAX_LABEL)
    label = (int32_t)json_integer_value(v);
  json_decref(root);
  return label;
}

/* The sample whose members have all been seen, added to the source. */
static int flush(lister *l, pending *p, const char *shard, int32_t shard_id) {
  if (!p->has_key)
    return FERRY_OK;
  p->has_key = 0;
  if (p->image_rank == INT32_MAX) {
    tally_add(&l->no_image, shard, p->key);
    return FERRY_OK;
  }
  int rc = fy_source_grow_members(l->src);
  if (rc)
    return rc;
  size_t n = strlen(shard) + strlen(p->key) + strlen(p->image_ext) + 3;
  char *path = malloc(n);
  if (!path)
    return fy_error(FERRY_ENOMEM, "out of memory listing shard members");
  snprintf(path, n, "%s:%s.%s", shard, p->key, p->image_ext);
  int64_t i = l->src->count;
  rc = fy_source_add(l->src, path, p->label);
  free(path);
  if (rc)
    return rc;
  l->src->shard[i] = shard_id;
  l->src->member_off[i] = p->off;
  l->src->member_len[i] = p->len;
  l->src->sample_begin[i] = p->begin;
  l->src->sample_end[i] = p->end;
  return FERRY_OK;
}

/* A shard's bytes as the listing reads them: a local .tar by position
 * (fd), or a stream shard read whole into memory (mem, io/shard_stream.c). */
typedef struct shard_in {
  int fd;
  const uint8_t *mem;
  int64_t size;
} shard_in;

/* n bytes at off: 0, or -1 (errno set; 0 when the file ended first). */
static int read_at(const shard_in *in, void *p, size_t n, int64_t off) {
  if (in->mem) {
    if (off < 0 || off > in->size || (int64_t)n > in->size - off) {
      errno = 0;
      return -1;
    }
    memcpy(p, in->mem + off, n);
    return 0;
  }
  int fd = in->fd;
  size_t got = 0;
  while (got < n) {
    ssize_t k = pread(fd, (char *)p + got, n - got, (off_t)(off + (int64_t)got));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      if (k == 0)
        errno = 0;
      return -1;
    }
    got += (size_t)k;
  }
  return 0;
}

#define FY_LABEL_MAX 4096 /* label members larger than this are not read */

/* One member of a shard, seen: grouped with the pending sample or starting
 * the next. webdataset's rules: the key is the name up to the first dot of
 * its base name and the rest its field (tariterators.py, base_plus_ext: a
 * base name without a dot, or with one first, is no sample's); a field is
 * decoded by its last extension (autodecode.py), so "a.b.c.jpg" is sample
 * "a"'s image and "a.b.c.cls" its label. For one key, a plain field ("jpg")
 * is preferred to a dotted one of the same kind ("b.c.jpg"). */
static int member(lister *l, pending *p, const char *shard, int32_t id, const shard_in *fd,
                  const char *name, int64_t header, int64_t off, int64_t len) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *dot = strchr(base, '.');
  if (!dot || base[0] == '.') {
    tally_add(&l->unnamed, shard, name);
    return FERRY_OK;
  }
  size_t keylen = (size_t)(dot - name);
  if (keylen >= sizeof p->key) {
    tally_add(&l->unnamed, shard, name);
    return FERRY_OK;
  }
  if (!p->has_key || strncmp(p->key, name, keylen) || p->key[keylen]) {
    int rc = flush(l, p, shard, id);
    if (rc)
      return rc;
    memcpy(p->key, name, keylen);
    p->key[keylen] = '\0';
    p->has_key = 1;
    p->begin = header;
    p->image_rank = p->label_rank = INT32_MAX;
    p->label = -1;
  }
  p->end = off + (len + 511) / 512 * 512;
  const char *field = dot + 1, *last = strrchr(field, '.');
  const char *kind = last ? last + 1 : field;
  int dotted = last != NULL;
  int ir = image_rank(kind), lr = label_rank(kind);
  ir = ir == INT32_MAX ? ir : 2 * ir + dotted;
  lr = lr == INT32_MAX ? lr : 2 * lr + dotted;
  if (ir < p->image_rank && strlen(field) < sizeof p->image_ext) {
    p->image_rank = ir;
    strcpy(p->image_ext, field);
    p->off = off;
    p->len = len;
  } else if (lr < p->label_rank && len > FY_LABEL_MAX) {
    tally_add(&l->big_label, shard, name);
  } else if (lr < p->label_rank) {
    char text[FY_LABEL_MAX + 1];
    if (read_at(fd, text, (size_t)len, off))
      return fy_error(FERRY_EIO, "%s:%s: cannot read the label: %s", shard, name,
                      errno ? strerror(errno) : "the shard ends early");
    text[len] = '\0'; /* strtol stops at the end */
    int32_t v = parse_label(text, (size_t)len);
    if (v == -3)
      return fy_error(FERRY_ENOMEM, "%s:%s: out of memory reading the label", shard, name);
    if (v >= -1) {
      p->label_rank = lr;
      p->label = v;
    } else if (lr <= 3) {
      tally_add(&l->bad_label, shard, name); /* a cls/label member that is not an integer */
    }
  }
  return FERRY_OK;
}

/* Called for each file member a walk meets: its name, where its headers
 * start (the pax or long-name header before it included), its data and
 * size. A non-zero return ends the walk with that status. */
typedef int (*member_fn)(void *ctx, const char *name, int64_t header, int64_t data, int64_t len);

/* Walks the tar headers of `in` from byte `at` to byte `size`; `shard`
 * names it in errors. The one reader of tar headers (listing and fields). */
static int tar_walk(const shard_in *fd, const char *shard, int64_t at, int64_t size, member_fn fn,
                    void *ctx) {
  int rc = FERRY_OK;
  int64_t start = at, first_hdr = -1;
  char longname[4096];
  int have_long = 0, have_size = 0;
  uint64_t pax_size = 0;
  uint8_t block[512];
  fy_tar_header h;
  while (rc == FERRY_OK) {
    if (at + 512 > size) {
      if (at < size || at == 0)
        rc = fy_error(FERRY_ECORRUPT, "%s: not a tar file, or cut short at byte %lld", shard,
                      (long long)at);
      break; /* a tar without its end blocks: taken as it is */
    }
    if (read_at(fd, block, 512, at)) {
      rc = fy_error(FERRY_EIO, "%s: read failed at byte %lld: %s", shard, (long long)at,
                    errno ? strerror(errno) : "the file ended");
      break;
    }
    int kind = fy_tar_parse_header(block, &h);
    if (kind == 1)
      break; /* the end */
    if (kind < 0) {
      rc = fy_error(FERRY_ECORRUPT, "%s: %s at byte %lld", shard,
                    at == start ? "not a tar file (no tar header)" : "damaged tar header",
                    (long long)at);
      break;
    }
    /* 'x' and 'L' describe the next member; 'g' (global pax records) is
     * passed over, leaving what an 'x' before it said for that member */
    int meta = h.type == 'x' || h.type == 'L' || h.type == 'g';
    if (!meta && have_size)
      h.size = pax_size;
    const char *name = !meta && have_long ? longname : h.name;
    int64_t data = at + 512;
    if (h.size > (uint64_t)(size - data)) {
      rc =
          fy_error(FERRY_ECORRUPT, "%s: member \"%s\" runs past the end of the shard", shard, name);
      break;
    }
    int64_t next = data + (int64_t)((h.size + 511) / 512 * 512);
    if (meta && first_hdr < 0)
      first_hdr = at;
    if (h.type == 'x' || h.type == 'L') { /* the next member's name (and size) */
      char *text = h.size < 65536 ? malloc(h.size + 1) : NULL;
      if (text && !read_at(fd, text, h.size, data)) {
        text[h.size] = '\0';
        if (h.type == 'L' && h.size < sizeof longname) {
          memcpy(longname, text, h.size + 1);
          have_long = 1;
        } else if (h.type == 'x') {
          pax_records(text, h.size, longname, sizeof longname, &have_long, &pax_size, &have_size);
        }
      }
      free(text);
    } else if (!meta) {
      if (h.type == '0' || h.type == '\0' || h.type == '7')
        rc = fn(ctx, name, first_hdr >= 0 ? first_hdr : at, data, (int64_t)h.size);
      /* else directories, links, devices: not samples */
      have_long = have_size = 0;
      first_hdr = -1;
    }
    at = next;
  }
  return rc;
}

typedef struct list_ctx {
  lister *l;
  pending *p;
  const char *shard;
  int32_t id;
  const shard_in *in;
} list_ctx;

static int list_member(void *ctx, const char *name, int64_t header, int64_t data, int64_t len) {
  list_ctx *c = ctx;
  return member(c->l, c->p, c->shard, c->id, c->in, name, header, data, len);
}

/* Walks one shard's headers. */
static int list_shard(lister *l, const char *shard, int32_t id) {
  struct stat st;
  shard_in in = {.fd = -1};
  int rc;
  if (fy_shard_stream_is(shard)) { /* read once, whole: its members are kept in memory */
    uint8_t *mem;
    if (!l->stream_max)
      l->stream_max = fy_shard_stream_budget();
    rc = fy_shard_stream_load(shard, l->src->stream_stall_ms, l->stream_max - l->streamed,
                              l->stream_max, &mem, &in.size);
    if (rc)
      return rc;
    l->streamed += in.size;
    in.mem = l->src->shard_mem[id] = mem;
    l->src->shard_mem_len[id] = in.size;
  } else {
    rc = fy_open_regular(shard, &st, &in.fd); /* a FIFO refused, never waited on */
    if (rc)
      return rc;
    in.size = (int64_t)st.st_size;
  }
  pending p = {.has_key = 0};
  list_ctx c = {l, &p, shard, id, &in};
  rc = tar_walk(&in, shard, 0, in.size, list_member, &c);
  if (rc == FERRY_OK)
    rc = flush(l, &p, shard, id);
  if (in.fd >= 0)
    close(in.fd);
  return rc;
}

typedef struct field_ctx {
  const char *field;
  int64_t data, len; /* -1: not found */
} field_ctx;

/* webdataset's field of a member: its name after the first dot of the
 * base name ("a.b.txt" is sample "a"'s field "b.txt"). */
static int field_member(void *ctx, const char *name, int64_t header, int64_t data, int64_t len) {
  (void)header;
  field_ctx *c = ctx;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *dot = strchr(base, '.');
  if (dot && base[0] != '.' && !strcasecmp(dot + 1, c->field) && c->data < 0) {
    c->data = data;
    c->len = len;
  }
  return FERRY_OK;
}

int fy_shards_field(const fy_source *s, int64_t i, const char *field, fy_buf *buf, size_t *size,
                    int *found) {
  *found = 0;
  *size = 0;
  if (!s->shard || !s->sample_begin)
    return fy_error(FERRY_EUNSUPPORTED,
                    "field \"%s\": the source is not WebDataset shards (fields are their "
                    "members beside the image)",
                    field);
  int32_t sh = s->shard[i];
  int64_t begin = s->sample_begin[i], end = s->sample_end[i];
  const uint8_t *mem;
  fy_buf range = {0};
  if (s->shard_mem && s->shard_mem[sh]) {
    mem = s->shard_mem[sh] + begin;
  } else { /* the sample's members, one read (through the thread's open fd) */
    size_t got;
    int rc = fy_shard_fd_read(s->shards_id, sh, s->shards[sh], fy_source_path(s, i),
                              (uint64_t)begin, (uint64_t)(end - begin), 0, &range, &got);
    if (rc) {
      fy_buf_free(&range);
      return rc;
    }
    mem = range.p;
  }
  shard_in in = {.fd = -1, .mem = mem, .size = end - begin};
  field_ctx c = {field, -1, -1};
  /* the range has no end blocks: the walk stops at its end */
  int rc = tar_walk(&in, s->shards[sh], 0, end - begin, field_member, &c);
  if (rc == FERRY_OK && c.data >= 0 && (rc = fy_buf_reserve(buf, c.len ? (size_t)c.len : 1)) == 0) {
    memcpy(buf->p, mem + c.data, (size_t)c.len);
    *size = (size_t)c.len;
    *found = 1;
  }
  fy_buf_free(&range);
  return rc;
}

int fy_shards_open(fy_source *s, const char *what, char *const *shards, size_t n) {
  lister l = {.src = s};
  int rc = FERRY_OK;
  if (n == 0)
    rc = fy_error(FERRY_EINVAL, "%s: names no shard", what);
  else if (n > FY_MAX_SHARDS)
    rc = fy_error(FERRY_ETOO_LARGE, "%s: more than %d shards", what, FY_MAX_SHARDS);
  for (size_t i = 0; i < n && rc == FERRY_OK; i++)
    if (ends_with(shards[i], ".tar") || fy_shard_stream_is(shards[i]))
      continue;
    else
      rc = fy_error(FERRY_EUNSUPPORTED, "%s: not a .tar shard", shards[i]);
  if (rc == FERRY_OK)
    rc = fy_source_alloc_shards(s, n);
  for (size_t i = 0; i < n && rc == FERRY_OK; i++) {
    if (!(s->shards[i] = strdup(shards[i])))
      rc = fy_error(FERRY_ENOMEM, "out of memory");
    else
      s->nshards = (int32_t)(i + 1);
  }
  for (int32_t i = 0; i < s->nshards && rc == FERRY_OK; i++)
    rc = list_shard(&l, s->shards[i], i);
  if (rc == FERRY_OK && l.no_image.n)
    fy_log(FERRY_LOG_WARNING, "%s: %zu sample(s) without an image member left out (the first: %s)",
           what, l.no_image.n, l.no_image.first);
  if (rc == FERRY_OK && l.bad_label.n)
    fy_log(FERRY_LOG_WARNING,
           "%s: %zu sample(s) with a cls/label member that is not an integer "
           "in 0..%d: unlabelled (-1) (the first: %s)",
           what, l.bad_label.n, FY_MAX_LABEL, l.bad_label.first);
  if (rc == FERRY_OK && l.big_label.n)
    fy_log(FERRY_LOG_WARNING,
           "%s: %zu label member(s) over %d bytes not read: unlabelled (-1) (the first: %s)", what,
           l.big_label.n, FY_LABEL_MAX, l.big_label.first);
  if (rc == FERRY_OK && l.unnamed.n)
    fy_log(FERRY_LOG_WARNING, "%s: %zu member(s) not named KEY.EXT left out (the first: %s)", what,
           l.unnamed.n, l.unnamed.first);
  if (rc == FERRY_OK && s->count == 0)
    rc = fy_error(FERRY_EEMPTY, "%s: no samples with an image member in %d shard(s)", what,
                  (int)s->nshards);
  if (rc)
    fy_source_free(s);
  return rc;
}
