/* tensor.c — Tensor: a typed view of memory exported without a copy through
 * DLPack (__dlpack__, __dlpack_device__) and the buffer protocol. */
#include "ferry_py.h"

const char *dtype_name(DLDataType t) {
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

DLDataType dl_dtype_of(ferry_dtype d) {
  DLDataType t = {kDLUInt, 8, 1};
  if (d == FERRY_F16)
    t = (DLDataType){kDLFloat, 16, 1};
  else if (d == FERRY_F32)
    t = (DLDataType){kDLFloat, 32, 1};
  return t;
}

/* A new Tensor over `data`. `strides` NULL = compact. Takes no reference to
 * owner (the caller passes one it gives away), frees nothing on failure. */
TensorObject *tensor_new(PyObject *owner, void *data, int ndim, const int64_t *shape,
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

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None).
 * Returns a DLPack 1.0 capsule ("dltensor_versioned") to a consumer whose
 * max_version is (1, x) or later, else a 0.8 capsule ("dltensor"). */
PyObject *tensor_dlpack(TensorObject *t, PyObject *args, PyObject *kwargs) {
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

int tensor_getbuffer(TensorObject *t, Py_buffer *view, int flags) {
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

PyTypeObject TensorType = {
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
