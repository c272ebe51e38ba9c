/* options.c — the loader's option registry (ferry_loader_option*, the C
 * library's one table of options) seen from Python: keyword arguments into
 * ferry_loader_options, each value turned into the text the library parses
 * so that the library checks it and words the message as it does for
 * `ferry load`; the table itself (loader_options()); a struct's values as
 * a dict. The extension keeps no list of options of its own. */
#include "ferry_py.h"

/* repr(v): a text the library refuses for a number, so that its message
 * names the option, the range and what was given. */
static PyObject *refused(PyObject *v) {
  PyErr_Clear();
  return PyObject_Repr(v);
}

static PyObject *number_text(PyObject *v) {
  if (PyBool_Check(v))
    return refused(v);
  double d = PyFloat_AsDouble(v);
  if (d == -1.0 && PyErr_Occurred())
    return refused(v);
  char *s = PyOS_double_to_string(d, 'r', 0, 0, NULL);
  if (!s)
    return NULL;
  PyObject *t = PyUnicode_FromString(s);
  PyMem_Free(s);
  return t;
}

static PyObject *integer_text(PyObject *v) {
  if (PyBool_Check(v) || !PyIndex_Check(v))
    return refused(v);
  PyObject *i = PyNumber_Index(v);
  if (!i)
    return NULL;
  PyObject *t = PyObject_Str(i);
  Py_DECREF(i);
  return t;
}

/* MIN,MAX or R,G,B from a sequence of numbers. */
static PyObject *numbers_text(PyObject *v) {
  PyObject *seq = PyUnicode_Check(v) ? NULL : PySequence_Fast(v, "");
  if (!seq)
    return refused(v);
  PyObject *parts = PyList_New(0);
  for (Py_ssize_t k = 0; parts && k < PySequence_Fast_GET_SIZE(seq); k++) {
    PyObject *t = number_text(PySequence_Fast_GET_ITEM(seq, k));
    if (!t || PyList_Append(parts, t) < 0)
      Py_CLEAR(parts);
    Py_XDECREF(t);
  }
  Py_DECREF(seq);
  if (!parts)
    return NULL;
  PyObject *comma = PyUnicode_FromString(",");
  PyObject *joined = comma ? PyUnicode_Join(comma, parts) : NULL;
  Py_XDECREF(comma);
  Py_DECREF(parts);
  return joined;
}

/* A choice: its name, or its number (the C enum's value, as the
 * extension's constants give it). */
static PyObject *choice_text(const ferry_option *opt, PyObject *v) {
  if (PyUnicode_Check(v)) {
    Py_INCREF(v);
    return v;
  }
  if (!PyBool_Check(v) && PyIndex_Check(v)) {
    Py_ssize_t i = PyNumber_AsSsize_t(v, NULL);
    if (i == -1 && PyErr_Occurred())
      return NULL;
    if (i >= 0 && i <= (Py_ssize_t)opt->max)
      return PyUnicode_FromString(opt->choices[i]);
  }
  return PyObject_Str(v);
}

/* A Python value as the text ferry_loader_options_set takes (new ref). */
static PyObject *as_text(const ferry_option *opt, PyObject *v) {
  switch (opt->type) {
  case FERRY_OPTION_FLOAT: return opt->count == 1 ? number_text(v) : numbers_text(v);
  case FERRY_OPTION_BOOL: {
    int t = PyObject_IsTrue(v);
    return t < 0 ? NULL : PyUnicode_FromString(t ? "1" : "0");
  }
  case FERRY_OPTION_CHOICE: return choice_text(opt, v);
  default: return integer_text(v); /* INT, U64, DEVICE */
  }
}

int options_from_kwargs(ferry_loader_options *o, PyObject *kwargs, const char *func) {
  PyObject *key, *v;
  Py_ssize_t pos = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &v)) {
    const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    if (!name)
      return PyErr_Format(PyExc_TypeError, "%s() keywords must be strings", func), -1;
    const ferry_option *opt = ferry_loader_option_find(name);
    if (!opt || strcmp(opt->name, name))
      return PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", func,
                          name),
             -1;
    if (v == Py_None)
      continue; /* the default */
    PyObject *text = as_text(opt, v);
    const char *s = text ? PyUnicode_AsUTF8(text) : NULL;
    int rc = s ? ferry_loader_options_set(o, name, s) : FERRY_OK;
    Py_XDECREF(text);
    if (!s)
      return -1;
    if (rc)
      return raise_status(rc, ferry_last_error()), -1;
  }
  return 0;
}

/* The value of a field of the struct, by its row. */
static PyObject *value_of(const ferry_loader_options *o, const ferry_option *opt) {
  const char *p = (const char *)o + opt->offset;
  if (opt->type == FERRY_OPTION_U64) {
    uint64_t u;
    memcpy(&u, p, sizeof u);
    return PyLong_FromUnsignedLongLong(u);
  }
  if (opt->type == FERRY_OPTION_FLOAT) {
    double f[3];
    for (int k = 0; k < opt->count; k++) {
      float x;
      memcpy(&x, p + k * sizeof x, sizeof x);
      f[k] = x;
    }
    return opt->count == 1 ? PyFloat_FromDouble(f[0]) : tuple_of_doubles(f, opt->count);
  }
  int i;
  memcpy(&i, p, sizeof i);
  return opt->type == FERRY_OPTION_BOOL ? PyBool_FromLong(i) : PyLong_FromLong(i);
}

PyObject *options_as_dict(const ferry_loader_options *o) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < ferry_loader_option_count(); i++) {
    const ferry_option *opt = ferry_loader_option(i);
    PyObject *v = value_of(o, opt);
    if (!v || PyDict_SetItemString(d, opt->name, v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *string_tuple(const char *const *names, int step) {
  if (!names)
    Py_RETURN_NONE;
  PyObject *t = PyList_New(0);
  for (int k = 0; t && names[k]; k += step) {
    PyObject *s = PyUnicode_FromString(names[k]);
    if (!s || PyList_Append(t, s) < 0)
      Py_CLEAR(t);
    Py_XDECREF(s);
  }
  PyObject *r = t ? PyList_AsTuple(t) : NULL;
  Py_XDECREF(t);
  return r;
}

static PyObject *alias_dict(const char *const *aliases) {
  PyObject *d = PyDict_New();
  for (int k = 0; d && aliases && aliases[k]; k += 2) {
    PyObject *s = PyUnicode_FromString(aliases[k + 1]);
    if (!s || PyDict_SetItemString(d, aliases[k], s) < 0)
      Py_CLEAR(d);
    Py_XDECREF(s);
  }
  return d;
}

static const char *type_name(ferry_option_type t) {
  switch (t) {
  case FERRY_OPTION_INT: return "int";
  case FERRY_OPTION_U64: return "u64";
  case FERRY_OPTION_FLOAT: return "float";
  case FERRY_OPTION_BOOL: return "bool";
  case FERRY_OPTION_CHOICE: return "choice";
  case FERRY_OPTION_DEVICE: return "device";
  }
  return "?";
}

/* Sets d[key] = v, taking v over (NULL: an error already set). 0 or -1. */
static int put(PyObject *d, const char *key, PyObject *v) {
  int rc = v ? PyDict_SetItemString(d, key, v) : -1;
  Py_XDECREF(v);
  return rc;
}

static PyObject *text_or_none(const char *s) {
  if (!s)
    Py_RETURN_NONE;
  return PyUnicode_FromString(s);
}

static PyObject *row_dict(const ferry_option *opt) {
  PyObject *d = PyDict_New();
  if (!d || put(d, "name", PyUnicode_FromString(opt->name)) < 0 ||
      put(d, "flag", text_or_none(opt->flag)) < 0 ||
      put(d, "type", PyUnicode_FromString(type_name(opt->type))) < 0 ||
      put(d, "count", PyLong_FromLong(opt->count)) < 0 ||
      put(d, "min", PyFloat_FromDouble(opt->min)) < 0 ||
      put(d, "max", PyFloat_FromDouble(opt->max)) < 0 ||
      put(d, "min_open", PyBool_FromLong(opt->flags & FERRY_OPTION_MIN_OPEN)) < 0 ||
      put(d, "max_open", PyBool_FromLong(opt->flags & FERRY_OPTION_MAX_OPEN)) < 0 ||
      put(d, "ordered", PyBool_FromLong(opt->flags & FERRY_OPTION_ORDERED)) < 0 ||
      put(d, "mib", PyBool_FromLong(opt->flags & FERRY_OPTION_MIB)) < 0 ||
      put(d, "default", PyUnicode_FromString(opt->default_value)) < 0 ||
      put(d, "choices", string_tuple(opt->choices, 1)) < 0 ||
      put(d, "aliases", alias_dict(opt->aliases)) < 0 ||
      put(d, "flag_value", text_or_none(opt->flag_value)) < 0 ||
      put(d, "help", PyUnicode_FromString(opt->help)) < 0)
    Py_CLEAR(d);
  return d;
}

PyObject *py_loader_options(PyObject *mod, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (int i = 0; list && i < ferry_loader_option_count(); i++) {
    PyObject *row = row_dict(ferry_loader_option(i));
    if (!row || PyList_Append(list, row) < 0)
      Py_CLEAR(list);
    Py_XDECREF(row);
  }
  return list;
}
