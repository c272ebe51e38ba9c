/* batch.c — Batch: one slot of a loader's ring, taken with
 * ferry_loader_next() and released when the object is freed. */
#include "ferry_py.h"

/* ------------------------------------------------------------------- Batch */

struct BatchObject {
  PyObject_HEAD LoaderObject *loader; /* strong reference */
  ferry_batch *b;
  void *stream; /* the consumer's CUDA stream (device batches) */
  unsigned gen; /* the loader's epoch generation when taken */
  int index;    /* b->index (b belongs to the workers once released) */
};

PyObject *batch_wrap(LoaderObject *loader, ferry_batch *b) {
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

void batch_record_stream(BatchObject *self, void *stream) { self->stream = stream; }

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

PyTypeObject BatchType = {
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
