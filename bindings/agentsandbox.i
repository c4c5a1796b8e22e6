/*
 * agent-sandbox — the SWIG interface shared by the language bindings.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * This file wraps the public C ABI (include/agentsandbox.h) and says, once
 * for every language, what each function and type means to a binding (the
 * per-function lists are generated from abi/api.json into gen/asb_api.i):
 *
 *   - which handles the binding owns (freed by the wrapper's destructor)
 *     and which it frees itself in a set order (processes and watches: they
 *     hold a cancel token and callback state that must outlive them);
 *   - which parameters are outputs (`T **out`, `char **data` + `size_t *len`,
 *     URL and JSON strings, formatted hosts) and which are byte buffers;
 *   - how options structs are built (a constructor that applies the
 *     library's defaults, string members copied and freed with the struct)
 *     and which of their members a binding must not touch (callbacks and
 *     userdata: those are set by the language's C shims);
 *   - which calls block (the binding releases its interpreter lock around
 *     them; nothing else releases it).
 *
 * The language-specific half lives next to each binding and is pulled in by
 * the SWIG target language: bindings/<lang>/asb_<lang>.i defines the
 * typemap macros used below (ASB_OUT_HANDLE, ASB_OUT_BYTES, ...) and the
 * callback trampolines (C shims) that cannot be expressed here. A language
 * without such a file fails at SWIG time with a clear message.
 *
 * Build (Python): swig -python -threads -I<repo>/include -I<repo>/bindings \
 *                      -module _core -outdir ... bindings/agentsandbox.i
 */
%module agentsandbox

%{
#include <agentsandbox.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers shared by every language (plain C) ------------------------- */

static char *asbswig_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = (char *)malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* NULL-ended string vectors ("KEY=VALUE" lists): duplicated and freed as a
 * whole, so options structs own what they point to. */
static void asbswig_strv_free(const char *const *v) {
  if (!v) return;
  for (const char *const *p = v; *p; p++) free((char *)*p);
  free((void *)v);
}

static const char *const *asbswig_strv_dup(const char *const *v) {
  if (!v) return NULL;
  size_t n = 0;
  while (v[n]) n++;
  char **d = (char **)calloc(n + 1, sizeof *d);
  if (!d) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!(d[i] = asbswig_strdup(v[i]))) {
      asbswig_strv_free((const char *const *)d);
      return NULL;
    }
  }
  return (const char *const *)d;
}
%}

/* ---- what a binding sees of the headers ----------------------------------
 * The per-function and per-type facts (callback members hidden, options
 * versions immutable, who frees each handle, options constructors, the calls
 * that block) come from the ABI description, abi/api.json, through
 * gen/asb_api.i (scripts/gen-bindings.py), included below. Only what is
 * about SWIG itself stays here. */

/* Wrappers free returned buffers themselves. */
%ignore asb_free;
%ignore asb_write_entry;   /* write_many takes the language's list */
/* The last error is read-only. */
%immutable asb_error;

/* String members of options structs are copied in and freed with the struct
 * (or when replaced), whatever the language. */
%typemap(memberin) const char * {
  free((char *)$1);
  $1 = asbswig_strdup($input);
}
%typemap(memberin) const char *const * {
  asbswig_strv_free((const char *const *)$1);
  $1 = asbswig_strv_dup((const char *const *)$input);
}

/* ---- the language's half ------------------------------------------------- */
#if defined(SWIGPYTHON)
%include "python/asb_python.i"
#elif defined(SWIGLUA)
%include "lua/asb_lua.i"
#else
#error "agentsandbox.i: no bindings/<lang>/asb_<lang>.i for this target language"
#endif

/* The language file defines, before the headers are read:
 *   ASB_OUT_HANDLE(T)          T **out  -> a handle the wrapper owns
 *   ASB_OUT_HANDLE_UNOWNED(T)  T **out  -> a handle the binding frees itself
 *   ASB_BLOCKING(name)         release the interpreter lock around name
 * and typemaps for (char **data, size_t *len), char **url,
 * char **result_json, (const void *data, size_t len), const char *const *
 * in and out, size_t *len (binary getters), (char *buf, size_t buflen),
 * int *major/minor/patch,
 * (const asb_write_entry *files, size_t count), and the callback pairs
 * (asb_data_fn on_data, void *userdata), (asb_read_fn read, void *userdata).
 * Options structs that carry callbacks (command, pty, watch, code) get
 * their callbacks and userdata from the language's own %extend methods. */

/* ---- handles: who frees them ---------------------------------------------- */

%define ASB_OWNED_HANDLE(T, FREE)
%nodefaultctor T;
%nodefaultdtor T;
struct T {};
%extend T { ~T() { FREE($self); } }
ASB_OUT_HANDLE(T)
%enddef

%define ASB_BORROWED_HANDLE(T)
%nodefaultctor T;
%nodefaultdtor T;
struct T {};
%enddef

%define ASB_EXPLICIT_HANDLE(T)
%nodefaultctor T;
%nodefaultdtor T;
struct T {};
ASB_OUT_HANDLE_UNOWNED(T)
%enddef

/* ---- options structs: constructed with the library's defaults ----------- */

%define ASB_OPTIONS(T, VERSION, STRINGS, VECTORS, BYTES)
%extend T {
  T() {
    T *o = (T *)calloc(1, sizeof(T));
    if (o) T##_init(o, VERSION);
    return o;
  }
  ~T() {
    const char **s[] = STRINGS;
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
      if (s[i]) free((char *)*s[i]);
    const char *const **v[] = VECTORS;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
      if (v[i]) asbswig_strv_free(*v[i]);
    const void **b[] = BYTES;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
      if (b[i]) free((void *)*b[i]);
    free($self);
  }
}
%enddef

/* A byte buffer member (pointer + length) is set through set_<member>,
 * which copies the bytes (freed with the struct or when replaced); the raw
 * members stay hidden. */
%define ASB_OPTIONS_BYTES(T, DATA, LEN)
%ignore T::DATA;
%ignore T::LEN;
%extend T {
  void set_##DATA(const void *data, size_t len) {
    void *copy = NULL;
    if (data) {
      copy = malloc(len ? len : 1);
      if (!copy) return;
      memcpy(copy, data, len);
    }
    free((void *)$self->DATA);
    $self->DATA = copy;
    $self->LEN = copy ? len : 0;
  }
}
%enddef

#define ASB_NONE {NULL}

/* ---- the lists generated from abi/api.json -------------------------------- */
%include "gen/asb_api.i"

/* ---- the headers ------------------------------------------------------------ */

%include "agentsandbox/common.h"
%include "agentsandbox/types.h"
%include "agentsandbox/version.h"
%include "agentsandbox/errors.h"
%include "agentsandbox/global.h"
%include "agentsandbox/cancel.h"
%include "agentsandbox/client.h"
%include "agentsandbox/sandbox.h"
%include "agentsandbox/commands.h"
%include "agentsandbox/pty.h"
%include "agentsandbox/files.h"
%include "agentsandbox/code.h"
%include "agentsandbox/session.h"
%include "agentsandbox/named.h"
%include "agentsandbox/agents.h"
%include "agentsandbox/template.h"
%include "agentsandbox/git.h"
%include "agentsandbox/volume.h"
%include "agentsandbox/secret.h"

/* ---- the language's shims (after the declarations they use) --------------- */
#if defined(SWIGPYTHON)
%include "python/asb_python_shims.i"
#elif defined(SWIGLUA)
%include "lua/asb_lua_shims.i"
#endif
