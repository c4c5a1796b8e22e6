/*
 * agent-sandbox — the Python half of bindings/agentsandbox.i: typemaps.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Conventions of the generated module (agent_sandbox._core):
 *   - a function with outputs returns [status, out1, ...] (a list), else the
 *     status alone; the caller reads asb_error_last() on the same thread when
 *     the status is negative (agent_sandbox/_native.py does);
 *   - byte buffers come back as bytes, strings as str (None for NULL);
 *   - "KEY=VALUE" vectors are given as a dict or a list of str;
 *   - the interpreter lock is released around the calls ASB_BLOCKING names
 *     and nowhere else, so the cheap getters do not hand the lock around.
 */

%begin %{
#define PY_SSIZE_T_CLEAN
%}

%include <typemaps.i>

/* Only the calls listed with ASB_BLOCKING release the lock. */
%nothread;
%define ASB_BLOCKING(NAME)
%thread NAME;
%enddef

/* ---- handles ---------------------------------------------------------------- */
%define ASB_OUT_HANDLE(T)
%typemap(in, numinputs=0) T **out (T *tmp = NULL) { $1 = &tmp; }
%typemap(argout) T **out {
  %append_output(SWIG_NewPointerObj(SWIG_as_voidptr(*$1), $descriptor(T *),
                                    *$1 ? SWIG_POINTER_OWN : 0));
}
%enddef

%define ASB_OUT_HANDLE_UNOWNED(T)
%typemap(in, numinputs=0) T **out (T *tmp = NULL) { $1 = &tmp; }
%typemap(argout) T **out {
  %append_output(SWIG_NewPointerObj(SWIG_as_voidptr(*$1), $descriptor(T *), 0));
}
%enddef

/* ---- byte and string outputs ------------------------------------------------ */
%typemap(in, numinputs=0) (char **data, size_t *len) (char *tdata = NULL, size_t tlen = 0) {
  $1 = &tdata;
  $2 = &tlen;
}
%typemap(argout) (char **data, size_t *len) {
  PyObject *o;
  if (*$1) {
    o = PyBytes_FromStringAndSize(*$1, (Py_ssize_t)*$2);
    free(*$1);
    if (!o) SWIG_fail;
  } else {
    o = Py_None;
    Py_INCREF(o);
  }
  %append_output(o);
}

%typemap(in, numinputs=0) char **url (char *tmp = NULL), char **result_json (char *tmp = NULL),
                          char **value (char *tmp = NULL), char **version (char *tmp = NULL),
                          char **json (char *tmp = NULL), char **snapshot_id (char *tmp = NULL),
                          char **token (char *tmp = NULL), char **hash (char *tmp = NULL) {
  $1 = &tmp;
}
%typemap(argout) char **url, char **result_json, char **value, char **version, char **json,
                 char **snapshot_id, char **token, char **hash {
  PyObject *o;
  if (*$1) {
    o = PyUnicode_DecodeUTF8(*$1, (Py_ssize_t)strlen(*$1), "replace");
    free(*$1);
    if (!o) SWIG_fail;
  } else {
    o = Py_None;
    Py_INCREF(o);
  }
  %append_output(o);
}

/* const char *asb_command_result_stdout(r, size_t *len): the bytes. */
%typemap(in, numinputs=0) size_t *len (size_t tlen = 0) { $1 = &tlen; }
%typemap(argout) size_t *len {
  Py_XDECREF($result);
  if (result) {
    $result = PyBytes_FromStringAndSize(result, (Py_ssize_t)*$1);
  } else {
    $result = Py_None;
    Py_INCREF($result);
  }
}

%apply int *OUTPUT { int *major, int *minor, int *patch };
%apply int *OUTPUT { int *kind };
%apply int *OUTPUT { int *exists };
%apply int *OUTPUT { int *present };

/* Views (asb_file_reader_read, asb_process_read): the bytes are copied out
 * at once; the library's memory is valid only until the next call. */
%typemap(in, numinputs=0) (const char **data, size_t *len) (const char *tdata = NULL, size_t tlen = 0) {
  $1 = &tdata;
  $2 = &tlen;
}
%typemap(argout) (const char **data, size_t *len) {
  PyObject *o;
  if (*$1) {
    o = PyBytes_FromStringAndSize(*$1, (Py_ssize_t)*$2);
    if (!o) SWIG_fail;
  } else {
    o = Py_None;
    Py_INCREF(o);
  }
  %append_output(o);
}

%typemap(in, numinputs=0) (char *buf, size_t buflen) (char tmp[1024]) {
  tmp[0] = 0;
  $1 = tmp;
  $2 = sizeof tmp;
}
%typemap(argout) (char *buf, size_t buflen) {
  %append_output(result == 0 ? SWIG_FromCharPtr($1) : (Py_INCREF(Py_None), Py_None));
}

/* ---- byte inputs: bytes, bytearray, memoryview or str (UTF-8) --------------- */
%typemap(in) (const void *data, size_t len) (Py_buffer view, int have = 0) {
  if (PyUnicode_Check($input)) {
    Py_ssize_t n = 0;
    const char *s = PyUnicode_AsUTF8AndSize($input, &n);
    if (!s) SWIG_fail;
    $1 = (void *)s;
    $2 = (size_t)n;
  } else {
    if (PyObject_GetBuffer($input, &view, PyBUF_SIMPLE) != 0) SWIG_fail;
    have = 1;
    $1 = view.buf;
    $2 = (size_t)view.len;
  }
}
%typemap(freearg) (const void *data, size_t len) {
  if (have$argnum) PyBuffer_Release(&view$argnum);
}
%typemap(typecheck) (const void *data, size_t len) {
  $1 = PyUnicode_Check($input) || PyObject_CheckBuffer($input);
}

/* ---- "KEY=VALUE" vectors ------------------------------------------------------ */
%fragment("asbpy_strv", "header") {
/* A dict {k: v} becomes "k=v" strings; a list/tuple of str is taken as is.
 * Returns a malloc'd NULL-ended vector (free with asbswig_strv_free), or
 * NULL with a Python exception set. */
static const char *const *asbpy_strv_from(PyObject *o) {
  PyObject *items = NULL;
  int is_map = PyDict_Check(o);
  if (is_map) {
    items = PyDict_Items(o);
  } else if (PyList_Check(o) || PyTuple_Check(o)) {
    items = PySequence_List(o);
  } else {
    PyErr_SetString(PyExc_TypeError, "expected a dict or a list of 'KEY=VALUE' strings");
    return NULL;
  }
  if (!items) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(items);
  char **v = (char **)calloc((size_t)n + 1, sizeof *v);
  if (!v) {
    Py_DECREF(items);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PyList_GET_ITEM(items, i);
    if (is_map) {
      PyObject *k = PyTuple_GET_ITEM(it, 0), *val = PyTuple_GET_ITEM(it, 1);
      PyObject *ks = PyObject_Str(k), *vs = PyObject_Str(val);
      const char *kc = ks ? PyUnicode_AsUTF8(ks) : NULL;
      const char *vc = vs ? PyUnicode_AsUTF8(vs) : NULL;
      if (kc && vc) {
        size_t kl = strlen(kc), vl = strlen(vc);
        v[i] = (char *)malloc(kl + vl + 2);
        if (v[i]) {
          memcpy(v[i], kc, kl);
          v[i][kl] = '=';
          memcpy(v[i] + kl + 1, vc, vl + 1);
        } else {
          PyErr_NoMemory();
        }
      }
      Py_XDECREF(ks);
      Py_XDECREF(vs);
    } else if (PyUnicode_Check(it)) {
      const char *c = PyUnicode_AsUTF8(it);
      if (c && !(v[i] = asbswig_strdup(c))) PyErr_NoMemory();
    } else {
      PyErr_SetString(PyExc_TypeError, "expected a list of str");
    }
    if (!v[i]) {
      asbswig_strv_free((const char *const *)v);
      Py_DECREF(items);
      return NULL;
    }
  }
  Py_DECREF(items);
  return (const char *const *)v;
}
}

%typemap(in, fragment="asbpy_strv") const char *const * (const char *const *tmp = NULL) {
  if ($input != Py_None) {
    tmp = asbpy_strv_from($input);
    if (!tmp) SWIG_fail;
  }
  $1 = ($1_ltype)tmp;
}
%typemap(freearg) const char *const * { asbswig_strv_free((const char *const *)tmp$argnum); }
%typemap(out) const char *const * {
  if (!$1) {
    $result = PyList_New(0);
  } else {
    Py_ssize_t n = 0;
    while ($1[n]) n++;
    $result = PyList_New(n);
    for (Py_ssize_t i = 0; $result && i < n; i++) {
      PyObject *s = PyUnicode_DecodeUTF8($1[i], (Py_ssize_t)strlen($1[i]), "replace");
      if (!s) {
        Py_CLEAR($result);
        break;
      }
      PyList_SET_ITEM($result, i, s);
    }
  }
  if (!$result) SWIG_fail;
}

/* ---- write_many: a list of (path, data) pairs --------------------------------- */
%typemap(in) (const asb_write_entry *files, size_t count)
    (asb_write_entry *items = NULL, Py_buffer *views = NULL, Py_ssize_t nviews = 0,
     PyObject *seq = NULL) {
  seq = PySequence_Fast($input, "write_many: expected a list of (path, data)");
  if (!seq) SWIG_fail;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  items = (asb_write_entry *)calloc((size_t)n + 1, sizeof *items);
  views = (Py_buffer *)calloc((size_t)n + 1, sizeof *views);
  if (!items || !views) {
    PyErr_NoMemory();
    SWIG_fail;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
    PyObject *path, *data;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "write_many: each item is a (path, data) tuple");
      SWIG_fail;
    }
    path = PyTuple_GET_ITEM(pair, 0);
    data = PyTuple_GET_ITEM(pair, 1);
    items[i].path = PyUnicode_Check(path) ? PyUnicode_AsUTF8(path) : NULL;
    if (!items[i].path) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "write_many: path must be str");
      SWIG_fail;
    }
    if (PyUnicode_Check(data)) {
      Py_ssize_t len = 0;
      items[i].data = PyUnicode_AsUTF8AndSize(data, &len);
      if (!items[i].data) SWIG_fail;
      items[i].len = (size_t)len;
    } else {
      if (PyObject_GetBuffer(data, &views[nviews], PyBUF_SIMPLE) != 0) SWIG_fail;
      items[i].data = views[nviews].buf;
      items[i].len = (size_t)views[nviews].len;
      nviews++;
    }
  }
  $1 = items;
  $2 = (size_t)n;
}
%typemap(freearg) (const asb_write_entry *files, size_t count) {
  for (Py_ssize_t i = 0; i < nviews$argnum; i++) PyBuffer_Release(&views$argnum[i]);
  free(views$argnum);
  free(items$argnum);
  Py_XDECREF(seq$argnum);
}

/* ---- callbacks ---------------------------------------------------------------- */
%{
/* The Python callables of one call (or of one process / watch handle) and
 * the first exception one of them raised. Trampolines run on the thread
 * that makes the C call, which has released the interpreter lock: they take
 * it back for the duration of the Python call. A callable that raises makes
 * its trampoline return non-zero (the C call ends with ASB_EUSER); the
 * binding re-raises the stored exception to its caller. */
typedef struct asbpy_callbacks {
  PyObject *on_stdout;   /* bytes (str for code runs) */
  PyObject *on_stderr;
  PyObject *on_result;   /* dict: format -> value, plus "is_main" */
  PyObject *on_error;    /* (name, value, traceback) */
  PyObject *on_event;    /* (type, name, entry tuple or None) */
  PyObject *reader;      /* (cap) -> bytes; b"" at the end */
  PyObject *error;       /* the exception a callable raised, or NULL */
  int text;              /* deliver data as str */
} asbpy_callbacks;

static int asbpy_fail(asbpy_callbacks *cb) {
  PyObject *t = NULL, *v = NULL, *tb = NULL;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  if (v && tb) PyException_SetTraceback(v, tb);
  Py_XDECREF(t);
  Py_XDECREF(tb);
  if (!cb->error) {
    cb->error = v;
  } else {
    Py_XDECREF(v);
  }
  return 1;
}

static int asbpy_data(asbpy_callbacks *cb, PyObject *fn, const char *data, size_t len) {
  if (!fn) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *arg = cb->text ? PyUnicode_DecodeUTF8(data, (Py_ssize_t)len, "replace")
                           : PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
  PyObject *r = arg ? PyObject_CallFunctionObjArgs(fn, arg, NULL) : NULL;
  Py_XDECREF(arg);
  if (!r) rc = asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

static int asbpy_tramp_stdout(const char *data, size_t len, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  return asbpy_data(cb, cb->on_stdout, data, len);
}

static int asbpy_tramp_stderr(const char *data, size_t len, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  return asbpy_data(cb, cb->on_stderr, data, len);
}

static PyObject *asbpy_str(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* An entry's user metadata as a dict, or None when it has none. */
static PyObject *asbpy_entry_metadata(const asb_entry *e) {
  size_t n = asb_entry_metadata_count(e);
  if (n == 0) Py_RETURN_NONE;
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < n; i++) {
    PyObject *k = asbpy_str(asb_entry_metadata_key(e, i));
    PyObject *v = asbpy_str(asb_entry_metadata_value(e, i));
    if (!k || !v || PyDict_SetItem(d, k, v) != 0) Py_CLEAR(d);
    Py_XDECREF(k);
    Py_XDECREF(v);
  }
  return d;
}

/* An entry as a tuple: (name, path, type, size, mode, permissions, owner,
 * group, mtime_seconds, mtime_nanos, symlink_target, metadata). */
static PyObject *asbpy_entry_tuple(const asb_entry *e) {
  if (!e) Py_RETURN_NONE;
  return Py_BuildValue("(NNiLINNNLlNN)", asbpy_str(asb_entry_name(e)),
                       asbpy_str(asb_entry_path(e)), (int)asb_entry_type(e),
                       (long long)asb_entry_size(e), asb_entry_mode(e),
                       asbpy_str(asb_entry_permissions(e)),
                       asbpy_str(asb_entry_owner(e)), asbpy_str(asb_entry_group(e)),
                       (long long)asb_entry_modified_at(e), asb_entry_modified_nanos(e),
                       asbpy_str(asb_entry_symlink_target(e)), asbpy_entry_metadata(e));
}

static int asbpy_tramp_event(asb_fs_event_type type, const char *name,
                             const asb_entry *entry, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  if (!cb->on_event) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *r = PyObject_CallFunction(cb->on_event, "iNN", (int)type, asbpy_str(name),
                                      asbpy_entry_tuple(entry));
  if (!r) rc = asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

static PyObject *asbpy_code_result_dict(const asb_code_result *r) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  size_t n = asb_code_result_format_count(r);
  for (size_t i = 0; i < n; i++) {
    const char *name = asb_code_result_format_name(r, i);
    PyObject *v = name ? asbpy_str(asb_code_result_value(r, name)) : NULL;
    if (!v || PyDict_SetItemString(d, name, v) != 0) {
      Py_XDECREF(v);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(v);
  }
  if (PyDict_SetItemString(d, "is_main", asb_code_result_is_main(r) ? Py_True : Py_False) != 0) {
    Py_DECREF(d);
    return NULL;
  }
  return d;
}

static int asbpy_tramp_result(const asb_code_result *result, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  if (!cb->on_result) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *d = asbpy_code_result_dict(result);
  PyObject *r = d ? PyObject_CallFunctionObjArgs(cb->on_result, d, NULL) : NULL;
  Py_XDECREF(d);
  if (!r) rc = asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

static int asbpy_tramp_error(const char *name, const char *value,
                             const char *traceback, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  if (!cb->on_error) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *r = PyObject_CallFunction(cb->on_error, "NNN", asbpy_str(name),
                                      asbpy_str(value), asbpy_str(traceback));
  if (!r) rc = asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

/* An agent session's event (agents.h): on_event gets its JSON text. */
static int asbpy_tramp_agent_event(const asb_agent_event *event, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  if (!cb->on_event) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *r = PyObject_CallFunction(cb->on_event, "N", asbpy_str(asb_agent_event_json(event)));
  if (!r) rc = asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

/* A template build's log line (template.h): on_event gets
 * (timestamp_ms, level, message). */
static int asbpy_tramp_template_log(asb_int64 ts, const char *level, const char *message,
                                    void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  if (!cb->on_event) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  int rc = 0;
  PyObject *r = PyObject_CallFunction(cb->on_event, "LNN", (long long)ts, asbpy_str(level),
                                      asbpy_str(message));
  if (!r) rc = asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return rc;
}

static long asbpy_tramp_read(char *buf, size_t cap, void *ud) {
  asbpy_callbacks *cb = (asbpy_callbacks *)ud;
  if (!cb->reader) return 0;
  PyGILState_STATE g = PyGILState_Ensure();
  long n = -1;
  PyObject *r = PyObject_CallFunction(cb->reader, "n", (Py_ssize_t)cap);
  if (r) {
    Py_buffer view;
    if (PyUnicode_Check(r)) {
      PyErr_SetString(PyExc_TypeError, "the reader must return bytes, not str");
    } else if (PyObject_GetBuffer(r, &view, PyBUF_SIMPLE) == 0) {
      if ((size_t)view.len > cap) {
        PyErr_Format(PyExc_ValueError, "the reader returned %zd bytes, more than the %zu asked",
                     view.len, cap);
      } else {
        memcpy(buf, view.buf, (size_t)view.len);
        n = (long)view.len;
      }
      PyBuffer_Release(&view);
    }
  }
  if (n < 0) asbpy_fail(cb);
  Py_XDECREF(r);
  PyGILState_Release(g);
  return n;
}
%}

/* A callback pair argument takes an asbpy_callbacks: its on_stdout is the
 * data sink (read_stream), its reader the source (write_stream). */
%typemap(in) (asb_data_fn on_data, void *userdata) (void *argp = 0, int res = 0) {
  res = SWIG_ConvertPtr($input, &argp, $descriptor(asbpy_callbacks *), 0);
  if (!SWIG_IsOK(res) || !argp) SWIG_exception_fail(SWIG_TypeError, "expected asbpy_callbacks");
  $1 = asbpy_tramp_stdout;
  $2 = argp;
}
%typemap(in) (asb_read_fn read, void *userdata) (void *argp = 0, int res = 0) {
  res = SWIG_ConvertPtr($input, &argp, $descriptor(asbpy_callbacks *), 0);
  if (!SWIG_IsOK(res) || !argp) SWIG_exception_fail(SWIG_TypeError, "expected asbpy_callbacks");
  $1 = asbpy_tramp_read;
  $2 = argp;
}

%nodefaultctor asbpy_callbacks;
typedef struct asbpy_callbacks {
} asbpy_callbacks;

%extend asbpy_callbacks {
  /* callbacks(on_stdout, on_stderr, on_result, on_error, on_event, reader,
   * text): None for the ones not used. */
  asbpy_callbacks(PyObject *on_stdout, PyObject *on_stderr, PyObject *on_result,
                  PyObject *on_error, PyObject *on_event, PyObject *reader, int text) {
    asbpy_callbacks *cb = (asbpy_callbacks *)calloc(1, sizeof *cb);
    if (!cb) return NULL;
    PyObject *in[] = {on_stdout, on_stderr, on_result, on_error, on_event, reader};
    PyObject **slot[] = {&cb->on_stdout, &cb->on_stderr, &cb->on_result,
                         &cb->on_error, &cb->on_event, &cb->reader};
    for (int i = 0; i < 6; i++) {
      if (in[i] && in[i] != Py_None) {
        Py_INCREF(in[i]);
        *slot[i] = in[i];
      }
    }
    cb->text = text;
    return cb;
  }
  ~asbpy_callbacks() {
    Py_XDECREF($self->on_stdout);
    Py_XDECREF($self->on_stderr);
    Py_XDECREF($self->on_result);
    Py_XDECREF($self->on_error);
    Py_XDECREF($self->on_event);
    Py_XDECREF($self->reader);
    Py_XDECREF($self->error);
    free($self);
  }
  /* The exception a callable raised (and forget it), or None. */
  PyObject *take_error() {
    PyObject *e = $self->error;
    $self->error = NULL;
    if (!e) Py_RETURN_NONE;
    return e;
  }
}
