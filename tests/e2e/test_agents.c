/* The agents API end to end: real coding-agent CLIs (Codex, Qwen Code,
 * Claude Code, OpenCode) in a real sandbox of the agents template, driven
 * through libagentsandbox's asb_agent_* calls and the server SDK's agents
 * service, against a scripted model: tests/agents/scripted_model.py, an
 * OpenAI-compatible (Chat Completions, Responses) and Anthropic Messages
 * endpoint started inside the sandbox that plays a fixed script ("call the
 * shell tool with `echo hi > /tmp/x`, then answer 'done'").
 *
 * Per agent: a full turn with a tool call (the event stream, the file the
 * tool wrote, the final message, the commands run), a second turn that
 * needs the first one's context, read after a client that went away
 * (events?after=N, follow), cancel mid-turn (the tool's process is gone),
 * a model endpoint that errors, and a closed session. Then, in a sandbox
 * whose server finds no agent: the clear error of an agent that is not
 * installed, a failing install, and the real install path (npm install -g
 * from a local registry in the sandbox) followed by a turn of what it
 * installed.
 *
 * The CLIs come from the host-wide prefix scripts/agents-cache.sh fills
 * (/usr/local/lib/agent-sandbox/agents, seen read-only through the base
 * template's /usr); an agent missing there is reported and left out, and
 * the test is skipped (77) when none is there.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "testing.h"

#ifndef ASB_AGENTS_TESTS_DIR
#error "define ASB_AGENTS_TESTS_DIR"
#endif

#define HOST_PREFIX "/usr/local/lib/agent-sandbox/agents"
#define QWEN_TGZ "/usr/local/lib/agent-sandbox/tarballs/qwen-code-qwen-code-0.15.10.tgz"

#define CHECK_RC(call, want)                                                                \
  do {                                                                                      \
    int rc_ = (call);                                                                       \
    if (rc_ != (want))                                                                      \
      ASBT_FAIL("%s = %d (%s), want %d: %s", #call, rc_, asb_status_name(rc_), (int)(want), \
                asb_error_last()->message);                                                 \
  } while (0)

static engine_fixture F;
static asb_client *C;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Run a shell command in the sandbox; its exit code (-1 on a call error),
 * stdout into out (may be NULL). */
static int sh(asb_sandbox *sb, const char *cmd, char *out, size_t outn) {
  asb_command_result *r = NULL;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = 120000;
  int rc = asb_commands_run(&r, sb, cmd, &o);
  int code = r ? asb_command_result_exit_code(r) : -1;
  if (out && outn) snprintf(out, outn, "%s", r ? asb_command_result_stdout(r, NULL) : "");
  if (rc != ASB_OK && rc != ASB_ECOMMANDEXIT)
    fprintf(stderr, "run '%s': %s\n", cmd, asb_error_last()->message);
  asb_command_result_free(r);
  return rc == ASB_OK || rc == ASB_ECOMMANDEXIT ? code : -1;
}

static int upload(asb_sandbox *sb, const char *host_path, const char *path) {
  FILE *f = fopen(host_path, "rb");
  if (!f) return -1;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  asb_entry *e = NULL;
  int rc = asb_files_write(&e, sb, path, buf, n, NULL);
  asb_entry_free(e);
  return rc;
}

/* Start a helper server of tests/agents in the background; wait for its
 * ready file and return its port (0 on failure). */
static int start_helper(asb_sandbox *sb, const char *script, const char *args, const char *name) {
  char host[512], path[256], cmd[1024], out[64];
  snprintf(host, sizeof host, "%s/%s", ASB_AGENTS_TESTS_DIR, script);
  snprintf(path, sizeof path, "/home/user/%s", script);
  if (upload(sb, host, path) != ASB_OK) {
    ASBT_FAIL("upload %s: %s", script, asb_error_last()->message);
    return 0;
  }
  snprintf(cmd, sizeof cmd,
           "rm -f /tmp/%s.port; (setsid python3 %s %s --ready-file /tmp/%s.port "
           "> /tmp/%s.log 2>&1 < /dev/null &)",
           name, path, args, name, name);
  if (sh(sb, cmd, NULL, 0) != 0) return 0;
  long long until = now_ms() + 60000;
  while (now_ms() < until) {
    snprintf(cmd, sizeof cmd, "cat /tmp/%s.port 2>/dev/null", name);
    if (sh(sb, cmd, out, sizeof out) == 0 && atoi(out) > 0) return atoi(out);
    nap(100);
  }
  ASBT_FAIL("%s did not start", script);
  return 0;
}

/* ---- what a turn streams ---------------------------------------------------------- */

typedef struct seen {
  asb_int64 first_seq, last_seq;
  int count, gaps, turn;
  int turn_started, tool_started, tool_completed, messages, usage, errors, completed;
  int tool_exit0, tool_has_command, native_kept, fatal_error;
  int after_completed; /* events after turn.completed (must be none) */
  int stop_after;      /* > 0: return non-zero from the callback at this event */
  char last_message[256];
  char error_text[512];
} seen;

static int on_event(const asb_agent_event *e, void *ud) {
  seen *s = ud;
  asb_int64 seq = asb_agent_event_seq(e);
  const char *type = asb_agent_event_type(e), *json = asb_agent_event_json(e);
  if (s->count == 0)
    s->first_seq = seq;
  else if (seq != s->last_seq + 1)
    s->gaps++;
  s->last_seq = seq;
  s->count++;
  if (s->completed) s->after_completed++;
  if (!s->turn) s->turn = asb_agent_event_turn(e);
  if (!strcmp(type, "turn.started")) s->turn_started++;
  if (!strcmp(type, "tool.started")) s->tool_started++;
  if (!strcmp(type, "tool.completed")) {
    s->tool_completed++;
    if (strstr(json, "\"exit_code\":0")) s->tool_exit0++;
    if (strstr(json, "echo hi > /tmp/x")) s->tool_has_command++;
  }
  if (!strcmp(type, "message")) {
    s->messages++;
    const char *t = strstr(json, "\"text\":\"");
    if (t) {
      t += 8;
      size_t n = strcspn(t, "\"");
      snprintf(s->last_message, sizeof s->last_message, "%.*s", (int)n, t);
    }
  }
  if (!strcmp(type, "usage")) s->usage++;
  if (!strcmp(type, "error")) {
    s->errors++;
    if (strstr(json, "\"fatal\":true")) {
      s->fatal_error++;
      snprintf(s->error_text, sizeof s->error_text, "%s", json);
    }
  }
  if (!strcmp(type, "turn.completed")) s->completed++;
  /* mapped events of the CLI keep its own event */
  if ((!strcmp(type, "tool.completed") || !strcmp(type, "session.started")) &&
      strstr(json, "\"native\":"))
    s->native_kept++;
  if (s->stop_after && s->count == s->stop_after) return 1;
  return 0;
}

typedef struct canceller {
  asb_sandbox *sb;
  asb_agent_session *s;
  int found, cancelled;
} canceller;

/* Waits until the scripted slow tool (`timeout 300 tail -f /dev/null`)
 * runs in the sandbox, then cancels the turn. */
#define SLOW_RUNNING "pgrep -f 'tail -f /dev/nul[l]' >/dev/null"
static void *cancel_when_sleeping(void *arg) {
  canceller *c = arg;
  long long until = now_ms() + 180000;
  while (now_ms() < until) {
    if (sh(c->sb, SLOW_RUNNING, NULL, 0) == 0) {
      c->found = 1;
      break;
    }
    nap(200);
  }
  if (c->found) c->cancelled = asb_agent_session_cancel(c->s, NULL) == ASB_OK;
  return NULL;
}

static const char *const ENV[] = {"ASB_TEST_KEY=sk-scripted-test", NULL};

static int new_session(asb_agent_session **s, asb_sandbox *sb, const char *agent, int model_port,
                       int install) {
  char base[128];
  /* Claude's client puts /v1 in front of its paths itself */
  snprintf(base, sizeof base, "http://127.0.0.1:%d%s", model_port,
           !strcmp(agent, "claude") ? "" : "/v1");
  asb_agent_session_options o = ASB_AGENT_SESSION_OPTIONS_INIT;
  o.cwd = "/home/user";
  o.model = "scripted";
  o.base_url = base;
  o.api_key_env = "ASB_TEST_KEY";
  o.env = ENV;
  o.install = install;
  return asb_agent_session_new(s, sb, agent, &o);
}

/* ---- one agent, every behaviour ---------------------------------------------------- */

static void drive(asb_sandbox *sb, const char *agent, int model_port) {
  long long t0 = now_ms();
  fprintf(stderr, "---- %s\n", agent); /* failures below are this agent's */
  asb_agent_session *s = NULL;
  sh(sb, "rm -f /tmp/x", NULL, 0);
  CHECK_RC(new_session(&s, sb, agent, model_port, 0), ASB_OK);
  if (!s) return;
  CHECK_STR(asb_agent_session_agent(s), agent);
  CHECK(asb_agent_session_id(s) && !strncmp(asb_agent_session_id(s), "ags_", 4));

  /* 1: a full turn with a tool call */
  seen t1 = {0};
  asb_agents_options call = ASB_AGENTS_OPTIONS_INIT;
  call.on_event = on_event;
  call.userdata = &t1;
  asb_agent_turn *turn = NULL;
  CHECK_RC(asb_agent_session_send(&turn, s, "please WRITE the file", &call), ASB_OK);
  if (turn) {
    CHECK_STR(asb_agent_turn_status(turn), "completed");
    CHECK_STR(asb_agent_turn_final_message(turn), "done");
    CHECK(asb_agent_turn_error(turn) == NULL);
    CHECK_INT(asb_agent_turn_number(turn), 1);
    CHECK(asb_agent_turn_commands_count(turn) >= 1);
    const char *cmd = asb_agent_turn_command(turn, 0);
    CHECK(cmd && strstr(cmd, "echo hi > /tmp/x"));
    CHECK_INT(asb_agent_turn_command_exit_code(turn, 0), 0);
    CHECK(asb_agent_turn_input_tokens(turn) > 0);
    CHECK(asb_agent_turn_output_tokens(turn) > 0);
    CHECK_INT(asb_agent_turn_last_seq(turn), t1.last_seq);
    CHECK(strstr(asb_agent_turn_json(turn), "\"type\":\"turn.completed\""));
  }
  CHECK_INT(t1.first_seq, 1);
  CHECK_INT(t1.gaps, 0);
  CHECK_INT(t1.turn_started, 1);
  CHECK(t1.tool_started >= 1);
  CHECK(t1.tool_completed >= 1);
  CHECK(t1.tool_exit0 >= 1);
  CHECK(t1.tool_has_command >= 1);
  CHECK(t1.messages >= 1);
  CHECK_STR(t1.last_message, "done");
  CHECK(t1.usage >= 1);
  CHECK(t1.native_kept >= 1);
  CHECK_INT(t1.completed, 1);
  CHECK_INT(t1.after_completed, 0);
  CHECK_INT(t1.fatal_error, 0);
  char *data = NULL;
  size_t len = 0;
  CHECK_RC(asb_files_read(&data, &len, sb, "/tmp/x", NULL), ASB_OK);
  CHECK_MEM(data ? data : "", len, "hi\n", 3);
  asb_free(data);
  asb_int64 end1 = turn ? asb_agent_turn_last_seq(turn) : 0;
  asb_agent_turn_free(turn);
  turn = NULL;

  /* 2: the second turn needs the first one's context; this client goes away
   * after two events (the callback aborts the call), the turn goes on, and
   * reading after the last event seen brings the rest exactly once */
  seen t2 = {0};
  t2.stop_after = 2;
  call.userdata = &t2;
  CHECK_RC(asb_agent_session_send(&turn, s, "RECALL what you did", &call), ASB_EUSER);
  CHECK(turn == NULL);
  CHECK_INT(t2.first_seq, end1 + 1);
  seen t2b = t2;
  t2b.stop_after = 0;
  asb_agents_options fol = ASB_AGENTS_OPTIONS_INIT;
  fol.on_event = on_event;
  fol.userdata = &t2b;
  fol.follow = 1;
  asb_agent_event_list *evs = NULL;
  CHECK_RC(asb_agent_session_events(&evs, s, t2.last_seq, &fol), ASB_OK);
  CHECK_INT(t2b.gaps, 0);
  CHECK_INT(t2b.completed, 1);
  CHECK_STR(t2b.last_message, "recall: yes");
  CHECK_INT(t2b.turn, 2);
  size_t n = asb_agent_event_list_count(evs);
  CHECK(n >= 2);
  CHECK_INT(asb_agent_event_seq(asb_agent_event_list_get(evs, 0)), t2.last_seq + 1);
  CHECK_STR(asb_agent_event_type(asb_agent_event_list_get(evs, n - 1)), "turn.completed");
  asb_agent_event_list_free(evs);
  /* and the whole log again, from turn 1's end: turn 2 only, in order */
  evs = NULL;
  CHECK_RC(asb_agent_session_events(&evs, s, end1, NULL), ASB_OK);
  n = asb_agent_event_list_count(evs);
  CHECK_INT(n, (size_t)(t2b.last_seq - end1));
  for (size_t i = 0; i < n; i++) {
    const asb_agent_event *e = asb_agent_event_list_get(evs, i);
    CHECK_INT(asb_agent_event_seq(e), end1 + 1 + (asb_int64)i);
    CHECK_INT(asb_agent_event_turn(e), 2);
  }
  asb_agent_event_list_free(evs);
  char *info = NULL;
  CHECK_RC(asb_agent_session_info(&info, s, NULL), ASB_OK);
  CHECK(info && strstr(info, "\"status\":\"idle\""));
  CHECK(info && strstr(info, "\"prompt\":\"please WRITE the file\""));
  CHECK(info && strstr(info, "\"final_message\":\"recall: yes\""));
  CHECK(info && strstr(info, "\"native_session_id\":\""));
  asb_free(info);

  /* 3: cancel mid-turn: the scripted tool blocks; once it runs, cancel */
  canceller cc = {sb, s, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, cancel_when_sleeping, &cc);
  seen t3 = {0};
  call.userdata = &t3;
  long long c0 = now_ms();
  CHECK_RC(asb_agent_session_send(&turn, s, "SLEEP a while", &call), ASB_OK);
  pthread_join(th, NULL);
  CHECK(cc.found);
  CHECK(cc.cancelled);
  if (turn) {
    CHECK_STR(asb_agent_turn_status(turn), "cancelled");
    CHECK(asb_agent_turn_error(turn) != NULL);
  }
  CHECK(now_ms() - c0 < 200000); /* not the 300 s the tool would take */
  CHECK_INT(t3.completed, 1);
  asb_agent_turn_free(turn);
  turn = NULL;
  /* the tool's process went with the turn */
  int gone = 0;
  for (long long until = now_ms() + 30000; now_ms() < until && !gone; nap(200))
    gone = sh(sb, SLOW_RUNNING, NULL, 0) == 1;
  CHECK(gone);

  /* 4: a model endpoint that errors */
  seen t4 = {0};
  call.userdata = &t4;
  CHECK_RC(asb_agent_session_send(&turn, s, "FAIL now", &call), ASB_OK);
  if (turn) {
    CHECK_STR(asb_agent_turn_status(turn), "failed");
    const char *err = asb_agent_turn_error(turn);
    CHECK(err != NULL);
    if (err && !strstr(err, "scripted failure") && !strstr(err, "400"))
      ASBT_FAIL("%s: the error does not say what the endpoint said: %s", agent, err);
  }
  CHECK(t4.fatal_error >= 1);
  asb_agent_turn_free(turn);
  turn = NULL;

  /* the session outlives this handle: attach again by id, then close */
  asb_agent_session *again = NULL;
  CHECK_RC(asb_agent_session_connect(&again, sb, asb_agent_session_id(s), NULL), ASB_OK);
  if (again) {
    CHECK_STR(asb_agent_session_agent(again), agent);
    CHECK_RC(asb_agent_session_close(again, NULL), ASB_OK);
    asb_agent_session_free(again);
  }
  CHECK_RC(asb_agent_session_send(&turn, s, "hello", NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_agent_session_connect(&again, sb, asb_agent_session_id(s), NULL), ASB_ENOTFOUND);
  asb_agent_session_free(s);
  printf("     %s: 4 turns in %.1f s\n", agent, (now_ms() - t0) / 1000.0);
}

/* ---- the tests -------------------------------------------------------------------- */

static asb_sandbox *make(const char *const *envs) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = "agents";
  o.timeout_ms = 1800000;
  o.envs = envs;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, C, &o) != ASB_OK) {
    ASBT_FAIL("create an agents sandbox: %s", asb_error_last()->message);
    return NULL;
  }
  return sb;
}

static const char *const AGENTS[] = {"codex", "qwen", "claude", "opencode"};
static int installed[4];

/* ASB_AGENTS_TEST_AGENTS (comma-separated) limits which CLIs are driven
 * through every behaviour; unset = all. The sanitizer tree drives codex and
 * claude only (tests/e2e/CMakeLists.txt): what ASan checks here is the
 * client library (the server in the sandbox is the tree's plain build),
 * which every CLI exercises alike, while each CLI's own start-up costs the
 * same in both trees (qwen's and opencode's turns are ~15 s and ~30 s
 * each). The server's mappers of all four are fuzzed with their real
 * events in the sanitizer tree (fuzz.agents_map). */
static int wanted(const char *agent) {
  const char *w = getenv("ASB_AGENTS_TEST_AGENTS");
  if (!w || !*w) return 1;
  size_t n = strlen(agent);
  for (const char *p = w; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, agent, n)) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

TEST(real_clis) {
  asb_sandbox *sb = make(NULL);
  if (!sb) return;
  asb_agent_list *l = NULL;
  CHECK_RC(asb_agents_list(&l, sb, NULL), ASB_OK);
  CHECK_INT(asb_agent_list_count(l), 4);
  for (size_t i = 0; i < 4; i++) {
    const asb_agent *a = asb_agent_list_find(l, AGENTS[i]);
    CHECK(a != NULL);
    if (!a || !asb_agent_installed(a)) {
      printf("     %s: not in %s (run scripts/agents-cache.sh): left out\n", AGENTS[i],
             HOST_PREFIX);
      continue;
    }
    installed[i] = 1;
    CHECK(asb_agent_version(a) != NULL);
    CHECK(asb_agent_path(a) && strstr(asb_agent_path(a), HOST_PREFIX));
    printf("     %s %s (%s)\n", AGENTS[i], asb_agent_version(a), asb_agent_package(a));
  }
  CHECK(asb_agent_list_find(l, "no-such-agent") == NULL);
  asb_agent_list_free(l);
  int port = start_helper(sb, "scripted_model.py", "--log /tmp/model.log", "model");
  if (port) {
    for (size_t i = 0; i < 4; i++)
      if (installed[i] && wanted(AGENTS[i]))
        drive(sb, AGENTS[i], port);
      else if (installed[i])
        printf("     %s: not driven (ASB_AGENTS_TEST_AGENTS=%s)\n", AGENTS[i],
               getenv("ASB_AGENTS_TEST_AGENTS"));
  }
  /* an unknown agent */
  asb_agent_session *s = NULL;
  CHECK_RC(asb_agent_session_new(&s, sb, "no-such-agent", NULL), ASB_ENOTFOUND);
  CHECK(strstr(asb_error_last()->message, "available: codex, qwen, claude, opencode"));
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

typedef struct progress {
  int started, lines, completed;
  char last[512];
} progress;

static int on_install(const asb_agent_event *e, void *ud) {
  progress *p = ud;
  const char *t = asb_agent_event_type(e);
  if (!strcmp(t, "install.started")) p->started++;
  if (!strcmp(t, "install.progress")) p->lines++;
  if (!strcmp(t, "install.completed")) p->completed++;
  snprintf(p->last, sizeof p->last, "%s", asb_agent_event_json(e));
  return 0;
}

TEST(not_installed_and_install_on_demand) {
  if (!installed[1]) {
    printf("     (qwen is not in the host prefix: the install test needs its tarball)\n");
    return;
  }
  if (access(QWEN_TGZ, R_OK) != 0) {
    ASBT_FAIL("%s is missing (scripts/agents-cache.sh packs it)", QWEN_TGZ);
    return;
  }
  /* this sandbox's server looks for agents nowhere but its own prefix */
  static const char *const envs[] = {"ASB_AGENTS_PATH=/nonexistent",
                                     /* npm's retries of an unreachable registry
                                      * take minutes */
                                     "npm_config_fetch_retries=0", NULL};
  asb_sandbox *sb = make(envs);
  if (!sb) return;
  asb_agent_list *l = NULL;
  CHECK_RC(asb_agents_list(&l, sb, NULL), ASB_OK);
  const asb_agent *a = asb_agent_list_find(l, "qwen");
  CHECK(a && !asb_agent_installed(a) && !asb_agent_version(a));
  asb_agent_list_free(l);

  /* not installed, and the session may not install it: a clear error */
  asb_agent_session *s = NULL;
  CHECK_RC(new_session(&s, sb, "qwen", 1, -1), ASB_ENOTFOUND);
  CHECK(strstr(asb_error_last()->message, "not installed"));
  CHECK(strstr(asb_error_last()->message, "@qwen-code/qwen-code"));
  CHECK_STR(asb_error_last()->remote_code, "AgentNotInstalledError");

  /* installed on demand at the first turn, from npm's registry, which a
   * sandbox cannot reach: the turn fails naming the package and why */
  CHECK_RC(new_session(&s, sb, "codex", 1, 0), ASB_OK);
  if (s) {
    asb_agent_turn *turn = NULL;
    progress p = {0};
    asb_agents_options o = ASB_AGENTS_OPTIONS_INIT;
    o.on_event = on_install;
    o.userdata = &p;
    CHECK_RC(asb_agent_session_send(&turn, s, "hello", &o), ASB_OK);
    CHECK_INT(p.started, 1);
    CHECK_INT(p.completed, 1);
    CHECK(p.lines >= 1);
    if (turn) {
      CHECK_STR(asb_agent_turn_status(turn), "failed");
      const char *err = asb_agent_turn_error(turn);
      CHECK(err && strstr(err, "@openai/codex"));
      CHECK(err && strstr(err, "npm install"));
      CHECK(err && strstr(err, "network"));
    }
    asb_agent_turn_free(turn);
    CHECK_RC(asb_agent_session_close(s, NULL), ASB_OK);
    asb_agent_session_free(s);
    s = NULL;
  }

  /* the real install path, from a registry inside the sandbox */
  int reg = start_helper(sb, "local_registry.py", "--dir /usr/local/lib/agent-sandbox/tarballs",
                         "registry");
  int model = start_helper(sb, "scripted_model.py", "", "model");
  if (!reg || !model) goto out;
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", reg);
  progress p = {0};
  asb_agents_options o = ASB_AGENTS_OPTIONS_INIT;
  o.on_event = on_install;
  o.userdata = &p;
  o.registry = url;
  char *version = NULL;
  long long t0 = now_ms();
  CHECK_RC(asb_agents_install(&version, sb, "qwen", &o), ASB_OK);
  printf("     qwen installed from a local registry in %.1f s\n", (now_ms() - t0) / 1000.0);
  CHECK_STR(version, "0.15.10");
  asb_free(version);
  CHECK_INT(p.started, 1);
  CHECK_INT(p.completed, 1);
  CHECK(p.lines >= 2); /* npm's http fetch lines */
  CHECK(strstr(p.last, "\"status\":\"installed\""));
  l = NULL;
  CHECK_RC(asb_agents_list(&l, sb, NULL), ASB_OK);
  a = asb_agent_list_find(l, "qwen");
  CHECK(a && asb_agent_installed(a));
  CHECK(a && asb_agent_path(a) &&
        strstr(asb_agent_path(a), "/home/user/.agent-sandbox/agents/bin/qwen"));
  asb_agent_list_free(l);
  /* and what it installed runs a turn */
  sh(sb, "rm -f /tmp/x", NULL, 0);
  CHECK_RC(new_session(&s, sb, "qwen", model, -1), ASB_OK);
  if (s) {
    asb_agent_turn *turn = NULL;
    CHECK_RC(asb_agent_session_send(&turn, s, "please WRITE the file", NULL), ASB_OK);
    CHECK(turn && !strcmp(asb_agent_turn_status(turn), "completed"));
    CHECK(turn && asb_agent_turn_final_message(turn) &&
          !strcmp(asb_agent_turn_final_message(turn), "done"));
    asb_agent_turn_free(turn);
    char out[16] = "";
    CHECK_INT(sh(sb, "cat /tmp/x", out, sizeof out), 0);
    CHECK_STR(out, "hi\n");
    asb_agent_session_free(s);
  }
  /* a failing install through the install call: a clear error too */
  o.registry = "http://127.0.0.1:1";
  CHECK_RC(asb_agents_install(NULL, sb, "claude", &o), ASB_ECOMMANDFAILED);
  CHECK(strstr(asb_error_last()->message, "@anthropic-ai/claude-code"));
  CHECK(strstr(asb_error_last()->message, "npm install"));
  CHECK_RC(asb_agents_install(NULL, sb, "no-such-agent", NULL), ASB_ENOTFOUND);
out:
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

int main(void) {
  if (access(HOST_PREFIX "/bin", X_OK) != 0) {
    printf("skipped: no coding-agent CLIs in %s (scripts/agents-cache.sh installs them)\n",
           HOST_PREFIX);
    return 77;
  }
  if (engine_fixture_start(&F, "agt") != 0 || engine_fixture_client(&F, &C) != 0) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(real_clis);
  RUN(not_installed_and_install_on_demand);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
