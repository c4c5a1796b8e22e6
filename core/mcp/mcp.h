/* agent-sandbox-mcp: the Model Context Protocol server over libagentsandbox.
 * Internal declarations shared by the protocol core (protocol.c), the tools
 * (tools.c, sandboxes.c), the transports (stdio.c, http.c) and main.c.
 *
 * Shape: one mcp_server (configuration, the library client, the tool
 * table, the sandbox handle cache) serves mcp_sessions (stdio: one; HTTP:
 * one per Mcp-Session-Id). A session reads messages handed to it by its
 * transport and answers through mcp_sinks: every request gets the sink its
 * answer must go to (stdout; the POST's response stream), the session has
 * one for messages not tied to a request. Requests that reach the sandbox
 * run on a worker thread each (mcp_call), so the reader never blocks, and
 * can be cancelled (notifications/cancelled -> asb_cancel_request).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_MCP_MCP_H
#define ASB_MCP_MCP_H

#include <agentsandbox.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc.h"
#include "util/buf.h"

#define MCP_SERVER_NAME "agent-sandbox-mcp"

/* ---- protocol revisions ------------------------------------------------------- */

/* Newest first; the first is what we offer. */
extern const char *const mcp_revisions[];
extern const size_t mcp_revision_count;
/* Index in mcp_revisions, or -1. */
int mcp_revision_find(const char *rev);

/* ---- configuration ------------------------------------------------------------- */

typedef struct mcp_config {
  const char *template_id; /* of the default sandbox; NULL = "base" */
  long sandbox_timeout_s;  /* the default sandbox's idle lifetime */
  int keep;                /* keep the default sandbox at exit */
  size_t max_message;      /* bytes of one incoming message */
  size_t max_read;         /* bytes read_file / resources/read return */
  size_t max_output;       /* bytes of each stream kept in a result */
  size_t max_stream;       /* bytes of output streamed as log messages */
  int max_calls;           /* requests in flight per session */
  char **disabled;         /* tools not offered (NULL-ended) */
  int verbose;
} mcp_config;

/* ---- sinks ------------------------------------------------------------------- */

typedef struct mcp_sink mcp_sink;
/* send takes msg (malloc'd JSON text; NULL with final = "this request gets
 * no answer", e.g. it was cancelled). final marks the answer to the request
 * the sink was made for; notifications have final 0. */
struct mcp_sink {
  atomic_int refs;
  void (*send)(mcp_sink *s, char *msg, int final);
  void (*destroy)(mcp_sink *s);
};
void mcp_sink_ref(mcp_sink *s);
void mcp_sink_unref(mcp_sink *s);
/* A sink that gathers n answers into one batch answer for parent, passing
 * notifications straight through. */
mcp_sink *mcp_batch_sink_new(mcp_sink *parent, size_t n);

/* ---- the server, sessions, calls --------------------------------------------------- */

typedef struct mcp_server mcp_server;
typedef struct mcp_session mcp_session;
typedef struct mcp_call mcp_call;
typedef struct sbx_ref sbx_ref;
typedef struct bg_cmd bg_cmd;

struct mcp_server {
  mcp_config cfg;
  asb_client *client;
  cJSON *tools;        /* tools.json, minus disabled tools */
  char *tools_json[8]; /* tools/list result per revision, lazily */
  pthread_mutex_t mu;  /* tools_json, sessions, cache */
  mcp_session *sessions;
  sbx_ref *cache;
  /* The ticker: flushes streamed output and sends progress heartbeats
   * while calls are in flight. */
  pthread_t ticker;
  pthread_cond_t tick_cv;
  int ticker_started, stopping;
  int tick_wanted; /* some call has output waiting or a progress token */
  /* Every thread the server starts (calls, stdio readers), joined: a
   * process must not run its exit handlers (OpenSSL's) while a thread is
   * still in its own exit. */
  pthread_mutex_t threads_mu;
  pthread_cond_t threads_cv;
  struct mcp_thread *threads;
  atomic_int inflight;
};

struct mcp_session {
  mcp_server *srv;
  mcp_session *next; /* in srv->sessions */
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* signalled when a call ends */
  int state;            /* 0 new, 1 initialized, 2 closing */
  int rev;              /* negotiated revision (index), -1 before */
  atomic_int log_level; /* minimum level sent, MCP_LOG_* */
  mcp_call *calls;      /* in flight */
  int ncalls;
  mcp_sink *out; /* messages not tied to a request */
  char *client_name;
  /* The default sandbox (sandboxes.c). */
  pthread_mutex_t default_mu;
  char *default_id;
  uint64_t default_end_ms; /* when it expires unless extended */
  char **known;            /* sandbox ids this session used (resources) */
  size_t nknown;
  bg_cmd *bg;            /* background commands (tools.c) */
  const char *transport; /* "stdio", "http" */
};

enum {
  MCP_LOG_DEBUG,
  MCP_LOG_INFO,
  MCP_LOG_NOTICE,
  MCP_LOG_WARNING,
  MCP_LOG_ERROR,
  MCP_LOG_CRITICAL,
  MCP_LOG_ALERT,
  MCP_LOG_EMERGENCY
};

struct mcp_call {
  mcp_session *s;
  mcp_call *next; /* in s->calls */
  char *id;       /* JSON text */
  char *method;
  cJSON *params;        /* owned copy */
  char *progress_token; /* JSON text, or NULL */
  double progress;
  uint64_t started_ms;
  _Atomic uint64_t last_progress_ms;
  asb_cancel *cancel;
  atomic_int cancelled;
  mcp_sink *sink;
  const cJSON *tool; /* the tool's definition (tools/call) */
  /* Output streamed as log messages (tools.c), flushed by the ticker too. */
  pthread_mutex_t out_mu;
  asbi_buf pending[2]; /* stdout, stderr */
  uint64_t pending_since_ms;
  size_t streamed;
  int stream_capped;
  int streaming; /* 1 while pending[] may fill */
};

/* Lifecycle. mcp_server_init makes the client (from the environment and
 * the options) and loads the tool table. */
int mcp_server_init(mcp_server *srv, const mcp_config *cfg, const asb_client_options *copts);
/* Returns 0, or the number of threads still running (stuck calls): the
 * process should then leave with _exit. */
int mcp_server_free(mcp_server *srv);
/* Start fn(arg) on a thread the server joins (1 MiB stack). 0 or errno. */
int mcp_thread_start(mcp_server *srv, void *(*fn)(void *), void *arg);

/* A session whose unrelated messages go to out (ref taken; may be NULL). */
mcp_session *mcp_session_new(mcp_server *srv, mcp_sink *out, const char *transport);
/* Hand the session one incoming message (or batch). Answers go to sink.
 * With run_here (may be NULL), a request that needs a worker is not given
 * a thread: *run_here is set and the caller runs it with mcp_call_run once
 * it no longer is needed to read. For transports that need to look before
 * handing over (HTTP), the parsed form; it is consumed. */
void mcp_session_handle(mcp_session *s, const char *text, size_t len, mcp_sink *sink,
                        mcp_call **run_here);
void mcp_call_run(mcp_call *c);
void mcp_session_handle_parsed(mcp_session *s, mcp_parsed *p, mcp_sink *sink);
/* Report an over-long message (answered with an error, id unknown). */
void mcp_session_oversized(mcp_session *s, size_t len, mcp_sink *sink);
/* Cancel every call in flight (returns at once). */
void mcp_session_cancel(mcp_session *s);
/* Cancel every call in flight, wait up to grace_ms for them to end. */
void mcp_session_cancel_all(mcp_session *s, long grace_ms);
/* Wait up to ms for the calls in flight to end; 1 if none is left. */
int mcp_session_wait_idle(mcp_session *s, long ms);
/* End the session: cancel its calls, stop its background collectors, kill
 * its default sandbox unless --keep, free it. */
void mcp_session_close(mcp_session *s);
/* Swap the sink for unrelated messages (ref taken; NULL = none). */
void mcp_session_set_out(mcp_session *s, mcp_sink *out);
int mcp_session_busy(mcp_session *s);

/* Send a notification on the call's sink (params consumed). */
void mcp_call_notify(mcp_call *c, const char *method, cJSON *params);
/* notifications/message if level passes the session's threshold. */
void mcp_call_log(mcp_call *c, int level, const char *logger, cJSON *data);
void mcp_session_log(mcp_session *s, int level, const char *logger, cJSON *data);
/* notifications/progress when the client asked for it. */
void mcp_call_progress(mcp_call *c, const char *message);
int mcp_call_cancelled(mcp_call *c);
/* Output of a command or cell (which: 0 stdout, 1 stderr), streamed as
 * log messages (coalesced; the ticker flushes what waits) within the
 * server's budget, and counted for progress. end flushes the rest. */
void mcp_call_output(mcp_call *c, int which, const char *data, size_t len);
void mcp_call_output_end(mcp_call *c);
int mcp_rev_at_least(const mcp_session *s, const char *rev);

/* ---- tools (tools.c) ----------------------------------------------------------------- */

/* The result of a tool call under construction. */
typedef struct mcp_result {
  cJSON *content;    /* array */
  cJSON *structured; /* object or NULL */
  int is_error;
} mcp_result;

typedef int (*mcp_tool_fn)(mcp_call *c, const cJSON *args, mcp_result *r);
/* The implementation of a tool by name, or NULL. */
mcp_tool_fn mcp_tool_impl(const char *name);
/* The embedded tools.json. */
extern const char mcp_tools_json[];
/* Markdown reference of the tools (docs/mcp.md). */
char *mcp_tools_markdown(const cJSON *tools);
/* Subset JSON Schema validation of a tool's arguments (schema.c): NULL if
 * value conforms, else a malloc'd message naming the first problem. */
char *mcp_schema_check(const cJSON *schema, const cJSON *value, const char *where);

/* The tools' results: helpers (tools.c). */
void mcp_result_text(mcp_result *r, const char *text);
void mcp_result_fail(mcp_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The library's last error, as a tool error: "<what>: <message> (<code>)". */
void mcp_result_lib_error(mcp_result *r, int rc, const char *what);

/* resources/list and resources/read (tools.c). result is a cJSON object to
 * send, or NULL with *code and *msg set. */
cJSON *mcp_resources_list(mcp_call *c, const char *cursor, int *code, char **msg);
cJSON *mcp_resources_read(mcp_call *c, const char *uri, int *code, char **msg);
/* Background command collectors of a session: stop and free them. */
void mcp_bg_close_all(mcp_session *s);

/* ---- sandboxes (sandboxes.c) --------------------------------------------------------- */

struct sbx_ref {
  sbx_ref *next;
  asb_sandbox *h;
  char *id;
  int refs;
  int connected; /* has envd's token: file/command calls work */
  int dead;
};

/* The sandbox a tool acts on: args' sandbox_id, or the session's default
 * (created on first use). need_envd: the call reaches into the sandbox
 * (commands, files, code); otherwise control-plane calls only. On failure
 * the tool error is in r and NULL is returned. *is_default tells which. */
sbx_ref *mcp_sandbox_for(mcp_call *c, const cJSON *args, int need_envd, mcp_result *r,
                         int *is_default);
/* The id asked for (args' sandbox_id or the default's, if one exists);
 * NULL if neither. Caller frees. */
char *mcp_sandbox_id_for(mcp_call *c, const cJSON *args, int *is_default);
void mcp_sandbox_put(mcp_server *srv, sbx_ref *ref);
/* Forget a sandbox (killed, gone): cache entry and, if it was one, the
 * session's default. */
void mcp_sandbox_forget(mcp_session *s, const char *id);
/* Mark a cached handle as needing a reconnect (after a pause). */
void mcp_sandbox_disconnected(mcp_server *srv, const char *id);
/* Add a handle made by a tool (create/connect) to the cache; takes h. */
sbx_ref *mcp_sandbox_adopt(mcp_server *srv, asb_sandbox *h);
void mcp_sandbox_note(mcp_session *s, const char *id);
/* A tool changed a sandbox's lifetime: if it is the default, remember
 * when it now ends (UINT64_MAX: paused, not counting). */
void mcp_sandbox_lifetime(mcp_session *s, const char *id, uint64_t end_ms);
/* A handle for an explicit id (resources/read); as mcp_sandbox_for. */
sbx_ref *mcp_sandbox_get(mcp_server *srv, const char *id, int need_envd, asb_cancel *cancel,
                         int *rc, int *connected);
/* After a failure on the default sandbox that says it is gone. */
void mcp_sandbox_check_gone(mcp_call *c, sbx_ref *ref, int rc, int is_default, mcp_result *r);
/* End of session: kill (or keep) the default sandbox. */
void mcp_sandbox_end_default(mcp_session *s);
void mcp_sandbox_cache_free(mcp_server *srv);

/* ---- transports ---------------------------------------------------------------------- */

typedef struct mcp_http_options {
  const char *listen; /* "host:port", default 127.0.0.1:0 */
  const char *path;   /* the endpoint, default /mcp */
  const char *token;  /* bearer token; NULL with no_auth */
  int no_auth;
  char **allowed_origins; /* besides loopback ones (NULL-ended) */
  long session_idle_s;
  int max_sessions;
} mcp_http_options;

/* Serve stdin/stdout until EOF or a signal; returns the exit status. */
int mcp_stdio_run(mcp_server *srv);
int mcp_http_run(mcp_server *srv, const mcp_http_options *o);

/* The wake-up pipe signals write to (main.c installs the handlers). */
extern int mcp_signal_pipe[2];

void mcp_logf(const mcp_server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
