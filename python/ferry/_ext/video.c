/* video.c — VideoReader and VideoBatch over a ferry_video_reader. */
#include "ferry_py.h"

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
  static char *kwlist[] = {
      "path",   "width",           "height", "crop",   "filter",     "stride", "rate", "start",
      "end",    "batch_size",      "layout", "dtype",  "normalize",  "mean",   "std",  "threads",
      "device", "ignore_rotation", "copy",   "strict", "nvdec_keep", NULL};
  ferry_video_options o;
  ferry_video_options_default(&o);
  PyObject *path = NULL;
  int crop = o.crop, filter = o.filter, layout = o.layout, dtype = o.dtype;
  int normalize = o.normalize, ignore_rotation = o.ignore_rotation, copy = 0, strict = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|$iiiiidddiiip(fff)(fff)iipppi:VideoReader",
                                   kwlist, PyUnicode_FSConverter, &path, &o.width, &o.height, &crop,
                                   &filter, &o.stride, &o.rate, &o.start_s, &o.end_s, &o.batch_size,
                                   &layout, &dtype, &normalize, &o.mean[0], &o.mean[1], &o.mean[2],
                                   &o.std[0], &o.std[1], &o.std[2], &o.threads, &o.device,
                                   &ignore_rotation, &copy, &strict, &o.nvdec_keep))
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

/* frame_at(k) -> (Tensor [H, W, 3] uint8 owning a copy, timestamp) */
static PyObject *video_frame_at(VideoReaderObject *self, PyObject *arg) {
  long long k = PyLong_AsLongLong(arg);
  if (k == -1 && PyErr_Occurred())
    return NULL;
  if (video_check(self) < 0)
    return NULL;
  self->busy = 1;
  ferry_image im;
  double t = 0;
  int rc;
  char msg[1024];
  uint8_t *copy = NULL;
  Py_BEGIN_ALLOW_THREADS rc = ferry_video_frame_at(self->r, (int64_t)k, &im, &t);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  else if ((copy = PyMem_RawMalloc((size_t)im.width * im.height * 3 + 1)))
    for (int y = 0; y < im.height; y++)
      memcpy(copy + (size_t)y * im.width * 3, im.data + (size_t)y * im.stride,
             (size_t)im.width * 3);
  Py_END_ALLOW_THREADS self->busy = 0;
  if (rc) {
    video_maybe_close(self);
    return raise_status(rc, msg);
  }
  if (!copy)
    return PyErr_NoMemory();
  int64_t shape[3] = {im.height, im.width, 3};
  TensorObject *tensor =
      tensor_new(NULL, copy, 3, shape, NULL, (DLDataType){kDLUInt, 8, 1}, (DLDevice){kDLCPU, 0});
  if (!tensor) {
    PyMem_RawFree(copy);
    return NULL;
  }
  tensor->free_fn = PyMem_RawFree;
  tensor->free_ctx = copy;
  return Py_BuildValue("(Nd)", (PyObject *)tensor, t);
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
  return Py_BuildValue("{sKsKsdsdsdsdsKsKsLsdsd}", "decoded", (unsigned long long)s.decoded, "kept",
                       (unsigned long long)s.kept, "decode_s", s.decode_s, "convert_s", s.convert_s,
                       "resize_s", s.resize_s, "open_s", s.open_s, "batches",
                       (unsigned long long)self->taken, "damaged", (unsigned long long)s.damaged,
                       "first_damaged", (long long)s.first_damaged, "first_damaged_s",
                       s.first_damaged_s, "wait_s", s.wait_s);
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
    {"frame_at", (PyCFunction)video_frame_at, METH_O,
     "frame_at(k) -> (Tensor [H, W, 3] uint8, timestamp): frame k, random access."},
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

PyTypeObject VideoReaderType = {
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

PyTypeObject VideoBatchType = {
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
