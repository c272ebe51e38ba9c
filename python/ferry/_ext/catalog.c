/* catalog.c — catalog files (.fidx) from Python: index_update (a folder
 * hashed into a catalog, whole or one rank's share), index_merge (partial
 * catalogs into one) and index_rank_of (the share rule). The GIL is
 * released while the library works; what it reports through callbacks
 * (bad files, missing ranks) is collected in C and handed back after. */
#include "ferry_py.h"

/* What a callback collects, without Python: (code, count, message). */
typedef struct collected {
  int *code, *count;
  char **msg;
  size_t n, cap;
  int oom;
} collected;

static void collect(collected *c, int code, int count, const char *a, const char *b) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    int *code2 = realloc(c->code, cap * sizeof *code2);
    if (code2)
      c->code = code2;
    int *count2 = code2 ? realloc(c->count, cap * sizeof *count2) : NULL;
    if (count2)
      c->count = count2;
    char **msg2 = count2 ? realloc(c->msg, cap * sizeof *msg2) : NULL;
    if (msg2)
      c->msg = msg2;
    if (!code2 || !count2 || !msg2) {
      c->oom = 1;
      return;
    }
    c->cap = cap;
  }
  size_t la = strlen(a), lb = b ? strlen(b) : 0;
  char *m = malloc(la + lb + 2);
  if (!m) {
    c->oom = 1;
    return;
  }
  memcpy(m, a, la + 1);
  if (b) { /* "a\0b": a path and its message */
    memcpy(m + la + 1, b, lb + 1);
  }
  c->code[c->n] = code;
  c->count[c->n] = count;
  c->msg[c->n++] = m;
}

static void collected_free(collected *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->msg[i]);
  free(c->msg);
  free(c->code);
  free(c->count);
}

static void on_file_error(void *user, const char *path, int status, const char *message) {
  collect(user, status, 0, path, message ? message : "");
}

/* A run of missing ranks (rank .. rank + count - 1): one per run, so at
 * most one more than the parts, whatever the world size. */
static void on_missing(void *user, int rank, int count, int world_size, const char *message) {
  (void)world_size;
  collect(user, rank, count, message, NULL);
}

/* A sequence of paths as bytes objects (enc) and their strings (out); -1
 * with an exception set. */
static int path_list(PyObject *seq, const char *what, PyObject **fast_out, PyObject ***enc_out,
                     const char ***out, Py_ssize_t *n_out) {
  PyObject *fast = PySequence_Fast(seq, what);
  if (!fast)
    return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject **enc = calloc((size_t)n + 1, sizeof *enc);
  const char **s = calloc((size_t)n + 1, sizeof *s);
  *fast_out = fast;
  *enc_out = enc;
  *out = s;
  *n_out = n;
  if (!enc || !s) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fast, i), &enc[i]))
      return -1;
    s[i] = PyBytes_AS_STRING(enc[i]);
  }
  return 0;
}

static void path_list_free(PyObject *fast, PyObject **enc, const char **s, Py_ssize_t n) {
  for (Py_ssize_t i = 0; enc && i < n; i++)
    Py_XDECREF(enc[i]);
  free(enc);
  free((void *)s);
  Py_XDECREF(fast);
}

/* index_update(index, roots, *, mode=-1, hash_size=0, kinds=0, threads=0,
 * device=-1, rank=0, world_size=1, recursive=True, all_files=False,
 * retry_failed=False, prune=False, engine_min_s=2.5) -> (stats dict, [(path, status, message)])
 * mode -1, hash_size 0, kinds 0: the catalog defaults (fast, 16, every
 * hash and the signature). */
PyObject *py_index_update(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"index",     "roots",        "mode",  "hash_size",    "kinds",
                           "threads",   "device",       "rank",  "world_size",   "recursive",
                           "all_files", "retry_failed", "prune", "engine_min_s", NULL};
  ferry_index_options o;
  ferry_index_options_default(&o);
  PyObject *index = NULL, *roots = NULL;
  int mode = -1, hash_size = 0;
  unsigned kinds = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|$iiIiiiippppd:index_update", kwlist,
                                   PyUnicode_FSConverter, &index, &roots, &mode, &hash_size, &kinds,
                                   &o.threads, &o.device, &o.rank, &o.world_size, &o.recursive,
                                   &o.all_files, &o.retry_failed, &o.prune, &o.engine_min_s))
    return NULL;
  if (mode >= 0)
    o.hash.mode = (ferry_hash_mode)mode;
  if (hash_size)
    o.hash.hash_size = hash_size;
  if (kinds)
    o.hash.kinds = kinds;
  PyObject *fast = NULL, **enc = NULL, *out = NULL;
  const char **paths = NULL;
  Py_ssize_t n = 0;
  collected errs = {0};
  if (path_list(roots, "index_update: roots must be a sequence of paths", &fast, &enc, &paths, &n) <
      0)
    goto done;
  if (n > INT_MAX) {
    PyErr_SetString(InvalidArgument, "index_update: too many roots");
    goto done;
  }
  o.on_error = on_file_error;
  o.error_user = &errs;
  ferry_index_stats st;
  memset(&st, 0, sizeof st);
  int rc;
  char msg[1024] = "";
  Py_BEGIN_ALLOW_THREADS rc = ferry_index_update(PyBytes_AS_STRING(index), paths, (int)n, &o, &st);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS if (rc) {
    raise_status(rc, msg);
    goto done;
  }
  if (errs.oom) {
    PyErr_NoMemory();
    goto done;
  }
  PyObject *stats = Py_BuildValue(
      "{sn sn sn sn sn sn sn sd sn sn sn sn sn sn sn sn}", "files", (Py_ssize_t)st.files, "hashed",
      (Py_ssize_t)st.hashed, "reused", (Py_ssize_t)st.reused, "resumed", (Py_ssize_t)st.resumed,
      "failed", (Py_ssize_t)st.failed, "removed", (Py_ssize_t)st.removed, "kept",
      (Py_ssize_t)st.kept, "seconds", st.seconds, "engine_files", (Py_ssize_t)st.engine_files,
      "unread", (Py_ssize_t)st.unread, "unread_kept", (Py_ssize_t)st.unread_kept, "moved",
      (Py_ssize_t)st.moved, "pruned", (Py_ssize_t)st.pruned, "inexact", (Py_ssize_t)st.inexact,
      "other_ranks", (Py_ssize_t)st.other_ranks, "skipped_moves", (Py_ssize_t)st.skipped_moves);
  PyObject *list = stats ? PyList_New((Py_ssize_t)errs.n) : NULL;
  for (size_t i = 0; list && i < errs.n; i++) {
    const char *path = errs.msg[i], *m = path + strlen(path) + 1;
    PyObject *p = PyUnicode_DecodeFSDefault(path), *pm = p ? PyUnicode_DecodeFSDefault(m) : NULL;
    PyObject *t = pm ? Py_BuildValue("(NiN)", p, errs.code[i], pm) : NULL;
    if (!pm)
      Py_XDECREF(p);
    if (!t)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, t);
  }
  out = list ? Py_BuildValue("(NN)", stats, list) : NULL;
  if (!out) {
    Py_XDECREF(stats);
    Py_XDECREF(list);
  }
done:
  collected_free(&errs);
  path_list_free(fast, enc, paths, n);
  Py_XDECREF(index);
  return out;
}

/* index_merge(out, parts, strict=False) -> (entries, conflicts,
 * world_size, [(first, count, message)] of the runs of missing ranks) */
PyObject *py_index_merge(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"out", "parts", "strict", NULL};
  PyObject *out_path = NULL, *parts = NULL;
  int strict = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|p:index_merge", kwlist, PyUnicode_FSConverter,
                                   &out_path, &parts, &strict))
    return NULL;
  PyObject *fast = NULL, **enc = NULL, *res = NULL;
  const char **paths = NULL;
  Py_ssize_t n = 0;
  collected missing = {0};
  if (path_list(parts, "index_merge: parts must be a sequence of paths", &fast, &enc, &paths, &n) <
      0)
    goto done;
  if (n > INT_MAX) {
    PyErr_SetString(InvalidArgument, "index_merge: too many parts");
    goto done;
  }
  ferry_merge_options mo = {strict, on_missing, &missing};
  ferry_merge_stats st;
  memset(&st, 0, sizeof st);
  int rc;
  char msg[1024] = "";
  Py_BEGIN_ALLOW_THREADS rc =
      ferry_index_merge(PyBytes_AS_STRING(out_path), paths, (int)n, &mo, &st);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS if (rc) {
    raise_status(rc, msg);
    goto done;
  }
  if (missing.oom) {
    PyErr_NoMemory();
    goto done;
  }
  PyObject *list = PyList_New((Py_ssize_t)missing.n);
  for (size_t i = 0; list && i < missing.n; i++) {
    PyObject *m = PyUnicode_DecodeFSDefault(missing.msg[i]);
    PyObject *t = m ? Py_BuildValue("(iiN)", missing.code[i], missing.count[i], m) : NULL;
    if (!t)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, t);
  }
  if (list)
    res = Py_BuildValue("(nniN)", (Py_ssize_t)st.entries, (Py_ssize_t)st.conflicts, st.world_size,
                        list);
done:
  collected_free(&missing);
  path_list_free(fast, enc, paths, n);
  Py_XDECREF(out_path);
  return res;
}

/* index_rank_of(relative_path, world_size) -> rank */
PyObject *py_index_rank_of(PyObject *mod, PyObject *args) {
  PyObject *path = NULL;
  int world_size;
  if (!PyArg_ParseTuple(args, "O&i:index_rank_of", PyUnicode_FSConverter, &path, &world_size))
    return NULL;
  int r = ferry_index_rank_of(PyBytes_AS_STRING(path), world_size);
  Py_DECREF(path);
  return PyLong_FromLong(r);
}
