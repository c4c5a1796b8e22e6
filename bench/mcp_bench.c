/* agent-sandbox-mcp against the C library it is built on, in one run:
 *   - tools/call run_command("true") over stdio (request written to the
 *     server's stdin → answer read from its stdout) next to
 *     asb_commands_run("true") through libagentsandbox, same sandbox,
 *     interleaved; p50/p99 of each and their ratio (target <= 1.3x);
 *   - server start (fork+exec) → initialize answered, p50/p99.
 * usage: mcp_bench [iterations]   (as root: it starts an engine)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"
#include "bench_signals.h"

#ifndef ASB_MCP_BIN
#error "define ASB_MCP_BIN"
#endif

static engine_fixture F;

typedef struct server {
  pid_t pid;
  FILE *in, *out;
} server;

static int start(server *s) {
  int in[2], out[2];
  if (pipe(in) || pipe(out)) return -1;
  s->pid = fork();
  if (s->pid < 0) return -1;
  if (s->pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execl(ASB_MCP_BIN, ASB_MCP_BIN, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  s->in = fdopen(in[1], "w");
  s->out = fdopen(out[0], "r");
  return 0;
}

/* Send one line; read lines until the one answering id (notifications are
 * skipped). 0, or -1 if the server went away. */
static int ask(server *s, int id, const char *fmt, const char *arg) {
  fprintf(s->in, fmt, id, arg);
  fputc('\n', s->in);
  fflush(s->in);
  char want[32];
  snprintf(want, sizeof want, "\"id\":%d,", id);
  static char *line;
  static size_t cap;
  while (getline(&line, &cap, s->out) > 0)
    if (strstr(line, want))
      return strstr(line, "\"isError\":true") || strstr(line, "\"error\"") ? -1 : 0;
  return -1;
}

static const char INIT[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench%s\",\"version\":\"1\"}}}";
static const char CALL[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
    "\"run_command\",\"arguments\":{\"command\":\"true\",\"sandbox_id\":\"%s\"}}}";

static void stop(server *s) {
  fclose(s->in); /* end of input: the server ends its session and exits */
  fclose(s->out);
  waitpid(s->pid, NULL, 0);
}

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int iters = argc > 1 ? atoi(argv[1]) : 300;
  if (iters < 10) iters = 10;
  asb_client *c = NULL;
  if (engine_fixture_start(&F, "mcpbench") != 0 || engine_fixture_client(&F, &c) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  setenv("E2B_API_URL", F.url, 1);
  setenv("E2B_SANDBOX_URL", F.url, 1);
  setenv("E2B_API_KEY", F.key, 1);
  asb_sandbox *sb = NULL;
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.timeout_ms = 600000;
  if (asb_sandbox_create(&sb, c, &so) != ASB_OK) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    engine_fixture_stop(&F);
    return 1;
  }
  const char *id = asb_sandbox_id(sb);
  printf("agent-sandbox-mcp vs libagentsandbox, %d iterations, one sandbox\n", iters);

  server s;
  int next = 1;
  if (start(&s) || ask(&s, next++, INIT, "") != 0) {
    fprintf(stderr, "the server did not initialize\n");
    return 1;
  }
  double *lib = calloc((size_t)iters, sizeof *lib), *mcp = calloc((size_t)iters, sizeof *mcp);
  for (int i = 0; i < 20; i++) { /* warm both paths (connections, handle) */
    asb_command_result *r = NULL;
    asb_commands_run(&r, sb, "true", NULL);
    asb_command_result_free(r);
    if (ask(&s, next++, CALL, id) != 0) {
      fprintf(stderr, "tools/call failed\n");
      return 1;
    }
  }
  for (int i = 0; i < iters; i++) {
    double t = bench_now();
    asb_command_result *r = NULL;
    int rc = asb_commands_run(&r, sb, "true", NULL);
    asb_command_result_free(r);
    lib[i] = bench_now() - t;
    t = bench_now();
    int mrc = ask(&s, next++, CALL, id);
    mcp[i] = bench_now() - t;
    if (rc != ASB_OK || mrc != 0) {
      fprintf(stderr, "iteration %d failed\n", i);
      return 1;
    }
  }
  stop(&s);
  double l50 = bench_report("asb_commands_run(\"true\")", lib, iters);
  double l99 = lib[(int)((iters - 1) * 0.99)] * 1e6;
  double m50 = bench_report("tools/call run_command(\"true\"), stdio", mcp, iters);
  double m99 = mcp[(int)((iters - 1) * 0.99)] * 1e6;
  printf("%-44s p50 %9.2fx    p99 %9.2fx   (target p50 <= 1.3x)\n", "ratio mcp / library",
         m50 / l50, m99 / l99);

  /* Start-up, next to the same binary's --version (exec and dynamic
   * linking alone: libcurl's dependencies are most of it). */
  int starts = iters / 5 < 20 ? 20 : iters / 5;
  double *st = calloc((size_t)starts, sizeof *st), *ver = calloc((size_t)starts, sizeof *ver);
  for (int i = 0; i < starts; i++) {
    double t = bench_now();
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open("/dev/null", O_WRONLY);
      dup2(fd, 1);
      execl(ASB_MCP_BIN, ASB_MCP_BIN, "--version", (char *)NULL);
      _exit(127);
    }
    waitpid(pid, NULL, 0);
    ver[i] = bench_now() - t;
    t = bench_now();
    server x;
    if (start(&x) || ask(&x, 1, INIT, "") != 0) {
      fprintf(stderr, "start %d failed\n", i);
      return 1;
    }
    st[i] = bench_now() - t;
    stop(&x);
  }
  double v50 = bench_report("agent-sandbox-mcp --version (exec, link)", ver, starts);
  double s50 = bench_report("server start -> initialize answered", st, starts);
  printf("%-44s p50 %9.2fx\n", "ratio start / --version", s50 / v50);
  free(ver);

  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(c);
  engine_fixture_stop(&F);
  free(lib);
  free(mcp);
  free(st);
  return 0;
}
