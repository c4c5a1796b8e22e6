/*
 * agent-sandbox — the server SDK: named commands served over HTTP from
 * inside a sandbox (libagentsandbox-server, `asb_server_*`).
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * A program in a template registers commands (a name, a description, typed
 * arguments, a C handler) and serves them, by default on port 9000:
 *
 *   GET  /health          {"status":"ok"}
 *   GET  /commands        {"commands":[{"name","description","args":[{"name",
 *                          "type","required","default","description"}]}]}
 *   POST /commands/<name> body = a JSON object of keyword arguments →
 *                          200 {"result": <the handler's JSON result>}
 *
 * Errors are {"error": <message>, "type": <name>}: 404 for an unknown
 * command ("Unknown command 'x'; available: a, b"), 400 for a malformed body
 * or bad arguments, 401 without the access token, 413 for a body over the
 * limit, 500 when the handler fails (type and message are the handler's).
 * Clients call them with asb_sandbox_run_command (agentsandbox/named.h).
 *
 * This library is separate from libagentsandbox (the client) and needs
 * neither libcurl nor OpenSSL: only libmicrohttpd and cJSON. It shares the
 * client's status codes and error struct (errors.h) but keeps its own
 * thread-local last error, read with asb_server_error_last() — so a program
 * may link both libraries. This header is C89-clean and usable from C++.
 */
#ifndef AGENTSANDBOX_SERVER_H
#define AGENTSANDBOX_SERVER_H

#include "common.h"
#include "types.h"
#include "errors.h"

ASB_BEGIN_DECL

/* Argument types. Values arriving as JSON are coerced: an integer or a
 * float also from a string holding one ("42", "2.5"); a boolean from
 * true/false, 1/0 or the strings true/false/yes/no/on/off/1/0 (any case);
 * a string also from a number or a boolean (its text); json takes any
 * value as is. */
typedef enum asb_server_arg_type {
  ASB_ARG_STRING = 1,
  ASB_ARG_INTEGER = 2,
  ASB_ARG_FLOAT = 3,
  ASB_ARG_BOOLEAN = 4,
  ASB_ARG_JSON = 5
} asb_server_arg_type;

/* Flags of asb_server_command_add_arg. */
#define ASB_ARG_REQUIRED 1

/* A command's handler (asb_server_handler_fn, types.h): read the arguments
 * with the asb_server_call_* getters, set a result with
 * asb_server_call_set_result_* and return 0; or return non-zero to fail the
 * call (HTTP 500), after describing the failure with asb_server_call_error.
 * Handlers run on the server's threads, several at once when requests
 * arrive together. A command's destroy function (asb_server_destroy_fn)
 * releases its userdata when the server is freed. */

#define ASB_SERVER_OPTIONS_VERSION 1

typedef struct asb_server_options {
  unsigned int version;         /* ASB_SERVER_OPTIONS_VERSION */
  const char *host;             /* address to listen on: NULL = "0.0.0.0"
                                   (IPv4 or IPv6 literal) */
  const char *token;            /* X-Access-Token required on every route but
                                   /health: NULL = $ASB_SERVER_TOKEN ("" =
                                   none), else the token whose SHA-256 (hex) is
                                   $ASB_SERVER_TOKEN_SHA256, else none; "" =
                                   none */
  size_t max_body_bytes;        /* request bodies: 0 = 1 MiB (larger: 413) */
  unsigned int max_connections; /* 0 = 256 */
  long shutdown_grace_ms;       /* how long stopping waits for calls in
                                   progress: 0 = 10000, negative = no limit */
} asb_server_options;

#define ASB_SERVER_OPTIONS_INIT \
  { ASB_SERVER_OPTIONS_VERSION, NULL, NULL, 0, 0, 0 }

ASB_API(int)
asb_server_options_init(asb_server_options *opts, unsigned int version);

/* Make a server (nothing listens yet). opts may be NULL. Errors:
 * ASB_EVERSION, ASB_ENOMEM. */
ASB_API(int) asb_server_new(asb_server **out, const asb_server_options *opts);

/* Stop the server if it runs (asb_server_stop + asb_server_wait: at most
 * shutdown_grace_ms for calls in progress), call each command's destroy
 * function, release everything; calls the program still holds (pull mode,
 * deferred) keep its memory until they are answered. Accepts NULL. Not from
 * a handler. */
ASB_API(void) asb_server_free(asb_server *server);

/* ---- the registry ---------------------------------------------------------
 * Register every command before the server starts; the registry is frozen
 * from then on (ASB_EINVAL). */

/* Register a command. name: 1..128 of [A-Za-z0-9_.-], starting with a
 * letter or '_'. description may be NULL. handler NULL: the command's calls
 * are served by the program's own loop (asb_server_next_call, below).
 * destroy (may be NULL) is called with userdata by asb_server_free, also
 * when registration fails. *out (may be NULL) receives the command, to add
 * arguments to; it is owned by the server. Errors: ASB_EINVAL (bad name,
 * server running), ASB_EEXISTS (name taken), ASB_ENOMEM. */
ASB_API(int)
asb_server_register(asb_server_command **out, asb_server *server,
                    const char *name, const char *description,
                    asb_server_handler_fn handler, void *userdata,
                    asb_server_destroy_fn destroy);

/* Declare an argument: name is [A-Za-z_][A-Za-z0-9_]* (at most 128); type
 * an asb_server_arg_type; flags ASB_ARG_REQUIRED or 0; default_value (may
 * be NULL) is the value an omitted argument takes, written as text ("42",
 * "yes", "2.5", JSON for json, verbatim for string) — it must be valid for
 * the type and cannot go with ASB_ARG_REQUIRED. An optional argument
 * without a default is simply absent when omitted. description may be
 * NULL. Errors: ASB_EINVAL, ASB_EEXISTS (argument declared twice),
 * ASB_ENOMEM. */
ASB_API(int)
asb_server_command_add_arg(asb_server_command *command, const char *name,
                           int type, int flags, const char *default_value,
                           const char *description);

/* Hide the command from GET /commands (it stays callable). */
ASB_API(int)
asb_server_command_set_hidden(asb_server_command *command, int hidden);

/* ---- running ----------------------------------------------------------------
 * port: 1..65535, or 0 for a free port (read it with asb_server_port). */

/* Serve until asb_server_stop is called (from a handler, another thread or
 * a signal handler), then shut down gracefully and return ASB_OK. Errors:
 * ASB_EINVAL (bad port, already running), ASB_ECONNECTION (cannot listen:
 * the message says why, e.g. the port is in use), ASB_ENOMEM. */
ASB_API(int) asb_server_start(asb_server *server, int port);

/* Start serving on threads of the server's own and return once it listens.
 * Stop it with asb_server_stop + asb_server_wait, or asb_server_free. Same
 * errors as asb_server_start. */
ASB_API(int) asb_server_start_background(asb_server *server, int port);

/* The port the server listens on, or 0 when it is not running. */
ASB_API(int) asb_server_port(const asb_server *server);

/* Ask the server to stop: it stops accepting connections, lets calls in
 * progress finish (up to shutdown_grace_ms), then closes every connection.
 * Returns at once. Async-signal-safe: call it from a SIGTERM handler.
 * Stopping a server that does not run is a no-op. */
ASB_API(int) asb_server_stop(asb_server *server);

/* Wait until the server has stopped (after asb_server_stop). Returns at
 * once when it does not run. Not from a handler. */
ASB_API(int) asb_server_wait(asb_server *server);

/* ---- calls answered by the program: pull mode, deferred replies -------------
 * For runtimes that cannot be entered from the server's threads (Lua, a
 * Node event loop) or that answer later: a command registered without a
 * handler queues its calls, and the program takes them with
 * asb_server_next_call on its own thread, when asb_server_fd (an eventfd)
 * is readable — poll(2), epoll, uv_poll_t, luv. A handler may also defer
 * its call and return at once. Either way the program answers each call it
 * holds exactly once, with asb_server_call_reply or asb_server_call_fail,
 * from any thread and at any later time; the HTTP request waits for it.
 * When the server stops, queued calls are answered 503 at once and
 * asb_server_next_call returns ASB_ECANCELED; calls taken earlier may still
 * be answered until shutdown_grace_ms, then they are answered 503 (and a
 * late reply returns ASB_ECANCELED; its memory stays valid until then, also
 * after asb_server_free). */

/* An fd that is readable while calls wait to be taken, and once the server
 * stopped; never read or close it (asb_server_next_call keeps its level).
 * The same fd for the server's whole life. */
ASB_API(int) asb_server_fd(const asb_server *server);

/* Take the next queued call: ASB_OK with *out set (the program's now:
 * answer it), ASB_ETIMEOUT when none came within timeout_ms (0 = do not
 * wait, negative = wait until one comes or the server stops),
 * ASB_ECANCELED when the server does not run (stopped, or not started).
 * Thread-safe. */
ASB_API(int)
asb_server_next_call(asb_server_call **out, asb_server *server,
                     long timeout_ms);

/* In a handler: keep the call for an answer later (asb_server_call_reply or
 * _fail, from any thread); the handler then returns at once and its return
 * value is ignored. ASB_EINVAL outside a handler or when called twice. */
ASB_API(int) asb_server_call_defer(asb_server_call *call);

/* Answer a call the program holds with the result set on it
 * (asb_server_call_set_result_*, none = null) or the error described with
 * asb_server_call_error; the call is released (do not use it after).
 * Thread-safe. ASB_ECANCELED if the server gave up on it meanwhile. */
ASB_API(int) asb_server_call_reply(asb_server_call *call);

/* Answer with HTTP 500 {"error": message, "type": type} (type NULL =
 * "Error") and release the call. */
ASB_API(int)
asb_server_call_fail(asb_server_call *call, const char *type,
                     const char *message);

/* ---- calls: arguments
 * -------------------------------------------------------- Strings returned are
 * owned by the call and valid until the handler returns (or, for a call the
 * program holds, until it is answered). An argument is present when the request
 * gave it or it has a default. */

/* The command's name. */
ASB_API(const char *) asb_server_call_command(const asb_server_call *call);
/* 1 if the argument is present, else 0. */
ASB_API(int) asb_server_call_has(const asb_server_call *call, const char *arg);
/* A string argument; other types as text ("42", "true", JSON). NULL if
 * absent. */
ASB_API(const char *)
asb_server_call_string(asb_server_call *call, const char *arg);
/* An integer argument (a float is truncated, a boolean is 0/1); 0 if
 * absent. */
ASB_API(asb_int64)
asb_server_call_integer(const asb_server_call *call, const char *arg);
/* A float or integer argument; 0.0 if absent. */
ASB_API(double)
asb_server_call_float(const asb_server_call *call, const char *arg);
/* A boolean argument (1 or 0); 0 if absent. */
ASB_API(int)
asb_server_call_boolean(const asb_server_call *call, const char *arg);
/* Any argument as compact JSON text ("\"hi\"", "[1,2]"); NULL if absent. */
ASB_API(const char *)
asb_server_call_json(asb_server_call *call, const char *arg);
/* Every present argument as one JSON object. */
ASB_API(const char *) asb_server_call_args_json(asb_server_call *call);

/* ---- calls: results
 * ----------------------------------------------------------- The last result
 * set wins; a handler that returns 0 without one answers
 * {"result": null}. Each returns ASB_OK, ASB_EINVAL or ASB_ENOMEM. */

/* A result given as JSON text (any value: object, array, string, ...);
 * ASB_EINVAL if it is not one valid JSON document. */
ASB_API(int)
asb_server_call_set_result_json(asb_server_call *call, const char *json);
ASB_API(int)
asb_server_call_set_result_string(asb_server_call *call, const char *value);
ASB_API(int)
asb_server_call_set_result_integer(asb_server_call *call, asb_int64 value);
ASB_API(int)
asb_server_call_set_result_float(asb_server_call *call, double value);
ASB_API(int)
asb_server_call_set_result_boolean(asb_server_call *call, int value);

/* Describe the failure of the call: type names it (like an exception
 * class: "ValueError"; NULL = "Error"), message says what happened. The
 * client sees HTTP 500 {"error": message, "type": type}. Returns
 * ASB_ECOMMANDFAILED, so a handler can end with
 *   return asb_server_call_error(call, "ValueError", "n must be >= 0"); */
ASB_API(int)
asb_server_call_error(asb_server_call *call, const char *type,
                      const char *message);

/* ---- the agents service -----------------------------------------------------
 * Coding-agent sessions (Codex, Qwen Code, Claude Code, OpenCode) served on
 * the same port and behind the same token as the commands, under /agents
 * (docs/agents.md: the routes, the event schema, each agent's mapping):
 * GET /agents, POST /agents/{agent}/install, POST /agents/sessions,
 * GET|DELETE /agents/sessions/{id}, POST .../messages (a turn; its events
 * stream as NDJSON or SSE until turn.completed), GET .../events?after=N,
 * POST .../cancel. Each turn runs the agent's CLI inside the sandbox, in
 * its own session with no terminal; sessions outlive the connections that
 * made them. */

#define ASB_SERVER_AGENTS_OPTIONS_VERSION 1

typedef struct asb_server_agents_options {
  unsigned int version;      /* ASB_SERVER_AGENTS_OPTIONS_VERSION */
  const char *prefix;        /* where installs go (npm -g layout: bin/,
                                lib/node_modules/): NULL = $ASB_AGENTS_PREFIX,
                                else $HOME/.agent-sandbox/agents */
  const char *search_path;   /* more prefixes to find agents in, read-only,
                                ':'-separated: NULL = $ASB_AGENTS_PATH, else
                                "/opt/agent-sandbox/agents:/usr/local/lib/
                                agent-sandbox/agents"; then $PATH */
  const char *npm;           /* the npm command: NULL = "npm" from $PATH */
  const char *registry;      /* the npm registry installs use: NULL =
                                $ASB_AGENTS_REGISTRY, else npm's own setting */
  size_t max_prompt_bytes;   /* a turn's prompt: 0 = 256 KiB (larger: 413) */
  unsigned int max_sessions; /* open at once: 0 = 64 (more: 429) */
  size_t max_log_bytes;      /* the events a session keeps: 0 = 16 MiB (older
                                ones are dropped; asking for them: 410) */
  int no_install_on_demand;  /* 1: a session whose agent is missing is
                                refused (409) unless it asks to install;
                                0: its first turn installs it */
} asb_server_agents_options;

#define ASB_SERVER_AGENTS_OPTIONS_INIT \
  { ASB_SERVER_AGENTS_OPTIONS_VERSION, NULL, NULL, NULL, NULL, 0, 0, 0, 0 }

ASB_API(int)
asb_server_agents_options_init(asb_server_agents_options *opts,
                               unsigned int version);

/* Serve the agents routes on this server (before it starts; opts may be
 * NULL). Without this call /agents answers 404. Errors: ASB_EINVAL (the
 * server runs, or agents are enabled already, or a relative prefix),
 * ASB_EVERSION, ASB_ENOMEM. asb_server_free cancels every running turn
 * and waits for it. */
ASB_API(int)
asb_server_enable_agents(asb_server *server,
                         const asb_server_agents_options *opts);

/* ---- errors
 * --------------------------------------------------------------------- The
 * calling thread's last error in this library (never NULL): code (an
 * asb_status), message. Valid until the next failing call of this library
 * on the thread. */
ASB_API(const asb_error *) asb_server_error_last(void);

ASB_END_DECL

#endif /* AGENTSANDBOX_SERVER_H */
