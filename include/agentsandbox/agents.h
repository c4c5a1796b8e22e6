/*
 * agent-sandbox — the agents API: coding-agent sessions (Codex, Qwen Code,
 * Claude Code, OpenCode) inside a sandbox.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * A template's server (libagentsandbox-server with asb_server_enable_agents;
 * the python-base and agents templates) serves the agents service on the
 * sandbox's commands port, 9000 by default, next to /commands and behind
 * the same token. These calls reach it through the same route as named
 * commands (agentsandbox/named.h). docs/agents.md describes the HTTP API
 * and the event schema; docs/reference/agents.md these functions.
 *
 *   asb_agent_session *s;
 *   asb_agent_session_new(&s, sb, "codex", &opts);        // cwd, model, ...
 *   asb_agent_turn *t;
 *   asb_agent_session_send(&t, s, "fix the failing test", &call);
 *   puts(asb_agent_turn_final_message(t));
 *   asb_agent_turn_free(t);
 *   asb_agent_session_close(s, NULL);
 *   asb_agent_session_free(s);
 *
 * A session lives in the sandbox, not in this handle: it survives the
 * client going away, and asb_agent_session_connect attaches to it again by
 * its id. Each turn's events are numbered (seq, from 1) in the session's
 * log; asb_agent_session_events reads them after any seq.
 */
#ifndef AGENTSANDBOX_AGENTS_H
#define AGENTSANDBOX_AGENTS_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

/* ---- options ------------------------------------------------------------- */

#define ASB_AGENTS_OPTIONS_VERSION 1

/* Options of every call but session creation. */
typedef struct asb_agents_options {
  unsigned int version;        /* ASB_AGENTS_OPTIONS_VERSION */
  int port;                    /* the server's port: 0 = 9000 */
  long timeout_ms;             /* the call: 0 = the client's default for plain
                                  requests and none for streams (a turn, an
                                  install, follow); negative = none */
  asb_cancel *cancel;          /* returns ASB_ECANCELED; the turn or install in
                                  the sandbox goes on (asb_agent_session_cancel
                                  stops a turn) */
  asb_agent_event_fn on_event; /* each event as it arrives (send, install,
                              events), on the calling thread; non-zero
                              aborts the call with ASB_EUSER (the turn goes
                              on) */
  void *userdata;
  int follow;                  /* asb_agent_session_events: 1 = also wait for
                                  the events of the turn in progress, until it
                                  ends */
  const char *install_version; /* asb_agents_install: the package version
                              (NULL = latest) */
  const char *registry;        /* asb_agents_install: the npm registry URL
                                  (NULL = the server's) */
  const char *source;          /* asb_agents_install: a tarball path or URL
                                  inside the sandbox to install instead */
} asb_agents_options;

#define ASB_AGENTS_OPTIONS_INIT \
  { ASB_AGENTS_OPTIONS_VERSION, 0, 0, NULL, NULL, NULL, 0, NULL, NULL, NULL }

ASB_API(int)
asb_agents_options_init(asb_agents_options *opts, unsigned int version);

#define ASB_AGENT_SESSION_OPTIONS_VERSION 1

/* How a session runs its agent (docs/agents.md: each agent's mapping). */
typedef struct asb_agent_session_options {
  unsigned int version; /* ASB_AGENT_SESSION_OPTIONS_VERSION */
  int port;             /* 0 = 9000 */
  long timeout_ms;      /* the request: 0 = the client's default */
  asb_cancel *cancel;
  const char *cwd;         /* the agent's working directory (NULL = the
                              server's $HOME) */
  const char *model;       /* NULL = the agent's default */
  const char *base_url;    /* an OpenAI-compatible (Anthropic for claude)
                              endpoint: NULL = the agent's own */
  const char *api_key_env; /* the variable holding the endpoint's key (NULL
                              = the agent's: OPENAI_API_KEY,
                              ANTHROPIC_API_KEY) */
  const char *wire_api;    /* codex: "responses" (NULL) or "chat" */
  const char *approval;    /* "never" (NULL: run tools without asking),
                              "edits", "plan" */
  const char *sandbox;     /* the agent's own sandbox: "none" (NULL: the
                              sandbox is the boundary), "workspace-write",
                              "read-only" (codex) */
  const char *const *args; /* extra CLI arguments, NULL-ended (or NULL) */
  const char *const *env;  /* extra environment, "NAME=value", NULL-ended */
  int install;             /* a missing CLI: 0 = the server's default
                              (install at the first turn), 1 = install,
                              -1 = refuse (ASB_ENOTFOUND) */
} asb_agent_session_options;

#define ASB_AGENT_SESSION_OPTIONS_INIT                                     \
  {                                                                        \
    ASB_AGENT_SESSION_OPTIONS_VERSION, 0, 0, NULL, NULL, NULL, NULL, NULL, \
        NULL, NULL, NULL, NULL, NULL, 0                                    \
  }

ASB_API(int)
asb_agent_session_options_init(asb_agent_session_options *opts,
                               unsigned int version);

/* ---- the agents ------------------------------------------------------------
 */

/* GET /agents: every agent the server knows, installed or not. Errors as
 * asb_sandbox_run_command's; ASB_EUNSUPPORTED when the port's server does
 * not serve agents. */
ASB_API(int)
asb_agents_list(asb_agent_list **out, asb_sandbox *sandbox,
                const asb_agents_options *opts);
ASB_API(size_t) asb_agent_list_count(const asb_agent_list *list);
/* Owned by the list; NULL past the end / not listed. */
ASB_API(const asb_agent *)
asb_agent_list_get(const asb_agent_list *list, size_t i);
ASB_API(const asb_agent *)
asb_agent_list_find(const asb_agent_list *list, const char *name);
ASB_API(void) asb_agent_list_free(asb_agent_list *list);

ASB_API(const char *) asb_agent_name(const asb_agent *agent);
/* Its npm package ("@openai/codex"). */
ASB_API(const char *) asb_agent_package(const asb_agent *agent);
ASB_API(int) asb_agent_installed(const asb_agent *agent);
/* The installed version, or NULL (not installed, or unknown). */
ASB_API(const char *) asb_agent_version(const asb_agent *agent);
/* The installed command, or NULL. */
ASB_API(const char *) asb_agent_path(const asb_agent *agent);

/* POST /agents/{agent}/install: npm install -g into the server's prefix,
 * waiting until it ends; install.* events go to opts->on_event. *version
 * (may be NULL) receives the installed version (free with asb_free; NULL
 * when unknown). Errors: ASB_ENOTFOUND (no such agent), ASB_ECOMMANDFAILED
 * (the install failed: the message names the package and why), transport
 * errors. */
ASB_API(int)
asb_agents_install(char **version, asb_sandbox *sandbox, const char *agent,
                   const asb_agents_options *opts);

/* ---- sessions
 * ----------------------------------------------------------------- */

/* POST /agents/sessions. Errors: ASB_ENOTFOUND (no such agent, or it is
 * not installed and opts->install is -1: the message says which),
 * ASB_EINVAL (bad options: the message says which), ASB_ERATELIMIT (too
 * many sessions), transport errors. */
ASB_API(int)
asb_agent_session_new(asb_agent_session **out, asb_sandbox *sandbox,
                      const char *agent, const asb_agent_session_options *opts);
/* Attach to an existing session by its id. ASB_ENOTFOUND if there is
 * none. */
ASB_API(int)
asb_agent_session_connect(asb_agent_session **out, asb_sandbox *sandbox,
                          const char *id, const asb_agents_options *opts);
/* Releases the handle (the session in the sandbox stays: close it first to
 * end it); cancels calls in flight on the handle. Accepts NULL. */
ASB_API(void) asb_agent_session_free(asb_agent_session *session);
ASB_API(const char *) asb_agent_session_id(const asb_agent_session *session);
ASB_API(const char *) asb_agent_session_agent(const asb_agent_session *session);

/* One turn: send prompt and stream its events (to opts->on_event) until
 * turn.completed, then return its result in *out (free with
 * asb_agent_turn_free). A stream that breaks is resumed from the last
 * event received (GET .../events?after=N), so no event is lost or
 * repeated. ASB_OK whatever the turn's status (completed, failed,
 * cancelled: asb_agent_turn_status). Errors: ASB_EEXISTS (a turn is in
 * progress), ASB_EINVAL (400, 413: the message says why),
 * ASB_ENOTFOUND (the session is gone), ASB_EUSER, ASB_ECANCELED,
 * ASB_ETIMEOUT, transport errors. */
ASB_API(int)
asb_agent_session_send(asb_agent_turn **out, asb_agent_session *session,
                       const char *prompt, const asb_agents_options *opts);

/* The events after seq `after` (0 = from the start), in order: with
 * opts->follow, also those still to come of the turn in progress. Each also
 * goes to opts->on_event. Errors: ASB_ENOTFOUND, ASB_EEXISTS... as above;
 * ASB_ENOTFOUND with remote_code "EventsExpiredError" when events after
 * `after` were dropped (the session's log keeps its newest 16 MiB). */
ASB_API(int)
asb_agent_session_events(asb_agent_event_list **out, asb_agent_session *session,
                         asb_int64 after, const asb_agents_options *opts);

/* Stop the turn in progress (its CLI and every process it started); its
 * stream ends with turn.completed, status "cancelled". A session without
 * one is left as it is. */
ASB_API(int)
asb_agent_session_cancel(asb_agent_session *session,
                         const asb_agents_options *opts);

/* GET /agents/sessions/{id}: status and transcript as JSON text (free with
 * asb_free): {"id", "agent", "status" (idle, running, closed),
 * "native_session_id", "turns": [{turn, prompt, status, final_message,
 * ...}], "last_seq", ...}. */
ASB_API(int)
asb_agent_session_info(char **json, asb_agent_session *session,
                       const asb_agents_options *opts);

/* DELETE: cancel the turn in progress and end the session in the sandbox
 * (the handle stays valid for its getters; free it after). */
ASB_API(int)
asb_agent_session_close(asb_agent_session *session,
                        const asb_agents_options *opts);

/* ---- events
 * --------------------------------------------------------------------- An
 * event is one JSON object: {"seq", "type", "session", "turn", "time",
 * ...its fields, "native": the CLI's own event}. Types: session.started,
 * turn.started, message.delta, message, reasoning, tool.started,
 * tool.output, tool.completed, file.changed, usage, error, log, native,
 * install.started, install.progress, install.completed, turn.completed
 * (docs/agents.md). Getters of an event given to a callback are valid
 * during the callback. */
ASB_API(asb_int64) asb_agent_event_seq(const asb_agent_event *event);
ASB_API(const char *) asb_agent_event_type(const asb_agent_event *event);
/* The turn it belongs to (0 for an install's). */
ASB_API(int) asb_agent_event_turn(const asb_agent_event *event);
/* The whole event as JSON text. */
ASB_API(const char *) asb_agent_event_json(const asb_agent_event *event);

ASB_API(size_t) asb_agent_event_list_count(const asb_agent_event_list *list);
ASB_API(const asb_agent_event *)
asb_agent_event_list_get(const asb_agent_event_list *list, size_t i);
ASB_API(void) asb_agent_event_list_free(asb_agent_event_list *list);

/* ---- a turn's result
 * ------------------------------------------------------------ */

/* "completed", "failed" or "cancelled". */
ASB_API(const char *) asb_agent_turn_status(const asb_agent_turn *turn);
ASB_API(int) asb_agent_turn_number(const asb_agent_turn *turn);
/* The agent's last message, or NULL. */
ASB_API(const char *) asb_agent_turn_final_message(const asb_agent_turn *turn);
/* Why it failed or was cancelled, or NULL. */
ASB_API(const char *) asb_agent_turn_error(const asb_agent_turn *turn);
ASB_API(size_t) asb_agent_turn_files_changed_count(const asb_agent_turn *turn);
ASB_API(const char *)
asb_agent_turn_files_changed_get(const asb_agent_turn *turn, size_t i);
ASB_API(size_t) asb_agent_turn_commands_count(const asb_agent_turn *turn);
/* The shell command run i (NULL past the end) and its exit code (-1 when
 * unknown). */
ASB_API(const char *)
asb_agent_turn_command(const asb_agent_turn *turn, size_t i);
ASB_API(int)
asb_agent_turn_command_exit_code(const asb_agent_turn *turn, size_t i);
ASB_API(asb_int64) asb_agent_turn_input_tokens(const asb_agent_turn *turn);
ASB_API(asb_int64) asb_agent_turn_output_tokens(const asb_agent_turn *turn);
/* The seq of its turn.completed event (resume reading after it). */
ASB_API(asb_int64) asb_agent_turn_last_seq(const asb_agent_turn *turn);
/* The turn.completed event as JSON text. */
ASB_API(const char *) asb_agent_turn_json(const asb_agent_turn *turn);
ASB_API(void) asb_agent_turn_free(asb_agent_turn *turn);

ASB_END_DECL

#endif /* AGENTSANDBOX_AGENTS_H */
