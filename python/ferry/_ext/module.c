/* module.c — the module ferry._ferry: single images (decode, probe), the
 * method table, the exception classes and constants, PyInit__ferry. */
#include "ferry_py.h"

/* --------------------------------------------------------- single images */

typedef struct owned_image {
  ferry_image im;
} owned_image;

static void free_owned_image(void *p) {
  owned_image *o = p;
  ferry_image_free(&o->im);
  PyMem_RawFree(o);
}

/* A path (str, os.PathLike) as bytes in *path, or the bytes of an image
 * in memory (bytes, bytearray, memoryview, any buffer) in *view: 0, or -1
 * with an exception. */
static int image_arg(PyObject *arg, PyObject **path, Py_buffer *view, int *has_view) {
  *path = NULL;
  *has_view = 0;
  if (PyObject_CheckBuffer(arg)) {
    if (PyObject_GetBuffer(arg, view, PyBUF_C_CONTIGUOUS) < 0)
      return -1;
    *has_view = 1;
    return 0;
  }
  return PyUnicode_FSConverter(arg, path) ? 0 : -1;
}

static void image_arg_free(PyObject *path, Py_buffer *view, int has_view) {
  Py_XDECREF(path);
  if (has_view)
    PyBuffer_Release(view);
}

static PyObject *py_decode(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"source",     "channels",  "ignore_orientation",
                           "max_pixels", "max_bytes", NULL};
  PyObject *arg = NULL, *path = NULL, *max_pixels = Py_None, *max_bytes = Py_None;
  Py_buffer view;
  int has_view = 0;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  int ignore = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$ipOO:decode", kwlist, &arg, &o.channels,
                                   &ignore, &max_pixels, &max_bytes))
    return NULL;
  o.ignore_orientation = ignore;
  if (as_u64(max_pixels, "max_pixels", &o.max_pixels) < 0 ||
      as_u64(max_bytes, "max_bytes", &o.max_bytes) < 0 ||
      image_arg(arg, &path, &view, &has_view) < 0)
    return NULL;
  if (has_view && o.max_bytes && (uint64_t)view.len > o.max_bytes) {
    PyErr_Format(error_class(FERRY_ETOO_LARGE), "<bytes>: %zd bytes, over the %llu-byte limit",
                 view.len, (unsigned long long)o.max_bytes);
    image_arg_free(path, &view, has_view);
    return NULL;
  }
  owned_image *oi = PyMem_RawCalloc(1, sizeof *oi);
  if (!oi) {
    image_arg_free(path, &view, has_view);
    return PyErr_NoMemory();
  }
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = has_view
                                  ? ferry_decode(view.buf, (size_t)view.len, "<bytes>", &o, &oi->im)
                                  : ferry_decode_file(PyBytes_AS_STRING(path), &o, &oi->im);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS image_arg_free(path, &view, has_view);
  if (rc) {
    PyMem_RawFree(oi);
    return raise_status(rc, msg);
  }
  const ferry_image *im = &oi->im;
  int64_t shape[3] = {im->height, im->width, im->channels};
  int64_t strides[3] = {(int64_t)im->stride, im->channels, 1};
  TensorObject *t = tensor_new(NULL, im->data, 3, shape, strides, (DLDataType){kDLUInt, 8, 1},
                               (DLDevice){kDLCPU, 0});
  if (!t) {
    free_owned_image(oi);
    return NULL;
  }
  t->free_fn = free_owned_image;
  t->free_ctx = oi;
  return (PyObject *)t;
}

static PyObject *py_probe(PyObject *mod, PyObject *arg) {
  PyObject *path = NULL;
  Py_buffer view;
  int has_view = 0;
  if (image_arg(arg, &path, &view, &has_view) < 0)
    return NULL;
  ferry_info info;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = has_view ? ferry_probe(view.buf, (size_t)view.len, &info)
                                       : ferry_probe_file(PyBytes_AS_STRING(path), &info);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS image_arg_free(path, &view, has_view);
  if (rc)
    return raise_status(rc, msg);
  return Py_BuildValue(
      "{sssisisisisisOsOsOsOssss}", "format", ferry_format_name(info.format), "width", info.width,
      "height", info.height, "channels", info.channels, "bit_depth", info.bit_depth, "orientation",
      info.orientation, "progressive", info.progressive ? Py_True : Py_False, "arithmetic",
      info.arithmetic ? Py_True : Py_False, "has_alpha", info.has_alpha ? Py_True : Py_False,
      "lossless", info.lossless ? Py_True : Py_False, "colorspace", info.colorspace, "subsampling",
      info.subsampling);
}

static PyObject *py_strerror(PyObject *mod, PyObject *arg) {
  long status = PyLong_AsLong(arg);
  if (status == -1 && PyErr_Occurred())
    return NULL;
  return PyUnicode_FromString(ferry_strerror((int)status));
}

/* The exception class raised for a status (tests, and Python code that
 * wants to raise what the C library would). */
static PyObject *py_error_class(PyObject *mod, PyObject *arg) {
  long status = PyLong_AsLong(arg);
  if (status == -1 && PyErr_Occurred())
    return NULL;
  PyObject *cls = error_class((int)status);
  Py_INCREF(cls);
  return cls;
}

/* ------------------------------------------------------------------ module */

static PyObject *py_default_threads(PyObject *mod, PyObject *unused) {
  return PyLong_FromLong(ferry_default_threads());
}

/* ferry_set_log_level / ferry_get_log_level (LOG_DEBUG, LOG_INFO, LOG_WARNING). */
static PyObject *py_set_log_level(PyObject *mod, PyObject *arg) {
  long level = PyLong_AsLong(arg);
  if (level == -1 && PyErr_Occurred())
    return NULL;
  int rc = level < INT_MIN || level > INT_MAX ? ferry_set_log_level((ferry_log_level)-1)
                                              : ferry_set_log_level((ferry_log_level)level);
  if (rc)
    return raise_status(rc, ferry_last_error());
  Py_RETURN_NONE;
}

static PyObject *py_get_log_level(PyObject *mod, PyObject *unused) {
  return PyLong_FromLong(ferry_get_log_level());
}

static PyMethodDef module_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))py_decode, METH_VARARGS | METH_KEYWORDS,
     "decode(source, *, channels=3, ignore_orientation=False, max_pixels=None, "
     "max_bytes=None)\n--\n\nDecodes an image (a path, or its bytes: bytes, bytearray, "
     "memoryview, any buffer) into a uint8 Tensor [H, W, C] (EXIF orientation applied unless "
     "ignore_orientation)."},
    {"probe", (PyCFunction)py_probe, METH_O,
     "probe(source)\n--\n\nWhat the header of an image (a path, or its bytes) says, as a "
     "dict."},
    {"strerror", (PyCFunction)py_strerror, METH_O,
     "strerror(status)\n--\n\nThe C library's name for a status code."},
    {"error_class", (PyCFunction)py_error_class, METH_O,
     "error_class(status)\n--\n\nThe ferry.Error subclass raised for a status code."},
    {"loader_options", (PyCFunction)py_loader_options, METH_NOARGS,
     "loader_options()\n--\n\nThe C library's table of loader options (its registry): one dict "
     "per option (name, flag, type, count, min, max, default, choices, aliases, help, ...)."},
    {"hash_kinds", (PyCFunction)py_hash_kinds, METH_NOARGS,
     "hash_kinds()\n--\n\nNames of the hash kinds, by kind number."},
    {"hash_files", (PyCFunction)(void (*)(void))py_hash_files, METH_VARARGS | METH_KEYWORDS,
     "hash_files(paths, *, mode=0, kinds=ALL, hash_size=8, colorhash_bits=3, max_pixels=None, "
     "max_bytes=None, threads=0, device=-1, progress=None, engine_min_s=2.5)\n--\n\n(items, "
     "engine_files, note): each item the "
     "hash tuple of a file or the ferry.Error it failed with."},
    {"hash_kind_parse", (PyCFunction)py_hash_kind_parse, METH_O,
     "hash_kind_parse(name)\n--\n\nThe kind number of a hash name (aliases too)."},
    {"hamming_pairs", (PyCFunction)(void (*)(void))py_hamming_pairs, METH_VARARGS | METH_KEYWORDS,
     "hamming_pairs(codes, words, threshold, threads=0, method=0, devices=None)\n--\n\nEvery "
     "pair of codes within the threshold: a uint32 Tensor [npairs, 3] of (i, j, distance); "
     "devices: CUDA device numbers to search on (several: shared among them)."},
    {"hamming_topk", (PyCFunction)(void (*)(void))py_hamming_topk, METH_VARARGS | METH_KEYWORDS,
     "hamming_topk(codes, words, k, threads=0, method=0, devices=None)\n--\n\nThe k nearest "
     "other codes of every code: a uint32 Tensor [n, k, 2] of (index, distance), nearest first "
     "(index 2**32-1 past the others); devices as hamming_pairs'."},
    {"group_pairs", (PyCFunction)py_group_pairs, METH_VARARGS,
     "group_pairs(n, pairs)\n--\n\n(group of each item, number of groups)."},
    {"drop_matching", (PyCFunction)py_drop_matching, METH_VARARGS,
     "drop_matching(paths, patterns): the paths no pattern matches (ferry dupes --exclude)"},
    {"find_groups", (PyCFunction)(void (*)(void))py_find_groups, METH_VARARGS | METH_KEYWORDS,
     "find_groups(paths, items, kind, threshold, *, mode=0, hash_size=8, colorhash_bits=3, "
     "threads=0, keep=None, reference=None, robust=True, devices=None)\n--\n\nDuplicate "
     "groups of hash_files' items, found by the C library (ferry_dupes_find over an in-memory "
     "catalog): a list of groups in order of their first path, each a list of (path, width, "
     "height, distance to the keeper), keeper first; devices: CUDA device numbers to search on."},
    {"default_threads", (PyCFunction)py_default_threads, METH_NOARGS,
     "default_threads()\n--\n\nferry_default_threads(): the CPUs this process may run on, "
     "shared among torchrun's LOCAL_WORLD_SIZE processes of the node."},
    {"take_notices", (PyCFunction)py_take_notices, METH_NOARGS,
     "take_notices()\n--\n\nThe C library's warning-level messages since the last call, "
     "oldest first (ferry/_log.py makes them ferry.FerryWarning)."},
    {"set_log_level", (PyCFunction)py_set_log_level, METH_O,
     "set_log_level(level)\n--\n\nferry_set_log_level: LOG_DEBUG, LOG_INFO (the default) or "
     "LOG_WARNING, the least level of the library's messages on stderr."},
    {"get_log_level", (PyCFunction)py_get_log_level, METH_NOARGS,
     "get_log_level()\n--\n\nferry_get_log_level()."},
    {"search_isa", (PyCFunction)py_search_isa, METH_NOARGS,
     "search_isa()\n--\n\nThe popcount kernel in use."},
    {"index_update", (PyCFunction)(void (*)(void))py_index_update, METH_VARARGS | METH_KEYWORDS,
     "index_update(index, roots, *, mode=-1, hash_size=0, kinds=0, threads=0, device=-1, rank=0, "
     "world_size=1, recursive=True, all_files=False, retry_failed=False, prune=False, "
     "engine_min_s=2.5)\n--\n\n"
     "ferry_index_update: (stats dict, [(path, status, message)] of the files that failed)."},
    {"index_merge", (PyCFunction)(void (*)(void))py_index_merge, METH_VARARGS | METH_KEYWORDS,
     "index_merge(out, parts, strict=False)\n--\n\nferry_index_merge: (entries, conflicts, "
     "world_size, [(rank, message)] of the ranks missing)."},
    {"index_rank_of", (PyCFunction)py_index_rank_of, METH_VARARGS,
     "index_rank_of(relative_path, world_size)\n--\n\nThe rank a file falls to in a sharded "
     "catalog run (ferry_index_rank_of)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_ferry",
    "The C extension of ferry: the loader, batches and DLPack tensors. Use the ferry package.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL};

/* A ferry.Error subclass; its class attributes status and reason are what
 * an instance raised by Python code (not by the C library) reports. */
static PyObject *new_error(PyObject *m, const char *name, PyObject *base2, int status,
                           const char *doc) {
  char qual[64];
  snprintf(qual, sizeof qual, "ferry.%s", name);
  PyObject *bases = base2 ? PyTuple_Pack(2, Error, base2) : PyTuple_Pack(1, Error);
  if (!bases)
    return NULL;
  PyObject *dict = Py_BuildValue("{siss}", "status", status, "reason", ferry_strerror(status));
  PyObject *cls = dict ? PyErr_NewExceptionWithDoc(qual, doc, bases, dict) : NULL;
  Py_XDECREF(dict);
  Py_DECREF(bases);
  if (cls && PyModule_AddObject(m, name, cls) < 0) {
    Py_DECREF(cls);
    return NULL;
  }
  Py_XINCREF(cls); /* the module's reference was stolen; keep ours */
  return cls;
}

static int add_int(PyObject *m, const char *name, long v) {
  return PyModule_AddIntConstant(m, name, v);
}

PyMODINIT_FUNC PyInit__ferry(void) {
  if (PyType_Ready(&TensorType) < 0 || PyType_Ready(&LoaderType) < 0 ||
      PyType_Ready(&BatchType) < 0 || PyType_Ready(&VideoReaderType) < 0 ||
      PyType_Ready(&VideoBatchType) < 0 || PyType_Ready(&HasherType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  fyp_log_install();
  PyObject *base_dict = Py_BuildValue("{sOsO}", "status", Py_None, "reason", Py_None);
  if (!base_dict)
    goto fail;
  Error = PyErr_NewExceptionWithDoc(
      "ferry.Error",
      "Base of every ferry error. str(e) is the C library's message (it names the file and "
      "the reason); e.status is the C status code, e.reason its short description.",
      NULL, base_dict);
  Py_XDECREF(base_dict);
  if (!Error || PyModule_AddObject(m, "Error", Error) < 0)
    goto fail;
  Py_INCREF(Error);
  if (!(ReadError = new_error(m, "ReadError", PyExc_OSError, FERRY_EIO,
                              "A file could not be opened or read (FERRY_EIO).")) ||
      !(UnsupportedError = new_error(m, "UnsupportedError", NULL, FERRY_EUNSUPPORTED,
                                     "A format or feature ferry does not decode "
                                     "(FERRY_EUNSUPPORTED), or a build without CUDA.")) ||
      !(CorruptError = new_error(m, "CorruptError", NULL, FERRY_ECORRUPT,
                                 "Damaged or truncated data (FERRY_ECORRUPT).")) ||
      !(TooLargeError = new_error(m, "TooLargeError", NULL, FERRY_ETOO_LARGE,
                                  "Over a configured limit: pixels, bytes (FERRY_ETOO_LARGE).")) ||
      !(InvalidArgument = new_error(m, "InvalidArgument", PyExc_ValueError, FERRY_EINVAL,
                                    "A bad argument or option (FERRY_EINVAL).")) ||
      !(OutOfMemoryError = new_error(m, "OutOfMemoryError", PyExc_MemoryError, FERRY_ENOMEM,
                                     "An allocation failed (FERRY_ENOMEM).")) ||
      !(EmptySourceError = new_error(m, "EmptySourceError", NULL, FERRY_EEMPTY,
                                     "A source holds no images (FERRY_EEMPTY).")) ||
      !(StateError = new_error(m, "StateError", PyExc_RuntimeError, FERRY_ESTATE,
                               "A call made in the wrong state (FERRY_ESTATE): e.g. every slot "
                               "of the ring is held by live batches.")) ||
      !(InternalError = new_error(m, "InternalError", NULL, FERRY_EINTERNAL,
                                  "A bug in ferry (FERRY_EINTERNAL): report it.")) ||
      !(StallError = new_error(m, "StallError", PyExc_TimeoutError, FERRY_ETIMEOUT,
                               "The loader stalled (FERRY_ETIMEOUT): no image finished within "
                               "stall_timeout seconds. The message names what each thread was "
                               "doing; the loader stays failed.")))
    goto fail;
  Py_INCREF(&TensorType);
  Py_INCREF(&LoaderType);
  Py_INCREF(&BatchType);
  Py_INCREF(&VideoReaderType);
  Py_INCREF(&VideoBatchType);
  if (PyModule_AddObject(m, "Tensor", (PyObject *)&TensorType) < 0 ||
      PyModule_AddObject(m, "Loader", (PyObject *)&LoaderType) < 0 ||
      PyModule_AddObject(m, "Batch", (PyObject *)&BatchType) < 0 ||
      PyModule_AddObject(m, "VideoReader", (PyObject *)&VideoReaderType) < 0 ||
      PyModule_AddObject(m, "VideoBatch", (PyObject *)&VideoBatchType) < 0)
    goto fail;
  Py_INCREF(&HasherType);
  if (PyModule_AddObject(m, "Hasher", (PyObject *)&HasherType) < 0 ||
      add_int(m, "HASH_FAST", FERRY_HASH_FAST) < 0 ||
      add_int(m, "HASH_COMPATIBLE", FERRY_HASH_COMPATIBLE) < 0 ||
      add_int(m, "HASH_KIND_COUNT", FERRY_HASH_KIND_COUNT) < 0 ||
      add_int(m, "DEVICE_OPENCL", FERRY_DEVICE_OPENCL) < 0 ||
      add_int(m, "DEVICE_OPENCL_ANY", FERRY_DEVICE_OPENCL_ANY) < 0)
    goto fail;
  if (PyModule_AddStringConstant(m, "version", ferry_version()) < 0 ||
      add_int(m, "HELD_ACROSS_EPOCHS", HELD_ACROSS_EPOCHS) < 0 || add_int(m, "OK", FERRY_OK) < 0 ||
      add_int(m, "END", FERRY_END) < 0 || add_int(m, "EINVAL", FERRY_EINVAL) < 0 ||
      add_int(m, "EIO", FERRY_EIO) < 0 || add_int(m, "EUNSUPPORTED", FERRY_EUNSUPPORTED) < 0 ||
      add_int(m, "ECORRUPT", FERRY_ECORRUPT) < 0 ||
      add_int(m, "ETOO_LARGE", FERRY_ETOO_LARGE) < 0 || add_int(m, "ENOMEM", FERRY_ENOMEM) < 0 ||
      add_int(m, "EEMPTY", FERRY_EEMPTY) < 0 || add_int(m, "ESTATE", FERRY_ESTATE) < 0 ||
      add_int(m, "EINTERNAL", FERRY_EINTERNAL) < 0 || add_int(m, "ETIMEOUT", FERRY_ETIMEOUT) < 0 ||
      add_int(m, "U8", FERRY_U8) < 0 || add_int(m, "F16", FERRY_F16) < 0 ||
      add_int(m, "F32", FERRY_F32) < 0 || add_int(m, "HWC", FERRY_LAYOUT_HWC) < 0 ||
      add_int(m, "CHW", FERRY_LAYOUT_CHW) < 0 || add_int(m, "CROP_NONE", FERRY_CROP_NONE) < 0 ||
      add_int(m, "CROP_CENTER", FERRY_CROP_CENTER) < 0 ||
      add_int(m, "CROP_RANDOM", FERRY_CROP_RANDOM) < 0 ||
      add_int(m, "FILTER_BILINEAR", FERRY_FILTER_BILINEAR) < 0 ||
      add_int(m, "FILTER_TRIANGLE", FERRY_FILTER_TRIANGLE) < 0 ||
      add_int(m, "FILTER_AREA", FERRY_FILTER_AREA) < 0 ||
      add_int(m, "FILTER_BICUBIC", FERRY_FILTER_BICUBIC) < 0 ||
      add_int(m, "FILTER_LANCZOS", FERRY_FILTER_LANCZOS) < 0 ||
      add_int(m, "FILTER_NEAREST", FERRY_FILTER_NEAREST) < 0 ||
      add_int(m, "ON_ERROR_SKIP", FERRY_ON_ERROR_SKIP) < 0 ||
      add_int(m, "ON_ERROR_FAIL", FERRY_ON_ERROR_FAIL) < 0 ||
      add_int(m, "LOG_DEBUG", FERRY_LOG_DEBUG) < 0 || add_int(m, "LOG_INFO", FERRY_LOG_INFO) < 0 ||
      add_int(m, "LOG_WARNING", FERRY_LOG_WARNING) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
