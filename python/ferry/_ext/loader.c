/* loader.c — Loader: a ferry_loader (its worker threads and its ring of batch
 * slots). */
#include "ferry_py.h"

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

int forked(const LoaderObject *self) { return (long)getpid() != self->pid; }

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

void loader_maybe_close(LoaderObject *self) {
  if (self->closed && !self->busy && !self->stopping && self->live == 0)
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

/* The paths of a list source (a list of bytes, as ferry/_loader.py makes
 * it) and its labels (a buffer of int32, or None): borrowed from the list's
 * items, valid while it lives. */
typedef struct path_list {
  const char **paths;
  Py_ssize_t count;
  Py_buffer labels;
  int has_labels;
} path_list;

static void path_list_free(path_list *p) {
  PyMem_Free(p->paths);
  if (p->has_labels)
    PyBuffer_Release(&p->labels);
  memset(p, 0, sizeof *p);
}

static int path_list_get(PyObject *list, PyObject *labels, path_list *p) {
  memset(p, 0, sizeof *p);
  p->count = PyList_GET_SIZE(list);
  p->paths = PyMem_Calloc((size_t)p->count + 1, sizeof *p->paths);
  if (!p->paths) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < p->count; i++) {
    PyObject *item = PyList_GET_ITEM(list, i);
    if (!PyBytes_Check(item)) {
      PyErr_Format(PyExc_TypeError, "Loader: path %zd must be bytes, not %s", i,
                   Py_TYPE(item)->tp_name);
      path_list_free(p);
      return -1;
    }
    p->paths[i] = PyBytes_AS_STRING(item);
  }
  if (labels && labels != Py_None) {
    if (PyObject_GetBuffer(labels, &p->labels, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
      path_list_free(p);
      return -1;
    }
    p->has_labels = 1;
    if (p->labels.itemsize != 4 || p->labels.len != p->count * 4) {
      PyErr_Format(PyExc_ValueError, "Loader: %zd labels (int32) for %zd paths",
                   p->labels.len / (p->labels.itemsize ? p->labels.itemsize : 1), p->count);
      path_list_free(p);
      return -1;
    }
  }
  return 0;
}

/* Loader(source, labels=None, **options): source a path (str, bytes,
 * os.PathLike) or a list of bytes paths; the options by the C library's
 * registry (options.c), which checks every value. */
static PyObject *loader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *given = NULL, *labels = NULL, *source = NULL;
  if (!PyArg_ParseTuple(args, "O|O:Loader", &given, &labels))
    return NULL;
  path_list list = {0};
  if (PyList_Check(given)) {
    if (path_list_get(given, labels, &list) < 0)
      return NULL;
  } else if (labels && labels != Py_None) {
    PyErr_SetString(PyExc_TypeError, "Loader: labels go with a list of paths");
    return NULL;
  } else if (!PyUnicode_FSConverter(given, &source)) {
    return NULL;
  }
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  if (options_from_kwargs(&o, kwargs, "Loader") < 0) {
    Py_XDECREF(source);
    path_list_free(&list);
    return NULL;
  }
  o.source = source ? PyBytes_AS_STRING(source) : NULL;

  LoaderObject *self = (LoaderObject *)type->tp_alloc(type, 0);
  if (!self) {
    Py_XDECREF(source);
    path_list_free(&list);
    return NULL;
  }
  pthread_mutex_init(&self->skip_mu, NULL);
  /* a slot count per slot of the longest ring the registry allows */
  self->slot_live =
      PyMem_Calloc((size_t)ferry_loader_option_find("prefetch")->max, sizeof(Py_ssize_t));
  if (!self->slot_live) {
    Py_XDECREF(source);
    path_list_free(&list);
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  self->nslots = o.prefetch;
  self->device = o.device;
  self->batch_size = o.batch_size;
  self->pid = (long)getpid();
  self->epoch = -1;
  o.on_skip = on_skip;
  o.on_skip_user = self;

  ferry_loader *L = NULL;
  int rc;
  char msg[1024];
  Py_BEGIN_ALLOW_THREADS rc =
      source ? ferry_loader_open(&o, &L)
             : ferry_loader_open_paths(&o, list.paths,
                                       list.has_labels ? (const int32_t *)list.labels.buf : NULL,
                                       (int64_t)list.count, &L);
  if (rc)
    snprintf(msg, sizeof msg, "%s", ferry_last_error());
  Py_END_ALLOW_THREADS Py_XDECREF(source);
  path_list_free(&list);
  if (rc) {
    Py_DECREF(self);
    return raise_status(rc, msg);
  }
  self->L = L;
  self->nslots = ferry_loader_prefetch(L);
  self->options = o;
  self->options.source = NULL;
  self->options.on_skip = NULL;
  self->options.on_skip_user = NULL;
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

/* Stops the C loader's threads (without the GIL): FERRY_OK, or the stop's
 * error; 1 when there is none to stop (closed, or a forked child's). Its
 * batches stay valid; a batch freed by another thread meanwhile leaves the
 * loader to be freed here, if closed. */
static int stop_threads(LoaderObject *self) {
  ferry_loader *L = self->L;
  if (!L || forked(self))
    return 1;
  int rc;
  self->stopping++;
  Py_BEGIN_ALLOW_THREADS rc = ferry_loader_stop(L);
  Py_END_ALLOW_THREADS self->stopping--;
  loader_maybe_close(self);
  return rc;
}

/* The threads stop now; the C loader is freed now, or with the last batch
 * still referenced (its buffers stay valid until then). */
static PyObject *loader_close(LoaderObject *self, PyObject *unused) {
  self->closed = 1;
  (void)stop_threads(self);
  loader_maybe_close(self);
  Py_RETURN_NONE;
}

/* For the interpreter's exit (_loader.py): True when every thread stopped. */
static PyObject *loader_stop(LoaderObject *self, PyObject *unused) {
  return PyBool_FromLong(stop_threads(self) == FERRY_OK);
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

/* field(index, name): a WebDataset sample's member KEY.name, bytes, or None. */
static PyObject *loader_field(LoaderObject *self, PyObject *args) {
  long long i;
  const char *name;
  if (!PyArg_ParseTuple(args, "Ls:field", &i, &name) || loader_usable(self) < 0)
    return NULL;
  if (i < 0 || i >= ferry_loader_source_size(self->L))
    return PyErr_Format(PyExc_IndexError, "sample index %lld out of range", i);
  void *data = NULL;
  size_t size = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = ferry_loader_field(self->L, i, name, &data, &size);
  Py_END_ALLOW_THREADS if (rc) return raise_status(rc, ferry_last_error());
  if (!data)
    Py_RETURN_NONE;
  PyObject *out = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
  free(data);
  return out;
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
  return Py_BuildValue("{sdsdsdsdsdsKsKsKsKsKsdsi}", "read_s", s.read_s, "decode_s", s.decode_s,
                       "transform_s", s.transform_s, "wait_s", s.wait_s, "idle_s", s.idle_s,
                       "images", (unsigned long long)s.images, "skipped",
                       (unsigned long long)s.skipped, "batches", (unsigned long long)s.batches,
                       "gpu_decoded", (unsigned long long)s.gpu_decoded, "gpu_chunks",
                       (unsigned long long)s.gpu_chunks, "gpu_call_s", s.gpu_call_s,
                       "workers_active", ferry_loader_num_workers_active(self->L));
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
LOADER_INT64_GETTER(pinned, ferry_loader_pinned)
LOADER_INT64_GETTER(workers, ferry_loader_num_workers)

/* (NUMA node, CPUs as a cpulist) where the threads were placed near the
 * GPU (the numa option), else (-1, why not) */
static PyObject *loader_get_numa(LoaderObject *self, void *c) {
  if (loader_usable(self) < 0)
    return NULL;
  char text[512];
  int node = ferry_loader_numa(self->L, text, sizeof text);
  return Py_BuildValue("(is)", node, text);
}
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
static PyObject *loader_get_options(LoaderObject *self, void *c) {
  return options_as_dict(&self->options);
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
     "close()\n--\n\nStops the loader: its threads stop now; its ring is freed now, or when "
     "the last batch still referenced is freed."},
    {"stop", (PyCFunction)loader_stop, METH_NOARGS,
     "stop()\n--\n\nStops the loader's threads (the next epoch made ahead included) and "
     "waits for them; batches held stay valid, next() and start_epoch() then fail. True when "
     "every thread stopped."},
    {"take_skipped", (PyCFunction)loader_take_skipped, METH_NOARGS,
     "take_skipped()\n--\n\nThe files skipped since the last call: [(path, status, message)]."},
    {"path", (PyCFunction)loader_path, METH_O, "path(index)\n--\n\nPath of a sample."},
    {"label", (PyCFunction)loader_label, METH_O, "label(index)\n--\n\nLabel of a sample."},
    {"field", (PyCFunction)loader_field, METH_VARARGS,
     "field(index, name)\n--\n\nA WebDataset sample's member KEY.name (bytes), or None."},
    {"class_name", (PyCFunction)loader_class_name, METH_O,
     "class_name(label)\n--\n\nName of a class (its ImageFolder sub-folder)."},
    {"stats", (PyCFunction)loader_stats, METH_NOARGS,
     "stats()\n--\n\nPer-stage seconds summed over workers, and counters."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef loader_getset[] = {
    {"source_size", (getter)loader_get_source_size, NULL, "Samples in the source.", NULL},
    {"pinned", (getter)loader_get_pinned, NULL, "1: CPU batches are page-locked (pin_memory).",
     NULL},
    {"numa", (getter)loader_get_numa, NULL,
     "(node, CPUs) where the threads run near the GPU (numa option), else (-1, why not).", NULL},
    {"epoch_size", (getter)loader_get_epoch_size, NULL, "Samples in this rank's epoch.", NULL},
    {"num_batches", (getter)loader_get_num_batches, NULL, "Batches per epoch (this rank).", NULL},
    {"num_classes", (getter)loader_get_num_classes, NULL, "Classes of an ImageFolder.", NULL},
    {"live_batches", (getter)loader_get_live, NULL, "Batch objects alive (holding slots).", NULL},
    {"ring", (getter)loader_get_ring, NULL, "Batches in the ring: prefetch, or ferry's choice.",
     NULL},
    {"workers", (getter)loader_get_workers, NULL,
     "CPU worker threads: the workers option, or ferry's choice for 0.", NULL},
    {"options", (getter)loader_get_options, NULL,
     "The options it was opened with, by name (choices as their C values).", NULL},
    {"closed", (getter)loader_get_closed, NULL, "close() was called.", NULL},
    {"freed", (getter)loader_get_freed, NULL, "The C loader has been freed.", NULL},
    {"device", (getter)loader_get_device, NULL, "-1 for host memory, N for CUDA device N.", NULL},
    {"epoch", (getter)loader_get_epoch, NULL, "The epoch in progress (-1 before any).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject LoaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ferry._ferry.Loader",
    .tp_basicsize = sizeof(LoaderObject),
    .tp_dealloc = (destructor)loader_dealloc,
    .tp_weaklistoffset = offsetof(LoaderObject, weakrefs),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Loader(source, **options)\n--\n\n"
              "The low-level loader: one ferry_loader. Options are the C library's, by the names "
              "of its registry (loader_options()), checked by it; choices by name or C value, "
              "None for the default. Use ferry.Loader, which wraps it.",
    .tp_methods = loader_methods,
    .tp_getset = loader_getset,
    .tp_new = loader_new,
};
