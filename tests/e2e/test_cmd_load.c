/* Commands under load through the engine (issue 23): 200 processes alive
 * at once in one sandbox, then 200 spread over four sandboxes, fed by four
 * client threads. Every process is an awk behind the login shell that
 * copies each input line to stdout and to stderr at once (flushed: one
 * event per line). Each thread starts its 50 processes (start event
 * received) before it sends the first byte to any, then gives every one
 * its numbered lines in three rounds interleaved with the others, then
 * EOF. Each result must hold exactly its own input on stdout and on
 * stderr, in order: no lost, duplicated, reordered or misrouted output,
 * and the end event after the last byte (asb_process_wait returns only at
 * the end). Nothing is timed; the waits are the API's own.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <pthread.h>

#include "engine_fixture.h"
#include "strace_ends.h"
#include "asb_testing.h"

#define PER_THREAD 50
#define THREADS 4
#define ROUNDS 3

static engine_fixture F;
static asb_client *C;

/* What one process must echo: its input so far. */
typedef struct tbuf {
  char *data;
  size_t len, cap;
} tbuf;

static void tbuf_puts(tbuf *b, const char *s) {
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *d = realloc(b->data, cap);
    if (!d) abort();
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

typedef struct worker {
  asb_sandbox *sb;
  int base; /* first process number */
  asb_process *p[PER_THREAD];
  tbuf want[PER_THREAD];
  int started;
  char err[512]; /* the first failure, "" = none */
} worker;

static void fail(worker *w, const char *fmt, int i, const char *why) {
  if (!w->err[0]) snprintf(w->err, sizeof w->err, fmt, w->base + i, why ? why : "");
}

static void line_of(char *out, size_t n, int id, int round) {
  /* long enough that a round is more than one pipe read on a busy box */
  snprintf(out, n, "process %d round %d %0*d\n", id, round, 200, id * 10 + round);
}

static const char k_copy[] =
    "exec awk '{ print; fflush(); print > \"/dev/stderr\"; fflush(\"/dev/stderr\") }'";

static void *work(void *arg) {
  worker *w = arg;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.stdin_enabled = 1;
  o.timeout_ms = -1; /* no lifetime: the test's EOF ends them */
  for (int i = 0; i < PER_THREAD; i++, w->started++) {
    if (asb_commands_start(&w->p[i], w->sb, k_copy, &o) != ASB_OK) {
      fail(w, "start %d: %s", i, asb_error_last()->message);
      return NULL;
    }
  }
  char line[400];
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < PER_THREAD; i++) {
      line_of(line, sizeof line, w->base + i, r);
      unsigned pid = asb_process_pid(w->p[i]);
      if (asb_commands_send_stdin(w->sb, pid, line, strlen(line), NULL) != ASB_OK) {
        fail(w, "stdin %d: %s", i, asb_error_last()->message);
        return NULL;
      }
      tbuf_puts(&w->want[i], line);
    }
  for (int i = 0; i < PER_THREAD; i++)
    if (asb_commands_close_stdin(w->sb, asb_process_pid(w->p[i]), NULL) != ASB_OK) {
      fail(w, "close stdin %d: %s", i, asb_error_last()->message);
      return NULL;
    }
  for (int i = 0; i < PER_THREAD; i++) {
    asb_command_result *res = NULL;
    if (asb_process_wait(&res, w->p[i], NULL) != ASB_OK) {
      fail(w, "wait %d: %s", i, asb_error_last()->message);
      asb_command_result_free(res);
      return NULL;
    }
    size_t no = 0, ne = 0;
    const char *out = asb_command_result_stdout(res, &no);
    const char *err = asb_command_result_stderr(res, &ne);
    if (no != w->want[i].len || memcmp(out, w->want[i].data, no) != 0)
      fail(w, "process %d: stdout differs from its input%s", i, "");
    else if (ne != w->want[i].len || memcmp(err, w->want[i].data, ne) != 0)
      fail(w, "process %d: stderr differs from its input%s", i, "");
    else if (asb_command_result_exit_code(res) != 0)
      fail(w, "process %d: exit code not 0%s", i, "");
    asb_command_result_free(res);
  }
  return NULL;
}

/* nt workers of PER_THREAD processes, worker t in sbs[t]. */
static void load_n(asb_sandbox **sbs, int nt) {
  worker *w = calloc((size_t)nt, sizeof *w);
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  REQUIRE(w != NULL && th != NULL);
  for (int t = 0; t < nt; t++) {
    w[t].sb = sbs[t];
    w[t].base = t * PER_THREAD;
    REQUIRE(pthread_create(&th[t], NULL, work, &w[t]) == 0);
  }
  for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < nt; t++) {
    if (w[t].err[0]) ASBT_FAIL("worker %d: %s", t, w[t].err);
    for (int i = 0; i < w[t].started; i++) {
      if (w[t].err[0]) asb_commands_kill(w[t].sb, asb_process_pid(w[t].p[i]), NULL);
      asb_process_free(w[t].p[i]);
    }
    for (int i = 0; i < PER_THREAD; i++) free(w[t].want[i].data);
  }
  free(w);
  free(th);
}

static void load(asb_sandbox **sbs) {
  load_n(sbs, THREADS);
}

/* Client-side TCP sockets to the engine's port, in any state (a closed
 * one waits in TIME_WAIT on this side: the client closes first). */
static int sockets_to_engine(void) {
  FILE *f = fopen("/proc/net/tcp", "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned lport, rport;
    if (sscanf(line, " %*d: %*x:%x %*x:%x", &lport, &rport) == 2 && (int)rport == F.port) n++;
  }
  fclose(f);
  return n;
}

/* One command after another goes over one kept-alive connection through
 * the router: the client reads each response to its HTTP end (the last
 * chunk, which may come apart from the end event) before the transfer goes
 * back to the pool (unit.http's pull_stream_finished_keeps_its_connection holds
 * the last chunk back to show the close it prevents). */
TEST(one_command_after_another_keeps_its_connection) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, sb, "true", NULL), ASB_OK);
  asb_command_result_free(r);
  int before = sockets_to_engine();
  CHECK(before > 0);
  for (int i = 0; i < 20; i++) {
    r = NULL;
    CHECK_RC(asb_commands_run(&r, sb, i % 2 ? "echo x" : "true", NULL), ASB_OK);
    size_t n = 0;
    const char *out = r ? asb_command_result_stdout(r, &n) : NULL;
    CHECK(i % 2 ? out && n == 2 && memcmp(out, "x\n", 2) == 0 : n == 0);
    asb_command_result_free(r);
  }
  int after = sockets_to_engine();
  if (after > before)
    fprintf(stderr, "  %d sockets to the engine before, %d after\n", before, after);
  CHECK(after <= before); /* TIME_WAITs of earlier tests' may only expire */
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

/* The router relays a command's response in as few writes as envd sends
 * it (core/httpd/endhold.h): the head with the start event, the end event
 * with the body's last chunk; and it sends the request to envd with its
 * body in one write. On the connection it keeps: strace attached to the
 * engine's threads after the first command, only the send system calls.
 * Skipped without strace. */
TEST(router_joins_a_commands_writes) {
  if (!ste_have_strace()) {
    printf("  (skipped: no %s)\n", STE_STRACE);
    return;
  }
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, sb, "true", NULL), ASB_OK); /* the connections made */
  asb_command_result_free(r);
  char trace[96];
  snprintf(trace, sizeof trace, "/tmp/asb-routerend-%d.trace", (int)getpid());
  pid_t st = ste_attach(F.pid, trace);
  CHECK(st > 0);
  const int runs = 4;
  for (int i = 0; st > 0 && i < runs; i++) {
    r = NULL;
    CHECK_RC(asb_commands_run(&r, sb, i % 2 ? "echo x" : "true", NULL), ASB_OK);
    size_t n = 0;
    const char *out = r ? asb_command_result_stdout(r, &n) : NULL;
    CHECK(i % 2 ? out && n == 2 && memcmp(out, "x\n", 2) == 0 : n == 0);
    CHECK(r && asb_command_result_exit_code(r) == 0);
    asb_command_result_free(r);
  }
  ste_detach(st);
  int together = 0, alone = 0;
  if (st > 0) {
    CHECK(ste_count_ends(trace, &together, &alone) == 0);
    if (alone || together < runs)
      fprintf(stderr, "  stream ends at the router: %d in one write, %d last chunks alone (%s)\n",
              together, alone, trace);
    CHECK_INT(alone, 0);
    CHECK(together >= runs);
    int joined = 0, heads_alone = 0; /* and each head with its start event */
    CHECK(ste_count_heads(trace, "HTTP/1.1 ", &joined, &heads_alone) == 0);
    if (heads_alone || joined < runs)
      fprintf(stderr, "  heads at the router: %d with the start event, %d alone (%s)\n", joined,
              heads_alone, trace);
    CHECK_INT(heads_alone, 0);
    CHECK(joined >= runs);
    int reqs = 0, reqs_alone = 0; /* and each request's head to envd with its body */
    CHECK(ste_count_heads(trace, "POST /process.Process/Start ", &reqs, &reqs_alone) == 0);
    if (reqs_alone || reqs < runs)
      fprintf(stderr, "  requests to envd: %d with their body, %d alone (%s)\n", reqs, reqs_alone,
              trace);
    CHECK_INT(reqs_alone, 0);
    CHECK(reqs >= runs);
    if (!asbt_current_failed && !getenv("ASB_KEEP_TRACE")) unlink(trace);
  }
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(two_hundred_at_once_in_one_sandbox) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  asb_sandbox *sbs[THREADS];
  for (int t = 0; t < THREADS; t++) sbs[t] = sb;
  load(sbs);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

TEST(two_hundred_at_once_across_four_sandboxes) {
  asb_sandbox *sbs[THREADS] = {0};
  int ok = 1;
  for (int t = 0; t < THREADS && ok; t++) {
    asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
    CHECK_RC(asb_sandbox_create(&sbs[t], C, &o), ASB_OK);
    ok = sbs[t] != NULL;
  }
  if (ok) load(sbs);
  for (int t = 0; t < THREADS; t++) {
    if (!sbs[t]) continue;
    asb_sandbox_kill(sbs[t], NULL);
    asb_sandbox_free(sbs[t]);
  }
}

/* ASB_CMD_LOAD_SANDBOXES=N (a manual run, not CI's: N x 200 processes at
 * once): 200 at once in each of N sandboxes (THREADS workers each), all
 * sandboxes at the same time. Issue 23's "200 per sandbox x 20". */
TEST(two_hundred_at_once_in_each_of_n_sandboxes) {
  const char *env = getenv("ASB_CMD_LOAD_SANDBOXES");
  int n = env ? atoi(env) : 0;
  if (n <= 0) return;
  asb_sandbox **sbs = calloc((size_t)n, sizeof *sbs);
  asb_sandbox **per = calloc((size_t)n * THREADS, sizeof *per);
  REQUIRE(sbs != NULL && per != NULL);
  int ok = 1;
  for (int i = 0; i < n && ok; i++) {
    asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
    CHECK_RC(asb_sandbox_create(&sbs[i], C, &o), ASB_OK);
    ok = sbs[i] != NULL;
    for (int t = 0; t < THREADS; t++) per[i * THREADS + t] = sbs[i];
  }
  if (ok) load_n(per, n * THREADS);
  for (int i = 0; i < n; i++)
    if (sbs[i]) {
      asb_sandbox_kill(sbs[i], NULL);
      asb_sandbox_free(sbs[i]);
    }
  free(per);
  free(sbs);
}

int main(void) {
  /* every running process's stream is a connection of its own */
  static const char *const wide[] = {"--max-connections", "20000", "--max-connections-per-ip",
                                     "20000", NULL};
  if (engine_fixture_start_args(&F, "cmdload", getenv("ASB_CMD_LOAD_SANDBOXES") ? wide : NULL) !=
          0 ||
      engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  RUN(one_command_after_another_keeps_its_connection);
  RUN(router_joins_a_commands_writes);
  RUN(two_hundred_at_once_in_one_sandbox);
  RUN(two_hundred_at_once_across_four_sandboxes);
  if (getenv("ASB_CMD_LOAD_SANDBOXES")) RUN(two_hundred_at_once_in_each_of_n_sandboxes);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
