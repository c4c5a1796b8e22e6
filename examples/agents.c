/* Coding agents: a Codex session in a sandbox of the built-in agents
 * template (docs/agents.md). One turn with its events printed as they come
 * (the tool call, its exit code, the answer) and its result; then a second
 * turn in the same session, which the agent answers from its own context.
 *
 * The model endpoint runs inside the sandbox, on its own loopback, so the
 * example needs no network (sandboxes have one: docs/networking.md): this example uploads and
 * starts the repository's scripted model (an OpenAI-compatible server playing a fixed script). With
 * egress, set base_url to any OpenAI-compatible endpoint and its key in the variable api_key_env
 * names.
 *
 *   agents [path/to/tests/agents/scripted_model.py] [agent]
 *
 * The agents template needs the CLIs on the host: scripts/agents-cache.sh.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(const char *what) {
  const asb_error *e = asb_error_last();
  fprintf(stderr, "%s: %s (%s)\n", what, e->message, asb_status_name(e->code));
  return 1;
}

/* Each event as it arrives: its seq, type and the whole JSON. */
static int print_event(const asb_agent_event *e, void *ud) {
  (void)ud;
  const char *type = asb_agent_event_type(e);
  if (!strcmp(type, "tool.started") || !strcmp(type, "tool.completed") ||
      !strcmp(type, "message") || !strcmp(type, "turn.completed"))
    printf("  [%lld] %s\n", (long long)asb_agent_event_seq(e), type);
  return 0;
}

/* Upload the scripted model, start it in the background and return the
 * port it listens on (0 on failure). */
static int start_model(asb_sandbox *sb, const char *script) {
  FILE *f = fopen(script, "rb");
  if (!f) {
    perror(script);
    return 0;
  }
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (asb_files_write(NULL, sb, "/home/user/scripted_model.py", buf, n, NULL) != ASB_OK)
    return fail("upload the model"), 0;
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb,
                       "(setsid python3 /home/user/scripted_model.py --ready-file /tmp/model.port"
                       " > /tmp/model.log 2>&1 < /dev/null &)",
                       NULL) != ASB_OK)
    return fail("start the model"), 0;
  asb_command_result_free(r);
  for (time_t until = time(NULL) + 120; time(NULL) < until;) {
    r = NULL;
    if (asb_commands_run(&r, sb, "cat /tmp/model.port 2>/dev/null || true", NULL) != ASB_OK)
      return fail("read the model's port"), 0;
    int port = atoi(asb_command_result_stdout(r, NULL));
    asb_command_result_free(r);
    if (port > 0) return port;
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "the model did not start\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *script = argc > 1 ? argv[1] : "tests/agents/scripted_model.py";
  const char *agent = argc > 2 ? argv[2] : "codex";
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL) != ASB_OK) return fail("client");
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = "agents";
  so.timeout_ms = 900000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &so) != ASB_OK) return fail("create");

  /* 1. The agents the sandbox's server knows. */
  asb_agent_list *list = NULL;
  if (asb_agents_list(&list, sb, NULL) != ASB_OK) return fail("list");
  for (size_t i = 0; i < asb_agent_list_count(list); i++) {
    const asb_agent *a = asb_agent_list_get(list, i);
    printf("%s: %s %s\n", asb_agent_name(a), asb_agent_package(a),
           asb_agent_installed(a) ? asb_agent_version(a) : "(installable)");
  }
  asb_agent_list_free(list);

  /* 2. A session pointed at the endpoint. */
  int port = start_model(sb, script);
  if (!port) return 1;
  char base_url[64];
  snprintf(base_url, sizeof base_url, "http://127.0.0.1:%d%s", port,
           strcmp(agent, "claude") ? "/v1" : "");
  static const char *const env[] = {"EXAMPLE_KEY=sk-not-needed-by-the-scripted-model", NULL};
  asb_agent_session_options o = ASB_AGENT_SESSION_OPTIONS_INIT;
  o.cwd = "/home/user";
  o.model = "scripted";
  o.base_url = base_url;
  o.api_key_env = "EXAMPLE_KEY";
  o.env = env;
  asb_agent_session *s = NULL;
  if (asb_agent_session_new(&s, sb, agent, &o) != ASB_OK) return fail("session");
  printf("session %s (%s)\n", asb_agent_session_id(s), asb_agent_session_agent(s));

  /* 3. A turn: events as they come, then its result. */
  asb_agents_options call = ASB_AGENTS_OPTIONS_INIT;
  call.on_event = print_event;
  asb_agent_turn *t = NULL;
  if (asb_agent_session_send(&t, s, "please WRITE the file", &call) != ASB_OK) return fail("send");
  printf("turn %d: %s, final message '%s'\n", asb_agent_turn_number(t), asb_agent_turn_status(t),
         asb_agent_turn_final_message(t) ? asb_agent_turn_final_message(t) : "");
  for (size_t i = 0; i < asb_agent_turn_commands_count(t); i++)
    printf("  ran: %s (exit code %d)\n", asb_agent_turn_command(t, i),
           asb_agent_turn_command_exit_code(t, i));
  printf("  tokens: %lld in, %lld out\n", (long long)asb_agent_turn_input_tokens(t),
         (long long)asb_agent_turn_output_tokens(t));
  asb_agent_turn_free(t);
  char *data = NULL;
  size_t len = 0;
  if (asb_files_read(&data, &len, sb, "/tmp/x", NULL) != ASB_OK) return fail("read /tmp/x");
  printf("/tmp/x: %.*s", (int)len, data);
  asb_free(data);

  /* 4. A second turn in the same session: the agent kept its context. */
  if (asb_agent_session_send(&t, s, "RECALL what you did", NULL) != ASB_OK) return fail("send");
  printf("turn %d: %s\n", asb_agent_turn_number(t), asb_agent_turn_final_message(t));
  asb_agent_turn_free(t);

  asb_agent_session_close(s, NULL);
  asb_agent_session_free(s);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
