/* A Connect stream leaves envd in fewer writes (issue 23): its head with
 * the first message (the start event), the end event's chunk with the
 * body's last chunk `0\r\n\r\n`, each pair in one system call, where
 * libmicrohttpd alone sends all four apart (core/httpd/endhold.h); the
 * connection stays usable for the next request.
 *
 * envd runs under strace (-f: every thread; only the send system calls
 * traced, with their data): no send may carry a head or the last chunk
 * alone. What a command prints, its exit status and the keep-alive
 * connection are checked as ever.
 * Skipped (77) without strace. SPDX-License-Identifier: Apache-2.0 */
#include "envd_test.h"
#include "strace_ends.h"
#include "testing.h"

static char g_trace[128];
static pid_t g_strace = -1;
static int g_port;

/* strace -f -o TRACE envd --port 0; the port from envd's first line. */
static int start_traced(void) {
  const char *wrap[] = {STE_STRACE, "-f",       "-qq", "-s",    "65536",
                        "-e",       STE_TRACED, "-o",  g_trace, NULL};
  et_envd e;
  if (et_start_wrapped(&e, wrap, NULL)) return -1;
  g_strace = e.pid;
  g_port = e.port;
  return 0;
}

/* envd is strace's child: SIGTERM to it, then strace ends with it. */
static void stop_traced(void) {
  if (g_strace <= 0) return;
  char path[64], line[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", g_strace, g_strace);
  FILE *f = fopen(path, "r");
  int envd = 0;
  if (f) {
    if (fgets(line, sizeof line, f)) envd = atoi(line);
    fclose(f);
  }
  if (envd > 0)
    kill(envd, SIGTERM);
  else
    kill(g_strace, SIGKILL);
  int st;
  waitpid(g_strace, &st, 0);
  g_strace = -1;
}

static int start_cmd(et_conn *c, const char *cmd_json, et_resp *r) {
  char req[512];
  snprintf(req, sizeof req, "{\"process\":%s}", cmd_json);
  return et_stream(c, "process.Process/Start", req, NULL, r);
}

static int local_port(const et_conn *c) {
  struct sockaddr_in sa;
  socklen_t l = sizeof sa;
  if (c->fd < 0 || getsockname(c->fd, (struct sockaddr *)&sa, &l) != 0) return -2;
  return ntohs(sa.sin_port);
}

TEST(stream_head_and_end_in_one_write_each) {
  et_conn c;
  REQUIRE(et_connect(&c, g_port) == 0);
  const int runs = 3;
  int port0 = -1;
  for (int i = 0; i < runs; i++) {
    et_resp r;
    /* one without output, one with: the end after the data, both on the
     * same kept connection */
    REQUIRE(start_cmd(&c,
                      i % 2 ? "{\"cmd\":\"/bin/echo\",\"args\":[\"endwrite-x\"]}"
                            : "{\"cmd\":\"/bin/true\"}",
                      &r) == 0);
    CHECK_INT(r.status, 200);
    int nmsg = 0;
    const char *end = et_end_json(&r, &nmsg);
    CHECK_STR(end, "{}"); /* the end-stream envelope, after */
    CHECK(nmsg >= 2);     /* the start and the end events */
    CHECK(et_contains(&r, "\"end\""));
    CHECK(et_contains(&r, "\"exitCode\"") || et_contains(&r, "\"exited\":true"));
    if (i % 2) CHECK(et_contains(&r, "ZW5kd3JpdGUteAo=")); /* "endwrite-x\n" */
    et_resp_free(&r);
    if (i == 0) port0 = local_port(&c);
  }
  CHECK(local_port(&c) == port0); /* one kept connection: never reconnected */
  et_close(&c);
  stop_traced();

  int together = 0, alone = 0;
  REQUIRE(ste_count_ends(g_trace, &together, &alone) == 0);
  if (alone || together < runs)
    fprintf(stderr, "stream ends: %d in one write, %d last chunks sent alone (trace %s)\n",
            together, alone, g_trace);
  CHECK_INT(alone, 0);
  CHECK(together >= runs);
  /* and each response's head with its start event */
  int joined = 0, heads_alone = 0;
  REQUIRE(ste_count_heads(g_trace, "HTTP/1.1 ", &joined, &heads_alone) == 0);
  if (heads_alone || joined < runs)
    fprintf(stderr, "heads: %d with the start event, %d alone (trace %s)\n", joined, heads_alone,
            g_trace);
  CHECK_INT(heads_alone, 0);
  CHECK(joined >= runs);
}

int main(void) {
  if (!ste_have_strace()) {
    printf("skip: no %s\n", STE_STRACE);
    return 77;
  }
  snprintf(g_trace, sizeof g_trace, "/tmp/asb-endwrite-%d.trace", (int)getpid());
  if (start_traced() != 0) {
    fprintf(stderr, "envd under strace did not start\n");
    stop_traced();
    unlink(g_trace);
    return 1;
  }
  RUN(stream_head_and_end_in_one_write_each);
  stop_traced();
  if (!asbt_failures) unlink(g_trace); /* kept for a look when it failed */
  TEST_MAIN_END();
}
