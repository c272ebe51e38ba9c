/* ferry_py.h — internal header of the CPython extension ferry._ferry, whose
 * files are the C files of python/ferry/_ext/: one per type (tensor.c, loader.c,
 * batch.c, hash.c, video.c), common.c (errors, argument helpers) and
 * module.c (the module: its functions, exceptions, constants and init).
 *
 * Loader, Batch and Tensor: each holding a strong reference to the one before it, so that
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
 * queued under a mutex and taken by the consumer (Loader.take_skipped()).
 *
 * Hasher (hash.c) wraps a ferry_hasher, used by one thread at a time. */
#ifndef FERRY_PY_H
#define FERRY_PY_H

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

/* --------------------------------------------------------------- common.c */

extern PyObject *Error, *ReadError, *UnsupportedError, *CorruptError, *TooLargeError,
    *InvalidArgument, *OutOfMemoryError, *EmptySourceError, *StateError, *InternalError,
    *StallError;

/* The ferry.Error subclass raised for a status. */
PyObject *error_class(int status);
/* A new ferry.Error instance for a status (NULL with an exception set). */
PyObject *make_error(int status, const char *message);
/* Raises the ferry.Error subclass of `status` with `message` (the C
 * library's, naming the file and the reason), setting .status and .reason.
 * Returns NULL. */
PyObject *raise_status(int status, const char *message);
/* An optional unsigned 64-bit argument: None leaves *out. -1 with an
 * exception set. */
int as_u64(PyObject *o, const char *name, uint64_t *out);
PyObject *tuple_of_doubles(const double *v, int n);
PyObject *tuple_of_int64(const int64_t *v, int n);

/* -------------------------------------------------------------- options.c */

/* Sets the loader options that `kwargs` names (a dict, or NULL), by the C
 * library's registry: None leaves an option at its default. 0, or -1 with
 * TypeError (a keyword that is no option) or the library's InvalidArgument
 * naming the option, the range and the value. `func` names the caller. */
int options_from_kwargs(ferry_loader_options *o, PyObject *kwargs, const char *func);
/* Every registry option's value in `o`: {name: int, float, tuple, bool}
 * (choices as their C enum values). */
PyObject *options_as_dict(const ferry_loader_options *o);
/* ferry._ferry.loader_options(): the registry as a list of dicts. */
PyObject *py_loader_options(PyObject *mod, PyObject *unused);

/* --------------------------------------------------------------- tensor.c */

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

extern PyTypeObject TensorType;

const char *dtype_name(DLDataType t);
DLDataType dl_dtype_of(ferry_dtype d);
/* A new Tensor over `data`. `strides` NULL = compact. Takes no reference to
 * owner (the caller passes one it gives away), frees nothing on failure. */
TensorObject *tensor_new(PyObject *owner, void *data, int ndim, const int64_t *shape,
                         const int64_t *strides, DLDataType dtype, DLDevice device);
PyObject *tensor_dlpack(TensorObject *t, PyObject *args, PyObject *kwargs);
int tensor_getbuffer(TensorObject *t, Py_buffer *view, int flags);

/* --------------------------------------------------------------- loader.c */

typedef struct skip_entry {
  char *path, *message;
  int status;
} skip_entry;

struct LoaderObject {
  PyObject_HEAD ferry_loader *L;
  ferry_loader_options options; /* as opened (source and on_skip cleared) */
  int device;                   /* -1 host, N CUDA device */
  int batch_size;
  int busy;        /* a call runs without the GIL */
  int stopping;    /* stop() runs without the GIL: the C loader is not freed under it */
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

extern PyTypeObject LoaderType;

/* Whether the loader was opened in another process (before fork). */
int forked(const LoaderObject *self);
/* Frees the C loader once close() was asked and no batch is alive. */
void loader_maybe_close(LoaderObject *self);

/* ---------------------------------------------------------------- batch.c */

extern PyTypeObject BatchType;

PyObject *batch_wrap(LoaderObject *loader, ferry_batch *b);
void batch_record_stream(BatchObject *b, void *stream);

/* ----------------------------------------------------------------- hash.c */

extern PyTypeObject HasherType;

PyObject *py_hash_kinds(PyObject *mod, PyObject *unused);
PyObject *py_hash_kind_parse(PyObject *mod, PyObject *arg);
PyObject *py_hash_files(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *py_hamming_pairs(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *py_hamming_topk(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *py_group_pairs(PyObject *mod, PyObject *args);
PyObject *py_find_groups(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *py_drop_matching(PyObject *mod, PyObject *args);
PyObject *py_search_isa(PyObject *mod, PyObject *unused);

/* -------------------------------------------------------------- catalog.c */

PyObject *py_index_update(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *py_index_merge(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *py_index_rank_of(PyObject *mod, PyObject *args);

/* ------------------------------------------------------------------ log.c */

void fyp_log_install(void);
PyObject *py_take_notices(PyObject *mod, PyObject *unused);

/* ---------------------------------------------------------------- video.c */

extern PyTypeObject VideoReaderType, VideoBatchType;

#endif
