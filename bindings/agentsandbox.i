/*
 * agent-sandbox — the SWIG interface shared by the language bindings.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * This file wraps the public C ABI (include/agentsandbox.h) and says, once
 * for every language, what each function and type means to a binding:
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

/* ---- what a binding sees of the headers ---------------------------------- */

/* Callbacks are reached through the languages' trampolines only. */
%ignore asb_command_options::on_stdout;
%ignore asb_command_options::on_stderr;
%ignore asb_command_options::userdata;
%ignore asb_pty_options::on_data;
%ignore asb_pty_options::userdata;
%ignore asb_watch_options::on_event;
%ignore asb_watch_options::userdata;
%ignore asb_code_options::on_stdout;
%ignore asb_code_options::on_stderr;
%ignore asb_code_options::on_result;
%ignore asb_code_options::on_error;
%ignore asb_code_options::userdata;
/* Wrappers free returned buffers themselves. */
%ignore asb_free;
%ignore asb_write_entry;   /* write_many takes the language's list */
/* Options version fields are set by the constructors. */
%immutable asb_client_options::version;
%immutable asb_call_options::version;
%immutable asb_sandbox_attach_options::version;
%immutable asb_sandbox_options::version;
%immutable asb_sandbox_list_options::version;
%immutable asb_command_options::version;
%immutable asb_pty_options::version;
%immutable asb_files_options::version;
%immutable asb_watch_options::version;
%immutable asb_code_options::version;
%immutable asb_named_command_options::version;
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

ASB_OWNED_HANDLE(asb_cancel, asb_cancel_free)
ASB_OWNED_HANDLE(asb_client, asb_client_free)
ASB_OWNED_HANDLE(asb_sandbox, asb_sandbox_free)
ASB_OWNED_HANDLE(asb_sandbox_info, asb_sandbox_info_free)
ASB_OWNED_HANDLE(asb_sandbox_page, asb_sandbox_page_free)
ASB_OWNED_HANDLE(asb_metrics, asb_metrics_free)
ASB_OWNED_HANDLE(asb_command_result, asb_command_result_free)
ASB_OWNED_HANDLE(asb_process_list, asb_process_list_free)
ASB_BORROWED_HANDLE(asb_process_info)
ASB_OWNED_HANDLE(asb_entry, asb_entry_free)
ASB_OWNED_HANDLE(asb_entry_list, asb_entry_list_free)
ASB_OWNED_HANDLE(asb_execution, asb_execution_free)
ASB_BORROWED_HANDLE(asb_code_result)
ASB_OWNED_HANDLE(asb_code_context, asb_code_context_free)
ASB_OWNED_HANDLE(asb_code_context_list, asb_code_context_list_free)
ASB_OWNED_HANDLE(asb_session, asb_session_free)
ASB_OWNED_HANDLE(asb_session_list, asb_session_list_free)
ASB_OWNED_HANDLE(asb_named_command_list, asb_named_command_list_free)
ASB_BORROWED_HANDLE(asb_named_command)
/* A process or watch holds the cancel token it was opened with and the
 * callback state of the binding: the binding frees the handle first, then
 * those (asb_process_free / asb_watch_free are wrapped for that). */
ASB_EXPLICIT_HANDLE(asb_process)
ASB_EXPLICIT_HANDLE(asb_watch)

/* ---- options structs: constructed with the library's defaults ----------- */

%define ASB_OPTIONS(T, VERSION, STRINGS, VECTORS)
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
    free($self);
  }
}
%enddef

#define ASB_NONE {NULL}
ASB_OPTIONS(asb_client_options, ASB_CLIENT_OPTIONS_VERSION,
            %arg({&$self->api_key, &$self->api_url, &$self->domain,
                  &$self->sandbox_url, &$self->user_agent}),
            %arg({&$self->headers}))
ASB_OPTIONS(asb_call_options, ASB_CALL_OPTIONS_VERSION, ASB_NONE, ASB_NONE)
ASB_OPTIONS(asb_sandbox_attach_options, ASB_SANDBOX_ATTACH_OPTIONS_VERSION,
            %arg({&$self->envd_access_token, &$self->envd_version,
                  &$self->domain, &$self->traffic_access_token}),
            ASB_NONE)
ASB_OPTIONS(asb_sandbox_options, ASB_SANDBOX_OPTIONS_VERSION,
            %arg({&$self->template_id}),
            %arg({&$self->metadata, &$self->envs}))
ASB_OPTIONS(asb_sandbox_list_options, ASB_SANDBOX_LIST_OPTIONS_VERSION,
            %arg({&$self->template_id, &$self->next_token}),
            %arg({&$self->metadata}))
ASB_OPTIONS(asb_command_options, ASB_COMMAND_OPTIONS_VERSION,
            %arg({&$self->cwd, &$self->user, &$self->tag}),
            %arg({&$self->envs}))
ASB_OPTIONS(asb_pty_options, ASB_PTY_OPTIONS_VERSION,
            %arg({&$self->cwd, &$self->user}),
            %arg({&$self->envs}))
ASB_OPTIONS(asb_files_options, ASB_FILES_OPTIONS_VERSION,
            %arg({&$self->user}), ASB_NONE)
ASB_OPTIONS(asb_watch_options, ASB_WATCH_OPTIONS_VERSION,
            %arg({&$self->user}), ASB_NONE)
ASB_OPTIONS(asb_code_options, ASB_CODE_OPTIONS_VERSION,
            %arg({&$self->language, &$self->context_id}),
            %arg({&$self->envs}))
ASB_OPTIONS(asb_named_command_options, ASB_NAMED_COMMAND_OPTIONS_VERSION,
            ASB_NONE, ASB_NONE)

/* ---- calls that block ------------------------------------------------------ */

ASB_BLOCKING(asb_global_init)
ASB_BLOCKING(asb_client_new)          /* may start the local engine */
ASB_BLOCKING(asb_sandbox_create)
ASB_BLOCKING(asb_sandbox_connect)
ASB_BLOCKING(asb_sandbox_kill)
ASB_BLOCKING(asb_sandbox_kill_id)
ASB_BLOCKING(asb_sandbox_set_timeout)
ASB_BLOCKING(asb_sandbox_is_running)
ASB_BLOCKING(asb_sandbox_pause)
ASB_BLOCKING(asb_sandbox_resume)
ASB_BLOCKING(asb_sandbox_get_info)
ASB_BLOCKING(asb_sandbox_list)
ASB_BLOCKING(asb_sandbox_get_metrics)
ASB_BLOCKING(asb_commands_run)
ASB_BLOCKING(asb_commands_start)
ASB_BLOCKING(asb_commands_connect)
ASB_BLOCKING(asb_commands_kill)
ASB_BLOCKING(asb_commands_signal)
ASB_BLOCKING(asb_commands_send_stdin)
ASB_BLOCKING(asb_commands_close_stdin)
ASB_BLOCKING(asb_commands_list)
ASB_BLOCKING(asb_process_wait)
ASB_BLOCKING(asb_process_kill)
ASB_BLOCKING(asb_process_send_stdin)
ASB_BLOCKING(asb_process_close_stdin)
ASB_BLOCKING(asb_process_disconnect)  /* waits for a wait in progress */
ASB_BLOCKING(asb_process_free)
ASB_BLOCKING(asb_pty_create)
ASB_BLOCKING(asb_pty_send_input)
ASB_BLOCKING(asb_pty_resize)
ASB_BLOCKING(asb_pty_kill)
ASB_BLOCKING(asb_files_read)
ASB_BLOCKING(asb_files_read_stream)
ASB_BLOCKING(asb_files_write_stream)
ASB_BLOCKING(asb_files_write_many)
ASB_BLOCKING(asb_files_write)
ASB_BLOCKING(asb_files_list)
ASB_BLOCKING(asb_files_exists)
ASB_BLOCKING(asb_files_stat)
ASB_BLOCKING(asb_files_remove)
ASB_BLOCKING(asb_files_rename)
ASB_BLOCKING(asb_files_make_dir)
ASB_BLOCKING(asb_files_watch_dir)
ASB_BLOCKING(asb_watch_wait)
ASB_BLOCKING(asb_watch_free)          /* waits for a wait in progress */
ASB_BLOCKING(asb_files_download_url)
ASB_BLOCKING(asb_files_upload_url)
ASB_BLOCKING(asb_code_run)
ASB_BLOCKING(asb_code_context_create)
ASB_BLOCKING(asb_code_contexts_list)
ASB_BLOCKING(asb_code_context_restart)
ASB_BLOCKING(asb_code_context_remove)
ASB_BLOCKING(asb_session_save)        /* file locks */
ASB_BLOCKING(asb_session_load)
ASB_BLOCKING(asb_session_get)
ASB_BLOCKING(asb_sessions_list)
ASB_BLOCKING(asb_session_delete)
ASB_BLOCKING(asb_sandbox_run_command)
ASB_BLOCKING(asb_sandbox_commands_list)

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

/* ---- the language's shims (after the declarations they use) --------------- */
#if defined(SWIGPYTHON)
%include "python/asb_python_shims.i"
#elif defined(SWIGLUA)
%include "lua/asb_lua_shims.i"
#endif
