/* Unit tests for envd's process table (core/envd/proc_tab.c), driven
 * without the I/O thread and without processes: records are inserted with
 * made-up pids (the table never signals anything), exits are fed as wait
 * statuses. Lookups by pid and tag, the retained list and its expiry, stale
 * retained records dropped by a new pid or tag, exit descriptions (OOM
 * included), streams woken on retirement, the grave.
 * SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_tab.h"
#include "state.h"
#include "testing.h"
#include "util/util.h"

/* Made-up pids, far above pid_max. */
#define PID_A 40000001
#define PID_B 40000002

static envd_proc *add(pid_t pid, const char *tag) {
  envd_proc *p = envd_ptab_new(tag, 0);
  if (!p) return NULL;
  p->pid = pid;
  envd_ptab_lock();
  envd_ptab_insert(p);
  envd_ptab_unlock();
  return p;
}

static envd_proc *find_json(const char *sel, int retained, envd_err *e) {
  cJSON *j = cJSON_Parse(sel);
  envd_proc *p = envd_ptab_find(j, retained, e);
  cJSON_Delete(j);
  return p;
}

static void retire(envd_proc *p, int wstatus) {
  envd_ptab_lock();
  p->exited = 1;
  p->wstatus = wstatus;
  envd_ptab_retire(p);
  envd_ptab_unlock();
}

TEST(new_record) {
  envd_proc *p = envd_ptab_new("t", 1);
  REQUIRE(p != NULL);
  CHECK_INT(p->refs, 1);
  CHECK_STR(p->tag, "t");
  CHECK_INT(p->is_pty, 1);
  CHECK(p->fd_out == -1 && p->fd_err == -1 && p->fd_pty == -1 && p->fd_in == -1 && p->pty_w == -1);
  envd_ptab_unref(p);
  p = envd_ptab_new(NULL, 0);
  REQUIRE(p != NULL);
  CHECK(p->tag == NULL);
  envd_ptab_unref(p);
}

TEST(find_by_pid_and_tag) {
  envd_proc *a = add(PID_A, "alpha");
  envd_proc *b = add(PID_B, NULL);
  REQUIRE(a && b);
  CHECK_INT(envd_ptab_count(), 2);
  envd_err e = {0};
  char sel[64];
  snprintf(sel, sizeof sel, "{\"pid\":%d}", PID_A);
  envd_proc *f = find_json(sel, 0, &e);
  CHECK(f == a);
  if (f) {
    CHECK_INT(f->refs, 2); /* the table's and ours */
    envd_ptab_unref(f);
  }
  f = find_json("{\"tag\":\"alpha\"}", 0, &e);
  CHECK(f == a);
  if (f) envd_ptab_unref(f);
  /* a record without a tag is found by pid only */
  snprintf(sel, sizeof sel, "{\"pid\":%d}", PID_B);
  f = find_json(sel, 0, &e);
  CHECK(f == b);
  if (f) envd_ptab_unref(f);
  /* errors */
  f = find_json("{\"pid\":12}", 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.code, "not_found");
  CHECK_STR(e.msg, "process with pid 12 not found");
  f = find_json("{\"tag\":\"beta\"}", 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.msg, "process with tag beta not found");
  f = find_json("{\"pid\":\"x\"}", 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.code, "invalid_argument");
  CHECK_STR(e.msg, "invalid pid");
  f = find_json("{\"pid\":-1}", 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.code, "invalid_argument");
  f = find_json("{\"tag\":7}", 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.msg, "invalid tag");
  f = find_json("{}", 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.code, "unimplemented");
  CHECK_STR(e.msg, "invalid input type <nil>");
  f = envd_ptab_find(NULL, 0, &e);
  CHECK(f == NULL);
  CHECK_STR(e.code, "unimplemented");
  envd_ptab_clear();
  CHECK_INT(envd_ptab_count(), 0);
}

TEST(retire_retain_and_expire) {
  envd_proc *a = add(PID_A, "alpha");
  REQUIRE(a != NULL);
  envd_ptab_ref(a); /* a stream's */
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(ev >= 0);
  envd_sub s;
  memset(&s, 0, sizeof s);
  s.wake = ev;
  a->subs = &s;
  int in[2];
  REQUIRE(pipe(in) == 0);
  a->fd_in = in[1];
  uint64_t before = asbi_now_ms();
  retire(a, W_EXITCODE(3, 0));
  uint64_t after = asbi_now_ms();
  /* ended, described, streams woken, stdin closed */
  CHECK_INT(a->ended, 1);
  CHECK_INT(a->exit_code, 3);
  CHECK_INT(a->exited_normally, 1);
  CHECK_STR(a->status, "exit status 3");
  CHECK_STR(a->error, "exit status 3");
  uint64_t v = 0;
  CHECK_INT(read(ev, &v, sizeof v), (long)sizeof v);
  CHECK_INT(v, 1);
  CHECK_INT(a->fd_in, -1);
  char c;
  CHECK_INT(read(in[0], &c, 1), 0); /* EOF: the write end is closed */
  close(in[0]);
  a->subs = NULL;
  close(ev);
  /* no longer live, still found by a Connect (retained) for 30 s */
  CHECK_INT(envd_ptab_count(), 0);
  envd_err e = {0};
  CHECK(find_json("{\"tag\":\"alpha\"}", 0, &e) == NULL);
  envd_proc *f = find_json("{\"tag\":\"alpha\"}", 1, &e);
  CHECK(f == a);
  if (f) envd_ptab_unref(f);
  CHECK(a->retain_until >= before + ENVD_PTAB_RETAIN_MS &&
        a->retain_until <= after + ENVD_PTAB_RETAIN_MS);
  /* expiry: kept until retain_until, which it reports */
  envd_ptab_lock();
  CHECK_INT(envd_ptab_expire(a->retain_until - 1), a->retain_until);
  CHECK(envd_ptab_retained() == a);
  uint64_t until = a->retain_until;
  CHECK_INT(envd_ptab_expire(until), 0);
  CHECK(envd_ptab_retained() == NULL);
  envd_ptab_unlock();
  /* the stream's reference keeps the record */
  CHECK_INT(a->refs, 1);
  envd_ptab_unref(a);
}

TEST(expire_reports_the_earliest) {
  envd_proc *a = add(PID_A, NULL);
  envd_proc *b = add(PID_B, NULL);
  REQUIRE(a && b);
  retire(a, W_EXITCODE(0, 0));
  retire(b, W_EXITCODE(0, 0));
  envd_ptab_lock();
  a->retain_until = 5000;
  b->retain_until = 3000;
  CHECK_INT(envd_ptab_expire(1000), 3000);
  CHECK_INT(envd_ptab_expire(3000), 5000); /* b goes, a is next */
  CHECK(envd_ptab_retained() == a && a->next == NULL);
  CHECK_INT(envd_ptab_expire(4999), 5000);
  CHECK_INT(envd_ptab_expire(5000), 0);
  envd_ptab_unlock();
}

/* A new process with the pid or the tag of a retained one makes that
 * retained exit stale: it is dropped, so Connect finds the new one. */
TEST(insert_drops_stale_retained) {
  envd_proc *old_pid = add(PID_A, NULL);
  envd_proc *old_tag = add(PID_B, "job");
  REQUIRE(old_pid && old_tag);
  retire(old_pid, W_EXITCODE(0, 0));
  retire(old_tag, W_EXITCODE(1, 0));
  envd_ptab_lock();
  int n = 0;
  for (envd_proc *p = envd_ptab_retained(); p; p = p->next) n++;
  envd_ptab_unlock();
  CHECK_INT(n, 2);
  envd_proc *same_pid = add(PID_A, "other");
  envd_err e = {0};
  char sel[64];
  snprintf(sel, sizeof sel, "{\"pid\":%d}", PID_A);
  envd_proc *f = find_json(sel, 1, &e);
  CHECK(f == same_pid);
  if (f) envd_ptab_unref(f);
  envd_proc *same_tag = add(40000003, "job");
  f = find_json("{\"tag\":\"job\"}", 1, &e);
  CHECK(f == same_tag);
  if (f) envd_ptab_unref(f);
  envd_ptab_lock();
  CHECK(envd_ptab_retained() == NULL);
  envd_ptab_unlock();
  CHECK_INT(envd_ptab_count(), 2);
  envd_ptab_clear();
}

static void check_exit(int wstatus, int code, int normally, const char *status, const char *error) {
  envd_proc *p = envd_ptab_new(NULL, 0);
  REQUIRE(p != NULL);
  p->wstatus = wstatus;
  envd_ptab_describe_exit(p);
  if (p->exit_code != code || p->exited_normally != normally || strcmp(p->status, status) != 0 ||
      strcmp(p->error, error) != 0)
    ASBT_FAIL("wstatus %#x: %d %d '%s' '%s', want %d %d '%s' '%s'", wstatus, p->exit_code,
              p->exited_normally, p->status, p->error, code, normally, status, error);
  envd_ptab_unref(p);
}

/* Go's os.ProcessState strings, as E2B's envd reports them. */
TEST(exit_descriptions) {
  check_exit(W_EXITCODE(0, 0), 0, 1, "exit status 0", "");
  check_exit(W_EXITCODE(1, 0), 1, 1, "exit status 1", "exit status 1");
  check_exit(W_EXITCODE(255, 0), 255, 1, "exit status 255", "exit status 255");
  check_exit(W_EXITCODE(0, SIGKILL), -1, 0, "signal: killed", "signal: killed");
  check_exit(W_EXITCODE(0, SIGTERM), -1, 0, "signal: terminated", "signal: terminated");
  check_exit(W_EXITCODE(0, SIGSEGV) | 0x80, -1, 0, "signal: segmentation fault (core dumped)",
             "signal: segmentation fault (core dumped)");
  check_exit(W_EXITCODE(0, SIGABRT) | 0x80, -1, 0, "signal: aborted (core dumped)",
             "signal: aborted (core dumped)");
  check_exit(W_EXITCODE(0, SIGPIPE), -1, 0, "signal: broken pipe", "signal: broken pipe");
  check_exit(W_EXITCODE(0, 40), -1, 0, "signal: signal 40", "signal: signal 40");
  check_exit(W_STOPCODE(SIGSTOP), -1, 0, "exit status -1", "exit status -1");
}

/* A SIGKILL while the cgroup's oom_kill count went up is an OOM kill. */
TEST(exit_out_of_memory) {
  char path[] = "/tmp/asb-envd-oom-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  static const char events[] = "oom 7\noom_kill 5\noom_group_kill 0\n";
  CHECK_INT(write(fd, events, sizeof events - 1), (long)(sizeof events - 1));
  close(fd);
  CHECK_INT(envd_ptab_oom_count(), 0); /* no counter configured */
  g_envd.oom_counter = strdup(path);
  CHECK_INT(envd_ptab_oom_count(), 5);
  envd_proc *p = envd_ptab_new(NULL, 0);
  REQUIRE(p != NULL);
  p->oom_before = 4;
  p->wstatus = W_EXITCODE(0, SIGKILL);
  envd_ptab_describe_exit(p);
  CHECK_STR(p->status, "signal: killed");
  CHECK_STR(p->error, "signal: killed (out of memory)");
  p->oom_before = 5; /* the count did not move: a plain kill */
  p->error[0] = '\0';
  envd_ptab_describe_exit(p);
  CHECK_STR(p->error, "signal: killed");
  p->oom_before = 0; /* only SIGKILL is an OOM kill */
  p->wstatus = W_EXITCODE(0, SIGTERM);
  envd_ptab_describe_exit(p);
  CHECK_STR(p->error, "signal: terminated");
  envd_ptab_unref(p);
  unlink(path);
  CHECK_INT(envd_ptab_oom_count(), 0); /* the file is gone */
  free(g_envd.oom_counter);
  g_envd.oom_counter = NULL;
}

/* With an I/O thread attached, a last reference does not free the record
 * at once: it goes to the grave, the thread's eventfd is written, and the
 * grave is emptied between epoll rounds (here: by hand). */
TEST(grave) {
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  REQUIRE(ev >= 0);
  envd_ptab_attach(ev);
  envd_proc *p = envd_ptab_new("g", 0);
  REQUIRE(p != NULL);
  int pp[2];
  REQUIRE(pipe(pp) == 0);
  p->fd_out = pp[0];
  envd_ptab_unref(p);
  uint64_t v = 0;
  CHECK_INT(read(ev, &v, sizeof v), (long)sizeof v);
  /* still open: the record waits in the grave */
  CHECK_INT(write(pp[1], "x", 1), 1);
  envd_ptab_free_grave();
  /* freed: its fd is closed, so the pipe has no reader */
  signal(SIGPIPE, SIG_IGN);
  CHECK(write(pp[1], "x", 1) < 0);
  close(pp[1]);
  /* detached: a last reference frees at once, nothing is written */
  envd_ptab_detach();
  p = envd_ptab_new(NULL, 0);
  REQUIRE(p != NULL);
  envd_ptab_unref(p);
  CHECK(read(ev, &v, sizeof v) < 0);
  close(ev);
}

int main(void) {
  RUN(new_record);
  RUN(find_by_pid_and_tag);
  RUN(retire_retain_and_expire);
  RUN(expire_reports_the_earliest);
  RUN(insert_drops_stale_retained);
  RUN(exit_descriptions);
  RUN(exit_out_of_memory);
  RUN(grave);
  envd_ptab_clear();
  envd_state_free();
  TEST_MAIN_END();
}
