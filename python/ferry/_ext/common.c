/* common.c — what every type of the extension shares: ferry.Error and its
 * subclasses (a C status into the exception raised for it) and argument
 * helpers. */
#include "ferry_py.h"

/* ------------------------------------------------------------------ errors */

PyObject *Error, *ReadError, *UnsupportedError, *CorruptError, *TooLargeError, *InvalidArgument,
    *OutOfMemoryError, *EmptySourceError, *StateError, *InternalError, *StallError;

PyObject *error_class(int status) {
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

/* A new ferry.Error instance for a status (NULL with an exception set). */
PyObject *make_error(int status, const char *message) {
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

PyObject *raise_status(int status, const char *message) {
  PyObject *exc = make_error(status, message);
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* ------------------------------------------------------------- arguments */

int as_u64(PyObject *o, const char *name, uint64_t *out) {
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

PyObject *tuple_of_doubles(const double *v, int n) {
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

PyObject *tuple_of_int64(const int64_t *v, int n) {
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
