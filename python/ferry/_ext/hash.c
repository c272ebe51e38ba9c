/* hash.c — Hasher and the module functions over the perceptual hashes
 * (src/hash), the Hamming search (src/search) and duplicate groups
 * (src/catalog: find_groups). */
#include "ferry_py.h"

#include <sys/stat.h>

/* Hasher: one ferry_hasher (scratch buffers reused from image to image).
 * Not thread-safe in C: a Hasher object is used by one thread at a time
 * (busy flag); the Python layer keeps one per thread. */
typedef struct HasherObject {
  PyObject_HEAD ferry_hasher *h;
  int busy;
  int hash_size;
} HasherObject;

/* The parsed keywords into o: mode, kinds, the limits (None: the
 * default). -1 with an exception set. */
static int finish_hash_options(ferry_hash_options *o, int mode, unsigned kinds,
                               PyObject *max_pixels, PyObject *max_bytes) {
  if (as_u64(max_pixels, "max_pixels", &o->max_pixels) < 0 ||
      as_u64(max_bytes, "max_bytes", &o->max_bytes) < 0)
    return -1;
  o->mode = (ferry_hash_mode)mode;
  o->kinds = kinds;
  return 0;
}

static PyObject *hasher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"mode",       "kinds",     "hash_size", "colorhash_bits",
                           "max_pixels", "max_bytes", NULL};
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  int mode = o.mode;
  unsigned kinds = o.kinds;
  PyObject *max_pixels = Py_None, *max_bytes = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$iIiiOO:Hasher", kwlist, &mode, &kinds,
                                   &o.hash_size, &o.colorhash_bits, &max_pixels, &max_bytes))
    return NULL;
  if (finish_hash_options(&o, mode, kinds, max_pixels, max_bytes) < 0)
    return NULL;
  HasherObject *self = (HasherObject *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  self->hash_size = o.hash_size;
  int rc = ferry_hasher_new(&o, &self->h);
  if (rc) {
    raise_status(rc, ferry_last_error());
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject *)self;
}

static void hasher_dealloc(HasherObject *self) {
  ferry_hasher_free(self->h);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* (format, width, height, exact, {kind name: hex}) */
static PyObject *hash_result(const ferry_hash_result *r) {
  PyObject *hashes = PyDict_New();
  for (int k = 0; hashes && k < FERRY_HASH_KIND_COUNT; k++) {
    if (!(r->kinds & FERRY_HASH_MASK(k)))
      continue;
    char hex[80];
    if (ferry_hash_to_hex(&r->hash[k], hex, sizeof hex) <= 0) {
      Py_CLEAR(hashes);
      raise_status(FERRY_EINTERNAL, "hash: cannot format a hash");
      break;
    }
    PyObject *v = PyUnicode_FromString(hex);
    if (!v || PyDict_SetItemString(hashes, ferry_hash_kind_name((ferry_hash_kind)k), v) < 0)
      Py_CLEAR(hashes);
    Py_XDECREF(v);
  }
  if (hashes && (r->kinds & FERRY_HASH_SIGNATURE)) { /* its bytes: for find_groups */
    PyObject *v = PyBytes_FromStringAndSize((const char *)&r->signature, sizeof r->signature);
    if (!v || PyDict_SetItemString(hashes, "signature", v) < 0)
      Py_CLEAR(hashes);
    Py_XDECREF(v);
  }
  if (!hashes)
    return NULL;
  return Py_BuildValue("(siiNN)", ferry_format_name(r->format), r->width, r->height,
                       PyBool_FromLong(r->exact), hashes);
}

static int hasher_enter(HasherObject *self) {
  if (self->busy) {
    PyErr_SetString(StateError, "this Hasher is in use by another thread (one per thread)");
    return -1;
  }
  self->busy = 1;
  return 0;
}

static PyObject *hasher_hash_file(HasherObject *self, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path))
    return NULL;
  if (hasher_enter(self) < 0) {
    Py_DECREF(path);
    return NULL;
  }
  ferry_hash_result r;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_hash_file(self->h, PyBytes_AS_STRING(path), &r);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS self->busy = 0;
  Py_DECREF(path);
  return rc ? raise_status(rc, msg) : hash_result(&r);
}

static PyObject *hasher_hash_bytes(HasherObject *self, PyObject *args) {
  Py_buffer data;
  const char *name = NULL;
  if (!PyArg_ParseTuple(args, "y*|z:hash_bytes", &data, &name))
    return NULL;
  if (hasher_enter(self) < 0) {
    PyBuffer_Release(&data);
    return NULL;
  }
  ferry_hash_result r;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_hash_memory(self->h, data.buf, (size_t)data.len, name, &r);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS self->busy = 0;
  PyBuffer_Release(&data);
  return rc ? raise_status(rc, msg) : hash_result(&r);
}

/* Pixels: a C-contiguous uint8 buffer [H, W] or [H, W, 1|3] (NumPy array,
 * PIL image through numpy.asarray). */
static PyObject *hasher_hash_pixels(HasherObject *self, PyObject *arg) {
  Py_buffer v;
  if (PyObject_GetBuffer(arg, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
    return NULL;
  PyObject *ret = NULL;
  const char *fmt = v.format ? v.format : "B";
  if (v.itemsize != 1 || (strcmp(fmt, "B") && strcmp(fmt, "=B") && strcmp(fmt, "<B"))) {
    PyErr_SetString(InvalidArgument, "hash: pixels must be uint8");
    goto done;
  }
  int channels = v.ndim == 3 ? (int)v.shape[2] : 1;
  if ((v.ndim != 2 && v.ndim != 3) || (channels != 1 && channels != 3) || v.shape[0] < 1 ||
      v.shape[1] < 1 || v.shape[0] > 0x7fffffff || v.shape[1] > 0x7fffffff) {
    PyErr_SetString(InvalidArgument, "hash: pixels must be [H, W] or [H, W, 1|3] uint8");
    goto done;
  }
  if (hasher_enter(self) < 0)
    goto done;
  ferry_image im = {v.buf, (int)v.shape[1], (int)v.shape[0], channels,
                    (size_t)v.shape[1] * (size_t)channels};
  ferry_hash_result r;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_hash_pixels(self->h, &im, &r);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS self->busy = 0;
  ret = rc ? raise_status(rc, msg) : hash_result(&r);
done:
  PyBuffer_Release(&v);
  return ret;
}

static PyMethodDef hasher_methods[] = {
    {"hash_file", (PyCFunction)hasher_hash_file, METH_O,
     "hash_file(path)\n--\n\n(format, width, height, exact, {kind: hex}) of an image file."},
    {"hash_bytes", (PyCFunction)hasher_hash_bytes, METH_VARARGS,
     "hash_bytes(data, name=None)\n--\n\nThe same for image bytes."},
    {"hash_pixels", (PyCFunction)hasher_hash_pixels, METH_O,
     "hash_pixels(array)\n--\n\nThe same for uint8 pixels [H, W] or [H, W, 1|3] (compatible "
     "arithmetic: imagehash's bits for Image.fromarray(array))."},
    {NULL, NULL, 0, NULL}};

PyTypeObject HasherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.Hasher",
    .tp_basicsize = sizeof(HasherObject),
    .tp_dealloc = (destructor)hasher_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Hasher(*, mode=0, kinds=ALL, hash_size=8, colorhash_bits=3, max_pixels=None, "
              "max_bytes=None)\n--\n\nA ferry_hasher: perceptual hashes of images (imagehash "
              "4.3's). One per thread.",
    .tp_methods = hasher_methods,
    .tp_new = hasher_new,
};

PyObject *py_hash_kinds(PyObject *mod, PyObject *unused) {
  PyObject *l = PyList_New(FERRY_HASH_KIND_COUNT);
  for (int k = 0; l && k < FERRY_HASH_KIND_COUNT; k++) {
    PyObject *v = PyUnicode_FromString(ferry_hash_kind_name((ferry_hash_kind)k));
    if (!v) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, k, v);
  }
  return l;
}

PyObject *py_hash_kind_parse(PyObject *mod, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name)
    return NULL;
  ferry_hash_kind k;
  int rc = ferry_hash_kind_parse(name, &k);
  if (rc)
    return raise_status(rc, ferry_last_error());
  return PyLong_FromLong((long)k);
}
/* hash_files(paths, *, mode, kinds, hash_size, colorhash_bits, max_pixels,
 * max_bytes, threads, device): ferry_hash_files with the GIL released.
 * Returns (items, engine_files, note): an item is hash_result's tuple, or
 * the ferry.Error instance of a file that failed (not raised). */
/* progress(done, total) from ferry_hash_files' reporter thread (or the
 * calling thread at the end), with the GIL taken; an exception in it is
 * reported as unraisable and the run goes on. */
static void py_progress(void *user, size_t done, size_t total) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction((PyObject *)user, "nn", (Py_ssize_t)done, (Py_ssize_t)total);
  if (!r)
    PyErr_WriteUnraisable((PyObject *)user);
  Py_XDECREF(r);
  PyGILState_Release(g);
}

PyObject *py_hash_files(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"paths",          "mode",       "kinds",        "hash_size",
                           "colorhash_bits", "max_pixels", "max_bytes",    "threads",
                           "device",         "progress",   "engine_min_s", NULL};
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  ferry_hash_files_options run;
  ferry_hash_files_options_default(&run);
  int mode = o.mode, threads = 0, device = -1;
  unsigned kinds = o.kinds;
  PyObject *seq = NULL, *max_pixels = Py_None, *max_bytes = Py_None, *progress = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$iIiiOOiiOd:hash_files", kwlist, &seq, &mode,
                                   &kinds, &o.hash_size, &o.colorhash_bits, &max_pixels, &max_bytes,
                                   &threads, &device, &progress, &run.engine_min_s))
    return NULL;
  if (progress != Py_None && !PyCallable_Check(progress)) {
    PyErr_SetString(InvalidArgument, "hash_files: progress must be callable(done, total) or None");
    return NULL;
  }
  if (finish_hash_options(&o, mode, kinds, max_pixels, max_bytes) < 0)
    return NULL;
  PyObject *fast = PySequence_Fast(seq, "hash_files: paths must be a sequence");
  if (!fast)
    return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject **enc = calloc((size_t)n + 1, sizeof *enc);
  const char **paths = calloc((size_t)n + 1, sizeof *paths);
  ferry_hash_result *res = calloc((size_t)n + 1, sizeof *res);
  int *status = calloc((size_t)n + 1, sizeof *status);
  char **errors = calloc((size_t)n + 1, sizeof *errors);
  PyObject *out = NULL;
  if (!enc || !paths || !res || !status || !errors) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fast, i), &enc[i]))
      goto done;
    paths[i] = PyBytes_AS_STRING(enc[i]);
  }
  ferry_hash_files_report rep;
  run.threads = threads;
  run.device = device;
  if (progress != Py_None) {
    run.progress = py_progress;
    run.progress_user = progress; /* borrowed: the call holds a reference */
  }
  int rc;
  char msg[1024] = "";
  Py_BEGIN_ALLOW_THREADS rc =
      ferry_hash_files(paths, (size_t)n, &o, &run, res, status, errors, &rep);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS if (rc) {
    raise_status(rc, msg);
    goto done;
  }
  PyObject *items = PyList_New(n);
  for (Py_ssize_t i = 0; items && i < n; i++) {
    PyObject *v = status[i] ? make_error(status[i], errors[i]) : hash_result(&res[i]);
    if (!v)
      Py_CLEAR(items);
    else
      PyList_SET_ITEM(items, i, v);
  }
  if (items)
    out = Py_BuildValue("(Nns)", items, (Py_ssize_t)rep.engine_files, rep.note);
done:
  for (Py_ssize_t i = 0; i < n; i++) {
    if (enc)
      Py_XDECREF(enc[i]);
    if (errors)
      free(errors[i]);
  }
  free(enc);
  free(paths);
  free(res);
  free(status);
  free(errors);
  Py_DECREF(fast);
  return out;
}

/* The items of `fast` (a PySequence_Fast of str, bytes or path-likes) as
 * file-system bytes: (*enc)[i] owned, (*strs)[i] its characters; n + 1
 * slots each. 0, or -1 with a Python error; fs_strings_free either way. */
static int fs_strings(PyObject *fast, PyObject ***enc, const char ***strs) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  *enc = calloc((size_t)n + 1, sizeof **enc);
  *strs = calloc((size_t)n + 1, sizeof **strs);
  if (!*enc || !*strs) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fast, i), &(*enc)[i]))
      return -1;
    (*strs)[i] = PyBytes_AS_STRING((*enc)[i]);
  }
  return 0;
}

static void fs_strings_free(PyObject **enc, const char **strs, Py_ssize_t n) {
  for (Py_ssize_t i = 0; enc && i < n; i++)
    Py_XDECREF(enc[i]);
  free(enc);
  free(strs);
}

/* find_groups(paths, items, kind, threshold (-1: ferry dupes' default), *, mode=0, hash_size=8,
 * colorhash_bits=3, threads=0, keep=None, reference=None): hash_files' items (one per path) as an
 * in-memory catalog (ferry_catalog_new/add; each file's size and mtime
 * from stat), then ferry_dupes_find: the duplicate rules of `ferry dupes`
 * (union-find over the pairs, the keeper), in C alone. Returns the groups
 * in catalog order (of their first path, bytewise), each a list of (path,
 * width, height, distance to the keeper), keeper first, the others in path
 * order; keep and reference (canonical folders) as ferry_dupes_keep;
 * decisions (a path) as ferry_dupes_decide. A path twice is an
 * InvalidArgument. */
typedef struct group_input {
  ferry_catalog_entry *e; /* paths in `enc`, messages malloc'd */
  PyObject **enc;
  char **msgs;
  ferry_signature *sigs; /* e[i].signature points here */
  Py_ssize_t n;
} group_input;

static void group_input_free(group_input *in) {
  for (Py_ssize_t i = 0; i < in->n; i++) {
    if (in->enc)
      Py_XDECREF(in->enc[i]);
    if (in->msgs)
      free(in->msgs[i]);
  }
  free(in->e);
  free(in->enc);
  free(in->msgs);
  free(in->sigs);
}

static ferry_format format_of(const char *name) {
  for (int f = FERRY_FORMAT_UNKNOWN; f <= FERRY_FORMAT_RAW; f++)
    if (!strcmp(ferry_format_name((ferry_format)f), name))
      return (ferry_format)f;
  return FERRY_FORMAT_UNKNOWN;
}

/* items[i] into in->e[i]: a hash tuple (format, width, height, exact,
 * {kind: hex}) or the ferry.Error the file failed with. -1 with an
 * exception set. */
static int group_item(group_input *in, Py_ssize_t i, PyObject *item, ferry_hash_kind kind,
                      int bits) {
  ferry_catalog_entry *e = &in->e[i];
  if (PyObject_IsInstance(item, Error) == 1) {
    PyObject *st = PyObject_GetAttrString(item, "status"), *msg = PyObject_Str(item);
    long status = st ? PyLong_AsLong(st) : -1;
    const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
    if (m && !(in->msgs[i] = strdup(m)))
      PyErr_NoMemory();
    Py_XDECREF(st);
    Py_XDECREF(msg);
    if (PyErr_Occurred())
      return -1;
    e->status = status < 0 && status >= INT16_MIN ? (int)status : FERRY_EINTERNAL;
    e->error = in->msgs[i];
    return 0;
  }
  const char *fmt, *hex;
  int exact;
  PyObject *hashes, *h;
  if (!PyArg_ParseTuple(item, "siipO!:find_groups", &fmt, &e->width, &e->height, &exact,
                        &PyDict_Type, &hashes))
    return -1;
  if (!(h = PyDict_GetItemString(hashes, ferry_hash_kind_name(kind))) ||
      !(hex = PyUnicode_AsUTF8(h))) {
    if (!PyErr_Occurred())
      PyErr_Format(InvalidArgument, "find_groups: item %zd has no %s", i,
                   ferry_hash_kind_name(kind));
    return -1;
  }
  e->format = format_of(fmt);
  e->kinds = FERRY_HASH_MASK(kind);
  PyObject *sig = in->sigs ? PyDict_GetItemString(hashes, "signature") : NULL;
  if (sig) { /* ferry_signature's bytes, from hash_result */
    if (!PyBytes_Check(sig) || PyBytes_GET_SIZE(sig) != (Py_ssize_t)sizeof(ferry_signature)) {
      PyErr_Format(InvalidArgument, "find_groups: item %zd: a signature of the wrong size", i);
      return -1;
    }
    memcpy(&in->sigs[i], PyBytes_AS_STRING(sig), sizeof(ferry_signature));
    e->signature = &in->sigs[i];
    e->kinds |= FERRY_HASH_SIGNATURE;
  }
  if (ferry_hash_from_hex(hex, bits, &e->hash[kind]) != FERRY_OK) {
    PyErr_Format(InvalidArgument, "find_groups: item %zd: '%s' is not a %d-bit %s", i, hex, bits,
                 ferry_hash_kind_name(kind));
    return -1;
  }
  return 0;
}

/* devices=None (the CPU) or a sequence of CUDA device numbers into the
 * search options: one is options.device, several share the search
 * (options.devices; one may come twice). -1 with an exception set. */
static int search_devices(PyObject *devices, ferry_search_options *so) {
  if (!devices || devices == Py_None)
    return 0;
  PyObject *seq = PySequence_Fast(devices, "devices must be a sequence of CUDA device numbers");
  if (!seq)
    return -1;
  Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
  if (nd > FERRY_MAX_SEARCH_DEVICES) {
    PyErr_Format(InvalidArgument, "devices: at most %d, not %zd", FERRY_MAX_SEARCH_DEVICES, nd);
    Py_DECREF(seq);
    return -1;
  }
  for (Py_ssize_t k = 0; k < nd; k++) {
    long d = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k));
    if (d == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
    if ((d < 0 || d > 255) && !(nd == 1 && FERRY_DEVICE_IS_OPENCL(d))) {
      PyErr_Format(InvalidArgument,
                   "devices: %ld is not a CUDA device number (0..255) (an OpenCL device, "
                   "DEVICE_OPENCL + N, only alone)",
                   d);
      Py_DECREF(seq);
      return -1;
    }
    so->devices[k] = (int)d;
  }
  Py_DECREF(seq);
  if (nd >= 1)
    so->device = so->devices[0];
  so->ndevices = nd > 1 ? (int)nd : 0;
  return 0;
}

PyObject *py_find_groups(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"paths",     "items",          "kind",      "threshold", "mode",
                           "hash_size", "colorhash_bits", "threads",   "keep",      "reference",
                           "robust",    "devices",        "decisions", NULL};
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  ferry_search_options so;
  ferry_search_options_default(&so);
  int mode = o.mode;
  const char *kind_name;
  const char *keep = NULL;
  PyObject *paths, *items, *reference = NULL, *devices = NULL, *decisions = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOsi|$iiiizOpOO&:find_groups", kwlist, &paths,
                                   &items, &kind_name, &so.threshold, &mode, &o.hash_size,
                                   &o.colorhash_bits, &so.threads, &keep, &reference, &so.robust,
                                   &devices, PyUnicode_FSConverter, &decisions))
    return NULL;
  if (search_devices(devices, &so) < 0) {
    Py_XDECREF(decisions);
    return NULL;
  }
  const char *decide = decisions ? PyBytes_AS_STRING(decisions) : NULL;
  ferry_hash_kind kind;
  if (ferry_hash_kind_parse(kind_name, &kind) != FERRY_OK)
    return raise_status(FERRY_EINVAL, ferry_last_error());
  o.mode = (ferry_hash_mode)mode;
  o.kinds = FERRY_HASH_MASK(kind) | (so.robust ? FERRY_HASH_SIGNATURE : 0);
  if (so.threshold < 0) /* threshold=None: the default of `ferry dupes` */
    so.threshold = ferry_dupes_default_threshold(kind, o.hash_size);
  int bits = kind == FERRY_HASH_COLORHASH ? 14 * o.colorhash_bits : o.hash_size * o.hash_size;
  ferry_catalog *cat = NULL; /* the options checked before anything is read */
  ferry_dupes *d = NULL;
  int rc = ferry_catalog_new(&o, &cat);
  if (rc)
    return raise_status(rc, ferry_last_error());
  PyObject *fp = PySequence_Fast(paths, "find_groups: paths must be a sequence");
  PyObject *fi = fp ? PySequence_Fast(items, "find_groups: items must be a sequence") : NULL;
  group_input in = {0};
  PyObject *out = NULL, *fr = NULL, **renc = NULL;
  const char **refs = NULL;
  Py_ssize_t nref = 0;
  if (!fi)
    goto done;
  if (reference && reference != Py_None) { /* folders, canonical (the caller's realpath) */
    if (!(fr = PySequence_Fast(reference, "find_groups: reference must be a sequence")))
      goto done;
    nref = PySequence_Fast_GET_SIZE(fr);
    if (fs_strings(fr, &renc, &refs) < 0)
      goto done;
  }
  in.n = PySequence_Fast_GET_SIZE(fp);
  if (PySequence_Fast_GET_SIZE(fi) != in.n) {
    PyErr_SetString(InvalidArgument, "find_groups: one item per path");
    goto done;
  }
  in.e = calloc((size_t)in.n + 1, sizeof *in.e);
  in.enc = calloc((size_t)in.n + 1, sizeof *in.enc);
  in.msgs = calloc((size_t)in.n + 1, sizeof *in.msgs);
  in.sigs = so.robust ? calloc((size_t)in.n + 1, sizeof *in.sigs) : NULL;
  if (!in.e || !in.enc || !in.msgs || (so.robust && !in.sigs)) {
    PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t i = 0; i < in.n; i++) {
    if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fp, i), &in.enc[i]) ||
        group_item(&in, i, PySequence_Fast_GET_ITEM(fi, i), kind, bits) < 0)
      goto done;
    in.e[i].path = PyBytes_AS_STRING(in.enc[i]);
  }
  char msg[1024] = "";
  Py_BEGIN_ALLOW_THREADS for (Py_ssize_t i = 0; !rc && i < in.n; i++) {
    struct stat sb; /* the keeper's second rule: the larger file (0 if gone) */
    if (stat(in.e[i].path, &sb) == 0) {
      in.e[i].size = (uint64_t)sb.st_size;
      in.e[i].mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    }
    rc = ferry_catalog_add(cat, &in.e[i]);
  }
  if (!rc)
    rc = ferry_dupes_find(cat, kind, &so, &d);
  if (!rc && (keep || nref))
    rc = ferry_dupes_keep(d, keep, refs, (size_t)nref);
  if (!rc && decide) /* a review's decisions (the page's file), after the keep rules */
    rc = ferry_dupes_decide(d, decide, NULL);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS if (rc) {
    raise_status(rc, msg);
    goto done;
  }
  size_t ng = ferry_dupes_group_count(d);
  out = PyList_New((Py_ssize_t)ng);
  for (size_t g = 0; out && g < ng; g++) {
    const uint32_t *m;
    size_t cnt = ferry_dupes_group(d, g, &m);
    PyObject *group = PyList_New((Py_ssize_t)cnt);
    for (size_t k = 0; group && k < cnt; k++) {
      const ferry_catalog_entry *e = ferry_catalog_get(cat, m[k]);
      PyObject *path = PyUnicode_DecodeFSDefault(e->path);
      PyObject *row = path ? Py_BuildValue("(Niii)", path, e->width, e->height,
                                           ferry_dupes_distance(d, m[0], m[k]))
                           : NULL;
      if (!row)
        Py_CLEAR(group);
      else
        PyList_SET_ITEM(group, (Py_ssize_t)k, row);
    }
    if (!group)
      Py_CLEAR(out);
    else
      PyList_SET_ITEM(out, (Py_ssize_t)g, group);
  }
done:
  ferry_dupes_free(d);
  ferry_catalog_free(cat);
  group_input_free(&in);
  fs_strings_free(renc, refs, nref);
  Py_XDECREF(decisions);
  Py_XDECREF(fr);
  Py_XDECREF(fi);
  Py_XDECREF(fp);
  return out;
}

static void free_pairs(void *p) { ferry_pairs_free(p); }

/* What hamming_pairs and hamming_topk share before their search: the
 * devices and method into *o, and the number of codes in v. 0, or -1 with
 * a Python error set (v is the caller's to release). */
static int search_setup(const Py_buffer *v, int words, int method, PyObject *devices,
                        ferry_search_options *o, const char *what, size_t *n) {
  if (search_devices(devices, o) < 0)
    return -1;
  o->method = (ferry_search_method)method;
  if (words < 1 || v->len % (8 * (Py_ssize_t)words)) {
    PyErr_Format(InvalidArgument, "%s: codes must hold n * words 64-bit words", what);
    return -1;
  }
  *n = (size_t)v->len / (8 * (size_t)words);
  return 0;
}

/* A CPU uint32 Tensor of `shape` over p, which it owns (free_fn frees p
 * when the last view goes; here too when no Tensor could be made). */
static PyObject *owned_u32(void *p, int ndim, int64_t *shape, void (*free_fn)(void *)) {
  TensorObject *t =
      tensor_new(NULL, p, ndim, shape, NULL, (DLDataType){kDLUInt, 32, 1}, (DLDevice){kDLCPU, 0});
  if (!t) {
    free_fn(p);
    return NULL;
  }
  t->free_fn = free_fn;
  t->free_ctx = p;
  return (PyObject *)t;
}

/* hamming_pairs(codes, words, threshold, threads=0, method=0, devices=None):
 * codes is a C-contiguous buffer of n * words uint64; devices, CUDA device
 * numbers to search on (search_devices). Returns a uint32 Tensor
 * [npairs, 3] of (i, j, distance), i < j, sorted. */
PyObject *py_hamming_pairs(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"codes", "words", "threshold", "threads", "method", "devices", NULL};
  Py_buffer v;
  int words, method = FERRY_SEARCH_AUTO;
  PyObject *devices = NULL, *ret = NULL;
  ferry_search_options o;
  ferry_search_options_default(&o);
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ii|iiO:hamming_pairs", kwlist, &v, &words,
                                   &o.threshold, &o.threads, &method, &devices))
    return NULL;
  size_t n, count = 0;
  if (search_setup(&v, words, method, devices, &o, "hamming_pairs", &n) < 0)
    goto done;
  ferry_pair *pairs = NULL;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_hamming_pairs(v.buf, n, words, &o, &pairs, &count);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS if (rc) {
    raise_status(rc, msg);
    goto done;
  }
  int64_t shape[2] = {(int64_t)count, 3};
  ret = owned_u32(pairs, 2, shape, free_pairs);
done:
  PyBuffer_Release(&v);
  return ret;
}

/* hamming_topk(codes, words, k, threads=0, method=0, devices=None): the k
 * nearest other codes of each of the n codes (ferry_hamming_topk): a uint32
 * Tensor [n, k, 2] of (index, distance), nearest first, ties by lower
 * index; index UINT32_MAX where there are fewer than k others. */
PyObject *py_hamming_topk(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"codes", "words", "k", "threads", "method", "devices", NULL};
  Py_buffer v;
  int words, k, method = FERRY_SEARCH_AUTO;
  PyObject *devices = NULL, *ret = NULL;
  ferry_search_options o;
  ferry_search_options_default(&o);
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ii|iiO:hamming_topk", kwlist, &v, &words, &k,
                                   &o.threads, &method, &devices))
    return NULL;
  size_t n;
  if (search_setup(&v, words, method, devices, &o, "hamming_topk", &n) < 0)
    goto done;
  if (k < 1) {
    PyErr_Format(InvalidArgument, "hamming_topk: k must be at least 1, not %d", k);
    goto done;
  }
  if (n && (size_t)k > SIZE_MAX / sizeof(ferry_neighbor) / n) {
    PyErr_Format(TooLargeError, "hamming_topk: %zu codes x k = %d neighbours do not fit in memory",
                 n, k);
    goto done;
  }
  ferry_neighbor *out = malloc(n ? n * (size_t)k * sizeof *out : 1);
  if (!out) {
    PyErr_Format(OutOfMemoryError, "hamming_topk: no memory for %zu x %d neighbours", n, k);
    goto done;
  }
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_hamming_topk(v.buf, n, words, k, &o, out);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS if (rc) {
    free(out);
    raise_status(rc, msg);
    goto done;
  }
  int64_t shape[3] = {(int64_t)n, k, 2};
  ret = owned_u32(out, 3, shape, free);
done:
  PyBuffer_Release(&v);
  return ret;
}

/* group_pairs(n, pairs): (uint32 Tensor [n] of group numbers, UINT32_MAX
 * for none; number of groups). */
PyObject *py_group_pairs(PyObject *mod, PyObject *args) {
  Py_ssize_t n;
  Py_buffer v;
  if (!PyArg_ParseTuple(args, "ny*:group_pairs", &n, &v))
    return NULL;
  PyObject *ret = NULL;
  if (n < 0 || v.len % (Py_ssize_t)sizeof(ferry_pair)) {
    PyErr_SetString(InvalidArgument, "group_pairs: pairs must be (i, j, distance) uint32 rows");
    goto done;
  }
  uint32_t *group_of = PyMem_RawMalloc(n ? (size_t)n * sizeof *group_of : 1);
  if (!group_of) {
    PyErr_NoMemory();
    goto done;
  }
  size_t groups = 0;
  int rc =
      ferry_group_pairs((size_t)n, v.buf, (size_t)v.len / sizeof(ferry_pair), group_of, &groups);
  if (rc) {
    PyMem_RawFree(group_of);
    raise_status(rc, ferry_last_error());
    goto done;
  }
  int64_t shape[1] = {n};
  TensorObject *t = tensor_new(NULL, group_of, 1, shape, NULL, (DLDataType){kDLUInt, 32, 1},
                               (DLDevice){kDLCPU, 0});
  if (!t) {
    PyMem_RawFree(group_of);
    goto done;
  }
  t->free_fn = PyMem_RawFree;
  t->free_ctx = group_of;
  ret = Py_BuildValue("(Nn)", (PyObject *)t, (Py_ssize_t)groups);
done:
  PyBuffer_Release(&v);
  return ret;
}

PyObject *py_search_isa(PyObject *mod, PyObject *unused) {
  return PyUnicode_FromString(ferry_search_isa());
}

/* drop_matching(paths, patterns): the paths that none of the patterns
 * matches, in their order, by the rule of `ferry dupes --exclude`
 * (ferry_catalog_drop_matching: a shell pattern on the path, or a folder
 * it lies under). The paths go through a catalog of their own, as entries
 * not hashed yet, so that find_duplicates hashes only what it keeps. */
PyObject *py_drop_matching(PyObject *mod, PyObject *args) {
  (void)mod;
  PyObject *paths, *patterns;
  if (!PyArg_ParseTuple(args, "OO:drop_matching", &paths, &patterns))
    return NULL;
  PyObject *fp = PySequence_Fast(paths, "drop_matching: paths must be a sequence");
  PyObject *fq =
      fp ? PySequence_Fast(patterns, "drop_matching: patterns must be a sequence") : NULL;
  PyObject **enc = NULL, **penc = NULL, *out = NULL;
  const char **strs = NULL, **pats = NULL;
  ferry_catalog *cat = NULL;
  Py_ssize_t n = fp ? PySequence_Fast_GET_SIZE(fp) : 0, np = fq ? PySequence_Fast_GET_SIZE(fq) : 0;
  if (!fq || fs_strings(fq, &penc, &pats) < 0 || fs_strings(fp, &enc, &strs) < 0)
    goto done;
  int rc = ferry_catalog_new(NULL, &cat);
  for (Py_ssize_t i = 0; !rc && i < n; i++) {
    ferry_catalog_entry e = {.path = strs[i], .status = FERRY_EIO, .error = "not hashed yet"};
    rc = ferry_catalog_add(cat, &e);
  }
  if (!rc)
    rc = ferry_catalog_drop_matching(cat, pats, (size_t)np, NULL);
  if (rc) {
    raise_status(rc, ferry_last_error());
    goto done;
  }
  PyObject *kept = PySet_New(NULL); /* the catalog's paths are its own copies */
  for (size_t k = 0; kept && k < ferry_catalog_size(cat); k++) {
    PyObject *b = PyBytes_FromString(ferry_catalog_get(cat, k)->path);
    if (!b || PySet_Add(kept, b) < 0)
      Py_CLEAR(kept);
    Py_XDECREF(b);
  }
  if (kept && (out = PyList_New(0)))
    for (Py_ssize_t i = 0; i < n; i++) {
      int in = PySet_Contains(kept, enc[i]);
      if (in < 0 || (in && PyList_Append(out, PySequence_Fast_GET_ITEM(fp, i)) < 0)) {
        Py_CLEAR(out);
        break;
      }
    }
  Py_XDECREF(kept);
done:
  ferry_catalog_free(cat);
  fs_strings_free(enc, strs, n);
  fs_strings_free(penc, pats, np);
  Py_XDECREF(fp);
  Py_XDECREF(fq);
  return out;
}
