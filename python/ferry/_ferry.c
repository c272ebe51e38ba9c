/* _ferry.c — the CPython extension over the ferry C library.
 *
 * Three types, each holding a strong reference to the one before it, so that
 * memory can never be freed or reused while anything still points at it:
 *
 *   Loader  a ferry_loader (its worker threads and its ring of batch slots).
 *   Batch   one slot of the ring, taken with ferry_loader_next(); the slot
 *           goes back to the workers (ferry_loader_release) when the Batch
 *           object is freed, i.e. when nothing refers to it any more.
 *   Tensor  a typed view of memory (a batch's images, its labels, a decoded
 *           image) exported without a copy through DLPack (__dlpack__,
 *           __dlpack_device__) and the buffer protocol. A DLPack capsule and
 *           a memoryview each hold a reference to their Tensor.
 *
 * So a torch tensor or NumPy array made from a batch keeps the batch's slot
 * until the tensor is freed: the data stays valid exactly as long as it is
 * referenced. The ring has a fixed number of slots; when all are held,
 * Loader.next() raises StateError instead of overwriting anything.
 *
 * VideoReader / VideoBatch wrap a ferry_video_reader and its batches (see
 * the video section): a VideoBatch is a view of the reader's one batch
 * buffer, valid until the reader fetches its next batch.
 *
 * The GIL is released around every call that can block (opening a source,
 * waiting for a batch, starting an epoch, closing, decoding a file). Worker
 * threads of the C library never call into Python: files they skip are
 * queued under a mutex and taken by the consumer (Loader.take_skipped()). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "dlpack.h"
#include "ferry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Batches held by the consumer across ferry_loader_start_epoch() stay valid
 * (and their slots rejoin the ring when released) when the C library says
 * so; otherwise the Python layer opens a fresh loader for an epoch that
 * starts while batches of the previous one are alive. */
#ifdef FERRY_LOADER_KEEPS_HELD_BATCHES
#define HELD_ACROSS_EPOCHS 1
#else
#define HELD_ACROSS_EPOCHS 0
#endif

#if PY_VERSION_HEX >= 0x030D0000
#define FY_FINALIZING() Py_IsFinalizing()
#else
#define FY_FINALIZING() _Py_IsFinalizing()
#endif

/* ------------------------------------------------------------------ errors */

static PyObject *Error, *ReadError, *UnsupportedError, *CorruptError, *TooLargeError,
    *InvalidArgument, *OutOfMemoryError, *EmptySourceError, *StateError, *InternalError,
    *StallError;

static PyObject *error_class(int status) {
  switch (status) {
  case FERRY_EIO: return ReadError;
  case FERRY_EUNSUPPORTED: return UnsupportedError;
  case FERRY_ECORRUPT: return CorruptError;
  case FERRY_ETOO_LARGE: return TooLargeError;
  case FERRY_EINVAL: return InvalidArgument;
  case FERRY_ENOMEM: return OutOfMemoryError;
  case FERRY_EEMPTY: return EmptySourceError;
  case FERRY_ESTATE: return StateError;
  case FERRY_EINTERNAL: return InternalError;
  case FERRY_ETIMEOUT: return StallError;
  default: return Error;
  }
}

/* Raises the ferry.Error subclass of `status` with `message` (the C
 * library's, naming the file and the reason), setting .status and .reason.
 * Returns NULL. */
/* A new ferry.Error instance for a status (NULL with an exception set). */
static PyObject *make_error(int status, const char *message) {
  PyObject *cls = error_class(status);
  if (!message || !*message)
    message = ferry_strerror(status);
  PyObject *exc = PyObject_CallFunction(cls, "s", message);
  if (!exc)
    return NULL;
  PyObject *st = PyLong_FromLong(status);
  PyObject *reason = PyUnicode_FromString(ferry_strerror(status));
  if (!st || !reason || PyObject_SetAttrString(exc, "status", st) < 0 ||
      PyObject_SetAttrString(exc, "reason", reason) < 0) {
    Py_XDECREF(st);
    Py_XDECREF(reason);
    Py_DECREF(exc);
    return NULL;
  }
  Py_DECREF(st);
  Py_DECREF(reason);
  return exc;
}

static PyObject *raise_status(int status, const char *message) {
  PyObject *exc = make_error(status, message);
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* ------------------------------------------------------------------ Tensor */

typedef struct LoaderObject LoaderObject;
typedef struct BatchObject BatchObject;

enum { MAX_NDIM = 4 };

typedef struct TensorObject {
  PyObject_HEAD PyObject *owner; /* keeps the memory alive (a Batch), or NULL */
  BatchObject *batch;            /* owner as a Batch, for CUDA stream records */
  void *data;
  void (*free_fn)(void *ctx); /* frees owned memory at dealloc */
  void *free_ctx;
  /* Whether the memory may still be exported (a video batch's frames are
   * overwritten by the reader's next batch): 0, or -1 with an exception
   * set. NULL: always. */
  int (*check)(PyObject *owner);
  int ndim;
  int64_t shape[MAX_NDIM];
  int64_t strides[MAX_NDIM]; /* in elements */
  int compact;               /* strides are row-major compact */
  DLDataType dtype;
  DLDevice device;
  Py_ssize_t itemsize;
  Py_ssize_t py_shape[MAX_NDIM];   /* for the buffer protocol */
  Py_ssize_t py_strides[MAX_NDIM]; /* in bytes */
} TensorObject;

static PyTypeObject TensorType;

static const char *dtype_name(DLDataType t) {
  if (t.code == kDLUInt && t.bits == 8)
    return "uint8";
  if (t.code == kDLFloat && t.bits == 16)
    return "float16";
  if (t.code == kDLFloat && t.bits == 32)
    return "float32";
  if (t.code == kDLInt && t.bits == 32)
    return "int32";
  if (t.code == kDLInt && t.bits == 64)
    return "int64";
  if (t.code == kDLUInt && t.bits == 32)
    return "uint32";
  return "unknown";
}

static const char *dtype_format(DLDataType t) {
  if (t.code == kDLUInt && t.bits == 8)
    return "B";
  if (t.code == kDLFloat && t.bits == 16)
    return "e";
  if (t.code == kDLFloat && t.bits == 32)
    return "f";
  if (t.code == kDLInt && t.bits == 32)
    return "i";
  if (t.code == kDLInt && t.bits == 64)
    return "q";
  if (t.code == kDLUInt && t.bits == 32)
    return "I";
  return "B";
}

static DLDataType dl_dtype_of(ferry_dtype d) {
  DLDataType t = {kDLUInt, 8, 1};
  if (d == FERRY_F16)
    t = (DLDataType){kDLFloat, 16, 1};
  else if (d == FERRY_F32)
    t = (DLDataType){kDLFloat, 32, 1};
  return t;
}

/* A new Tensor over `data`. `strides` NULL = compact. Takes no reference to
 * owner (the caller passes one it gives away), frees nothing on failure. */
static TensorObject *tensor_new(PyObject *owner, void *data, int ndim, const int64_t *shape,
                                const int64_t *strides, DLDataType dtype, DLDevice device) {
  TensorObject *t = PyObject_New(TensorObject, &TensorType);
  if (!t)
    return NULL;
  t->owner = owner;
  t->batch = NULL;
  t->data = data;
  t->free_fn = NULL;
  t->free_ctx = NULL;
  t->check = NULL;
  t->ndim = ndim;
  t->dtype = dtype;
  t->device = device;
  t->itemsize = dtype.bits / 8;
  int64_t step = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->strides[i] = strides ? strides[i] : step;
    step *= shape[i] > 0 ? shape[i] : 1;
  }
  t->compact = 1;
  step = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != step)
      t->compact = 0;
    step *= t->shape[i];
  }
  for (int i = 0; i < ndim; i++) {
    t->py_shape[i] = (Py_ssize_t)t->shape[i];
    t->py_strides[i] = (Py_ssize_t)(t->strides[i] * t->itemsize);
  }
  return t;
}

static void tensor_dealloc(TensorObject *t) {
  if (t->free_fn)
    t->free_fn(t->free_ctx);
  Py_XDECREF(t->owner);
  PyObject_Free(t);
}

static int64_t tensor_numel(const TensorObject *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= t->shape[i];
  return n;
}

/* A compact host copy (owned), for __dlpack__(copy=True). */
static TensorObject *tensor_copy(const TensorObject *t) {
  int64_t n = tensor_numel(t);
  size_t bytes = (size_t)n * (size_t)t->itemsize;
  void *mem = PyMem_RawMalloc(bytes ? bytes : 1);
  if (!mem)
    return (TensorObject *)PyErr_NoMemory();
  /* Generic strided copy, element by element (copy=True is not a hot path). */
  int64_t idx[MAX_NDIM] = {0};
  char *dst = mem;
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0;
    for (int i = 0; i < t->ndim; i++)
      off += idx[i] * t->strides[i];
    memcpy(dst + k * t->itemsize, (const char *)t->data + off * t->itemsize, (size_t)t->itemsize);
    for (int i = t->ndim - 1; i >= 0; i--) {
      if (++idx[i] < t->shape[i])
        break;
      idx[i] = 0;
    }
  }
  TensorObject *c = tensor_new(NULL, mem, t->ndim, t->shape, NULL, t->dtype, t->device);
  if (!c) {
    PyMem_RawFree(mem);
    return NULL;
  }
  c->free_fn = PyMem_RawFree;
  c->free_ctx = mem;
  return c;
}

/* DLPack export: the managed tensor holds a reference to the Tensor; the
 * consumer's deleter drops it (taking the GIL: torch may free a tensor on a
 * thread of its own). One context serves both layouts. */
typedef struct export_ctx {
  DLManagedTensor mt;           /* 0.8 */
  DLManagedTensorVersioned mtv; /* 1.0 */
  int64_t shape[MAX_NDIM];
  int64_t strides[MAX_NDIM];
  PyObject *ref;
} export_ctx;

static void export_free(export_ctx *ctx) {
  /* At interpreter exit the reference is left: everything goes anyway. */
  if (Py_IsInitialized() && !FY_FINALIZING()) {
    PyGILState_STATE st = PyGILState_Ensure();
    Py_DECREF(ctx->ref);
    PyGILState_Release(st);
  }
  PyMem_RawFree(ctx);
}

static void dl_deleter(DLManagedTensor *mt) { export_free(mt->manager_ctx); }
static void dl_deleter_versioned(DLManagedTensorVersioned *mt) { export_free(mt->manager_ctx); }

static const char CAPSULE[] = "dltensor", CAPSULE_USED[] = "used_dltensor";
static const char CAPSULE_V[] = "dltensor_versioned", CAPSULE_V_USED[] = "used_dltensor_versioned";

/* A capsule nobody consumed calls the deleter itself. */
static void capsule_destructor(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, CAPSULE_USED) || PyCapsule_IsValid(capsule, CAPSULE_V_USED))
    return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  if (PyCapsule_IsValid(capsule, CAPSULE)) {
    DLManagedTensor *mt = PyCapsule_GetPointer(capsule, CAPSULE);
    mt->deleter(mt);
  } else if (PyCapsule_IsValid(capsule, CAPSULE_V)) {
    DLManagedTensorVersioned *mt = PyCapsule_GetPointer(capsule, CAPSULE_V);
    mt->deleter(mt);
  } else {
    PyErr_WriteUnraisable(capsule);
  }
  PyErr_Restore(type, value, tb);
}

static PyObject *make_capsule(TensorObject *t, int versioned, int copied) {
  export_ctx *ctx = PyMem_RawCalloc(1, sizeof *ctx);
  if (!ctx)
    return PyErr_NoMemory();
  memcpy(ctx->shape, t->shape, sizeof ctx->shape);
  memcpy(ctx->strides, t->strides, sizeof ctx->strides);
  DLTensor *dl = versioned ? &ctx->mtv.dl_tensor : &ctx->mt.dl_tensor;
  dl->data = t->data;
  dl->device = t->device;
  dl->ndim = t->ndim;
  dl->dtype = t->dtype;
  dl->shape = ctx->shape;
  dl->strides = t->compact ? NULL : ctx->strides;
  dl->byte_offset = 0;
  void *ptr;
  if (versioned) {
    ctx->mtv.version = (DLPackVersion){DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    ctx->mtv.manager_ctx = ctx;
    ctx->mtv.deleter = dl_deleter_versioned;
    ctx->mtv.flags = copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
    ptr = &ctx->mtv;
  } else {
    ctx->mt.manager_ctx = ctx;
    ctx->mt.deleter = dl_deleter;
    ptr = &ctx->mt;
  }
  Py_INCREF(t);
  ctx->ref = (PyObject *)t;
  PyObject *cap = PyCapsule_New(ptr, versioned ? CAPSULE_V : CAPSULE, capsule_destructor);
  if (!cap) {
    Py_DECREF(t);
    PyMem_RawFree(ctx);
  }
  return cap;
}

static void batch_record_stream(BatchObject *b, void *stream);

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None).
 * Returns a DLPack 1.0 capsule ("dltensor_versioned") to a consumer whose
 * max_version is (1, x) or later, else a 0.8 capsule ("dltensor"). */
static PyObject *tensor_dlpack(TensorObject *t, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &max_version,
                                   &dl_device, &copy))
    return NULL;
  int versioned = 0;
  if (max_version != Py_None) {
    unsigned major, minor;
    if (!PyArg_ParseTuple(max_version, "II:max_version", &major, &minor))
      return NULL;
    versioned = major >= 1;
  }
  if (dl_device != Py_None) {
    int type, id;
    if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &type, &id))
      return NULL;
    if (type != (int)t->device.device_type || id != t->device.device_id) {
      PyErr_Format(PyExc_BufferError,
                   "ferry tensor lives on device (%d, %d); cannot export it to (%d, %d)",
                   (int)t->device.device_type, t->device.device_id, type, id);
      return NULL;
    }
  }
  int want_copy = 0;
  if (copy != Py_None && (want_copy = PyObject_IsTrue(copy)) < 0)
    return NULL;
  if (t->check && t->check(t->owner) < 0)
    return NULL;
  if (t->device.device_type == kDLCPU) {
    if (stream != Py_None) {
      long s = PyLong_Check(stream) ? PyLong_AsLong(stream) : 0;
      if (s != -1) {
        PyErr_SetString(PyExc_BufferError, "stream must be None for a CPU tensor");
        return NULL;
      }
      PyErr_Clear();
    }
    if (want_copy) {
      TensorObject *c = tensor_copy(t);
      if (!c)
        return NULL;
      PyObject *cap = make_capsule(c, versioned, 1);
      Py_DECREF(c);
      return cap;
    }
    return make_capsule(t, versioned, 0);
  }
  /* CUDA: the batch's kernels finished before ferry_loader_next() returned,
   * so the data is ready for any stream. What the consumer's stream does
   * with it decides when the slot may be rewritten: remember the stream
   * (None or 1: the legacy default stream; 2: per-thread default; -1: the
   * consumer asks for no synchronisation). */
  if (want_copy) {
    PyErr_SetString(PyExc_BufferError, "ferry cannot copy a CUDA tensor in __dlpack__");
    return NULL;
  }
  void *cuda_stream = NULL;
  int record = 1;
  if (stream != Py_None) {
    if (!PyLong_Check(stream)) {
      PyErr_SetString(PyExc_TypeError, "stream must be an int or None");
      return NULL;
    }
    long long s = PyLong_AsLongLong(stream);
    if (s == -1 && PyErr_Occurred())
      return NULL;
    if (s == 0 || s < -1) {
      PyErr_Format(PyExc_BufferError, "invalid CUDA stream %lld (0 is ambiguous)", s);
      return NULL;
    }
    if (s == -1)
      record = 0;
    else if (s != 1)
      cuda_stream = (void *)(uintptr_t)s;
  }
  if (record && t->batch)
    batch_record_stream(t->batch, cuda_stream);
  return make_capsule(t, versioned, 0);
}

static PyObject *tensor_dlpack_device(TensorObject *t, PyObject *unused) {
  return Py_BuildValue("(ii)", (int)t->device.device_type, (int)t->device.device_id);
}

static int tensor_getbuffer(TensorObject *t, Py_buffer *view, int flags) {
  if (t->device.device_type != kDLCPU) {
    PyErr_SetString(PyExc_BufferError, "a CUDA tensor has no host buffer: use DLPack");
    return -1;
  }
  if (t->check && t->check(t->owner) < 0)
    return -1;
  if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !t->compact) {
    PyErr_SetString(PyExc_BufferError, "tensor is not C-contiguous");
    return -1;
  }
  if (!(flags & PyBUF_STRIDES) && !t->compact) {
    PyErr_SetString(PyExc_BufferError, "tensor is strided: ask for strides");
    return -1;
  }
  view->buf = t->data;
  view->obj = (PyObject *)t;
  Py_INCREF(t);
  view->len = (Py_ssize_t)tensor_numel(t) * t->itemsize;
  view->readonly = 0;
  view->itemsize = t->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? (char *)dtype_format(t->dtype) : NULL;
  view->ndim = t->ndim;
  view->shape = (flags & PyBUF_ND) ? t->py_shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) ? t->py_strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs tensor_as_buffer = {(getbufferproc)tensor_getbuffer, NULL};

static PyObject *tensor_get_shape(TensorObject *t, void *c) {
  PyObject *s = PyTuple_New(t->ndim);
  for (int i = 0; s && i < t->ndim; i++) {
    PyObject *v = PyLong_FromLongLong(t->shape[i]);
    if (!v) {
      Py_DECREF(s);
      return NULL;
    }
    PyTuple_SET_ITEM(s, i, v);
  }
  return s;
}

static PyObject *tensor_get_dtype(TensorObject *t, void *c) {
  return PyUnicode_FromString(dtype_name(t->dtype));
}

static PyObject *tensor_get_device(TensorObject *t, void *c) {
  if (t->device.device_type == kDLCUDA)
    return PyUnicode_FromFormat("cuda:%d", (int)t->device.device_id);
  return PyUnicode_FromString("cpu");
}

static PyObject *tensor_get_data_ptr(TensorObject *t, void *c) {
  return PyLong_FromVoidPtr(t->data);
}

static PyObject *tensor_get_nbytes(TensorObject *t, void *c) {
  return PyLong_FromLongLong(tensor_numel(t) * t->itemsize);
}

static PyObject *tensor_get_ndim(TensorObject *t, void *c) { return PyLong_FromLong(t->ndim); }

static PyObject *tensor_get_owner(TensorObject *t, void *c) {
  PyObject *o = t->owner ? t->owner : Py_None;
  Py_INCREF(o);
  return o;
}

static PyObject *tensor_repr(TensorObject *t) {
  PyObject *shape = tensor_get_shape(t, NULL);
  if (!shape)
    return NULL;
  PyObject *dev = tensor_get_device(t, NULL);
  PyObject *r = dev ? PyUnicode_FromFormat("ferry.Tensor(shape=%R, dtype=%s, device=%U)", shape,
                                           dtype_name(t->dtype), dev)
                    : NULL;
  Py_DECREF(shape);
  Py_XDECREF(dev);
  return r;
}

static Py_ssize_t tensor_len(TensorObject *t) {
  if (t->ndim == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
    return -1;
  }
  return (Py_ssize_t)t->shape[0];
}

static PySequenceMethods tensor_as_sequence = {.sq_length = (lenfunc)tensor_len};

static PyMethodDef tensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "Exports the memory as a DLPack capsule, without a copy (unless copy=True)."},
    {"__dlpack_device__", (PyCFunction)tensor_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n--\n\n(device_type, device_id): (1, 0) for host memory, (2, N) "
     "for CUDA device N."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)tensor_get_shape, NULL, "Shape, a tuple of ints.", NULL},
    {"dtype", (getter)tensor_get_dtype, NULL, "Element type: 'uint8', 'float16', ...", NULL},
    {"device", (getter)tensor_get_device, NULL, "'cpu' or 'cuda:N'.", NULL},
    {"data_ptr", (getter)tensor_get_data_ptr, NULL, "Address of the first element.", NULL},
    {"nbytes", (getter)tensor_get_nbytes, NULL, "Size of the data in bytes.", NULL},
    {"ndim", (getter)tensor_get_ndim, NULL, "Number of dimensions.", NULL},
    {"owner", (getter)tensor_get_owner, NULL, "The object whose memory this is, or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.Tensor",
    .tp_basicsize = sizeof(TensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = (reprfunc)tensor_repr,
    .tp_as_sequence = &tensor_as_sequence,
    .tp_as_buffer = &tensor_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A view of ferry memory, exported without a copy through DLPack "
              "(torch.from_dlpack, numpy.from_dlpack) or the buffer protocol "
              "(memoryview, numpy.asarray). Keeps its memory alive.",
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
};

/* ------------------------------------------------------------------ Loader */

typedef struct skip_entry {
  char *path, *message;
  int status;
} skip_entry;

struct LoaderObject {
  PyObject_HEAD ferry_loader *L;
  int device; /* -1 host, N CUDA device */
  int batch_size;
  int busy;        /* a call runs without the GIL */
  int closed;      /* close() asked; freed once no batch is alive */
  Py_ssize_t live; /* Batch objects alive */
  long pid;        /* the process that opened it */
  int epoch;       /* last started epoch, -1 before the first */
  /* Without FERRY_LOADER_KEEPS_HELD_BATCHES, the C ring fills in order:
   * batch b of an epoch lives in slot b % nslots (src/pipeline/ring.c),
   * so a batch still held blocks the batch nslots later, and
   * ferry_loader_next() would wait for it forever: the Loader refuses
   * (StateError) instead. A library that gives freed slots the next batch
   * (FERRY_LOADER_KEEPS_HELD_BATCHES) needs none of this. */
  int nslots;
  int64_t next_index;    /* the batch ferry_loader_next() returns next */
  unsigned gen;          /* bumped by start_epoch: older batches do not count */
  Py_ssize_t *slot_live; /* live batches of this epoch per slot */
  PyObject *weakrefs;
  pthread_mutex_t skip_mu;
  skip_entry *skips;
  size_t nskips, capskips;
  int skip_oom; /* an entry could not be stored */
};

static PyTypeObject LoaderType;

/* From a worker thread (serialised by the library): never touches Python. */
static void on_skip(void *user, const char *path, int status, const char *msg) {
  LoaderObject *self = user;
  pthread_mutex_lock(&self->skip_mu);
  if (self->nskips == self->capskips) {
    size_t cap = self->capskips ? self->capskips * 2 : 16;
    skip_entry *e = realloc(self->skips, cap * sizeof *e);
    if (!e) {
      self->skip_oom = 1;
      pthread_mutex_unlock(&self->skip_mu);
      return;
    }
    self->skips = e;
    self->capskips = cap;
  }
  skip_entry *e = &self->skips[self->nskips];
  e->path = strdup(path ? path : "");
  e->message = strdup(msg && *msg ? msg : (path ? path : ""));
  e->status = status;
  if (e->path && e->message)
    self->nskips++;
  else {
    free(e->path);
    free(e->message);
    self->skip_oom = 1;
  }
  pthread_mutex_unlock(&self->skip_mu);
}

static void free_skips(LoaderObject *self) {
  for (size_t i = 0; i < self->nskips; i++) {
    free(self->skips[i].path);
    free(self->skips[i].message);
  }
  free(self->skips);
  self->skips = NULL;
  self->nskips = self->capskips = 0;
}

static int forked(const LoaderObject *self) { return (long)getpid() != self->pid; }

/* Closes the C loader (joins its threads: without the GIL). */
static void loader_close_now(LoaderObject *self) {
  ferry_loader *L = self->L;
  self->L = NULL;
  if (!L)
    return;
  if (forked(self))
    return; /* its threads and locks belong to the parent: leave it */
  Py_BEGIN_ALLOW_THREADS ferry_loader_close(L);
  Py_END_ALLOW_THREADS
}

static void loader_maybe_close(LoaderObject *self) {
  if (self->closed && !self->busy && self->live == 0)
    loader_close_now(self);
}

static int loader_check(LoaderObject *self) {
  if (self->closed || !self->L) {
    PyErr_SetString(StateError, "the loader is closed");
    return -1;
  }
  if (self->busy) {
    PyErr_SetString(StateError, "the loader is in use by another thread (one consumer at a "
                                "time: create one Loader per thread)");
    return -1;
  }
  if (forked(self)) {
    PyErr_SetString(StateError, "this loader was opened in another process and its threads do "
                                "not exist here (after fork): create the Loader in this process");
    return -1;
  }
  return 0;
}

static int as_u64(PyObject *o, const char *name, uint64_t *out) {
  if (o == Py_None)
    return 0;
  if (!PyLong_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int", name);
    return -1;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(InvalidArgument, "%s must be an integer in 0..2**64-1", name);
    return -1;
  }
  *out = v;
  return 0;
}

static PyObject *loader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"source",
                           "batch_size",
                           "width",
                           "height",
                           "workers",
                           "prefetch",
                           "crop",
                           "crop_ratio",
                           "scale_min",
                           "scale_max",
                           "ratio_min",
                           "ratio_max",
                           "filter",
                           "flip_prob",
                           "normalize",
                           "mean",
                           "std",
                           "layout",
                           "dtype",
                           "shuffle",
                           "seed",
                           "rank",
                           "world_size",
                           "drop_last",
                           "on_error",
                           "ignore_orientation",
                           "max_pixels",
                           "dct_scaling",
                           "device",
                           "hw_decode",
                           "device_memory",
                           "cache_bytes",
                           "exact_decode",
                           "max_batch_bytes",
                           "read_timeout_ms",
                           "stall_timeout_ms",
                           NULL};
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  PyObject *source = NULL, *seed = Py_None, *max_pixels = Py_None, *device_memory = Py_None;
  PyObject *cache_bytes = Py_None, *max_batch_bytes = Py_None;
  int exact_decode = o.exact_decode;
  int crop = o.crop, filter = o.filter, layout = o.layout, dtype = o.dtype;
  int on_error = o.on_error, normalize = o.normalize, shuffle = o.shuffle;
  int drop_last = o.drop_last, ignore_orientation = o.ignore_orientation;
  int dct = o.allow_dct_scaling, device = o.device, hw_decode = o.hw_decode;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "O&|$iiiiiifffffifp(fff)(fff)iipOiipipOpipOOpOii:Loader", kwlist,
          PyUnicode_FSConverter, &source, &o.batch_size, &o.width, &o.height, &o.workers,
          &o.prefetch, &crop, &o.crop_ratio, &o.scale_min, &o.scale_max, &o.ratio_min, &o.ratio_max,
          &filter, &o.flip_prob, &normalize, &o.mean[0], &o.mean[1], &o.mean[2], &o.std[0],
          &o.std[1], &o.std[2], &layout, &dtype, &shuffle, &seed, &o.rank, &o.world_size,
          &drop_last, &on_error, &ignore_orientation, &max_pixels, &dct, &device, &hw_decode,
          &device_memory, &cache_bytes, &exact_decode, &max_batch_bytes, &o.read_timeout_ms,
          &o.stall_timeout_ms))
    return NULL;
  if (as_u64(seed, "seed", &o.seed) < 0 || as_u64(max_pixels, "max_pixels", &o.max_pixels) < 0 ||
      as_u64(device_memory, "device_memory", &o.device_memory) < 0 ||
      as_u64(cache_bytes, "cache_bytes", &o.cache_bytes) < 0 ||
      as_u64(max_batch_bytes, "max_batch_bytes", &o.max_batch_bytes) < 0) {
    Py_DECREF(source);
    return NULL;
  }
  o.crop = (ferry_crop)crop;
  o.filter = (ferry_filter)filter;
  o.layout = (ferry_layout)layout;
  o.dtype = (ferry_dtype)dtype;
  o.on_error = (ferry_on_error)on_error;
  o.normalize = normalize;
  o.shuffle = shuffle;
  o.drop_last = drop_last;
  o.ignore_orientation = ignore_orientation;
  o.allow_dct_scaling = dct;
  o.exact_decode = exact_decode;
  o.device = device;
  o.hw_decode = hw_decode;
  o.source = PyBytes_AS_STRING(source);

  LoaderObject *self = (LoaderObject *)type->tp_alloc(type, 0);
  if (!self) {
    Py_DECREF(source);
    return NULL;
  }
  pthread_mutex_init(&self->skip_mu, NULL);
  self->slot_live = PyMem_Calloc(64, sizeof(Py_ssize_t)); /* prefetch is at most 64 */
  if (!self->slot_live) {
    Py_DECREF(source);
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  self->nslots = o.prefetch;
  self->device = device;
  self->batch_size = o.batch_size;
  self->pid = (long)getpid();
  self->epoch = -1;
  o.on_skip = on_skip;
  o.on_skip_user = self;

  ferry_loader *L = NULL;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_loader_open(&o, &L);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS Py_DECREF(source);
  if (rc) {
    Py_DECREF(self);
    return raise_status(rc, msg);
  }
  self->L = L;
  self->nslots = ferry_loader_prefetch(L);
  return (PyObject *)self;
}

static void loader_dealloc(LoaderObject *self) {
  /* No batch is alive (each holds a reference), no call is running. */
  if (self->weakrefs)
    PyObject_ClearWeakRefs((PyObject *)self);
  loader_close_now(self);
  free_skips(self);
  PyMem_Free(self->slot_live);
  pthread_mutex_destroy(&self->skip_mu);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *loader_start_epoch(LoaderObject *self, PyObject *arg) {
  long epoch = PyLong_AsLong(arg);
  if (epoch == -1 && PyErr_Occurred())
    return NULL;
  if (epoch < 0 || epoch > 0x7fffffffL) {
    PyErr_Format(InvalidArgument, "epoch %ld out of range (0..2**31-1)", epoch);
    return NULL;
  }
  if (loader_check(self) < 0)
    return NULL;
  self->busy = 1;
  int rc;
  char msg[4096];
  Py_BEGIN_ALLOW_THREADS rc = ferry_loader_start_epoch(self->L, (int)epoch);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS self->busy = 0;
  if (rc)
    return raise_status(rc, msg);
  self->epoch = (int)epoch;
  self->next_index = 0;
  self->gen++;
  memset(self->slot_live, 0, (size_t)self->nslots * sizeof *self->slot_live);
  Py_RETURN_NONE;
}

static PyTypeObject BatchType;
static PyObject *batch_wrap(LoaderObject *loader, ferry_batch *b);

static PyObject *loader_next(LoaderObject *self, PyObject *unused) {
  if (loader_check(self) < 0)
    return NULL;
  if (!HELD_ACROSS_EPOCHS && self->slot_live[self->next_index % self->nslots] > 0 &&
      self->next_index < ferry_loader_num_batches(self->L)) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "loader: batch %lld needs the buffer that batch %lld still holds (the ring of %d "
             "buffers fills in order); free that batch first",
             (long long)self->next_index, (long long)(self->next_index - self->nslots),
             self->nslots);
    return raise_status(FERRY_ESTATE, msg);
  }
  self->busy = 1;
  ferry_batch *b = NULL;
  int rc;
  char msg[4096];
  Py_BEGIN_ALLOW_THREADS rc = ferry_loader_next(self->L, &b);
  if (rc && rc != FERRY_END)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS self->busy = 0;
  if (rc == FERRY_END) {
    loader_maybe_close(self);
    Py_RETURN_NONE;
  }
  if (rc) {
    loader_maybe_close(self);
    return raise_status(rc, msg);
  }
  if (self->epoch < 0)
    self->epoch = b->epoch;
  self->next_index = (int64_t)b->index + 1;
  PyObject *batch = batch_wrap(self, b);
  if (!batch) {
    ferry_loader_release(self->L, b);
    return NULL;
  }
  /* Ctrl-C pressed while waiting: the batch goes back with its object. */
  if (PyErr_CheckSignals() < 0) {
    Py_DECREF(batch);
    return NULL;
  }
  return batch;
}

static PyObject *loader_close(LoaderObject *self, PyObject *unused) {
  self->closed = 1;
  loader_maybe_close(self);
  Py_RETURN_NONE;
}

static PyObject *loader_take_skipped(LoaderObject *self, PyObject *unused) {
  pthread_mutex_lock(&self->skip_mu);
  skip_entry *e = self->skips;
  size_t n = self->nskips;
  int oom = self->skip_oom;
  self->skips = NULL;
  self->nskips = self->capskips = 0;
  self->skip_oom = 0;
  pthread_mutex_unlock(&self->skip_mu);
  PyObject *list = PyList_New(0);
  for (size_t i = 0; i < n; i++) {
    if (list) {
      PyObject *item =
          Py_BuildValue("(O&is)", PyUnicode_DecodeFSDefault, e[i].path, e[i].status, e[i].message);
      if (!item || PyList_Append(list, item) < 0)
        Py_CLEAR(list);
      Py_XDECREF(item);
    }
    free(e[i].path);
    free(e[i].message);
  }
  free(e);
  if (list && oom) {
    PyObject *item = Py_BuildValue("(sis)", "", FERRY_ENOMEM,
                                   "out of memory: some skipped files were not recorded");
    if (!item || PyList_Append(list, item) < 0)
      Py_CLEAR(list);
    Py_XDECREF(item);
  }
  return list;
}

static int loader_usable(LoaderObject *self) {
  if (!self->L) {
    PyErr_SetString(StateError, "the loader is closed");
    return -1;
  }
  return 0;
}

static PyObject *loader_path(LoaderObject *self, PyObject *arg) {
  if (loader_usable(self) < 0)
    return NULL;
  long long i = PyLong_AsLongLong(arg);
  if (i == -1 && PyErr_Occurred())
    return NULL;
  const char *p = ferry_loader_path(self->L, i);
  if (!p)
    return PyErr_Format(PyExc_IndexError, "sample index %lld out of range", i);
  return PyUnicode_DecodeFSDefault(p);
}

static PyObject *loader_label(LoaderObject *self, PyObject *arg) {
  if (loader_usable(self) < 0)
    return NULL;
  long long i = PyLong_AsLongLong(arg);
  if (i == -1 && PyErr_Occurred())
    return NULL;
  if (i < 0 || i >= ferry_loader_source_size(self->L))
    return PyErr_Format(PyExc_IndexError, "sample index %lld out of range", i);
  return PyLong_FromLong(ferry_loader_label(self->L, i));
}

static PyObject *loader_class_name(LoaderObject *self, PyObject *arg) {
  if (loader_usable(self) < 0)
    return NULL;
  long i = PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred())
    return NULL;
  const char *name = i >= 0 && i <= 0x7fffffff ? ferry_loader_class_name(self->L, (int)i) : NULL;
  if (!name)
    return PyErr_Format(PyExc_IndexError, "class %ld out of range", i);
  return PyUnicode_DecodeFSDefault(name);
}

static PyObject *loader_stats(LoaderObject *self, PyObject *unused) {
  if (loader_usable(self) < 0)
    return NULL;
  ferry_stats s;
  ferry_loader_get_stats(self->L, &s);
  return Py_BuildValue("{sdsdsdsdsdsKsKsKsK}", "read_s", s.read_s, "decode_s", s.decode_s,
                       "transform_s", s.transform_s, "wait_s", s.wait_s, "idle_s", s.idle_s,
                       "images", (unsigned long long)s.images, "skipped",
                       (unsigned long long)s.skipped, "batches", (unsigned long long)s.batches,
                       "gpu_decoded", (unsigned long long)s.gpu_decoded);
}

#define LOADER_INT64_GETTER(name, call)                                                            \
  static PyObject *loader_get_##name(LoaderObject *self, void *c) {                                \
    if (loader_usable(self) < 0)                                                                   \
      return NULL;                                                                                 \
    return PyLong_FromLongLong((long long)call(self->L));                                          \
  }
LOADER_INT64_GETTER(source_size, ferry_loader_source_size)
LOADER_INT64_GETTER(epoch_size, ferry_loader_epoch_size)
LOADER_INT64_GETTER(num_batches, ferry_loader_num_batches)
LOADER_INT64_GETTER(num_classes, ferry_loader_num_classes)

static PyObject *loader_get_live(LoaderObject *self, void *c) {
  return PyLong_FromSsize_t(self->live);
}
static PyObject *loader_get_ring(LoaderObject *self, void *c) {
  return PyLong_FromLong(self->nslots);
}
static PyObject *loader_get_closed(LoaderObject *self, void *c) {
  return PyBool_FromLong(self->closed || !self->L);
}
static PyObject *loader_get_freed(LoaderObject *self, void *c) { return PyBool_FromLong(!self->L); }
static PyObject *loader_get_device(LoaderObject *self, void *c) {
  return PyLong_FromLong(self->device);
}
static PyObject *loader_get_epoch(LoaderObject *self, void *c) {
  return PyLong_FromLong(self->epoch);
}

static PyMethodDef loader_methods[] = {
    {"start_epoch", (PyCFunction)loader_start_epoch, METH_O,
     "start_epoch(epoch)\n--\n\nStarts an epoch (its shuffle depends on seed and epoch)."},
    {"next", (PyCFunction)loader_next, METH_NOARGS,
     "next()\n--\n\nWaits for the next batch of the epoch (without the GIL): a Batch, or None "
     "at the end of the epoch. Starts epoch 0 if no epoch was started."},
    {"close", (PyCFunction)loader_close, METH_NOARGS,
     "close()\n--\n\nStops the loader: its threads and ring are freed now, or when the last "
     "batch still referenced is freed."},
    {"take_skipped", (PyCFunction)loader_take_skipped, METH_NOARGS,
     "take_skipped()\n--\n\nThe files skipped since the last call: [(path, status, message)]."},
    {"path", (PyCFunction)loader_path, METH_O, "path(index)\n--\n\nPath of a sample."},
    {"label", (PyCFunction)loader_label, METH_O, "label(index)\n--\n\nLabel of a sample."},
    {"class_name", (PyCFunction)loader_class_name, METH_O,
     "class_name(label)\n--\n\nName of a class (its ImageFolder sub-folder)."},
    {"stats", (PyCFunction)loader_stats, METH_NOARGS,
     "stats()\n--\n\nPer-stage seconds summed over workers, and counters."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef loader_getset[] = {
    {"source_size", (getter)loader_get_source_size, NULL, "Samples in the source.", NULL},
    {"epoch_size", (getter)loader_get_epoch_size, NULL, "Samples in this rank's epoch.", NULL},
    {"num_batches", (getter)loader_get_num_batches, NULL, "Batches per epoch (this rank).", NULL},
    {"num_classes", (getter)loader_get_num_classes, NULL, "Classes of an ImageFolder.", NULL},
    {"live_batches", (getter)loader_get_live, NULL, "Batch objects alive (holding slots).", NULL},
    {"ring", (getter)loader_get_ring, NULL, "Batches in the ring (prefetch + the one held).",
     NULL},
    {"closed", (getter)loader_get_closed, NULL, "close() was called.", NULL},
    {"freed", (getter)loader_get_freed, NULL, "The C loader has been freed.", NULL},
    {"device", (getter)loader_get_device, NULL, "-1 for host memory, N for CUDA device N.", NULL},
    {"epoch", (getter)loader_get_epoch, NULL, "The epoch in progress (-1 before any).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject LoaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.Loader",
    .tp_basicsize = sizeof(LoaderObject),
    .tp_dealloc = (destructor)loader_dealloc,
    .tp_weaklistoffset = offsetof(LoaderObject, weakrefs),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Loader(source, *, batch_size=256, width=224, height=224, ...)\n--\n\n"
              "The low-level loader: one ferry_loader. Options are the C library's "
              "(enums as ints). Use ferry.Loader, which wraps it.",
    .tp_methods = loader_methods,
    .tp_getset = loader_getset,
    .tp_new = loader_new,
};

/* ------------------------------------------------------------------- Batch */

struct BatchObject {
  PyObject_HEAD LoaderObject *loader; /* strong reference */
  ferry_batch *b;
  void *stream; /* the consumer's CUDA stream (device batches) */
  unsigned gen; /* the loader's epoch generation when taken */
  int index;    /* b->index (b belongs to the workers once released) */
};

static PyObject *batch_wrap(LoaderObject *loader, ferry_batch *b) {
  BatchObject *self = PyObject_New(BatchObject, &BatchType);
  if (!self)
    return NULL;
  Py_INCREF(loader);
  self->loader = loader;
  self->b = b;
  self->stream = NULL;
  self->gen = loader->gen;
  self->index = b->index;
  loader->live++;
  loader->slot_live[b->index % loader->nslots]++;
  return (PyObject *)self;
}

static void batch_record_stream(BatchObject *self, void *stream) { self->stream = stream; }

static void batch_dealloc(BatchObject *self) {
  LoaderObject *loader = self->loader;
  if (self->b && loader->L && !forked(loader)) {
    if (self->b->device >= 0)
      ferry_loader_release_on_stream(loader->L, self->b, self->stream);
    else
      ferry_loader_release(loader->L, self->b);
  }
  if (self->gen == loader->gen)
    loader->slot_live[self->index % loader->nslots]--;
  self->b = NULL;
  loader->live--;
  loader_maybe_close(loader);
  PyObject_Free(self);
  Py_DECREF(loader);
}

static void batch_shape(const ferry_batch *b, int64_t shape[4]) {
  shape[0] = b->count;
  if (b->layout == FERRY_LAYOUT_CHW) {
    shape[1] = b->channels, shape[2] = b->height, shape[3] = b->width;
  } else {
    shape[1] = b->height, shape[2] = b->width, shape[3] = b->channels;
  }
}

static PyObject *batch_get_images(BatchObject *self, void *c) {
  const ferry_batch *b = self->b;
  int64_t shape[4];
  batch_shape(b, shape);
  DLDevice dev = {kDLCPU, 0};
  if (b->device >= 0)
    dev = (DLDevice){kDLCUDA, b->device};
  Py_INCREF(self);
  TensorObject *t =
      tensor_new((PyObject *)self, b->data, 4, shape, NULL, dl_dtype_of(b->dtype), dev);
  if (!t) {
    Py_DECREF(self);
    return NULL;
  }
  t->batch = self;
  return (PyObject *)t;
}

/* Labels and indices are host arrays of the slot: small. Labels are copied
 * into int64 (what torch's losses take); indices are a zero-copy view. */
static PyObject *batch_get_labels(BatchObject *self, void *c) {
  const ferry_batch *b = self->b;
  int64_t n = b->count;
  int64_t *mem = PyMem_RawMalloc(n ? (size_t)n * sizeof *mem : 1);
  if (!mem)
    return PyErr_NoMemory();
  for (int64_t i = 0; i < n; i++)
    mem[i] = b->labels[i];
  TensorObject *t =
      tensor_new(NULL, mem, 1, &n, NULL, (DLDataType){kDLInt, 64, 1}, (DLDevice){kDLCPU, 0});
  if (!t) {
    PyMem_RawFree(mem);
    return NULL;
  }
  t->free_fn = PyMem_RawFree;
  t->free_ctx = mem;
  return (PyObject *)t;
}

static PyObject *batch_get_indices(BatchObject *self, void *c) {
  const ferry_batch *b = self->b;
  int64_t n = b->count;
  Py_INCREF(self);
  TensorObject *t = tensor_new((PyObject *)self, (void *)b->indices, 1, &n, NULL,
                               (DLDataType){kDLInt, 64, 1}, (DLDevice){kDLCPU, 0});
  if (!t)
    Py_DECREF(self);
  return (PyObject *)t;
}

static PyObject *batch_get_count(BatchObject *self, void *c) {
  return PyLong_FromLong(self->b->count);
}
static PyObject *batch_get_index(BatchObject *self, void *c) {
  return PyLong_FromLong(self->b->index);
}
static PyObject *batch_get_epoch(BatchObject *self, void *c) {
  return PyLong_FromLong(self->b->epoch);
}
static PyObject *batch_get_device(BatchObject *self, void *c) {
  return PyLong_FromLong(self->b->device);
}
static PyObject *batch_get_nbytes(BatchObject *self, void *c) {
  return PyLong_FromSize_t(self->b->nbytes);
}
static PyObject *batch_get_data_ptr(BatchObject *self, void *c) {
  return PyLong_FromVoidPtr(self->b->data);
}
static PyObject *batch_get_loader(BatchObject *self, void *c) {
  Py_INCREF(self->loader);
  return (PyObject *)self->loader;
}

static PyObject *batch_repr(BatchObject *self) {
  const ferry_batch *b = self->b;
  return PyUnicode_FromFormat("<ferry batch %d of epoch %d: %d images, %s %s on %s%d>", b->index,
                              b->epoch, b->count, dtype_name(dl_dtype_of(b->dtype)),
                              b->layout == FERRY_LAYOUT_CHW ? "CHW" : "HWC",
                              b->device >= 0 ? "cuda:" : "cpu", b->device >= 0 ? b->device : 0);
}

static PyGetSetDef batch_getset[] = {
    {"images", (getter)batch_get_images, NULL,
     "The images, a Tensor [count, C, H, W] (CHW) or [count, H, W, C] (HWC) over the slot, "
     "no copy.",
     NULL},
    {"labels", (getter)batch_get_labels, NULL, "The labels, an int64 Tensor [count] (a copy).",
     NULL},
    {"indices", (getter)batch_get_indices, NULL,
     "Sample indices into the source, an int64 Tensor [count] (no copy).", NULL},
    {"count", (getter)batch_get_count, NULL, "Images in the batch.", NULL},
    {"index", (getter)batch_get_index, NULL, "Batch number within the epoch.", NULL},
    {"epoch", (getter)batch_get_epoch, NULL, "The epoch.", NULL},
    {"device", (getter)batch_get_device, NULL, "-1: host memory; N: CUDA device N.", NULL},
    {"nbytes", (getter)batch_get_nbytes, NULL, "Bytes of image data.", NULL},
    {"data_ptr", (getter)batch_get_data_ptr, NULL, "Address of the image data.", NULL},
    {"loader", (getter)batch_get_loader, NULL, "The low-level loader.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_repr = (reprfunc)batch_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One slot of a loader's ring. The slot goes back to the loader's workers when "
              "this object and every Tensor, DLPack capsule, array or torch tensor made from "
              "its images are freed.",
    .tp_getset = batch_getset,
};

/* --------------------------------------------------------- single images */

typedef struct owned_image {
  ferry_image im;
} owned_image;

static void free_owned_image(void *p) {
  owned_image *o = p;
  ferry_image_free(&o->im);
  PyMem_RawFree(o);
}

static PyObject *py_decode(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"path",       "channels",  "ignore_orientation",
                           "max_pixels", "max_bytes", NULL};
  PyObject *path = NULL, *max_pixels = Py_None, *max_bytes = Py_None;
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  int ignore = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|$ipOO:decode", kwlist, PyUnicode_FSConverter,
                                   &path, &o.channels, &ignore, &max_pixels, &max_bytes))
    return NULL;
  o.ignore_orientation = ignore;
  if (as_u64(max_pixels, "max_pixels", &o.max_pixels) < 0 ||
      as_u64(max_bytes, "max_bytes", &o.max_bytes) < 0) {
    Py_DECREF(path);
    return NULL;
  }
  owned_image *oi = PyMem_RawCalloc(1, sizeof *oi);
  if (!oi) {
    Py_DECREF(path);
    return PyErr_NoMemory();
  }
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_decode_file(PyBytes_AS_STRING(path), &o, &oi->im);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS Py_DECREF(path);
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
  if (!PyUnicode_FSConverter(arg, &path))
    return NULL;
  ferry_info info;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_probe_file(PyBytes_AS_STRING(path), &info);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS Py_DECREF(path);
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

/* ---------------------------------------------------------------- hashing */

/* The perceptual hashes (src/hash) and the Hamming search (src/search) are
 * wrapped when the library being linked provides them: setup.py looks for
 * their symbols and defines FERRY_PY_HAVE_HASH / FERRY_PY_HAVE_SEARCH. */
#ifdef FERRY_PY_HAVE_HASH
#define HAVE_HASH 1
#else
#define HAVE_HASH 0
#endif
#ifdef FERRY_PY_HAVE_SEARCH
#define HAVE_SEARCH 1
#else
#define HAVE_SEARCH 0
#endif

#if HAVE_HASH
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

static PyTypeObject HasherType = {
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

static PyObject *py_hash_kinds(PyObject *mod, PyObject *unused) {
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

static PyObject *py_hash_kind_parse(PyObject *mod, PyObject *arg) {
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

static PyObject *py_hash_files(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"paths",          "mode",       "kinds",     "hash_size",
                           "colorhash_bits", "max_pixels", "max_bytes", "threads",
                           "device",         "progress",   NULL};
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  int mode = o.mode, threads = 0, device = -1;
  unsigned kinds = o.kinds;
  PyObject *seq = NULL, *max_pixels = Py_None, *max_bytes = Py_None, *progress = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$iIiiOOiiO:hash_files", kwlist, &seq, &mode,
                                   &kinds, &o.hash_size, &o.colorhash_bits, &max_pixels, &max_bytes,
                                   &threads, &device, &progress))
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
  ferry_hash_files_options run;
  ferry_hash_files_options_default(&run);
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

#define HASH_METHODS_1                                                                             \
  {"hash_kinds", (PyCFunction)py_hash_kinds, METH_NOARGS,                                          \
   "hash_kinds()\n--\n\nNames of the hash kinds, by kind number."},                                \
      {"hash_files", (PyCFunction)(void (*)(void))py_hash_files, METH_VARARGS | METH_KEYWORDS,     \
       "hash_files(paths, *, mode=0, kinds=ALL, hash_size=8, colorhash_bits=3, max_pixels=None, "  \
       "max_bytes=None, threads=0, device=-1)\n--\n\n(items, engine_files, note): each item the "  \
       "hash tuple of a file or the ferry.Error it failed with."},                                 \
      {"hash_kind_parse", (PyCFunction)py_hash_kind_parse, METH_O,                                 \
       "hash_kind_parse(name)\n--\n\nThe kind number of a hash name (aliases too)."},
#else
#define HASH_METHODS_1
#endif

#if HAVE_SEARCH
static void free_pairs(void *p) { ferry_pairs_free(p); }

/* hamming_pairs(codes, words, threshold, threads=0, method=0): codes is a
 * C-contiguous buffer of n * words uint64. Returns a uint32 Tensor
 * [npairs, 3] of (i, j, distance), i < j, sorted. */
static PyObject *py_hamming_pairs(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"codes", "words", "threshold", "threads", "method", NULL};
  Py_buffer v;
  int words, method = FERRY_SEARCH_AUTO;
  ferry_search_options o;
  ferry_search_options_default(&o);
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ii|ii:hamming_pairs", kwlist, &v, &words,
                                   &o.threshold, &o.threads, &method))
    return NULL;
  o.method = (ferry_search_method)method;
  PyObject *ret = NULL;
  if (words < 1 || v.len % (8 * (Py_ssize_t)words)) {
    PyErr_SetString(InvalidArgument, "hamming_pairs: codes must hold n * words 64-bit words");
    goto done;
  }
  size_t n = (size_t)v.len / (8 * (size_t)words), count = 0;
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
  TensorObject *t =
      tensor_new(NULL, pairs, 2, shape, NULL, (DLDataType){kDLUInt, 32, 1}, (DLDevice){kDLCPU, 0});
  if (!t) {
    ferry_pairs_free(pairs);
    goto done;
  }
  t->free_fn = free_pairs;
  t->free_ctx = pairs;
  ret = (PyObject *)t;
done:
  PyBuffer_Release(&v);
  return ret;
}

/* group_pairs(n, pairs): (uint32 Tensor [n] of group numbers, UINT32_MAX
 * for none; number of groups). */
static PyObject *py_group_pairs(PyObject *mod, PyObject *args) {
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

static PyObject *py_search_isa(PyObject *mod, PyObject *unused) {
  return PyUnicode_FromString(ferry_search_isa());
}
#define HASH_METHODS_2                                                                             \
  {"hamming_pairs", (PyCFunction)(void (*)(void))py_hamming_pairs, METH_VARARGS | METH_KEYWORDS,   \
   "hamming_pairs(codes, words, threshold, threads=0, method=0)\n--\n\nEvery pair of codes "       \
   "within the threshold: a uint32 Tensor [npairs, 3] of (i, j, distance)."},                      \
      {"group_pairs", (PyCFunction)py_group_pairs, METH_VARARGS,                                   \
       "group_pairs(n, pairs)\n--\n\n(group of each item, number of groups)."},                    \
      {"search_isa", (PyCFunction)py_search_isa, METH_NOARGS,                                      \
       "search_isa()\n--\n\nThe popcount kernel in use."},
#else
#define HASH_METHODS_2
#endif

#define HASH_METHODS HASH_METHODS_1 HASH_METHODS_2

/* ------------------------------------------------------------------ video */

/* VideoReader: one ferry_video_reader (libavcodec on the CPU, or NVDEC on a
 * GPU). VideoBatch: one batch of its frames. The C reader owns one batch
 * buffer (GPU: a few slots) that ferry_video_next() overwrites, so a
 * VideoBatch is a view that is valid until the reader fetches its next
 * batch (GPU: the one after): its frames, DLPack export and buffer then
 * raise StateError instead of showing another batch's data (tensors
 * already exported see the new frames: copy what you keep). A batch holds
 * a strong reference to its reader and the C reader is freed only once no
 * view batch is alive, so memory is never freed under a view. With
 * copy=True (or batch.copy()) a batch owns a copy of its frames. The GIL is
 * released around ferry_video_open/next/close: readers in several threads
 * decode at once. */

typedef struct VideoReaderObject {
  PyObject_HEAD ferry_video_reader *r;
  PyObject *path; /* str */
  ferry_video_info info;
  int device;      /* -1 host, N CUDA device */
  int copy;        /* batches own a copy of their frames */
  int busy;        /* a call runs without the GIL */
  int closed;      /* close() asked; freed once no view batch is alive */
  Py_ssize_t live; /* view batches alive (they point into the reader) */
  uint64_t taken;  /* batches fetched */
  long pid;
  PyObject *weakrefs;
} VideoReaderObject;

typedef struct VideoBatchObject {
  PyObject_HEAD VideoReaderObject *reader; /* strong reference */
  void *data;
  void *own;    /* data is this copy (PyMem_RawMalloc), or NULL: a view */
  uint64_t seq; /* reader->taken when fetched */
  int count, index, channels, height, width, device;
  ferry_layout layout;
  ferry_dtype dtype;
  size_t nbytes;
  PyObject *timestamps, *frame_indices; /* tuples of float / int */
} VideoBatchObject;

static PyTypeObject VideoReaderType, VideoBatchType;

static void video_close_now(VideoReaderObject *self) {
  ferry_video_reader *r = self->r;
  self->r = NULL;
  if (!r || (long)getpid() != self->pid)
    return; /* after fork the decoder's threads are the parent's: leave it */
  Py_BEGIN_ALLOW_THREADS ferry_video_close(r);
  Py_END_ALLOW_THREADS
}

static void video_maybe_close(VideoReaderObject *self) {
  if (self->closed && !self->busy && self->live == 0)
    video_close_now(self);
}

static PyObject *video_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"path",    "width",  "height",          "crop", "filter",
                           "stride",  "rate",   "start",           "end",  "batch_size",
                           "layout",  "dtype",  "normalize",       "mean", "std",
                           "threads", "device", "ignore_rotation", "copy", "strict", NULL};
  ferry_video_options o;
  ferry_video_options_default(&o);
  PyObject *path = NULL;
  int crop = o.crop, filter = o.filter, layout = o.layout, dtype = o.dtype;
  int normalize = o.normalize, ignore_rotation = o.ignore_rotation, copy = 0, strict = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "O&|$iiiiidddiiip(fff)(fff)iippp:VideoReader", kwlist,
          PyUnicode_FSConverter, &path, &o.width, &o.height, &crop, &filter, &o.stride, &o.rate,
          &o.start_s, &o.end_s, &o.batch_size, &layout, &dtype, &normalize, &o.mean[0], &o.mean[1],
          &o.mean[2], &o.std[0], &o.std[1], &o.std[2], &o.threads, &o.device, &ignore_rotation,
          &copy, &strict))
    return NULL;
  o.strict = strict;
  o.crop = (ferry_crop)crop;
  o.filter = (ferry_filter)filter;
  o.layout = (ferry_layout)layout;
  o.dtype = (ferry_dtype)dtype;
  o.normalize = normalize;
  o.ignore_rotation = ignore_rotation;
  if (copy && o.device >= 0) {
    Py_DECREF(path);
    PyErr_SetString(InvalidArgument, "copy=True needs device=\"cpu\": copy GPU frames with "
                                     "torch.from_dlpack(batch).clone()");
    return NULL;
  }
  VideoReaderObject *self = (VideoReaderObject *)type->tp_alloc(type, 0);
  if (!self) {
    Py_DECREF(path);
    return NULL;
  }
  self->path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
  if (!self->path) {
    Py_DECREF(path);
    Py_DECREF(self);
    return NULL;
  }
  self->device = o.device;
  self->copy = copy;
  self->pid = (long)getpid();
  ferry_video_reader *r = NULL;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_video_open(PyBytes_AS_STRING(path), &o, &r);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS Py_DECREF(path);
  if (rc) {
    Py_DECREF(self);
    return raise_status(rc, msg);
  }
  self->r = r;
  ferry_video_get_info(r, &self->info);
  return (PyObject *)self;
}

static void video_dealloc(VideoReaderObject *self) {
  /* No view batch is alive (each holds a reference), no call is running. */
  if (self->weakrefs)
    PyObject_ClearWeakRefs((PyObject *)self);
  video_close_now(self);
  Py_XDECREF(self->path);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int video_check(VideoReaderObject *self) {
  if (self->closed || !self->r) {
    PyErr_Format(StateError, "%U: the video reader is closed", self->path);
    return -1;
  }
  if (self->busy) {
    PyErr_Format(StateError,
                 "%U: the video reader is in use by another thread (one consumer at a time: "
                 "open one VideoReader per thread)",
                 self->path);
    return -1;
  }
  if ((long)getpid() != self->pid) {
    PyErr_Format(StateError,
                 "%U: this video reader was opened in another process (before fork): open the "
                 "VideoReader in this process",
                 self->path);
    return -1;
  }
  return 0;
}

static PyObject *tuple_of_doubles(const double *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *x = PyFloat_FromDouble(v[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

static PyObject *tuple_of_int64(const int64_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *x = PyLong_FromLongLong((long long)v[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

/* A new VideoBatch of `reader`: a view of `data`, or (own) a batch that
 * takes ownership of `own`. Steals the references to the tuples. */
static VideoBatchObject *vbatch_new(VideoReaderObject *reader, const VideoBatchObject *like,
                                    void *data, void *own, PyObject *timestamps,
                                    PyObject *frame_indices) {
  VideoBatchObject *self = PyObject_New(VideoBatchObject, &VideoBatchType);
  if (!self) {
    Py_DECREF(timestamps);
    Py_DECREF(frame_indices);
    return NULL;
  }
  self->count = like->count; /* geometry and sequence of `like` */
  self->index = like->index;
  self->channels = like->channels;
  self->height = like->height;
  self->width = like->width;
  self->device = like->device;
  self->layout = like->layout;
  self->dtype = like->dtype;
  self->nbytes = like->nbytes;
  self->seq = like->seq;
  Py_INCREF(reader);
  self->reader = reader;
  self->data = data;
  self->own = own;
  self->timestamps = timestamps;
  self->frame_indices = frame_indices;
  if (!own)
    reader->live++;
  return self;
}

/* The batch ferry_video_next() returned, as a VideoBatch (a copy with
 * copy=True). */
static PyObject *vbatch_wrap(VideoReaderObject *reader, const ferry_video_batch *b) {
  PyObject *ts = tuple_of_doubles(b->timestamps, b->count);
  PyObject *ix = ts ? tuple_of_int64(b->frame_indices, b->count) : NULL;
  if (!ix) {
    Py_XDECREF(ts);
    return NULL;
  }
  VideoBatchObject like = {.count = b->count,
                           .index = b->index,
                           .channels = b->channels,
                           .height = b->height,
                           .width = b->width,
                           .device = b->device,
                           .layout = b->layout,
                           .dtype = b->dtype,
                           .nbytes = b->nbytes,
                           .seq = reader->taken};
  void *own = NULL;
  if (reader->copy) {
    own = PyMem_RawMalloc(b->nbytes ? b->nbytes : 1);
    if (!own) {
      Py_DECREF(ts);
      Py_DECREF(ix);
      return PyErr_NoMemory();
    }
    memcpy(own, b->data, b->nbytes);
  }
  VideoBatchObject *self = vbatch_new(reader, &like, own ? own : b->data, own, ts, ix);
  if (!self)
    PyMem_RawFree(own);
  return (PyObject *)self;
}

static PyObject *video_next(VideoReaderObject *self, PyObject *unused) {
  if (video_check(self) < 0)
    return NULL;
  self->busy = 1;
  ferry_video_batch *b = NULL;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc = ferry_video_next(self->r, &b);
  if (rc && rc != FERRY_END)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS self->busy = 0;
  /* The reader writes a batch's memory only when it returns one: after
   * FERRY_END or an error the last batch still holds its frames. */
  if (rc == FERRY_END) {
    video_maybe_close(self);
    Py_RETURN_NONE;
  }
  if (rc) {
    video_maybe_close(self);
    return raise_status(rc, msg);
  }
  self->taken++;
  PyObject *batch = vbatch_wrap(self, b);
  if (!batch)
    return NULL;
  if (PyErr_CheckSignals() < 0) { /* Ctrl-C pressed while decoding */
    Py_DECREF(batch);
    return NULL;
  }
  return batch;
}

static PyObject *video_close(VideoReaderObject *self, PyObject *unused) {
  self->closed = 1;
  video_maybe_close(self);
  Py_RETURN_NONE;
}

static PyObject *video_stats(VideoReaderObject *self, PyObject *unused) {
  if (!self->r) {
    PyErr_Format(StateError, "%U: the video reader is closed", self->path);
    return NULL;
  }
  ferry_video_stats s;
  ferry_video_get_stats(self->r, &s);
  return Py_BuildValue("{sKsKsdsdsdsdsKsKsLsd}", "decoded", (unsigned long long)s.decoded,
                       "kept", (unsigned long long)s.kept, "decode_s", s.decode_s, "convert_s",
                       s.convert_s, "resize_s", s.resize_s, "open_s", s.open_s, "batches",
                       (unsigned long long)self->taken, "damaged", (unsigned long long)s.damaged,
                       "first_damaged", (long long)s.first_damaged, "first_damaged_s",
                       s.first_damaged_s);
}

static PyObject *video_get_info(VideoReaderObject *self, void *c) {
  const ferry_video_info *i = &self->info;
  return Py_BuildValue("{sssisisisisisisdsdsdsLsO}", "codec", i->codec, "width", i->width, "height",
                       i->height, "rotation", i->rotation, "upright_width", i->upright_width,
                       "upright_height", i->upright_height, "bit_depth", i->bit_depth, "fps",
                       i->fps, "start", i->start_s, "duration", i->duration_s, "frames",
                       (long long)i->frames, "nvdec", i->nvdec ? Py_True : Py_False);
}

static PyObject *video_get_path(VideoReaderObject *self, void *c) {
  Py_INCREF(self->path);
  return self->path;
}
static PyObject *video_get_live(VideoReaderObject *self, void *c) {
  return PyLong_FromSsize_t(self->live);
}
static PyObject *video_get_closed(VideoReaderObject *self, void *c) {
  return PyBool_FromLong(self->closed || !self->r);
}
static PyObject *video_get_freed(VideoReaderObject *self, void *c) {
  return PyBool_FromLong(!self->r);
}
static PyObject *video_get_device(VideoReaderObject *self, void *c) {
  return PyLong_FromLong(self->device);
}
static PyObject *video_get_taken(VideoReaderObject *self, void *c) {
  return PyLong_FromUnsignedLongLong((unsigned long long)self->taken);
}

static PyObject *video_repr(VideoReaderObject *self) {
  return PyUnicode_FromFormat("<ferry video reader %R: %s %dx%d, %s%s>", self->path,
                              self->info.codec, self->info.upright_width, self->info.upright_height,
                              self->device >= 0 ? "cuda" : "cpu",
                              self->closed || !self->r ? ", closed" : "");
}

static PyMethodDef video_methods[] = {
    {"next", (PyCFunction)video_next, METH_NOARGS,
     "next()\n--\n\nDecodes the next batch (without the GIL): a VideoBatch, or None after the "
     "last. A damaged file gives its frames first, then raises; later calls raise again. The "
     "previous batch's frames are overwritten (GPU: the one before it)."},
    {"close", (PyCFunction)video_close, METH_NOARGS,
     "close()\n--\n\nCloses the reader: freed now, or when the last batch viewing its memory "
     "is freed."},
    {"stats", (PyCFunction)video_stats, METH_NOARGS,
     "stats()\n--\n\nFrames decoded and kept, seconds per stage, batches fetched."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef video_getset[] = {
    {"info", (getter)video_get_info, NULL,
     "The video stream: codec, width, height, rotation, upright_width, upright_height, "
     "bit_depth, fps, start, duration, frames, nvdec (a dict).",
     NULL},
    {"path", (getter)video_get_path, NULL, "The file.", NULL},
    {"live_batches", (getter)video_get_live, NULL, "VideoBatch views alive.", NULL},
    {"closed", (getter)video_get_closed, NULL, "close() was called.", NULL},
    {"freed", (getter)video_get_freed, NULL, "The C reader has been freed.", NULL},
    {"device", (getter)video_get_device, NULL, "-1 for host memory, N for CUDA device N.", NULL},
    {"batches_read", (getter)video_get_taken, NULL, "Batches fetched so far.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject VideoReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.VideoReader",
    .tp_basicsize = sizeof(VideoReaderObject),
    .tp_dealloc = (destructor)video_dealloc,
    .tp_repr = (reprfunc)video_repr,
    .tp_weaklistoffset = offsetof(VideoReaderObject, weakrefs),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "VideoReader(path, *, width=0, height=0, crop=CROP_NONE, ...)\n--\n\n"
              "The low-level video reader: one ferry_video_reader. Options are the C "
              "library's (enums as ints). Use ferry.VideoReader, which wraps it.",
    .tp_methods = video_methods,
    .tp_getset = video_getset,
    .tp_new = video_new,
};

/* VideoBatch */

/* 0 while the batch's frames are the reader's current ones (GPU: or the
 * previous ones), or a copy; else -1 with StateError. */
static int vbatch_check(VideoBatchObject *self) {
  if (self->own)
    return 0;
  uint64_t later = self->reader->taken - self->seq;
  if (later <= (self->device >= 0 ? 1u : 0u))
    return 0;
  PyErr_Format(StateError,
               "%U: video batch %d is gone: the reader has fetched batch %llu since, and a "
               "batch's frames are valid until the reader fetches its next batch%s; copy what "
               "you keep (batch.copy(), array.copy(), tensor.clone()) or open the VideoReader "
               "with copy=True",
               self->reader->path, self->index, (unsigned long long)(self->reader->taken - 1),
               self->device >= 0 ? " after the next one (GPU)" : "");
  return -1;
}

static int vbatch_check_owner(PyObject *owner) { return vbatch_check((VideoBatchObject *)owner); }

static void vbatch_dealloc(VideoBatchObject *self) {
  VideoReaderObject *reader = self->reader;
  if (self->own)
    PyMem_RawFree(self->own);
  else {
    reader->live--;
    video_maybe_close(reader);
  }
  Py_XDECREF(self->timestamps);
  Py_XDECREF(self->frame_indices);
  PyObject_Free(self);
  Py_DECREF(reader);
}

static void vbatch_shape(const VideoBatchObject *b, int64_t shape[4]) {
  shape[0] = b->count;
  if (b->layout == FERRY_LAYOUT_CHW) {
    shape[1] = b->channels, shape[2] = b->height, shape[3] = b->width;
  } else {
    shape[1] = b->height, shape[2] = b->width, shape[3] = b->channels;
  }
}

/* The frames as a Tensor that keeps this batch alive. */
static TensorObject *vbatch_tensor(VideoBatchObject *self) {
  if (vbatch_check(self) < 0)
    return NULL;
  int64_t shape[4];
  vbatch_shape(self, shape);
  DLDevice dev = {kDLCPU, 0};
  if (self->device >= 0)
    dev = (DLDevice){kDLCUDA, self->device};
  Py_INCREF(self);
  TensorObject *t =
      tensor_new((PyObject *)self, self->data, 4, shape, NULL, dl_dtype_of(self->dtype), dev);
  if (!t) {
    Py_DECREF(self);
    return NULL;
  }
  t->check = vbatch_check_owner;
  return t;
}

static PyObject *vbatch_get_frames(VideoBatchObject *self, void *c) {
  return (PyObject *)vbatch_tensor(self);
}

static PyObject *vbatch_dlpack(VideoBatchObject *self, PyObject *args, PyObject *kwargs) {
  TensorObject *t = vbatch_tensor(self);
  if (!t)
    return NULL;
  PyObject *cap = tensor_dlpack(t, args, kwargs);
  Py_DECREF(t);
  return cap;
}

static PyObject *vbatch_dlpack_device(VideoBatchObject *self, PyObject *unused) {
  if (self->device >= 0)
    return Py_BuildValue("(ii)", (int)kDLCUDA, self->device);
  return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}

static int vbatch_getbuffer(VideoBatchObject *self, Py_buffer *view, int flags) {
  TensorObject *t = vbatch_tensor(self);
  if (!t)
    return -1;
  int rc = tensor_getbuffer(t, view, flags); /* view->obj holds t */
  Py_DECREF(t);
  return rc;
}

static PyBufferProcs vbatch_as_buffer = {(getbufferproc)vbatch_getbuffer, NULL};

/* A batch of its own: the frames copied (host batches only). */
static PyObject *vbatch_copy(VideoBatchObject *self, PyObject *unused) {
  if (self->device >= 0) {
    PyErr_SetString(InvalidArgument, "copy() of a GPU video batch: use "
                                     "torch.from_dlpack(batch).clone()");
    return NULL;
  }
  if (vbatch_check(self) < 0)
    return NULL;
  void *own = PyMem_RawMalloc(self->nbytes ? self->nbytes : 1);
  if (!own)
    return PyErr_NoMemory();
  memcpy(own, self->data, self->nbytes);
  Py_INCREF(self->timestamps);
  Py_INCREF(self->frame_indices);
  VideoBatchObject *c =
      vbatch_new(self->reader, self, own, own, self->timestamps, self->frame_indices);
  if (!c)
    PyMem_RawFree(own);
  return (PyObject *)c;
}

/* numpy.from_dlpack(self): a NumPy array over the frames (host only). */
static PyObject *vbatch_numpy(VideoBatchObject *self, PyObject *unused) {
  if (self->device >= 0) {
    PyErr_SetString(InvalidArgument, "numpy() of a GPU video batch: a NumPy array cannot live "
                                     "on a GPU (use torch.from_dlpack(batch))");
    return NULL;
  }
  if (vbatch_check(self) < 0)
    return NULL;
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np)
    return NULL;
  PyObject *arr = PyObject_HasAttrString(np, "from_dlpack")
                      ? PyObject_CallMethod(np, "from_dlpack", "O", (PyObject *)self)
                      : PyObject_CallMethod(np, "asarray", "O", (PyObject *)self);
  Py_DECREF(np);
  return arr;
}

static PyObject *vbatch_get_shape(VideoBatchObject *self, void *c) {
  int64_t s[4];
  vbatch_shape(self, s);
  return Py_BuildValue("(LLLL)", (long long)s[0], (long long)s[1], (long long)s[2],
                       (long long)s[3]);
}
static PyObject *vbatch_get_dtype(VideoBatchObject *self, void *c) {
  return PyUnicode_FromString(dtype_name(dl_dtype_of(self->dtype)));
}
static PyObject *vbatch_get_layout(VideoBatchObject *self, void *c) {
  return PyUnicode_FromString(self->layout == FERRY_LAYOUT_CHW ? "CHW" : "HWC");
}
static PyObject *vbatch_get_device(VideoBatchObject *self, void *c) {
  if (self->device >= 0)
    return PyUnicode_FromFormat("cuda:%d", self->device);
  return PyUnicode_FromString("cpu");
}
static PyObject *vbatch_get_timestamps(VideoBatchObject *self, void *c) {
  Py_INCREF(self->timestamps);
  return self->timestamps;
}
static PyObject *vbatch_get_frame_indices(VideoBatchObject *self, void *c) {
  Py_INCREF(self->frame_indices);
  return self->frame_indices;
}
static PyObject *vbatch_get_count(VideoBatchObject *self, void *c) {
  return PyLong_FromLong(self->count);
}
static PyObject *vbatch_get_index(VideoBatchObject *self, void *c) {
  return PyLong_FromLong(self->index);
}
static PyObject *vbatch_get_nbytes(VideoBatchObject *self, void *c) {
  return PyLong_FromSize_t(self->nbytes);
}
static PyObject *vbatch_get_data_ptr(VideoBatchObject *self, void *c) {
  return PyLong_FromVoidPtr(self->data);
}
static PyObject *vbatch_get_valid(VideoBatchObject *self, void *c) {
  if (vbatch_check(self) < 0) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}
static PyObject *vbatch_get_owns(VideoBatchObject *self, void *c) {
  return PyBool_FromLong(self->own != NULL);
}
static PyObject *vbatch_get_reader(VideoBatchObject *self, void *c) {
  Py_INCREF(self->reader);
  return (PyObject *)self->reader;
}

static Py_ssize_t vbatch_len(VideoBatchObject *self) { return self->count; }

static PySequenceMethods vbatch_as_sequence = {.sq_length = (lenfunc)vbatch_len};

static PyObject *vbatch_repr(VideoBatchObject *self) {
  return PyUnicode_FromFormat("<ferry video batch %d of %R: %d frames, %s %s on %s%s>", self->index,
                              self->reader->path, self->count, dtype_name(dl_dtype_of(self->dtype)),
                              self->layout == FERRY_LAYOUT_CHW ? "CHW" : "HWC",
                              self->device >= 0 ? "cuda" : "cpu", self->own ? ", a copy" : "");
}

static PyMethodDef vbatch_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))vbatch_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "Exports the frames as a DLPack capsule, without a copy (unless copy=True)."},
    {"__dlpack_device__", (PyCFunction)vbatch_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n--\n\n(1, 0) for host memory, (2, N) for CUDA device N."},
    {"copy", (PyCFunction)vbatch_copy, METH_NOARGS,
     "copy()\n--\n\nA batch of its own (host batches): the frames copied, valid for as long "
     "as it is referenced."},
    {"numpy", (PyCFunction)vbatch_numpy, METH_NOARGS,
     "numpy()\n--\n\nnumpy.from_dlpack(batch): a NumPy array over the frames, no copy (host "
     "batches)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef vbatch_getset[] = {
    {"frames", (getter)vbatch_get_frames, NULL,
     "The frames, a Tensor [count, C, H, W] (CHW) or [count, H, W, C] (HWC), no copy.", NULL},
    {"shape", (getter)vbatch_get_shape, NULL, "Shape of the frames.", NULL},
    {"dtype", (getter)vbatch_get_dtype, NULL, "'uint8', 'float16' or 'float32'.", NULL},
    {"layout", (getter)vbatch_get_layout, NULL, "'CHW' or 'HWC'.", NULL},
    {"device", (getter)vbatch_get_device, NULL, "'cpu' or 'cuda:N'.", NULL},
    {"timestamps", (getter)vbatch_get_timestamps, NULL,
     "Presentation times of the frames, seconds (a tuple of floats).", NULL},
    {"frame_indices", (getter)vbatch_get_frame_indices, NULL,
     "Frame numbers in presentation order from 0 (a tuple of ints).", NULL},
    {"count", (getter)vbatch_get_count, NULL, "Frames in the batch.", NULL},
    {"index", (getter)vbatch_get_index, NULL, "Batch number, from 0.", NULL},
    {"nbytes", (getter)vbatch_get_nbytes, NULL, "Bytes of frame data.", NULL},
    {"data_ptr", (getter)vbatch_get_data_ptr, NULL, "Address of the frame data.", NULL},
    {"valid", (getter)vbatch_get_valid, NULL,
     "False once the reader has overwritten the frames (a view batch after the next batch; "
     "GPU: the one after).",
     NULL},
    {"owns_data", (getter)vbatch_get_owns, NULL, "The frames are a copy of this batch's own.",
     NULL},
    {"reader", (getter)vbatch_get_reader, NULL, "The low-level reader.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject VideoBatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.VideoBatch",
    .tp_basicsize = sizeof(VideoBatchObject),
    .tp_dealloc = (destructor)vbatch_dealloc,
    .tp_repr = (reprfunc)vbatch_repr,
    .tp_as_sequence = &vbatch_as_sequence,
    .tp_as_buffer = &vbatch_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch of video frames: torch.from_dlpack(batch) / numpy.from_dlpack(batch) "
              "view them without a copy. The frames are the reader's buffer: valid until the "
              "reader fetches its next batch (GPU: the one after), after which the batch "
              "raises StateError; batch.copy() or VideoReader(copy=True) give frames of "
              "their own. timestamps and frame_indices are tuples, always valid.",
    .tp_methods = vbatch_methods,
    .tp_getset = vbatch_getset,
};

/* ------------------------------------------------------------------ module */

static PyMethodDef module_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))py_decode, METH_VARARGS | METH_KEYWORDS,
     "decode(path, *, channels=3, ignore_orientation=False, max_pixels=None, "
     "max_bytes=None)\n--\n\nDecodes an image file into a uint8 Tensor [H, W, C] (EXIF "
     "orientation applied unless ignore_orientation)."},
    {"probe", (PyCFunction)py_probe, METH_O,
     "probe(path)\n--\n\nWhat the header of an image file says, as a dict."},
    {"strerror", (PyCFunction)py_strerror, METH_O,
     "strerror(status)\n--\n\nThe C library's name for a status code."},
    {"error_class", (PyCFunction)py_error_class, METH_O,
     "error_class(status)\n--\n\nThe ferry.Error subclass raised for a status code."},
    HASH_METHODS{NULL, NULL, 0, NULL}};

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
      PyType_Ready(&VideoBatchType) < 0)
    return NULL;
#if HAVE_HASH
  if (PyType_Ready(&HasherType) < 0)
    return NULL;
#endif
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
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
#if HAVE_HASH
  Py_INCREF(&HasherType);
  if (PyModule_AddObject(m, "Hasher", (PyObject *)&HasherType) < 0 ||
      add_int(m, "HASH_FAST", FERRY_HASH_FAST) < 0 ||
      add_int(m, "HASH_COMPATIBLE", FERRY_HASH_COMPATIBLE) < 0 ||
      add_int(m, "HASH_KIND_COUNT", FERRY_HASH_KIND_COUNT) < 0)
    goto fail;
#endif
  if (PyModule_AddStringConstant(m, "version", ferry_version()) < 0 ||
      add_int(m, "HELD_ACROSS_EPOCHS", HELD_ACROSS_EPOCHS) < 0 ||
      add_int(m, "HAVE_HASH", HAVE_HASH) < 0 || add_int(m, "HAVE_SEARCH", HAVE_SEARCH) < 0 ||
      add_int(m, "OK", FERRY_OK) < 0 || add_int(m, "END", FERRY_END) < 0 ||
      add_int(m, "EINVAL", FERRY_EINVAL) < 0 || add_int(m, "EIO", FERRY_EIO) < 0 ||
      add_int(m, "EUNSUPPORTED", FERRY_EUNSUPPORTED) < 0 ||
      add_int(m, "ECORRUPT", FERRY_ECORRUPT) < 0 ||
      add_int(m, "ETOO_LARGE", FERRY_ETOO_LARGE) < 0 || add_int(m, "ENOMEM", FERRY_ENOMEM) < 0 ||
      add_int(m, "EEMPTY", FERRY_EEMPTY) < 0 || add_int(m, "ESTATE", FERRY_ESTATE) < 0 ||
      add_int(m, "EINTERNAL", FERRY_EINTERNAL) < 0 || add_int(m, "ETIMEOUT", FERRY_ETIMEOUT) < 0 ||
      add_int(m, "U8", FERRY_U8) < 0 ||
      add_int(m, "F16", FERRY_F16) < 0 || add_int(m, "F32", FERRY_F32) < 0 ||
      add_int(m, "HWC", FERRY_LAYOUT_HWC) < 0 || add_int(m, "CHW", FERRY_LAYOUT_CHW) < 0 ||
      add_int(m, "CROP_NONE", FERRY_CROP_NONE) < 0 ||
      add_int(m, "CROP_CENTER", FERRY_CROP_CENTER) < 0 ||
      add_int(m, "CROP_RANDOM", FERRY_CROP_RANDOM) < 0 ||
      add_int(m, "FILTER_BILINEAR", FERRY_FILTER_BILINEAR) < 0 ||
      add_int(m, "FILTER_TRIANGLE", FERRY_FILTER_TRIANGLE) < 0 ||
      add_int(m, "FILTER_AREA", FERRY_FILTER_AREA) < 0 ||
      add_int(m, "FILTER_BICUBIC", FERRY_FILTER_BICUBIC) < 0 ||
      add_int(m, "FILTER_LANCZOS", FERRY_FILTER_LANCZOS) < 0 ||
      add_int(m, "FILTER_NEAREST", FERRY_FILTER_NEAREST) < 0 ||
      add_int(m, "ON_ERROR_SKIP", FERRY_ON_ERROR_SKIP) < 0 ||
      add_int(m, "ON_ERROR_FAIL", FERRY_ON_ERROR_FAIL) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
