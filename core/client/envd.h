/* L2 clients of a sandbox's envd: Connect unary and server-streaming calls,
 * /files URLs, and the mapping of remote errors to asb_status. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CLIENT_ENVD_H
#define ASB_CLIENT_ENVD_H

#include <cjson/cJSON.h>

#include "proto/url.h"
#include "util/buf.h"
#include "http.h"
#include "internal.h"

struct asb_sandbox {
  asbi_life life; /* refs: the user's, its children's, calls in flight */
  asb_client *client;
  char *id;
  char *envd_token; /* NULL = none */
  char *envd_version;
  char *domain;
  char *traffic_token; /* NULL = none */
  int ver[3];          /* envd_version parsed */
  char *envd_base;     /* base URL of envd for SDK traffic */
  char *hdr_id;        /* "E2b-Sandbox-Id: <id>" */
  char *hdr_token;     /* "X-Access-Token: <token>" or NULL */
  char *hdr_ua;        /* "User-Agent: <ua>" */
  /* Filled by the control plane (sandbox_api.c); NULL when attached. */
  char *template_id;
  char *alias;
  char *mcp_token; /* the MCP gateway's token made at create, else NULL */
  char *fork_mode; /* the reply's forkMode ("processes", "files"), else NULL */
};

/* Phase timers of asb_commands_run (issue 23): off unless ASB_TIMING is
 * set in the environment when first looked at ("1"/"stderr": stderr, else a
 * file appended to). asbi_timing_ns() is 0 when off (one test of a cached
 * int). The stream open notes when the request was built and when the
 * response head arrived, per thread, for the run that follows. */
uint64_t asbi_timing_ns(void);
void asbi_timing_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern _Thread_local uint64_t asbi_t_built, asbi_t_head;

/* Make a handle (no network). Shared by attach and the control plane. */
int asbi_sandbox_new(asb_sandbox **out, asb_client *client, const char *id, const char *token,
                     const char *envd_version, const char *domain, const char *traffic_token);
void asbi_sandbox_ref(asb_sandbox *sb);
void asbi_sandbox_unref(asb_sandbox *sb);
/* Hold the sandbox a public call acts on for the whole call:
 * ASBI_SANDBOX_CALL(sb); as the function's first line (see asbi_life). */
asb_sandbox *asbi_sandbox_hold(asb_sandbox *sb);
static inline void asbi_sandbox_release_(asb_sandbox *const *sb) {
  asbi_sandbox_unref(*sb);
}
#define ASBI_SANDBOX_CALL(sb)                                                                     \
  asb_sandbox *const asbi_held_sandbox_ __attribute__((cleanup(asbi_sandbox_release_), unused)) = \
      asbi_sandbox_hold(sb)
/* 1 if the sandbox's envd is at least major.minor.patch. */
int asbi_envd_at_least(const asb_sandbox *sb, int major, int minor, int patch);
/* The user to name for a call: the given one; else "user" for envds older
 * than 0.4.0 (they had no default user); else NULL (envd's default). */
const char *asbi_envd_user(const asb_sandbox *sb, const char *user);

/* Request-level settings of an envd call. */
typedef struct asbi_envd_call {
  const char *user; /* already passed through asbi_envd_user */
  long timeout_ms;  /* effective request timeout, 0 = none */
  asb_cancel *cancel;
  asb_cancel *stop; /* the acting handle's stop token (asbi_life) */
  int idempotent;
} asbi_envd_call;

/* Fill c from a public asb_call_options (NULL = defaults); the call acts
 * on the sandbox handle itself (c->stop = its stop token). */
void asbi_envd_call_from(asbi_envd_call *c, asb_sandbox *sb, const asb_call_options *opts,
                         const char *user);

/* Unary Connect call: POST <envd>/<method> with the JSON request; on success
 * *out (if not NULL) receives the parsed reply. Errors are mapped and
 * recorded; `what` prefixes messages ("commands.kill"). */
int asbi_envd_unary(asb_sandbox *sb, const char *method, const cJSON *req, const asbi_envd_call *c,
                    const char *what, cJSON **out);

/* Server-streaming Connect call. lifetime_ms > 0 sends Connect-Timeout-Ms
 * (for process Start: the process's lifetime). Returns once the stream is
 * open (HTTP 200); messages are then read with asbi_envd_stream_next. */
typedef struct asbi_envd_stream asbi_envd_stream;
int asbi_envd_stream_open(asb_sandbox *sb, const char *method, const cJSON *req,
                          const asbi_envd_call *c, long lifetime_ms, const char *what,
                          asbi_envd_stream **out);
/* Next message: ASB_OK with *msg set (caller frees with cJSON_Delete);
 * ASB_OK with *msg NULL at the clean end of the stream; or an error (the
 * end-stream error, mapped; a broken or malformed stream). wait_ms > 0
 * bounds this wait (ASB_ETIMEOUT; the stream stays usable); extra is an
 * additional cancel token for this wait only. */
int asbi_envd_stream_next(asbi_envd_stream *s, cJSON **msg, long wait_ms, asb_cancel *extra);
/* After opening: the tokens the stream honours from now on (http.h). */
void asbi_envd_stream_set_tokens(asbi_envd_stream *s, asb_cancel *cancel, asb_cancel *stop);
void asbi_envd_stream_close(asbi_envd_stream *s);

/* Headers common to envd requests into hs (NULL-ended, at most 8 entries);
 * strings that must be built are appended to store. */
void asbi_envd_headers(asb_sandbox *sb, const char *user, const char **hs, asbi_buf *store,
                       const char *content_type);

/* The /files URL for path (kind: API traffic or a public URL). */
int asbi_envd_files_url(asb_sandbox *sb, asbi_url_kind kind, const char *path, const char *user,
                        asbi_buf *out);

/* ---- remote errors (errmap.c) ---------------------------------------- */
/* Map an HTTP error reply (status >= 400) to an asb_status and record it.
 * Understands Connect error bodies ({"code":"not_found",...}), E2B API
 * bodies ({"code":404,"message":...}) and plain text. */
int asbi_map_http_error(const asbi_http_resp *resp, const char *what);
/* Map a Connect error code (from an end-stream frame) and record it. */
int asbi_map_connect_error(const char *code, const char *message, const char *what);
/* Map a transport failure: just prefixes the message. Returns rc. */
int asbi_prefix_error(int rc, const char *what);

/* ---- the control plane's view of a sandbox (cp.c) ------------------------ */
/* A call to the sandbox failed with rc. When the connection broke (or the
 * router could not reach its agent), ask the control plane whether the
 * sandbox is still there: if it ended, the error becomes ASB_ESANDBOXGONE
 * with its reason (e.g. "timeout"), which tells the caller more than a
 * broken stream. Otherwise rc and its error stay. Returns the code. */
int asbi_sandbox_explain(asb_sandbox *sb, int rc);

#endif
