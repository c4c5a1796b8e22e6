/* The coding-agent CLIs the agents service drives, one table entry each:
 * the npm package, how one turn's command line is made from a session's
 * settings, and how the CLI's own JSON event stream maps onto the unified
 * schema (docs/agents.md). Each CLI runs once per turn in non-interactive
 * mode and resumes its own session on the next turn, so the agent keeps its
 * context:
 *
 *   codex     codex exec --json [... resume <thread id>] -- <prompt>
 *   qwen      qwen --output-format stream-json (--session-id | --resume) <id>
 *   claude    claude -p --output-format stream-json --verbose (--session-id |
 *             --resume) <id>
 *   opencode  opencode run --format json [--session <id>]
 *
 * Qwen Code and Claude Code speak the same stream-json dialect (system/init,
 * assistant and user messages with content blocks, result), so they share
 * one mapper.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "util/agents_table.h"
#include "util/util.h"

/* ---- argv and env lists ----------------------------------------------------------- */

int asbs_argv_add(asbs_argv *a, const char *s) {
  if (a->n + 2 > a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 16;
    char **v = realloc(a->v, cap * sizeof *v);
    if (!v) return -1;
    a->v = v;
    a->cap = cap;
  }
  if (!(a->v[a->n] = asbi_strdup(s ? s : ""))) return -1;
  a->v[++a->n] = NULL;
  return 0;
}

int asbs_argv_addf(asbs_argv *a, const char *fmt, ...) {
  asbi_buf b = ASBI_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = asbi_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (!rc) rc = asbs_argv_add(a, b.data ? b.data : "");
  asbi_buf_free(&b);
  return rc;
}

void asbs_argv_free(asbs_argv *a) {
  for (size_t i = 0; i < a->n; i++) free(a->v[i]);
  free(a->v);
  a->v = NULL;
  a->n = a->cap = 0;
}

const char *asbs_jstr(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *asbs_jget(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int nonempty(const char *s) {
  return s && *s;
}

/* For cJSON_ArrayForEach over a member that may not be an array. */
static const cJSON *array_or_null(const cJSON *a) {
  return cJSON_IsArray(a) ? a : NULL;
}

/* The value of the session's key variable, for CLIs that read the key from
 * a fixed variable of their own: the session's env first, then ours. */
static const char *env_value(const asbs_session_cfg *cfg, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < cfg->nenv; i++)
    if (!strncmp(cfg->env[i], name, n) && cfg->env[i][n] == '=') return cfg->env[i] + n + 1;
  return getenv(name);
}

static int add_extra_args(const asbs_session_cfg *cfg, asbs_argv *argv) {
  for (size_t i = 0; i < cfg->nargs; i++)
    if (asbs_argv_add(argv, cfg->args[i])) return -1;
  return 0;
}

/* A TOML basic string (for codex -c values). */
static int toml_str(asbi_buf *b, const char *s) {
  asbi_buf_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      asbi_buf_printf(b, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      asbi_buf_printf(b, "\\u%04x", c);
    else
      asbi_buf_putc(b, (char)c);
  }
  return asbi_buf_putc(b, '"');
}

/* ---- codex ------------------------------------------------------------------------ */

static int codex_command(const asbs_agent_spec *spec, const asbs_session_cfg *cfg,
                         const char *native_id, const char *first_id, const char *prompt,
                         asbs_argv *argv, asbs_argv *env) {
  (void)first_id;
  (void)env;
  int rc = 0;
  rc |= asbs_argv_add(argv, "exec");
  rc |= asbs_argv_add(argv, "--json");
  rc |= asbs_argv_add(argv, "--skip-git-repo-check");
  /* Our sandbox is the boundary: by default codex's own (landlock/seccomp,
   * which needs kernel features a sandbox does not grant) is off and no
   * approval is asked for (nobody could answer it). */
  const char *sb = nonempty(cfg->sandbox) ? cfg->sandbox : "none";
  const char *ap = nonempty(cfg->approval) ? cfg->approval : "never";
  if (!strcmp(sb, "none") && strcmp(ap, "plan") != 0) {
    rc |= asbs_argv_add(argv, "--dangerously-bypass-approvals-and-sandbox");
  } else {
    rc |= asbs_argv_add(argv, "-s");
    rc |= asbs_argv_add(argv, !strcmp(ap, "plan") ? "read-only" : sb);
    rc |= asbs_argv_add(argv, "-c");
    rc |= asbs_argv_add(argv, "approval_policy=\"never\"");
  }
  if (nonempty(cfg->model)) {
    rc |= asbs_argv_add(argv, "-m");
    rc |= asbs_argv_add(argv, cfg->model);
  }
  if (nonempty(cfg->base_url)) {
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_puts(&b, "model_providers.asb={name=\"agent-sandbox\", base_url=");
    toml_str(&b, cfg->base_url);
    asbi_buf_puts(&b, ", env_key=");
    toml_str(&b, nonempty(cfg->api_key_env) ? cfg->api_key_env : spec->key_env);
    asbi_buf_puts(&b, ", wire_api=");
    toml_str(&b, nonempty(cfg->wire_api) ? cfg->wire_api : "responses");
    asbi_buf_puts(&b, "}");
    rc |= asbs_argv_add(argv, "-c");
    rc |= asbs_argv_add(argv, "model_provider=\"asb\"");
    rc |= asbs_argv_add(argv, "-c");
    rc |= b.data ? asbs_argv_add(argv, b.data) : -1;
    asbi_buf_free(&b);
  } else if (nonempty(cfg->api_key_env) && strcmp(cfg->api_key_env, spec->key_env) != 0) {
    /* the default provider reads OPENAI_API_KEY: hand it the named one */
    const char *v = env_value(cfg, cfg->api_key_env);
    if (v) rc |= asbs_argv_addf(env, "%s=%s", spec->key_env, v);
  }
  if (nonempty(cfg->cwd)) {
    rc |= asbs_argv_add(argv, "-C");
    rc |= asbs_argv_add(argv, cfg->cwd);
  }
  rc |= add_extra_args(cfg, argv);
  if (native_id) {
    rc |= asbs_argv_add(argv, "resume");
    rc |= asbs_argv_add(argv, native_id);
  }
  rc |= asbs_argv_add(argv, "--");
  rc |= asbs_argv_add(argv, prompt);
  return rc ? -1 : 0;
}

static cJSON *obj(void) {
  return cJSON_CreateObject();
}

static void add_str(cJSON *o, const char *k, const char *v) {
  if (v)
    cJSON_AddStringToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

static void add_dup(cJSON *o, const char *k, const cJSON *v) {
  if (v)
    cJSON_AddItemToObject(o, k, cJSON_Duplicate(v, 1));
  else
    cJSON_AddNullToObject(o, k);
}

/* Remember a tool call's name, command and input for its completion. */
static void remember_call(asbs_map *m, const char *id, const char *tool, const char *command,
                          const cJSON *input) {
  if (!id) return;
  if (!m->calls) m->calls = obj();
  cJSON *c = obj();
  add_str(c, "tool", tool);
  add_str(c, "command", command);
  add_dup(c, "input", input);
  cJSON_DeleteItemFromObjectCaseSensitive(m->calls, id);
  cJSON_AddItemToObject(m->calls, id, c);
}

static const cJSON *recall(asbs_map *m, const char *id) {
  return id && m->calls ? cJSON_GetObjectItemCaseSensitive(m->calls, id) : NULL;
}

static void emit_error(asbs_map *m, const char *message, int fatal, const cJSON *native) {
  cJSON *f = obj();
  add_str(f, "message", message ? message : "the agent reported an error");
  cJSON_AddBoolToObject(f, "fatal", fatal);
  if (fatal) m->saw_error = 1;
  asbs_emit(m, "error", f, native);
}

static void emit_tool_started(asbs_map *m, const char *id, const char *tool, const char *command,
                              const cJSON *input, const cJSON *native) {
  remember_call(m, id, tool, command, input);
  cJSON *f = obj();
  add_str(f, "call_id", id);
  add_str(f, "tool", tool);
  add_str(f, "command", command);
  add_dup(f, "input", input);
  asbs_emit(m, "tool.started", f, native);
}

static void emit_tool_output(asbs_map *m, const char *id, const char *text, const cJSON *native) {
  cJSON *f = obj();
  add_str(f, "call_id", id);
  add_str(f, "output", text);
  asbs_emit(m, "tool.output", f, native);
}

/* exit_code < -1: unknown (null). */
static void emit_tool_completed(asbs_map *m, const char *id, int failed, long exit_code,
                                const char *output, const cJSON *native) {
  const cJSON *c = recall(m, id);
  cJSON *f = obj();
  add_str(f, "call_id", id);
  add_str(f, "tool", asbs_jstr(c, "tool"));
  add_str(f, "command", asbs_jstr(c, "command"));
  if (exit_code >= -1)
    cJSON_AddNumberToObject(f, "exit_code", (double)exit_code);
  else
    cJSON_AddNullToObject(f, "exit_code");
  add_str(f, "status", failed ? "failed" : "completed");
  if (output) add_str(f, "output", output);
  asbs_emit(m, "tool.completed", f, native);
}

static void emit_file(asbs_map *m, const char *path, const char *kind, const char *diff,
                      const cJSON *native) {
  if (!path) return;
  cJSON *f = obj();
  add_str(f, "path", path);
  add_str(f, "kind", kind ? kind : "update");
  add_str(f, "diff", diff);
  asbs_emit(m, "file.changed", f, native);
}

static void emit_message(asbs_map *m, const char *type, const char *text, const cJSON *native) {
  cJSON *f = obj();
  if (!strcmp(type, "message")) add_str(f, "role", "assistant");
  add_str(f, "text", text ? text : "");
  asbs_emit(m, type, f, native);
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void emit_usage(asbs_map *m, double in, double out, double cached, const cJSON *native) {
  cJSON *f = obj();
  cJSON_AddNumberToObject(f, "input_tokens", in);
  cJSON_AddNumberToObject(f, "output_tokens", out);
  cJSON_AddNumberToObject(f, "cached_input_tokens", cached);
  cJSON_AddNumberToObject(f, "total_tokens", in + out);
  asbs_emit(m, "usage", f, native);
}

static void codex_item(asbs_map *m, const char *what, const cJSON *item, const cJSON *native) {
  const char *type = asbs_jstr(item, "type"), *id = asbs_jstr(item, "id");
  if (!type) {
    asbs_emit(m, "native", NULL, native);
    return;
  }
  int started = !strcmp(what, "item.started"), done = !strcmp(what, "item.completed");
  if (!strcmp(type, "command_execution")) {
    const char *cmd = asbs_jstr(item, "command");
    const char *out = asbs_jstr(item, "aggregated_output");
    if (started) {
      cJSON *in = obj();
      add_str(in, "command", cmd);
      emit_tool_started(m, id, "shell", cmd, in, native);
      cJSON_Delete(in);
      return;
    }
    /* aggregated_output is the output so far: emit what is new */
    int same = m->out_id && id && !strcmp(m->out_id, id);
    size_t have = same ? m->out_len : 0;
    size_t len = out ? strlen(out) : 0;
    if (!recall(m, id)) { /* completed without a start */
      cJSON *in = obj();
      add_str(in, "command", cmd);
      remember_call(m, id, "shell", cmd, in);
      cJSON_Delete(in);
    }
    if (len > have) {
      emit_tool_output(m, id, out + have, done ? NULL : native);
      free(m->out_id);
      m->out_id = id ? asbi_strdup(id) : NULL;
      m->out_len = len;
    } else if (!done) {
      asbs_emit(m, "native", NULL, native);
    }
    if (done) {
      const cJSON *ec = asbs_jget(item, "exit_code");
      const char *st = asbs_jstr(item, "status");
      long code = cJSON_IsNumber(ec) ? (long)ec->valuedouble : -2;
      emit_tool_completed(m, id, (st && strcmp(st, "completed") != 0) || (code > 0), code, out,
                          native);
    }
    return;
  }
  if (!strcmp(type, "file_change")) {
    if (!done) {
      asbs_emit(m, "native", NULL, native);
      return;
    }
    const cJSON *ch, *changes = asbs_jget(item, "changes");
    int any = 0;
    cJSON_ArrayForEach(ch, array_or_null(changes)) {
      const char *kind = asbs_jstr(ch, "kind");
      emit_file(m, asbs_jstr(ch, "path"),
                kind && !strcmp(kind, "add")      ? "add"
                : kind && !strcmp(kind, "delete") ? "delete"
                                                  : "update",
                asbs_jstr(ch, "diff"), native);
      any = 1;
    }
    if (!any) asbs_emit(m, "native", NULL, native);
    return;
  }
  if (!strcmp(type, "agent_message") && done) {
    emit_message(m, "message", asbs_jstr(item, "text"), native);
    return;
  }
  if (!strcmp(type, "reasoning") && done) {
    emit_message(m, "reasoning", asbs_jstr(item, "text"), native);
    return;
  }
  if (!strcmp(type, "mcp_tool_call") || !strcmp(type, "web_search")) {
    char tool[300];
    if (!strcmp(type, "web_search"))
      snprintf(tool, sizeof tool, "web_search");
    else
      snprintf(tool, sizeof tool, "mcp:%.120s/%.120s", asbs_jstr(item, "server") ?: "?",
               asbs_jstr(item, "tool") ?: "?");
    if (started) {
      emit_tool_started(m, id, tool, NULL, asbs_jget(item, "arguments"), native);
    } else if (done) {
      if (!recall(m, id)) remember_call(m, id, tool, NULL, asbs_jget(item, "arguments"));
      const char *st = asbs_jstr(item, "status");
      emit_tool_completed(m, id, st && !strcmp(st, "failed"), -2, NULL, native);
    } else {
      asbs_emit(m, "native", NULL, native);
    }
    return;
  }
  if (!strcmp(type, "error")) {
    emit_error(m, asbs_jstr(item, "message"), 0, native);
    return;
  }
  asbs_emit(m, "native", NULL, native);
}

static void codex_map(asbs_map *m, const cJSON *ev) {
  const char *type = asbs_jstr(ev, "type");
  if (!type) {
    asbs_emit(m, "native", NULL, ev);
  } else if (!strcmp(type, "thread.started")) {
    const char *id = asbs_jstr(ev, "thread_id");
    if (id && !asbs_native_id(m)) {
      asbs_set_native_id(m, id);
      cJSON *f = obj();
      add_str(f, "native_session_id", id);
      asbs_emit(m, "session.started", f, ev);
    } else {
      asbs_emit(m, "native", NULL, ev);
    }
  } else if (asbi_startswith(type, "item.")) {
    codex_item(m, type, asbs_jget(ev, "item"), ev);
  } else if (!strcmp(type, "turn.completed")) {
    const cJSON *u = asbs_jget(ev, "usage");
    emit_usage(m, num(u, "input_tokens"), num(u, "output_tokens"), num(u, "cached_input_tokens"),
               ev);
  } else if (!strcmp(type, "turn.failed")) {
    emit_error(m, asbs_jstr(asbs_jget(ev, "error"), "message"), 1, ev);
  } else if (!strcmp(type, "error")) {
    emit_error(m, asbs_jstr(ev, "message"), 0, ev);
  } else {
    asbs_emit(m, "native", NULL, ev);
  }
}

/* ---- qwen and claude: stream-json ---------------------------------------------------- */

static const char *approval_of(const asbs_session_cfg *cfg) {
  return nonempty(cfg->approval) ? cfg->approval : "never";
}

static int qwen_command(const asbs_agent_spec *spec, const asbs_session_cfg *cfg,
                        const char *native_id, const char *first_id, const char *prompt,
                        asbs_argv *argv, asbs_argv *env) {
  int rc = 0;
  rc |= asbs_argv_add(argv, "--output-format");
  rc |= asbs_argv_add(argv, "stream-json");
  rc |= asbs_argv_add(argv, "--include-partial-messages");
  const char *ap = approval_of(cfg);
  rc |= asbs_argv_add(argv, "--approval-mode");
  rc |= asbs_argv_add(argv, !strcmp(ap, "plan")    ? "plan"
                            : !strcmp(ap, "edits") ? "auto-edit"
                                                   : "yolo");
  if (nonempty(cfg->base_url) || nonempty(cfg->api_key_env)) {
    rc |= asbs_argv_add(argv, "--auth-type");
    rc |= asbs_argv_add(argv, "openai");
  }
  /* qwen reads its OpenAI-compatible settings from these variables (not
   * from argv, where the key would show in /proc/<pid>/cmdline) */
  if (nonempty(cfg->base_url)) rc |= asbs_argv_addf(env, "OPENAI_BASE_URL=%s", cfg->base_url);
  if (nonempty(cfg->api_key_env) && strcmp(cfg->api_key_env, spec->key_env) != 0) {
    const char *v = env_value(cfg, cfg->api_key_env);
    if (v) rc |= asbs_argv_addf(env, "%s=%s", spec->key_env, v);
  }
  if (nonempty(cfg->model)) {
    rc |= asbs_argv_add(argv, "-m");
    rc |= asbs_argv_add(argv, cfg->model);
    rc |= asbs_argv_addf(env, "OPENAI_MODEL=%s", cfg->model);
  }
  rc |= asbs_argv_add(argv, native_id ? "--resume" : "--session-id");
  rc |= asbs_argv_add(argv, native_id ? native_id : first_id);
  /* qwen starts a second Node.js process of itself to raise its heap
   * limit: one start per turn is enough (and halves a turn's start-up) */
  rc |= asbs_argv_add(env, "QWEN_CODE_NO_RELAUNCH=true");
  rc |= add_extra_args(cfg, argv);
  /* the prompt as the option's value, so one that starts with '-' is not
   * taken for an option */
  rc |= asbs_argv_addf(argv, "--prompt=%s", prompt);
  return rc ? -1 : 0;
}

static int claude_command(const asbs_agent_spec *spec, const asbs_session_cfg *cfg,
                          const char *native_id, const char *first_id, const char *prompt,
                          asbs_argv *argv, asbs_argv *env) {
  int rc = 0;
  rc |= asbs_argv_add(argv, "-p");
  rc |= asbs_argv_add(argv, "--output-format");
  rc |= asbs_argv_add(argv, "stream-json");
  rc |= asbs_argv_add(argv, "--verbose");
  rc |= asbs_argv_add(argv, "--include-partial-messages");
  const char *ap = approval_of(cfg);
  if (!strcmp(ap, "plan") || !strcmp(ap, "edits")) {
    rc |= asbs_argv_add(argv, "--permission-mode");
    rc |= asbs_argv_add(argv, !strcmp(ap, "plan") ? "plan" : "acceptEdits");
  } else {
    rc |= asbs_argv_add(argv, "--dangerously-skip-permissions");
  }
  if (nonempty(cfg->model)) {
    rc |= asbs_argv_add(argv, "--model");
    rc |= asbs_argv_add(argv, cfg->model);
  }
  rc |= asbs_argv_add(argv, native_id ? "--resume" : "--session-id");
  rc |= asbs_argv_add(argv, native_id ? native_id : first_id);
  if (nonempty(cfg->base_url)) rc |= asbs_argv_addf(env, "ANTHROPIC_BASE_URL=%s", cfg->base_url);
  if (nonempty(cfg->api_key_env) && strcmp(cfg->api_key_env, spec->key_env) != 0) {
    const char *v = env_value(cfg, cfg->api_key_env);
    if (v) rc |= asbs_argv_addf(env, "%s=%s", spec->key_env, v);
  }
  /* no self-update and no telemetry from inside a sandbox; IS_SANDBOX says
   * what is true (it lets the permission bypass run as root too) */
  rc |= asbs_argv_add(env, "DISABLE_AUTOUPDATER=1");
  rc |= asbs_argv_add(env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1");
  rc |= asbs_argv_add(env, "IS_SANDBOX=1");
  rc |= add_extra_args(cfg, argv);
  rc |= asbs_argv_add(argv, "--");
  rc |= asbs_argv_add(argv, prompt);
  return rc ? -1 : 0;
}

/* The text of a tool result's content: a string or a list of text blocks. */
static char *content_text(const cJSON *c) {
  if (cJSON_IsString(c)) return asbi_strdup(c->valuestring);
  asbi_buf b = ASBI_BUF_INIT;
  const cJSON *p;
  cJSON_ArrayForEach(p, array_or_null(c)) {
    const char *t = asbs_jstr(p, "text");
    if (t) {
      if (b.len) asbi_buf_putc(&b, '\n');
      asbi_buf_puts(&b, t);
    }
  }
  if (!b.data) asbi_buf_puts(&b, "");
  return asbi_buf_detach(&b, NULL);
}

/* "Exit Code: 3" (qwen's shell result) or "Exit code 3" (claude's). */
static long exit_code_in(const char *text) {
  if (!text) return -2;
  const char *p = strstr(text, "Exit Code: ");
  if (!p) p = strstr(text, "Exit code ");
  if (!p) return -2;
  p += p[5] == 'C' ? 11 : 10;
  char *end;
  long v = strtol(p, &end, 10);
  return end == p ? -2 : v;
}

static int is_shell_tool(const char *name) {
  static const char *const names[] = {"Bash", "bash", "run_shell_command", "shell"};
  for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
    if (!strcmp(name, names[i])) return 1;
  return 0;
}

static int is_file_tool(const char *name) {
  static const char *const names[] = {"Write",      "Edit", "MultiEdit", "NotebookEdit",
                                      "write_file", "edit", "replace",   "write"};
  for (size_t i = 0; name && i < sizeof names / sizeof *names; i++)
    if (!strcmp(name, names[i])) return 1;
  return 0;
}

/* A unified diff of claude's structuredPatch ([{oldStart, oldLines,
 * newStart, newLines, lines}]), or of an edit's old/new strings. */
static char *diff_of(const char *path, const cJSON *input, const cJSON *result) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "--- a%s%s\n+++ b%s%s\n", path[0] == '/' ? "" : "/", path,
                  path[0] == '/' ? "" : "/", path);
  size_t head = b.len;
  const cJSON *patch = asbs_jget(result, "structuredPatch"), *h;
  cJSON_ArrayForEach(h, array_or_null(patch)) {
    asbi_buf_printf(&b, "@@ -%.0f,%.0f +%.0f,%.0f @@\n", num(h, "oldStart"), num(h, "oldLines"),
                    num(h, "newStart"), num(h, "newLines"));
    const cJSON *l;
    cJSON_ArrayForEach(l, asbs_jget(h, "lines")) {
      if (cJSON_IsString(l)) asbi_buf_printf(&b, "%s\n", l->valuestring);
    }
  }
  if (b.len == head) {
    const char *o = asbs_jstr(input, "old_string"), *n = asbs_jstr(input, "new_string");
    const char *content = asbs_jstr(input, "content");
    if (!n && content) {
      o = NULL;
      n = content;
    }
    if (!n) {
      asbi_buf_free(&b);
      return NULL;
    }
    asbi_buf_puts(&b, "@@ @@\n");
    for (int side = 0; side < 2; side++) {
      const char *s = side ? n : o;
      while (s && *s && b.len < (64u << 10)) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        asbi_buf_printf(&b, "%c%.*s\n", side ? '+' : '-', (int)len, s);
        s += len + (nl ? 1 : 0);
      }
    }
  }
  return asbi_buf_detach(&b, NULL);
}

static void stream_json_map(asbs_map *m, const cJSON *ev) {
  const char *type = asbs_jstr(ev, "type");
  if (!type) {
    asbs_emit(m, "native", NULL, ev);
    return;
  }
  if (!strcmp(type, "system")) {
    const char *sub = asbs_jstr(ev, "subtype"), *sid = asbs_jstr(ev, "session_id");
    if (sub && !strcmp(sub, "init") && sid) {
      asbs_set_native_id(m, sid);
      cJSON *f = obj();
      add_str(f, "native_session_id", sid);
      add_str(f, "model", asbs_jstr(ev, "model"));
      asbs_emit(m, "session.started", f, ev);
    } else {
      asbs_emit(m, "native", NULL, ev);
    }
    return;
  }
  if (!strcmp(type, "stream_event")) {
    const cJSON *e = asbs_jget(ev, "event");
    const cJSON *d = asbs_jget(e, "delta");
    const char *et = asbs_jstr(e, "type"), *dt = asbs_jstr(d, "type");
    if (et && !strcmp(et, "content_block_delta") && dt && !strcmp(dt, "text_delta")) {
      cJSON *f = obj();
      add_str(f, "text", asbs_jstr(d, "text"));
      asbs_emit(m, "message.delta", f, ev);
    } else {
      asbs_emit(m, "native", NULL, ev);
    }
    return;
  }
  if (!strcmp(type, "assistant")) {
    const cJSON *content = asbs_jget(asbs_jget(ev, "message"), "content"), *p;
    int any = 0;
    cJSON_ArrayForEach(p, array_or_null(content)) {
      const char *pt = asbs_jstr(p, "type");
      if (!pt) continue;
      if (!strcmp(pt, "text")) {
        const char *t = asbs_jstr(p, "text");
        /* qwen reports a failing model endpoint as assistant text */
        if (t && asbi_startswith(t, "[API Error")) {
          m->api_error_text = 1;
          emit_error(m, t, 1, ev);
        } else {
          emit_message(m, "message", t, ev);
        }
        any = 1;
      } else if (!strcmp(pt, "thinking")) {
        emit_message(m, "reasoning", asbs_jstr(p, "thinking"), ev);
        any = 1;
      } else if (!strcmp(pt, "tool_use")) {
        const char *name = asbs_jstr(p, "name");
        const cJSON *in = asbs_jget(p, "input");
        emit_tool_started(m, asbs_jstr(p, "id"), name,
                          is_shell_tool(name) ? asbs_jstr(in, "command") : NULL, in, ev);
        any = 1;
      }
    }
    if (!any) asbs_emit(m, "native", NULL, ev);
    return;
  }
  if (!strcmp(type, "user")) {
    const cJSON *content = asbs_jget(asbs_jget(ev, "message"), "content"), *p;
    const cJSON *result = asbs_jget(ev, "tool_use_result");
    int any = 0;
    cJSON_ArrayForEach(p, array_or_null(content)) {
      const char *pt = asbs_jstr(p, "type");
      if (!pt || strcmp(pt, "tool_result") != 0) continue;
      const char *id = asbs_jstr(p, "tool_use_id");
      char *text = content_text(asbs_jget(p, "content"));
      int failed = cJSON_IsTrue(asbs_jget(p, "is_error"));
      const cJSON *call = recall(m, id);
      const char *tool = asbs_jstr(call, "tool");
      long code = -2;
      if (is_shell_tool(tool)) {
        code = exit_code_in(text);
        if (code == -2) code = failed ? 1 : 0;
      }
      if (text && *text) emit_tool_output(m, id, text, NULL);
      if (!failed && is_file_tool(tool)) {
        const cJSON *in = asbs_jget(call, "input");
        const char *path = asbs_jstr(in, "file_path");
        if (!path) path = asbs_jstr(in, "path");
        if (!path) path = asbs_jstr(in, "filePath");
        if (path) {
          char *diff = diff_of(path, in, result);
          const char *rt = asbs_jstr(result, "type");
          emit_file(m, path, rt && !strcmp(rt, "create") ? "add" : "update", diff, NULL);
          free(diff);
        }
      }
      emit_tool_completed(m, id, failed || code > 0, code, NULL, ev);
      free(text);
      any = 1;
    }
    if (!any) asbs_emit(m, "native", NULL, ev);
    return;
  }
  if (!strcmp(type, "result")) {
    const cJSON *u = asbs_jget(ev, "usage");
    emit_usage(m, num(u, "input_tokens"), num(u, "output_tokens"),
               num(u, "cache_read_input_tokens"), ev);
    const char *sub = asbs_jstr(ev, "subtype"), *res = asbs_jstr(ev, "result");
    int is_err = cJSON_IsTrue(asbs_jget(ev, "is_error")) || (sub && strcmp(sub, "success") != 0);
    if (res && asbi_startswith(res, "[API Error")) {
      if (!m->api_error_text) emit_error(m, res, 1, NULL);
    } else if (is_err) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s%s%s", sub ? sub : "error", res ? ": " : "", res ? res : "");
      emit_error(m, msg, 1, NULL);
    }
    return;
  }
  asbs_emit(m, "native", NULL, ev);
}

/* ---- opencode ------------------------------------------------------------------------ */

static int opencode_command(const asbs_agent_spec *spec, const asbs_session_cfg *cfg,
                            const char *native_id, const char *first_id, const char *prompt,
                            asbs_argv *argv, asbs_argv *env) {
  (void)first_id;
  int rc = 0;
  rc |= asbs_argv_add(argv, "run");
  rc |= asbs_argv_add(argv, "--format");
  rc |= asbs_argv_add(argv, "json");
  /* A provider for the endpoint, in opencode's inline configuration (it
   * reads OPENCODE_CONFIG_CONTENT over its config files): an
   * OpenAI-compatible one named "asb"; permissions by the approval mode;
   * no self-update, no sharing. */
  const char *ap = approval_of(cfg);
  const char *allow = !strcmp(ap, "plan") ? "deny" : "allow";
  cJSON *c = cJSON_CreateObject();
  cJSON *perm = cJSON_AddObjectToObject(c, "permission");
  cJSON_AddStringToObject(perm, "edit", allow);
  cJSON_AddStringToObject(perm, "bash", !strcmp(ap, "never") ? "allow" : "deny");
  cJSON_AddStringToObject(perm, "webfetch", "allow");
  cJSON_AddFalseToObject(c, "autoupdate");
  cJSON_AddStringToObject(c, "share", "disabled");
  char model[512] = "";
  if (nonempty(cfg->base_url)) {
    cJSON *p = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "provider"), "asb");
    cJSON_AddStringToObject(p, "npm", "@ai-sdk/openai-compatible");
    cJSON_AddStringToObject(p, "name", "agent-sandbox");
    cJSON *o = cJSON_AddObjectToObject(p, "options");
    cJSON_AddStringToObject(o, "baseURL", cfg->base_url);
    char key[300];
    snprintf(key, sizeof key, "{env:%s}",
             nonempty(cfg->api_key_env) ? cfg->api_key_env : spec->key_env);
    cJSON_AddStringToObject(o, "apiKey", key);
    cJSON *models = cJSON_AddObjectToObject(p, "models");
    const char *mid = nonempty(cfg->model) ? cfg->model : "default";
    cJSON_AddObjectToObject(models, mid);
    snprintf(model, sizeof model, "asb/%s", mid);
  } else if (nonempty(cfg->model)) {
    snprintf(model, sizeof model, "%s", cfg->model);
  }
  char *text = cJSON_PrintUnformatted(c);
  cJSON_Delete(c);
  rc |= text ? asbs_argv_addf(env, "OPENCODE_CONFIG_CONTENT=%s", text) : -1;
  free(text);
  if (*model) {
    rc |= asbs_argv_add(argv, "--model");
    rc |= asbs_argv_add(argv, model);
  }
  if (native_id) {
    rc |= asbs_argv_add(argv, "--session");
    rc |= asbs_argv_add(argv, native_id);
  }
  if (nonempty(cfg->cwd)) {
    rc |= asbs_argv_add(argv, "--dir");
    rc |= asbs_argv_add(argv, cfg->cwd);
  }
  rc |= add_extra_args(cfg, argv);
  rc |= asbs_argv_add(argv, "--");
  rc |= asbs_argv_add(argv, prompt);
  return rc ? -1 : 0;
}

static void opencode_map(asbs_map *m, const cJSON *ev) {
  const char *type = asbs_jstr(ev, "type"), *sid = asbs_jstr(ev, "sessionID");
  if (sid && !asbs_native_id(m)) {
    asbs_set_native_id(m, sid);
    cJSON *f = obj();
    add_str(f, "native_session_id", sid);
    asbs_emit(m, "session.started", f, NULL);
  }
  const cJSON *part = asbs_jget(ev, "part");
  if (!type) {
    asbs_emit(m, "native", NULL, ev);
  } else if (!strcmp(type, "text")) {
    emit_message(m, "message", asbs_jstr(part, "text"), ev);
  } else if (!strcmp(type, "reasoning")) {
    emit_message(m, "reasoning", asbs_jstr(part, "text"), ev);
  } else if (!strcmp(type, "tool_use")) {
    const char *tool = asbs_jstr(part, "tool"), *id = asbs_jstr(part, "callID");
    const cJSON *state = asbs_jget(part, "state");
    const cJSON *in = asbs_jget(state, "input");
    const char *st = asbs_jstr(state, "status");
    const char *out = asbs_jstr(state, "output");
    if (!recall(m, id))
      emit_tool_started(m, id, tool, is_shell_tool(tool) ? asbs_jstr(in, "command") : NULL, in,
                        NULL);
    if (st && (!strcmp(st, "completed") || !strcmp(st, "error"))) {
      int failed = !strcmp(st, "error");
      if (out && *out)
        emit_tool_output(m, id, out, NULL);
      else if (failed && asbs_jstr(state, "error"))
        emit_tool_output(m, id, asbs_jstr(state, "error"), NULL);
      const cJSON *ex = asbs_jget(asbs_jget(state, "metadata"), "exit");
      long code = cJSON_IsNumber(ex) ? (long)ex->valuedouble : -2;
      if (!failed && is_file_tool(tool)) {
        const char *path = asbs_jstr(in, "filePath");
        if (!path) path = asbs_jstr(in, "file_path");
        if (path) {
          char *diff = NULL;
          const char *d = asbs_jstr(asbs_jget(state, "metadata"), "diff");
          if (!d) diff = diff_of(path, in, NULL);
          emit_file(m, path, !strcmp(tool, "write") ? "add" : "update", d ? d : diff, NULL);
          free(diff);
        }
      }
      emit_tool_completed(m, id, failed || code > 0, code, NULL, ev);
    } else {
      asbs_emit(m, "native", NULL, ev);
    }
  } else if (!strcmp(type, "step_finish")) {
    const cJSON *t = asbs_jget(part, "tokens");
    emit_usage(m, num(t, "input"), num(t, "output"), num(asbs_jget(t, "cache"), "read"), ev);
  } else if (!strcmp(type, "error")) {
    const cJSON *e = asbs_jget(ev, "error");
    const char *msg = asbs_jstr(asbs_jget(e, "data"), "message");
    if (!msg) msg = asbs_jstr(e, "message");
    if (!msg) msg = asbs_jstr(e, "name");
    emit_error(m, msg, 1, ev);
  } else {
    asbs_emit(m, "native", NULL, ev);
  }
}

/* ---- the table ------------------------------------------------------------------------- */

const asbs_agent_spec asbs_agent_specs[] = {
    {"codex", ASBI_AGENT_CODEX_PKG, "codex", "codex exec --json (exec resume for later turns)",
     "OPENAI_API_KEY", "responses", codex_command, codex_map},
    {"qwen", ASBI_AGENT_QWEN_PKG, "qwen",
     "qwen --output-format stream-json (--session-id, then --resume)", "OPENAI_API_KEY", "chat",
     qwen_command, stream_json_map},
    {"claude", ASBI_AGENT_CLAUDE_PKG, "claude",
     "claude -p --output-format stream-json --verbose (--session-id, then --resume)",
     "ANTHROPIC_API_KEY", "anthropic", claude_command, stream_json_map},
    {"opencode", ASBI_AGENT_OPENCODE_PKG, "opencode",
     "opencode run --format json (--session for later turns)", "OPENAI_API_KEY", "chat",
     opencode_command, opencode_map},
};
const size_t asbs_agent_nspecs = sizeof asbs_agent_specs / sizeof *asbs_agent_specs;

const asbs_agent_spec *asbs_agent_find(const char *name) {
  for (size_t i = 0; name && i < asbs_agent_nspecs; i++)
    if (!strcmp(asbs_agent_specs[i].name, name)) return &asbs_agent_specs[i];
  return NULL;
}
