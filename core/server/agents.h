/* The agents service of libagentsandbox-server: coding-agent CLIs (Codex,
 * Qwen Code, Claude Code, OpenCode) driven over HTTP next to /commands.
 * Internal; see docs/agents.md for the wire protocol and the event schema.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_SERVER_AGENTS_H
#define ASB_SERVER_AGENTS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct asbs_agents asbs_agents; /* the service (one per server) */
typedef struct asbs_session asbs_session;

/* ---- what one turn's mapping sees and produces (agents_cli.c) ------------------- */

/* A session's settings, as given at creation (all strings owned). */
typedef struct asbs_session_cfg {
  char *cwd, *model, *base_url, *api_key_env, *wire_api;
  char *approval; /* "never" (default), "edits", "plan" */
  char *sandbox;  /* "none" (default), "workspace-write", "read-only" */
  char **args;    /* extra CLI arguments, NULL-ended */
  char **env;     /* extra environment, "K=V", NULL-ended */
  size_t nargs, nenv;
} asbs_session_cfg;

/* Per-turn state of a mapper (one per turn, zeroed at its start). */
typedef struct asbs_map {
  asbs_session *sess;
  int turn;
  cJSON *calls;       /* call id -> {"tool","command","input"} */
  size_t out_len;     /* codex: bytes of aggregated_output already emitted */
  char *out_id;       /* ... for this item */
  int saw_error;      /* a fatal error was mapped */
  int api_error_text; /* qwen: "[API Error: ...]" reported already */
} asbs_map;

typedef struct asbs_argv {
  char **v;
  size_t n, cap;
} asbs_argv;

int asbs_argv_add(asbs_argv *a, const char *s);
int asbs_argv_addf(asbs_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void asbs_argv_free(asbs_argv *a);

typedef struct asbs_agent_spec {
  const char *name;     /* "codex" */
  const char *package;  /* npm package: "@openai/codex" */
  const char *bin;      /* its command: "codex" */
  const char *protocol; /* what drives it: "codex exec --json" */
  const char *key_env;  /* the API key variable it reads by default */
  const char *api;      /* the model API it speaks: "responses", "chat", "anthropic" */
  /* The command line (argv[0] = the resolved binary, given) and extra
   * environment of one turn. native_id: the agent's own session id from an
   * earlier turn (NULL on the first); first_id: an id to give the agent on
   * its first turn when it takes one (qwen, claude), else unused. */
  int (*command)(const struct asbs_agent_spec *spec, const asbs_session_cfg *cfg,
                 const char *native_id, const char *first_id, const char *prompt, asbs_argv *argv,
                 asbs_argv *env);
  /* Map one line of its stdout (parsed) onto unified events. */
  void (*map)(asbs_map *m, const cJSON *native);
} asbs_agent_spec;

extern const asbs_agent_spec asbs_agent_specs[];
extern const size_t asbs_agent_nspecs;
const asbs_agent_spec *asbs_agent_find(const char *name);

/* ---- emitting events (agents.c, called from mappers) ----------------------------------
 * Append one event to the session's log: fields (taken; may be NULL) gets
 * seq, type, turn, time and a copy of native (may be NULL). */
void asbs_emit(asbs_map *m, const char *type, cJSON *fields, const cJSON *native);
/* The agent's own session id became known (first turn). */
void asbs_set_native_id(asbs_map *m, const char *id);
const char *asbs_native_id(asbs_map *m);

/* Small JSON helpers. */
const char *asbs_jstr(const cJSON *o, const char *key);
const cJSON *asbs_jget(const cJSON *o, const char *key);

#endif
