/* Handles freed from another thread while a call on them streams
 * (docs/abi.md, Lifecycle): the free returns without waiting for the call,
 * the call ends with ASB_ECANCELED, no callback starts after the free
 * returned, and the memory goes when the call returns (ASan and TSan check
 * that nothing touches it later). Against a real envd and code interpreter
 * on loopback, in debug mode.
 *
 * The gated cases prove "free never waits for the call": the call's
 * callback holds its thread until the free has returned, so a free that
 * waited for the call would deadlock (the gate's generous deadline turns
 * that into a failure instead of a hang). The loops free at arbitrary
 * points of a stream to shake out races; their outcome does not depend on
 * timing. SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codei_fixture.h"
#include "envd_fixture.h"
#include "asb_testing.h"

static envd_fixture EF;
static codei_fixture CF;
static asb_client *C;  /* envd's debug client */
static asb_client *CC; /* the code interpreter's */
static char DIR_[128];

/* Output until killed: every case ends it itself (kill_pid, the 120 s
 * backstop). A finite one (2,000,000 lines) ended on its own on a loaded
 * machine before process_free_at_random_points' free came, so that wait
 * returned ASB_OK instead of being cancelled. */
#define LOUD "i=0; while :; do i=$((i+1)); echo \"line $i\"; done"

/* ---- a gate: the callback enters and is held until the freer released it */

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int entered;
  int released;
  atomic_int calls;         /* callback invocations */
  atomic_int after_release; /* invocations that started after the release */
  int timed_out;
} gate;

static void gate_init(gate *g) {
  memset(g, 0, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
}

static void gate_destroy(gate *g) {
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
}

static struct timespec deadline_in(int s) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += s;
  return t;
}

/* In the callback: the first call announces itself and waits (up to 60 s)
 * for the release; every call counts. Returns 0 (go on). */
static int gate_pass(gate *g) {
  atomic_fetch_add(&g->calls, 1);
  pthread_mutex_lock(&g->mu);
  if (g->released) atomic_fetch_add(&g->after_release, 1);
  if (!g->entered) {
    g->entered = 1;
    pthread_cond_broadcast(&g->cv);
    struct timespec t = deadline_in(60);
    while (!g->released)
      if (pthread_cond_timedwait(&g->cv, &g->mu, &t) == ETIMEDOUT) {
        g->timed_out = 1;
        break;
      }
  }
  pthread_mutex_unlock(&g->mu);
  return 0;
}

/* In the freeing thread: wait (up to 60 s) until the callback holds. */
static int gate_wait_entered(gate *g) {
  pthread_mutex_lock(&g->mu);
  struct timespec t = deadline_in(60);
  while (!g->entered)
    if (pthread_cond_timedwait(&g->cv, &g->mu, &t) == ETIMEDOUT) break;
  int ok = g->entered;
  pthread_mutex_unlock(&g->mu);
  return ok ? 0 : -1;
}

static void gate_release(gate *g) {
  pthread_mutex_lock(&g->mu);
  g->released = 1;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static int on_data_gated(const char *d, size_t n, void *ud) {
  (void)d;
  (void)n;
  return gate_pass(ud);
}

/* ---- a call on a thread of its own ---------------------------------------- */

typedef struct job {
  pthread_t t;
  int (*fn)(struct job *);
  asb_sandbox *sb;
  asb_process *p;
  asb_watch *w;
  const char *text;
  void *ud;
  int rc;
  char msg[512]; /* the call's error message (asb_error_last is per thread) */
} job;

static void *job_main(void *arg) {
  job *j = arg;
  j->rc = j->fn(j);
  snprintf(j->msg, sizeof j->msg, "%s", asb_error_last()->message);
  return NULL;
}

static void job_start(job *j) {
  pthread_create(&j->t, NULL, job_main, j);
}
static int job_join(job *j) {
  pthread_join(j->t, NULL);
  return j->rc;
}

static int do_wait(job *j) {
  return asb_process_wait(NULL, j->p, NULL);
}
static int do_watch_wait(job *j) {
  return asb_watch_wait(j->w, -1);
}

static asb_sandbox *attach(asb_client *c) {
  asb_sandbox *sb = NULL;
  return asb_sandbox_attach(&sb, c, "debugsandbox", NULL) == ASB_OK ? sb : NULL;
}

static asb_process *start_loud(asb_sandbox *sb, asb_data_fn fn, void *ud, unsigned *pid) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = fn;
  o.userdata = ud;
  o.discard_output = 1;
  o.timeout_ms = 120000; /* a backstop: each case kills it itself */
  asb_process *p = NULL;
  if (asb_commands_start(&p, sb, LOUD, &o) != ASB_OK) return NULL;
  *pid = asb_process_pid(p);
  return p;
}

static void kill_pid(unsigned pid) {
  asb_sandbox *sb = attach(C);
  if (!sb) return;
  asb_commands_kill(sb, pid, NULL);
  asb_sandbox_free(sb);
}

/* ---- processes ------------------------------------------------------------------ */

/* free, disconnect or stop (then free) while the waiter sits in a callback. */
static void process_case(int how) {
  asb_sandbox *sb = attach(C);
  REQUIRE(sb);
  gate g;
  gate_init(&g);
  unsigned pid = 0;
  job j = {.fn = do_wait};
  j.p = start_loud(sb, on_data_gated, &g, &pid);
  REQUIRE(j.p);
  job_start(&j);
  CHECK(gate_wait_entered(&g) == 0);
  if (how == 0) {
    asb_process_free(j.p); /* returns although the wait is in a callback */
  } else if (how == 1) {
    asb_process_disconnect(j.p);
  } else {
    asb_process_stop(j.p);
  }
  gate_release(&g);
  CHECK_RC(job_join(&j), ASB_ECANCELED);
  CHECK(!g.timed_out);
  CHECK_INT(atomic_load(&g.after_release), 0);
  if (how == 2) {
    /* Stopped, not freed: waits end at once, calls on the process work. */
    CHECK_RC(asb_process_wait(NULL, j.p, NULL), ASB_ECANCELED);
    CHECK_RC(asb_process_kill(j.p, NULL), ASB_OK);
  }
  if (how != 0) asb_process_free(j.p);
  kill_pid(pid);
  asb_sandbox_free(sb);
  gate_destroy(&g);
}

TEST(process_free_during_wait) {
  process_case(0);
}
TEST(process_disconnect_during_wait) {
  process_case(1);
}
TEST(process_stop_during_wait) {
  process_case(2);
}

/* Freeing the sandbox (and the client) a process came from does not touch
 * the process: its wait goes on to the end. */
static int count_lines(const char *d, size_t n, void *ud) {
  for (size_t i = 0; i < n; i++)
    if (d[i] == '\n') atomic_fetch_add((atomic_int *)ud, 1);
  return 0;
}

TEST(parents_freed_during_a_childs_wait) {
  asb_client *c = NULL;
  asb_sandbox *sb = NULL;
  REQUIRE(asbt_debug_connect(EF.url, NULL, &c, &sb) == 0);
  atomic_int lines = 0;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = count_lines;
  o.userdata = &lines;
  job j = {.fn = do_wait};
  REQUIRE_RC(asb_commands_start(&j.p, sb, "for i in $(seq 1 20000); do echo $i; done", &o), ASB_OK);
  job_start(&j);
  asb_sandbox_free(sb);
  asb_client_free(c);
  CHECK_RC(job_join(&j), ASB_OK);
  CHECK_INT(atomic_load(&lines), 20000);
  asb_process_free(j.p);
}

/* Free at arbitrary points of a stream, many times. */
static int on_data_count(const char *d, size_t n, void *ud) {
  (void)d;
  (void)n;
  atomic_fetch_add((atomic_int *)ud, 1);
  return 0;
}

TEST(process_free_at_random_points) {
  asb_sandbox *sb = attach(C);
  REQUIRE(sb);
  srand(7);
  for (int i = 0; i < 8; i++) { /* each round starts a login shell (~1 s) */
    atomic_int n = 0;
    unsigned pid = 0;
    job j = {.fn = do_wait};
    j.p = start_loud(sb, on_data_count, &n, &pid);
    REQUIRE(j.p);
    job_start(&j);
    /* The wait has begun once output arrived (freeing before a call starts
     * would make the call a use after free); then an arbitrary moment. */
    while (atomic_load(&n) == 0) sched_yield();
    for (int k = rand() % 20000; k > 0; k--) sched_yield();
    if (i % 3 == 0) asb_process_disconnect(j.p);
    asb_process_free(j.p);
    int rc = job_join(&j);
    if (rc != ASB_ECANCELED)
      ASBT_FAIL("round %d: wait returned %s: %s", i, asb_status_name(rc), j.msg);
    kill_pid(pid);
  }
  asb_sandbox_free(sb);
}

/* ---- watches ---------------------------------------------------------------------- */

static int on_event_gated(asb_fs_event_type t, const char *name, const asb_entry *e, void *ud) {
  (void)t;
  (void)name;
  (void)e;
  return gate_pass(ud);
}

static int on_event_count(asb_fs_event_type t, const char *name, const asb_entry *e, void *ud) {
  (void)t;
  (void)name;
  (void)e;
  atomic_fetch_add((atomic_int *)ud, 1);
  return 0;
}

typedef struct writer {
  pthread_t t;
  atomic_int stop;
  char dir[256];
} writer;

static void *writer_main(void *arg) {
  writer *w = arg;
  char path[320];
  for (int i = 0; !atomic_load(&w->stop); i++) {
    snprintf(path, sizeof path, "%s/f%d", w->dir, i % 64);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "%d\n", i);
      fclose(f);
    }
  }
  return NULL;
}

static asb_watch *watch(asb_sandbox *sb, const char *dir, asb_watch_fn fn, void *ud) {
  asb_watch_options o = ASB_WATCH_OPTIONS_INIT;
  o.on_event = fn;
  o.userdata = ud;
  asb_watch *w = NULL;
  return asb_files_watch_dir(&w, sb, dir, &o) == ASB_OK ? w : NULL;
}

TEST(watch_free_during_wait) {
  asb_sandbox *sb = attach(C);
  REQUIRE(sb);
  writer wr = {0};
  snprintf(wr.dir, sizeof wr.dir, "%s/watched", DIR_);
  mkdir(wr.dir, 0777);
  chmod(wr.dir, 0777);
  gate g;
  gate_init(&g);
  job j = {.fn = do_watch_wait};
  j.w = watch(sb, wr.dir, on_event_gated, &g);
  REQUIRE(j.w);
  pthread_create(&wr.t, NULL, writer_main, &wr);
  job_start(&j);
  CHECK(gate_wait_entered(&g) == 0);
  asb_watch_free(j.w);
  gate_release(&g);
  int rc = job_join(&j);
  CHECK(rc >= 0); /* a stopped wait returns the events it delivered */
  CHECK(!g.timed_out);
  CHECK_INT(atomic_load(&g.after_release), 0);

  /* and at arbitrary points */
  srand(11);
  for (int i = 0; i < 25; i++) {
    atomic_int n = 0;
    job k = {.fn = do_watch_wait};
    k.w = watch(sb, wr.dir, on_event_count, &n);
    REQUIRE(k.w);
    job_start(&k);
    while (atomic_load(&n) == 0) sched_yield(); /* the wait has begun */
    for (int y = rand() % 20000; y > 0; y--) sched_yield();
    if (i % 2) asb_watch_stop(k.w);
    asb_watch_free(k.w);
    if (job_join(&k) < 0) ASBT_FAIL("round %d: %s", i, k.msg);
  }
  atomic_store(&wr.stop, 1);
  pthread_join(wr.t, NULL);
  asb_sandbox_free(sb);
  gate_destroy(&g);
}

/* ---- calls on the sandbox handle: file streams, commands, code --------------------- */

static int do_read_stream(job *j) {
  return asb_files_read_stream(j->sb, j->text, NULL, on_data_gated, j->ud);
}

static int do_run(job *j) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = on_data_gated;
  o.userdata = j->ud;
  o.discard_output = 1;
  o.timeout_ms = 120000;
  return asb_commands_run(NULL, j->sb, "for i in $(seq 1 300000); do echo $i; done", &o);
}

static int do_code(job *j) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.on_stdout = on_data_gated;
  o.userdata = j->ud;
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, j->sb, "for i in range(3000000):\n    print(i)\n", &o);
  asb_execution_free(e);
  return rc;
}

/* The sandbox handle freed while a call on it is inside a callback. */
static void sandbox_case(asb_client *c, int (*fn)(job *), const char *text) {
  gate g;
  gate_init(&g);
  job j = {.fn = fn, .text = text, .ud = &g};
  j.sb = attach(c);
  REQUIRE(j.sb);
  job_start(&j);
  CHECK(gate_wait_entered(&g) == 0);
  asb_sandbox_free(j.sb);
  gate_release(&g);
  int rc = job_join(&j);
  if (rc != ASB_ECANCELED) ASBT_FAIL("the call returned %s: %s", asb_status_name(rc), j.msg);
  CHECK(!g.timed_out);
  CHECK_INT(atomic_load(&g.after_release), 0);
  gate_destroy(&g);
}

TEST(sandbox_free_during_file_stream) {
  char path[256];
  snprintf(path, sizeof path, "%s/big", DIR_);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  static char block[1 << 16];
  memset(block, 'x', sizeof block);
  for (int i = 0; i < 1024; i++) fwrite(block, 1, sizeof block, f); /* 64 MiB */
  fclose(f);
  chmod(path, 0644);
  sandbox_case(C, do_read_stream, path);
}

TEST(sandbox_free_during_command_run) {
  sandbox_case(C, do_run, NULL);
}

TEST(sandbox_free_during_code_run) {
  sandbox_case(CC, do_code, NULL);
}

/* A client freed before the sandbox it made: the sandbox goes on. */
TEST(client_freed_before_its_sandbox) {
  asb_client *c = NULL;
  asb_sandbox *sb = NULL;
  REQUIRE(asbt_debug_connect(EF.url, NULL, &c, &sb) == 0);
  asb_client_free(c); /* the sandbox holds it */
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, sb, "echo still here", NULL), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "still here\n");
  asb_command_result_free(r);
  asb_sandbox_free(sb);
}

/* ---- pulled streams: stopped at arbitrary points ------------------------------------ */

typedef struct puller {
  pthread_t t;
  asb_file_reader *r;
  asb_process *p;
  atomic_int chunks;
  atomic_int done;
  int rc;
} puller;

static void *pull_file(void *arg) {
  puller *u = arg;
  const char *d;
  size_t n;
  while ((u->rc = asb_file_reader_read(&d, &n, u->r, NULL)) == 1) atomic_fetch_add(&u->chunks, 1);
  atomic_store(&u->done, 1);
  return NULL;
}

static void *pull_output(void *arg) {
  puller *u = arg;
  int kind;
  const char *d;
  size_t n;
  while ((u->rc = asb_process_read(&kind, &d, &n, u->p, NULL)) == 1)
    atomic_fetch_add(&u->chunks, 1);
  atomic_store(&u->done, 1);
  return NULL;
}

TEST(pulled_streams_stopped_at_random_points) {
  asb_sandbox *sb = attach(C);
  REQUIRE(sb);
  char path[256];
  snprintf(path, sizeof path, "%s/pulled", DIR_);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  static char block[1 << 16];
  memset(block, 'y', sizeof block);
  for (int i = 0; i < 64; i++) fwrite(block, 1, sizeof block, f); /* 4 MiB */
  fclose(f);
  chmod(path, 0644);
  srand(13);
  for (int i = 0; i < 20; i++) {
    puller u = {0};
    REQUIRE_RC(asb_files_open_read(&u.r, sb, path, NULL), ASB_OK);
    pthread_create(&u.t, NULL, pull_file, &u);
    while (atomic_load(&u.chunks) == 0 && !atomic_load(&u.done)) sched_yield();
    for (int y = rand() % 20000; y > 0; y--) sched_yield();
    asb_file_reader_stop(u.r); /* from another thread, during a read */
    pthread_join(u.t, NULL);
    CHECK(u.rc == ASB_ECANCELED || u.rc == 0); /* 0: it had read the whole file */
    asb_file_reader_free(u.r);
  }
  for (int i = 0; i < 4; i++) {
    puller u = {0};
    unsigned pid = 0;
    u.p = start_loud(sb, NULL, NULL, &pid);
    REQUIRE(u.p);
    pthread_create(&u.t, NULL, pull_output, &u);
    while (atomic_load(&u.chunks) == 0 && !atomic_load(&u.done)) sched_yield();
    for (int y = rand() % 20000; y > 0; y--) sched_yield();
    asb_process_stop(u.p);
    pthread_join(u.t, NULL);
    CHECK_RC(u.rc, ASB_ECANCELED);
    asb_process_free(u.p);
    kill_pid(pid);
  }
  asb_sandbox_free(sb);
}

/* ---- main ------------------------------------------------------------------------------ */

static int code_ready(void) {
  asb_sandbox *sb = attach(CC);
  if (!sb) return -1;
  int rc = -1;
  for (int i = 0; i < 600 && rc != ASB_OK; i++) {
    asb_code_context_list *l = NULL;
    rc = asb_code_contexts_list(&l, sb, NULL);
    asb_code_context_list_free(l);
    if (rc != ASB_OK) usleep(100000); /* polling a server that starts */
  }
  asb_sandbox_free(sb);
  return rc == ASB_OK ? 0 : -1;
}

int main(void) {
  snprintf(DIR_, sizeof DIR_, "/tmp/asb-free-%d", (int)getpid());
  mkdir(DIR_, 0777);
  chmod(DIR_, 0777);
  asb_sandbox *sb = NULL;
  if (envd_start(&EF, NULL) != 0 || asbt_debug_connect(EF.url, NULL, &C, &sb) != 0) {
    fprintf(stderr, "cannot start envd (%s)\n", ASB_ENVD_BIN);
    return 1;
  }
  asb_sandbox_free(sb);
  const char *args[] = {"--cwd", "/tmp", NULL};
  if (codei_start(&CF, args, NULL) != 0 || asbt_debug_connect(CF.url, NULL, &CC, &sb) != 0 ||
      code_ready() != 0) {
    fprintf(stderr, "cannot start the code interpreter (%s)\n", CODEI_BIN);
    envd_stop(&EF);
    codei_stop(&CF);
    return 1;
  }
  asb_sandbox_free(sb);
  RUN(process_free_during_wait);
  RUN(process_disconnect_during_wait);
  RUN(process_stop_during_wait);
  RUN(parents_freed_during_a_childs_wait);
  RUN(process_free_at_random_points);
  RUN(watch_free_during_wait);
  RUN(sandbox_free_during_file_stream);
  RUN(sandbox_free_during_command_run);
  RUN(sandbox_free_during_code_run);
  RUN(pulled_streams_stopped_at_random_points);
  RUN(client_freed_before_its_sandbox);
  asb_client_free(C);
  asb_client_free(CC);
  envd_stop(&EF);
  codei_stop(&CF);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
  if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", DIR_);
  TEST_MAIN_END();
}
