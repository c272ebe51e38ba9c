/* catalog.c — the in-memory catalog (entries and their strings), and
 * loading and saving the .fidx file. */
#include "catalog/catalog.h"
#include "hash/hash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char magic[8] = {'F', 'E', 'R', 'R', 'Y', 'I', 'D', 'X'};
static const char trailer[8] = {'F', 'I', 'D', 'X', 'E', 'N', 'D', 0};
#define VERSION 1
#define HEADER 40 /* magic, version, header bytes, options, count */

/* ------------------------------------------------------------- arena */

void *fy_arena_alloc(fy_arena *a, size_t n) {
  size_t at = (a->used + 7) & ~(size_t)7; /* 8-byte aligned: signatures hold words */
  if (a->nblocks == 0 || at + n > a->cap) {
    size_t cap = n > (1u << 20) ? n : (1u << 20);
    char **b = realloc(a->blocks, (a->nblocks + 1) * sizeof *b);
    if (!b)
      return NULL;
    a->blocks = b;
    if (!(b[a->nblocks] = malloc(cap)))
      return NULL;
    a->nblocks++;
    a->cap = cap;
    at = 0;
  }
  a->used = at + n;
  return a->blocks[a->nblocks - 1] + at;
}

const char *fy_arena_strdup(fy_arena *a, const char *s, size_t len) {
  char *d = fy_arena_alloc(a, len + 1);
  if (!d)
    return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

void fy_arena_free(fy_arena *a) {
  for (size_t i = 0; i < a->nblocks; i++)
    free(a->blocks[i]);
  free(a->blocks);
  memset(a, 0, sizeof *a);
}

/* ----------------------------------------------------------- catalog */

ferry_catalog *fy_catalog_new(const ferry_hash_options *o) {
  ferry_catalog *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->options = *o;
  c->share_world = 1;
  atomic_init(&c->unsorted, 0);
  if (pthread_mutex_init(&c->mu, NULL)) {
    free(c);
    return NULL;
  }
  return c;
}

static int add_raw(ferry_catalog *c, const ferry_catalog_entry *e, size_t pl, size_t el) {
  ferry_catalog_entry *v = fy_grow(c->entries, &c->cap, c->count + 1, sizeof *v, 256);
  if (!v)
    return fy_error(FERRY_ENOMEM, "catalog: out of memory");
  c->entries = v;
  ferry_catalog_entry *d = &c->entries[c->count];
  *d = *e;
  d->path = fy_arena_strdup(&c->strings, e->path, pl);
  d->error = fy_arena_strdup(&c->strings, e->error ? e->error : "", el);
  d->signature = NULL;
  if ((e->kinds & FERRY_HASH_SIGNATURE) && e->signature) {
    ferry_signature *sig = fy_arena_alloc(&c->strings, sizeof *sig);
    if (sig)
      memcpy(sig, e->signature, sizeof *sig);
    d->signature = sig;
  }
  if (!d->path || !d->error || ((e->kinds & FERRY_HASH_SIGNATURE) && !d->signature))
    return fy_error(FERRY_ENOMEM, "catalog: out of memory");
  c->count++;
  return FERRY_OK;
}

int fy_catalog_add(ferry_catalog *c, const ferry_catalog_entry *e) {
  return add_raw(c, e, strlen(e->path), e->error ? strlen(e->error) : 0);
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const ferry_catalog_entry *)a)->path, ((const ferry_catalog_entry *)b)->path);
}

void fy_catalog_sort(ferry_catalog *c) {
  if (c->count > 1)
    qsort(c->entries, c->count, sizeof *c->entries, by_path);
}

void fy_catalog_ready(const ferry_catalog *cc) {
  /* every catalog is made by fy_catalog_new (malloc'd, never a const
   * object): sorting it through a const pointer is defined */
  ferry_catalog *c = (ferry_catalog *)cc;
  if (!atomic_load_explicit(&c->unsorted, memory_order_acquire))
    return;
  pthread_mutex_lock(&c->mu);
  if (atomic_load_explicit(&c->unsorted, memory_order_relaxed)) {
    fy_catalog_sort(c);
    atomic_store_explicit(&c->unsorted, 0, memory_order_release);
  }
  pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------- catalogs built in memory */

int ferry_catalog_new(const ferry_hash_options *options, ferry_catalog **catalog) {
  if (!catalog)
    return fy_error(FERRY_EINVAL, "ferry_catalog_new: NULL catalog");
  *catalog = NULL;
  ferry_hash_options o;
  int rc = fy_hash_options_take(options, &o);
  if (rc)
    return rc;
  if (!(*catalog = fy_catalog_new(&o)))
    return fy_error(FERRY_ENOMEM, "ferry_catalog_new: out of memory");
  return FERRY_OK;
}

static uint64_t path_hash(const char *s) { /* FNV-1a */
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* The slot of `path` in the set: where it is, or the empty one it would take. */
static size_t pathset_slot(const ferry_catalog *c, const char *path) {
  size_t mask = c->pathset_cap - 1, s = (size_t)path_hash(path) & mask;
  while (c->pathset[s] && strcmp(c->pathset[s], path))
    s = (s + 1) & mask;
  return s;
}

/* Room in the set for one more path (made from the entries at the first
 * call: a loaded catalog can be added to as well). */
static int pathset_reserve(ferry_catalog *c) {
  if (c->pathset && 2 * (c->count + 1) <= c->pathset_cap)
    return FERRY_OK;
  size_t cap = 64;
  while (cap < 2 * (c->count + 1))
    cap *= 2;
  const char **set = calloc(cap, sizeof *set);
  if (!set)
    return fy_error(FERRY_ENOMEM, "ferry_catalog_add: out of memory");
  free(c->pathset);
  c->pathset = set;
  c->pathset_cap = cap;
  for (size_t i = 0; i < c->count; i++)
    set[pathset_slot(c, c->entries[i].path)] = c->entries[i].path;
  return FERRY_OK;
}

/* What ferry_catalog_add refuses: the rules every entry of a .fidx keeps. */
static int entry_check(const ferry_catalog *c, const ferry_catalog_entry *e) {
  const char *p = e->path;
  size_t pl = strlen(p), el = e->error ? strlen(e->error) : 0;
  if (pl > 65535) /* a record's path length is 16 bits (record.c) */
    return fy_error(FERRY_ETOO_LARGE, "ferry_catalog_add: a path of %zu bytes (at most 65535)", pl);
  if (e->status != FERRY_OK && el > 65535)
    return fy_error(FERRY_ETOO_LARGE,
                    "ferry_catalog_add: %s: an error message of %zu bytes "
                    "(at most 65535)",
                    p, el);
  if (c->count >= UINT32_MAX - 1) /* ferry_dupes numbers entries in 32 bits */
    return fy_error(FERRY_ETOO_LARGE, "ferry_catalog_add: %s: the catalog is full (%zu entries)", p,
                    c->count);
  if (e->status > FERRY_OK || e->status < INT16_MIN)
    return fy_error(FERRY_EINVAL,
                    "ferry_catalog_add: %s: status %d is neither FERRY_OK nor an "
                    "error",
                    p, e->status);
  if ((unsigned)e->format > FERRY_FORMAT_RAW)
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: %s: unknown format %d", p, (int)e->format);
  if (e->width < 0 || e->height < 0 || (e->status == FERRY_OK && (!e->width || !e->height)))
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: %s: a picture of %d x %d", p, e->width,
                    e->height);
  if (e->status != FERRY_OK && e->kinds)
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: %s: a file that failed has no hashes", p);
  if ((e->kinds & FERRY_HASH_SIGNATURE) && !e->signature)
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: %s: FERRY_HASH_SIGNATURE without a signature",
                    p);
  if (e->kinds & ~c->options.kinds)
    return fy_error(FERRY_EINVAL,
                    "ferry_catalog_add: %s: hashes (kinds 0x%x) that the "
                    "catalog's options (kinds 0x%x) leave out",
                    p, e->kinds, c->options.kinds);
  for (int k = 0; k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(e->kinds & FERRY_HASH_MASK(k)))
      continue;
    const ferry_hash *h = &e->hash[k];
    int want = k == FERRY_HASH_COLORHASH ? 14 * c->options.colorhash_bits
                                         : c->options.hash_size * c->options.hash_size;
    if (h->bits != want)
      return fy_error(FERRY_EINVAL,
                      "ferry_catalog_add: %s: a %d-bit %s (the catalog's options "
                      "make %d bits)",
                      p, h->bits, ferry_hash_kind_name((ferry_hash_kind)k), want);
    for (int w = 0; w < 4; w++) {
      int below = want - 64 * w; /* bits of the value in word w */
      uint64_t spare = below >= 64 ? 0 : below <= 0 ? ~0ull : ~0ull << below;
      if (h->w[w] & spare)
        return fy_error(FERRY_EINVAL, "ferry_catalog_add: %s: its %s has bits set past its %d", p,
                        ferry_hash_kind_name((ferry_hash_kind)k), want);
    }
  }
  return FERRY_OK;
}

int ferry_catalog_add(ferry_catalog *c, const ferry_catalog_entry *e) {
  if (!c || !e)
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: NULL argument");
  if (!e->path || !*e->path)
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: an entry without a path");
  int rc = entry_check(c, e);
  if (rc)
    return rc;
  if ((rc = pathset_reserve(c)) != FERRY_OK)
    return rc;
  size_t slot = pathset_slot(c, e->path);
  if (c->pathset[slot])
    return fy_error(FERRY_EINVAL, "ferry_catalog_add: %s: already in the catalog", e->path);
  ferry_catalog_entry copy = *e;
  if (copy.status == FERRY_OK)
    copy.error = ""; /* as in a .fidx: a message only for a file that failed */
  int later = !c->count || strcmp(e->path, c->entries[c->count - 1].path) > 0;
  if ((rc = fy_catalog_add(c, &copy)) != FERRY_OK)
    return rc;
  c->pathset[slot] = c->entries[c->count - 1].path;
  if (!later)
    atomic_store_explicit(&c->unsorted, 1, memory_order_release);
  return FERRY_OK;
}

size_t ferry_catalog_size(const ferry_catalog *c) { return c ? c->count : 0; }

const ferry_catalog_entry *ferry_catalog_get(const ferry_catalog *c, size_t i) {
  if (!c || i >= c->count)
    return NULL;
  fy_catalog_ready(c);
  return &c->entries[i];
}

void ferry_catalog_hash_options(const ferry_catalog *c, ferry_hash_options *o) { *o = c->options; }

/* ------------------------------------------------------------ share */

static void share_clear(ferry_catalog *c) {
  for (int i = 0; i < c->share_nroots; i++)
    free(c->share_roots[i]);
  free(c->share_roots);
  c->share_roots = NULL;
  c->share_nroots = 0;
  c->share_rank = 0;
  c->share_world = 1;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int fy_catalog_set_share(ferry_catalog *c, int rank, int world, const char *const *roots,
                         int nroots) {
  share_clear(c);
  if (world <= 1)
    return FERRY_OK;
  char **v = calloc(nroots > 0 ? (size_t)nroots : 1, sizeof *v);
  if (!v)
    return fy_error(FERRY_ENOMEM, "catalog: out of memory");
  int n = 0;
  for (int i = 0; i < nroots; i++) {
    if (!(v[n] = strdup(roots[i]))) {
      while (n--)
        free(v[n]);
      free(v);
      return fy_error(FERRY_ENOMEM, "catalog: out of memory");
    }
    n++;
  }
  qsort(v, (size_t)n, sizeof *v, by_string);
  int kept = 0; /* the same root twice is one root */
  for (int i = 0; i < n; i++) {
    if (kept && !strcmp(v[kept - 1], v[i]))
      free(v[i]);
    else
      v[kept++] = v[i];
  }
  c->share_roots = v;
  c->share_nroots = kept;
  c->share_rank = rank;
  c->share_world = world;
  return FERRY_OK;
}

int fy_share_same(const ferry_catalog *a, const ferry_catalog *b) {
  if (a->share_world != b->share_world || a->share_nroots != b->share_nroots)
    return 0;
  for (int i = 0; i < a->share_nroots; i++)
    if (strcmp(a->share_roots[i], b->share_roots[i]))
      return 0;
  return a->share_world <= 1 || a->share_rank == b->share_rank;
}

void fy_share_describe(const ferry_catalog *c, char *buf, size_t cap) {
  if (c->share_world <= 1) {
    snprintf(buf, cap, "a whole catalog");
    return;
  }
  size_t at = (size_t)snprintf(buf, cap, "rank %d of %d over", c->share_rank, c->share_world);
  for (int i = 0; i < c->share_nroots && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s %s", i ? "," : "", c->share_roots[i]);
}

int ferry_catalog_share(const ferry_catalog *c, int *rank, int *world, const char *const **roots,
                        int *nroots) {
  int partial = c && c->share_world > 1;
  if (rank)
    *rank = partial ? c->share_rank : 0;
  if (world)
    *world = partial ? c->share_world : 1;
  if (roots)
    *roots = partial ? (const char *const *)c->share_roots : NULL;
  if (nroots)
    *nroots = partial ? c->share_nroots : 0;
  return partial;
}

int ferry_index_rank_of(const char *relative_path, int world_size) {
  if (!relative_path || world_size < 2)
    return 0;
  return (int)(fy_crc32(0, relative_path, strlen(relative_path)) % (uint32_t)world_size);
}

int fy_share_rank(const char *path, const char *const *roots, int nroots, int world) {
  const char *best = NULL;
  for (int r = 0; r < nroots; r++)
    if (fy_path_under(path, roots[r]) && (!best || strlen(roots[r]) < strlen(best)))
      best = roots[r];
  if (!best)
    return -1;
  const char *rel = path + strlen(best);
  while (*rel == '/')
    rel++;
  if (!*rel) { /* the root is the file */
    const char *slash = strrchr(path, '/');
    rel = slash ? slash + 1 : path;
  }
  return ferry_index_rank_of(rel, world);
}

/* Whether `p` is written as ferry writes the paths it finds: absolute, and
 * no empty, "." or ".." name (a name climbing out of a root lexically). */
static int canonical_path(const char *p) {
  if (p[0] != '/')
    return 0;
  if (!p[1])
    return 1;
  for (const char *s = p + 1;;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (!n || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
      return 0;
    if (!e)
      return 1;
    s = e + 1;
  }
}

int fy_share_check(const ferry_catalog *c, const char *name) {
  if (c->share_world <= 1)
    return FERRY_OK;
  const char *const *roots = (const char *const *)c->share_roots;
  size_t foreign = 0;
  const char *first = NULL;
  int first_rank = 0;
  for (size_t i = 0; i < c->count; i++) {
    const char *p = c->entries[i].path;
    int r = canonical_path(p) ? fy_share_rank(p, roots, c->share_nroots, c->share_world) : -2;
    if (r == c->share_rank)
      continue;
    if (!foreign++) {
      first = p;
      first_rank = r;
    }
  }
  if (!foreign)
    return FERRY_OK;
  char share[1024], why[64];
  fy_share_describe(c, share, sizeof share);
  if (first_rank == -2)
    snprintf(why, sizeof why, "not a canonical path");
  else if (first_rank == -1)
    snprintf(why, sizeof why, "under none of its roots");
  else
    snprintf(why, sizeof why, "it falls to rank %d", first_rank);
  return fy_error(FERRY_EINVAL,
                  "%s: %s, yet it holds %zu %s of other shares, the first %s (%s): a part holds "
                  "its own rank's files only (a crafted or mixed-up part?); refused, nothing "
                  "written",
                  name, share, foreign, foreign == 1 ? "entry" : "entries", first, why);
}

void ferry_catalog_free(ferry_catalog *c) {
  if (!c)
    return;
  share_clear(c);
  free(c->entries);
  free(c->pathset);
  fy_arena_free(&c->strings);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* -------------------------------------------------------------- load */

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* The header's blocks past its 40 fixed bytes (d[HEADER .. end)): each a
 * 4-byte tag, a 4-byte length and that many bytes; unknown tags are
 * skipped (a later ferry's additions), so are they by older readers, which
 * start the entries at the header's length. SHRD: a partial catalog's
 * share: rank, world size, root count (4 bytes each), then each root as a
 * 4-byte length and its bytes. */
static int read_blocks(ferry_catalog *c, const uint8_t *d, size_t end) {
  size_t at = HEADER;
  while (end - at >= 8) {
    size_t len = le(d + at + 4, 4);
    const uint8_t *p = d + at + 8;
    if (len > end - at - 8)
      return FERRY_ECORRUPT;
    if (!memcmp(d + at, "SHRD", 4)) {
      if (len < 12)
        return FERRY_ECORRUPT;
      uint64_t rank = le(p, 4), world = le(p + 4, 4), n = le(p + 8, 4);
      if (world < 2 || world > FY_MAX_WORLD || rank >= world || n > (len - 12) / 4)
        return FERRY_ECORRUPT;
      const char **roots = calloc(n ? n : 1, sizeof *roots);
      size_t *lens = calloc(n ? n : 1, sizeof *lens);
      size_t q = 12;
      int rc = roots && lens ? FERRY_OK : FERRY_ENOMEM;
      for (uint64_t i = 0; i < n && !rc; i++) {
        if (len - q < 4 || (lens[i] = le(p + q, 4)) > len - q - 4 || !lens[i] ||
            memchr(p + q + 4, 0, lens[i]))
          rc = FERRY_ECORRUPT;
        else
          roots[i] = (const char *)p + q + 4;
        q += 4 + (rc ? 0 : lens[i]);
      }
      if (!rc && q != len)
        rc = FERRY_ECORRUPT;
      char **copies = rc ? NULL : calloc(n ? n : 1, sizeof *copies);
      if (!rc && !copies)
        rc = FERRY_ENOMEM;
      for (uint64_t i = 0; i < n && !rc; i++)
        if (!(copies[i] = strndup(roots[i], lens[i])))
          rc = FERRY_ENOMEM;
      if (!rc)
        rc = fy_catalog_set_share(c, (int)rank, (int)world, (const char *const *)copies, (int)n);
      for (uint64_t i = 0; copies && i < n; i++)
        free(copies[i]);
      free(copies);
      free(roots);
      free(lens);
      if (rc)
        return rc == FERRY_ENOMEM ? fy_error(rc, "catalog: out of memory") : rc;
    }
    at += 8 + len;
  }
  return at == end ? FERRY_OK : FERRY_ECORRUPT;
}

int ferry_catalog_load(const char *path, ferry_catalog **out) {
  if (!path || !out)
    return fy_error(FERRY_EINVAL, "ferry_catalog_load: NULL argument");
  *out = NULL;
  fy_buf buf = {0};
  size_t n;
  int rc = fy_read_file(path, 0, &buf, &n);
  if (rc)
    return rc;
  const uint8_t *d = buf.p;
  if (n < HEADER + 20 || memcmp(d, magic, 8)) {
    fy_buf_free(&buf);
    return fy_error(FERRY_ECORRUPT, "%s: not a ferry catalog (.fidx)", path);
  }
  unsigned version = (unsigned)le(d + 8, 4);
  if (version != VERSION) {
    fy_buf_free(&buf); /* d is gone from here on */
    return fy_error(FERRY_EUNSUPPORTED, "%s: catalog version %u (this ferry reads %d)", path,
                    version, VERSION);
  }
  const uint8_t *tail = d + n - 20;
  if (memcmp(tail, trailer, 8) || fy_crc32(0, d, n - 4) != (uint32_t)le(d + n - 4, 4)) {
    fy_buf_free(&buf);
    return fy_error(FERRY_ECORRUPT, "%s: catalog is damaged (checksum mismatch)", path);
  }
  ferry_hash_options o;
  fy_options_decode(d + 16, &o);
  if (fy_hash_options_check(&o) != FERRY_OK) { /* settings ferry never writes */
    char why[512];
    snprintf(why, sizeof why, "%s", ferry_last_error());
    fy_buf_free(&buf);
    return fy_error(FERRY_ECORRUPT, "%s: catalog is damaged (its hash settings: %s)", path, why);
  }
  uint64_t count = le(d + 32, 8);
  ferry_catalog *c = fy_catalog_new(&o);
  if (!c) {
    fy_buf_free(&buf);
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  }
  size_t at = le(d + 12, 4);
  if (at < HEADER || at > (size_t)(tail - d) || (rc = read_blocks(c, d, at)) != FERRY_OK) {
    ferry_catalog_free(c);
    fy_buf_free(&buf);
    return rc == FERRY_ENOMEM ? rc
                              : fy_error(FERRY_ECORRUPT, "%s: catalog is damaged (header)", path);
  }
  for (uint64_t i = 0; i < count && rc == FERRY_OK; i++) {
    if (at + 4 > (size_t)(tail - d)) {
      rc = FERRY_ECORRUPT;
      break;
    }
    size_t len = le(d + at, 4), pl, el;
    ferry_catalog_entry e;
    ferry_signature sig;
    if (at + 4 + len > (size_t)(tail - d) ||
        fy_record_decode(d + at + 4, len, &e, &sig, &pl, &el) != FERRY_OK) {
      rc = FERRY_ECORRUPT;
      break;
    }
    rc = add_raw(c, &e, pl, el);
    at += 4 + len;
  }
  if (rc == FERRY_OK && (le(tail + 8, 8) != count || at != (size_t)(tail - d)))
    rc = FERRY_ECORRUPT;
  fy_buf_free(&buf);
  if (rc) {
    ferry_catalog_free(c);
    return rc == FERRY_ECORRUPT ? fy_error(rc, "%s: catalog is damaged (bad entry)", path) : rc;
  }
  *out = c;
  return FERRY_OK;
}

/* -------------------------------------------------------------- save */

int fy_sync_dir(const char *path) {
  char *dir = strdup(path);
  if (!dir)
    return FERRY_ENOMEM;
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    strcpy(dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  int rc = fd >= 0 && fsync(fd) == 0 ? FERRY_OK : FERRY_EIO;
  if (fd >= 0)
    close(fd);
  free(dir);
  return rc;
}

/* Writes the whole file to a FILE*, returning the CRC of what was written. */
static void put32(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static int write_all(const ferry_catalog *c, FILE *f) {
  /* a partial catalog's share as a SHRD block after the fixed header */
  size_t block = 0;
  if (c->share_world > 1) {
    block = 8 + 12;
    for (int r = 0; r < c->share_nroots; r++)
      block += 4 + strlen(c->share_roots[r]);
  }
  uint8_t *head = malloc(HEADER + block);
  if (!head)
    return -1;
  memcpy(head, magic, 8);
  put32(head + 8, VERSION);
  put32(head + 12, HEADER + block);
  fy_options_encode(&c->options, head + 16);
  for (int i = 0; i < 8; i++)
    head[32 + i] = (uint8_t)((uint64_t)c->count >> (8 * i));
  if (block) {
    uint8_t *p = head + HEADER;
    memcpy(p, "SHRD", 4);
    put32(p + 4, block - 8);
    put32(p + 8, (uint64_t)c->share_rank);
    put32(p + 12, (uint64_t)c->share_world);
    put32(p + 16, (uint64_t)c->share_nroots);
    p += 20;
    for (int r = 0; r < c->share_nroots; r++) {
      size_t rl = strlen(c->share_roots[r]);
      put32(p, rl);
      memcpy(p + 4, c->share_roots[r], rl);
      p += 4 + rl;
    }
  }
  uint32_t crc = fy_crc32(0, head, HEADER + block);
  int wrote = fwrite(head, 1, HEADER + block, f) == HEADER + block;
  free(head);
  if (!wrote)
    return -1;
  fy_buf rec = {0};
  for (size_t i = 0; i < c->count; i++) {
    size_t len = fy_record_size(&c->entries[i]);
    if (fy_buf_reserve(&rec, len + 4)) {
      fy_buf_free(&rec);
      return -1;
    }
    uint8_t *p = rec.p;
    for (int b = 0; b < 4; b++)
      p[b] = (uint8_t)(len >> (8 * b));
    fy_record_encode(&c->entries[i], p + 4);
    crc = fy_crc32(crc, p, len + 4);
    if (fwrite(p, 1, len + 4, f) != len + 4) {
      fy_buf_free(&rec);
      return -1;
    }
  }
  fy_buf_free(&rec);
  uint8_t tail[20];
  memcpy(tail, trailer, 8);
  for (int i = 0; i < 8; i++)
    tail[8 + i] = (uint8_t)((uint64_t)c->count >> (8 * i));
  crc = fy_crc32(crc, tail, 16);
  for (int i = 0; i < 4; i++)
    tail[16 + i] = (uint8_t)(crc >> (8 * i));
  return fwrite(tail, 1, 20, f) == 20 ? 0 : -1;
}

int fy_catalog_remove_stale(const char *path) {
  char *dir = strdup(path);
  if (!dir)
    return 0;
  char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : path;
  if (slash == dir)
    dir[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    strcpy(dir, ".");
  size_t bl = strlen(base);
  int removed = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    /* exactly BASE.tmp<digits>: what fy_catalog_save writes, nothing else */
    const char *n = e->d_name;
    if (strncmp(n, base, bl) || strncmp(n + bl, ".tmp", 4) || !n[bl + 4] ||
        strspn(n + bl + 4, "0123456789") != strlen(n + bl + 4))
      continue;
    size_t len = strlen(dir) + strlen(n) + 2;
    char *p = malloc(len);
    if (p) {
      snprintf(p, len, "%s/%s", dir, n);
      removed += unlink(p) == 0;
      free(p);
    }
  }
  if (d)
    closedir(d);
  free(dir);
  return removed;
}

int fy_catalog_save(const ferry_catalog *c, const char *path) {
  size_t len = strlen(path) + 32;
  char *tmp = malloc(len);
  if (!tmp)
    return fy_error(FERRY_ENOMEM, "%s: out of memory", path);
  snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    int rc = fy_error(FERRY_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  FILE *f = fdopen(fd, "wb");
  int ok = f && write_all(c, f) == 0 && fflush(f) == 0 && fsync(fd) == 0;
  int err = errno;
  if (f)
    ok = fclose(f) == 0 && ok;
  else
    close(fd);
  if (!ok || rename(tmp, path) != 0) {
    if (ok)
      err = errno;
    unlink(tmp);
    int rc = fy_error(FERRY_EIO, "%s: cannot write the catalog: %s", path, strerror(err));
    free(tmp);
    return rc;
  }
  free(tmp);
  fy_sync_dir(path); /* the rename itself must reach the disk */
  return FERRY_OK;
}
