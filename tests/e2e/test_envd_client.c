/* The public C API (commands, pty, files, watch, signed URLs) against a real
 * envd process, as E2B's debug mode reaches one. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "envd_fixture.h"
#include "asb_testing.h"

static envd_fixture F;
static asb_client *C;
static asb_sandbox *SB;
static char DIR_[128];

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Several calls may appear in one expression: rotate through buffers. */
static const char *path_in(const char *name) {
  static _Thread_local char p[8][256];
  static _Thread_local unsigned at;
  char *b = p[at++ % 8];
  snprintf(b, 256, "%s/%s", DIR_, name);
  return b;
}

/* ---- commands ---------------------------------------------------------------- */

TEST(run_echo) {
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(&r, SB, "echo 'Hello from sandbox!'", NULL), ASB_OK);
  size_t n;
  CHECK_STR(asb_command_result_stdout(r, &n), "Hello from sandbox!\n");
  CHECK_INT(n, 20);
  CHECK_INT(asb_command_result_exit_code(r), 0);
  CHECK(asb_command_result_error(r) == NULL);
  asb_command_result_free(r);
}

TEST(non_zero_exit_is_command_exit_with_result) {
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, SB, "echo oops >&2; exit 3", NULL), ASB_ECOMMANDEXIT);
  REQUIRE(r != NULL);
  CHECK_INT(asb_command_result_exit_code(r), 3);
  CHECK_STR(asb_command_result_stderr(r, NULL), "oops\n");
  CHECK_STR(asb_command_result_stdout(r, NULL), "");
  CHECK_INT(asb_error_last()->code, ASB_ECOMMANDEXIT);
  asb_command_result_free(r);
}

TEST(envs_cwd_and_login_shell) {
  const char *envs[] = {"FOO=bar baz", "EMPTY=", NULL};
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.envs = envs;
  o.cwd = DIR_;
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(&r, SB, "echo \"$FOO|$EMPTY|$(pwd)\"", &o), ASB_OK);
  char want[256];
  snprintf(want, sizeof want, "bar baz||%s\n", DIR_);
  CHECK_STR(asb_command_result_stdout(r, NULL), want);
  asb_command_result_free(r);
  /* A cwd that does not exist is a clear invalid argument. */
  o.cwd = "/definitely/not/here";
  CHECK_RC(asb_commands_run(&r, SB, "true", &o), ASB_EINVAL);
  const char *bad[] = {"NOEQUALS", NULL};
  asb_command_options o2 = ASB_COMMAND_OPTIONS_INIT;
  o2.envs = bad;
  CHECK_RC(asb_commands_run(&r, SB, "true", &o2), ASB_EINVAL);
}

static int count_bytes(const char *d, size_t n, void *ud) {
  (void)d;
  *(long long *)ud += (long long)n;
  return 0;
}

TEST(large_output_streams_in_order) {
  long long got = 0;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = count_bytes;
  o.userdata = &got;
  o.discard_output = 1;
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(&r, SB, "head -c 50000000 /dev/zero", &o), ASB_OK);
  CHECK_INT(got, 50000000);
  size_t kept = 1;
  asb_command_result_stdout(r, &kept);
  CHECK_INT(kept, 0);
  asb_command_result_free(r);
  /* The last bytes arrive before the end event: a trailing marker right
   * before exit is always seen. */
  for (int i = 0; i < 20; i++) {
    REQUIRE_RC(asb_commands_run(&r, SB, "seq 1 2000; printf END", NULL), ASB_OK);
    size_t n;
    const char *out = asb_command_result_stdout(r, &n);
    CHECK(n > 3 && memcmp(out + n - 3, "END", 3) == 0);
    asb_command_result_free(r);
  }
}

TEST(binary_output) {
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(&r, SB, "printf '\\000\\001\\377a\\000'", NULL), ASB_OK);
  size_t n;
  const char *out = asb_command_result_stdout(r, &n);
  CHECK_MEM(out, n, "\0\1\377a\0", 5);
  asb_command_result_free(r);
}

TEST(stdin_send_and_close) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.stdin_enabled = 1;
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, SB, "cat; echo closed", &o), ASB_OK);
  CHECK(asb_process_pid(p) > 0);
  CHECK_RC(asb_process_send_stdin(p, "hello\n", 6, NULL), ASB_OK);
  CHECK_RC(asb_commands_send_stdin(SB, asb_process_pid(p), "world\n", 6, NULL), ASB_OK);
  CHECK_RC(asb_process_close_stdin(p, NULL), ASB_OK);
  asb_command_result *r = NULL;
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_OK);
  CHECK_STR(asb_command_result_stdout(r, NULL), "hello\nworld\nclosed\n");
  asb_command_result_free(r);
  asb_process_free(p);
}

TEST(background_disconnect_reconnect_and_list) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.tag = "bg-test";
  o.stdin_enabled = 1; /* it runs until told to finish, however slow we are */
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, SB, "read go; echo done", &o), ASB_OK);
  unsigned pid = asb_process_pid(p);
  asb_process_free(p); /* disconnects; the command keeps running */

  asb_process_list *l = NULL;
  REQUIRE_RC(asb_commands_list(&l, SB, NULL), ASB_OK);
  int found = 0;
  for (size_t i = 0; i < asb_process_list_count(l); i++) {
    const asb_process_info *pi = asb_process_list_get(l, i);
    if (asb_process_info_pid(pi) == pid) {
      found = 1;
      CHECK_STR(asb_process_info_tag(pi), "bg-test");
      CHECK_STR(asb_process_info_cmd(pi), "/bin/bash");
      const char *const *args = asb_process_info_args(pi);
      REQUIRE(args && args[0] && args[1] && args[2]);
      CHECK_STR(args[2], "read go; echo done");
    }
  }
  CHECK(found);
  asb_process_list_free(l);

  REQUIRE_RC(asb_commands_connect(&p, SB, pid, NULL), ASB_OK);
  CHECK_RC(asb_commands_send_stdin(SB, pid, "go\n", 3, NULL), ASB_OK);
  asb_command_result *r = NULL;
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_OK);
  CHECK_STR(asb_command_result_stdout(r, NULL), "done\n");
  asb_command_result_free(r);
  asb_process_free(p);
  /* As E2B's envd: an ended process is kept a while, so a late connect
   * still learns how it ended. */
  REQUIRE_RC(asb_commands_connect(&p, SB, pid, NULL), ASB_OK);
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_OK);
  asb_command_result_free(r);
  asb_process_free(p);
  CHECK_RC(asb_commands_connect(&p, SB, 999999, NULL), ASB_ENOTFOUND);
}

TEST(two_clients_watch_one_process) {
  asb_process *a = NULL, *b = NULL;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.stdin_enabled = 1; /* prints only once both are watching */
  REQUIRE_RC(asb_commands_start(&a, SB, "read go; echo shared", &o), ASB_OK);
  REQUIRE_RC(asb_commands_connect(&b, SB, asb_process_pid(a), NULL), ASB_OK);
  CHECK_RC(asb_process_send_stdin(a, "go\n", 3, NULL), ASB_OK);
  asb_command_result *ra = NULL, *rb = NULL;
  CHECK_RC(asb_process_wait(&ra, a, NULL), ASB_OK);
  CHECK_RC(asb_process_wait(&rb, b, NULL), ASB_OK);
  CHECK_STR(asb_command_result_stdout(ra, NULL), "shared\n");
  CHECK_STR(asb_command_result_stdout(rb, NULL), "shared\n");
  asb_command_result_free(ra);
  asb_command_result_free(rb);
  asb_process_free(a);
  asb_process_free(b);
}

/* Sets *(atomic_int *)ud once output arrives. */
static int flag_output(const char *data, size_t len, void *ud) {
  (void)data;
  if (len) atomic_store((atomic_int *)ud, 1);
  return 0;
}

TEST(kill_and_signals) {
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, SB, "sleep 30", NULL), ASB_OK);
  CHECK_RC(asb_process_kill(p, NULL), ASB_OK);
  asb_command_result *r = NULL;
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_ECOMMANDEXIT);
  REQUIRE(r != NULL);
  CHECK(asb_command_result_exit_code(r) != 0);
  asb_command_result_free(r);
  asb_process_free(p);

  /* signal only once the trap is set (it says so), not after a while */
  atomic_int trapped = 0;
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = flag_output;
  o.userdata = &trapped;
  REQUIRE(asb_commands_start(&p, SB, "trap 'echo term; exit 7' TERM; echo trapped; sleep 30 & wait",
                             &o) == ASB_OK);
  /* output reaches the callback while we wait: wait in short slices */
  asb_call_options slice = ASB_CALL_OPTIONS_INIT;
  slice.timeout_ms = 100;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS;
       !atomic_load(&trapped) && asbt_now_ms() < end;)
    if (asb_process_wait(NULL, p, &slice) != ASB_ETIMEOUT) break;
  CHECK(atomic_load(&trapped));
  CHECK_RC(asb_commands_signal(SB, asb_process_pid(p), ASB_SIGNAL_TERM, NULL), ASB_OK);
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_ECOMMANDEXIT);
  if (r) {
    CHECK_INT(asb_command_result_exit_code(r), 7);
    CHECK_STR(asb_command_result_stdout(r, NULL), "trapped\nterm\n");
  }
  asb_command_result_free(r);
  asb_process_free(p);

  CHECK_RC(asb_commands_kill(SB, 999999, NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_commands_signal(SB, 1, 3, NULL), ASB_EINVAL);
}

TEST(command_timeout_is_enforced) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = 300;
  asb_command_result *r = NULL;
  uint64_t t0 = now_ms();
  CHECK_RC(asb_commands_run(&r, SB, "sleep 600", &o), ASB_ETIMEOUT);
  CHECK(now_ms() - t0 < 120000); /* the timeout, not the command's end */
  asb_command_result_free(r);
}

typedef struct later {
  asb_cancel *c;
  int ms;
} later;

static void *cancel_after(void *arg) {
  later *l = arg;
  usleep((useconds_t)l->ms * 1000);
  asb_cancel_request(l->c);
  return NULL;
}

TEST(cancel_a_running_call) {
  asb_cancel *c;
  REQUIRE_RC(asb_cancel_new(&c), ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.cancel = c;
  o.tag = "to-cancel";
  later l = {c, 200};
  pthread_t t;
  pthread_create(&t, NULL, cancel_after, &l);
  asb_command_result *r = NULL;
  uint64_t t0 = now_ms();
  CHECK_RC(asb_commands_run(&r, SB, "sleep 600", &o), ASB_ECANCELED);
  CHECK(now_ms() - t0 < 120000); /* the cancel, not the command's end */
  pthread_join(t, NULL);
  asb_cancel_free(c);
  /* Cancelling the call left the command running; clean it up. */
  asb_process_list *pl = NULL;
  REQUIRE_RC(asb_commands_list(&pl, SB, NULL), ASB_OK);
  for (size_t i = 0; i < asb_process_list_count(pl); i++) {
    const asb_process_info *pi = asb_process_list_get(pl, i);
    const char *tag = asb_process_info_tag(pi);
    if (tag && strcmp(tag, "to-cancel") == 0)
      CHECK_RC(asb_commands_kill(SB, asb_process_info_pid(pi), NULL), ASB_OK);
  }
  asb_process_list_free(pl);
}

/* How many processes carry tag (-1 on error). */
typedef struct small_buf {
  char data[4096];
  size_t len;
} small_buf;

static int tagged(const char *tag) {
  asb_process_list *pl = NULL;
  if (asb_commands_list(&pl, SB, NULL) != ASB_OK) return -1;
  int n = 0;
  for (size_t i = 0; i < asb_process_list_count(pl); i++) {
    const char *t = asb_process_info_tag(asb_process_list_get(pl, i));
    if (t && strcmp(t, tag) == 0) n++;
  }
  asb_process_list_free(pl);
  return n;
}

/* Wait (up to 30 s) until no process carries tag. */
static int gone(const char *tag) {
  for (int i = 0; i < 300; i++) {
    if (tagged(tag) == 0) return 1;
    usleep(100000); /* polling envd's process table */
  }
  return 0;
}

static int cancel_on_output(const char *d, size_t n, void *ud) {
  (void)d;
  (void)n;
  asb_cancel_request(ud);
  return 0;
}

/* Version 2 of asb_command_options: stdin_data, kill_on_cancel — what
 * bindings used to sequence themselves (start, write, close, wait, kill). */
TEST(stdin_data_and_kill_on_cancel) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  CHECK_INT(o.version, 2);
  o.stdin_data = "fed to stdin";
  o.stdin_len = 12;
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, SB, "cat; echo", &o), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "fed to stdin\n");
  asb_command_result_free(r);
  o.stdin_data = "\0\1\2";
  o.stdin_len = 3;
  CHECK_RC(asb_commands_run(&r, SB, "wc -c", &o), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "3\n");
  asb_command_result_free(r);
  o.stdin_len = 0; /* empty input: stdin is just closed */
  CHECK_RC(asb_commands_run(&r, SB, "wc -c", &o), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "0\n");
  asb_command_result_free(r);
  /* background: written before start returns */
  asb_process *p = NULL;
  o.stdin_data = "abc";
  o.stdin_len = 3;
  REQUIRE_RC(asb_commands_start(&p, SB, "cat", &o), ASB_OK);
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "abc");
  asb_command_result_free(r);
  asb_process_free(p);

  /* kill_on_cancel: the cancelled run's command is gone */
  asb_cancel *c;
  REQUIRE_RC(asb_cancel_new(&c), ASB_OK);
  asb_command_options k = ASB_COMMAND_OPTIONS_INIT;
  k.cancel = c;
  k.kill_on_cancel = 1;
  k.on_stdout = cancel_on_output;
  k.userdata = c;
  k.tag = "koc-run";
  CHECK_RC(asb_commands_run(&r, SB, "echo started; sleep 60", &k), ASB_ECANCELED);
  CHECK(gone("koc-run"));
  /* ...also when the cancel came before the command ran */
  k.tag = "koc-early";
  k.on_stdout = NULL;
  CHECK_RC(asb_commands_run(&r, SB, "sleep 60", &k), ASB_ECANCELED);
  CHECK(strstr(asb_error_last()->message, "was killed"));
  CHECK(gone("koc-early"));
  k.tag = "koc-start";
  CHECK_RC(asb_commands_start(&p, SB, "sleep 60", &k), ASB_ECANCELED);
  CHECK(gone("koc-start"));
  /* without it, the command runs on */
  asb_cancel_reset(c);
  k.kill_on_cancel = 0;
  k.on_stdout = cancel_on_output;
  k.tag = "no-koc";
  CHECK_RC(asb_commands_run(&r, SB, "echo started; sleep 60", &k), ASB_ECANCELED);
  CHECK_INT(tagged("no-koc"), 1);
  asb_process_list *pl = NULL;
  REQUIRE_RC(asb_commands_list(&pl, SB, NULL), ASB_OK);
  for (size_t i = 0; i < asb_process_list_count(pl); i++) {
    const asb_process_info *pi = asb_process_list_get(pl, i);
    if (asb_process_info_tag(pi) && !strcmp(asb_process_info_tag(pi), "no-koc"))
      CHECK_RC(asb_commands_kill(SB, asb_process_info_pid(pi), NULL), ASB_OK);
  }
  asb_process_list_free(pl);
  asb_cancel_free(c);

  /* A version-1 struct (a program built against the old header) is exactly
   * as long as version 1 was: init writes no byte beyond it (ASan checks),
   * and the run reads none of the version-2 fields. */
  size_t v1 = offsetof(asb_command_options, stdin_data);
  asb_command_options *old = malloc(v1);
  REQUIRE(old);
  REQUIRE_RC(asb_command_options_init(old, 1), ASB_OK);
  unsigned int ver = 0;
  memcpy(&ver, old, sizeof ver); /* (old->version: the compiler knows the block is short) */
  CHECK_INT(ver, 1);
  CHECK_RC(asb_commands_run(&r, SB, "echo v1", old), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "v1\n");
  asb_command_result_free(r);
  free(old);
  CHECK_RC(asb_command_options_init(&o, 3), ASB_EVERSION);
}

/* Pulling output (asb_process_read) and a file (asb_file_reader_read)
 * instead of callbacks: what an iterator or an event loop does. */
TEST(pull_output_and_file) {
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, SB, "echo out; echo err >&2; printf 'tail'", NULL), ASB_OK);
  small_buf out = {{0}, 0}, err = {{0}, 0};
  int kind = 0, rc;
  const char *d;
  size_t n;
  while ((rc = asb_process_read(&kind, &d, &n, p, NULL)) == 1) {
    small_buf *b = kind == ASB_OUTPUT_STDOUT ? &out : &err;
    CHECK(kind == ASB_OUTPUT_STDOUT || kind == ASB_OUTPUT_STDERR);
    if (b->len + n < sizeof b->data) memcpy(b->data + b->len, d, n), b->len += n;
  }
  CHECK_INT(rc, 0);
  CHECK_MEM(out.data, out.len, "out\ntail", 8);
  CHECK_MEM(err.data, err.len, "err\n", 4);
  CHECK_INT(asb_process_read(&kind, &d, &n, p, NULL), 0); /* ended stays ended */
  asb_command_result *r = NULL;
  CHECK_RC(asb_process_wait(&r, p, NULL), ASB_OK);
  if (r) CHECK_STR(asb_command_result_stdout(r, NULL), "out\ntail");
  asb_command_result_free(r);
  asb_process_free(p);

  /* a 3 MiB file, pulled */
  static char big[3 << 20];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("pulled"), big, sizeof big, NULL), ASB_OK);
  asb_file_reader *fr = NULL;
  REQUIRE_RC(asb_files_open_read(&fr, SB, path_in("pulled"), NULL), ASB_OK);
  size_t got = 0;
  int same = 1;
  while ((rc = asb_file_reader_read(&d, &n, fr, NULL)) == 1) {
    if (got + n > sizeof big || memcmp(big + got, d, n) != 0) same = 0;
    got += n;
  }
  CHECK_INT(rc, 0);
  CHECK_INT(got, sizeof big);
  CHECK(same);
  CHECK_INT(asb_file_reader_read(&d, &n, fr, NULL), 0);
  asb_file_reader_stop(fr);
  CHECK_RC(asb_file_reader_read(&d, &n, fr, NULL), ASB_ECANCELED);
  asb_file_reader_free(fr);
  CHECK_RC(asb_files_open_read(&fr, SB, path_in("no-such-file"), NULL), ASB_ENOTFOUND);
}

static int abort_cb(const char *d, size_t n, void *ud) {
  (void)d;
  (void)n;
  (void)ud;
  return 1;
}

TEST(callback_abort) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = abort_cb;
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, SB, "echo x; sleep 0.2", &o), ASB_EUSER);
}

typedef struct worker_arg {
  int ok;
} worker_arg;

static void *runner(void *arg) {
  worker_arg *w = arg;
  for (int i = 0; i < 25; i++) {
    asb_command_result *r = NULL;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "echo %d", i);
    if (asb_commands_run(&r, SB, cmd, NULL) == ASB_OK) {
      char want[32];
      snprintf(want, sizeof want, "%d\n", i);
      if (strcmp(asb_command_result_stdout(r, NULL), want) == 0) w->ok++;
    }
    asb_command_result_free(r);
  }
  return NULL;
}

TEST(concurrent_commands_on_one_client) {
  pthread_t t[8];
  worker_arg w[8];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, runner, &w[i]);
  int ok = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    ok += w[i].ok;
  }
  CHECK_INT(ok, 200);
}

/* ---- pty ----------------------------------------------------------------------- */

typedef struct ptyout {
  char buf[65536];
  size_t n;
} ptyout;

static int on_pty(const char *d, size_t n, void *ud) {
  ptyout *o = ud;
  if (o->n + n < sizeof o->buf) {
    memcpy(o->buf + o->n, d, n);
    o->n += n;
    o->buf[o->n] = 0;
  }
  return 0;
}

TEST(pty_session) {
  ptyout out;
  memset(&out, 0, sizeof out);
  asb_pty_options o = ASB_PTY_OPTIONS_INIT;
  o.cols = 100;
  o.rows = 30;
  o.on_data = on_pty;
  o.userdata = &out;
  o.cwd = "/";
  asb_process *p = NULL;
  REQUIRE_RC(asb_pty_create(&p, SB, &o), ASB_OK);
  unsigned pid = asb_process_pid(p);
  CHECK_RC(asb_pty_resize(SB, pid, 120, 40, NULL), ASB_OK);
  const char *cmd = "echo tty=$(tty | cut -c1-8) size=$(stty size) term=$TERM; exit\n";
  CHECK_RC(asb_pty_send_input(SB, pid, cmd, strlen(cmd), NULL), ASB_OK);
  asb_call_options call = ASB_CALL_OPTIONS_INIT;
  call.timeout_ms = 10000;
  int rc = asb_process_wait(NULL, p, &call);
  CHECK(rc == ASB_OK || rc == ASB_ECOMMANDEXIT);
  CHECK(strstr(out.buf, "tty=/dev/pts") != NULL);
  CHECK(strstr(out.buf, "size=40 120") != NULL);
  CHECK(strstr(out.buf, "term=xterm-256color") != NULL);
  asb_process_free(p);
  CHECK_RC(asb_pty_kill(SB, pid, NULL), ASB_ENOTFOUND);
}

/* ---- files --------------------------------------------------------------------- */

TEST(write_read_stat_list) {
  asb_entry *e = NULL;
  REQUIRE_RC(asb_files_write(&e, SB, path_in("a/b/hello.txt"), "content", 7, NULL), ASB_OK);
  REQUIRE(e != NULL);
  CHECK_STR(asb_entry_path(e), path_in("a/b/hello.txt"));
  CHECK_STR(asb_entry_name(e), "hello.txt");
  CHECK_INT(asb_entry_type(e), ASB_FILE_TYPE_FILE);
  asb_entry_free(e);

  char *data = NULL;
  size_t n = 0;
  REQUIRE_RC(asb_files_read(&data, &n, SB, path_in("a/b/hello.txt"), NULL), ASB_OK);
  CHECK_MEM(data, n, "content", 7);
  asb_free(data);

  REQUIRE_RC(asb_files_stat(&e, SB, path_in("a/b/hello.txt"), NULL), ASB_OK);
  CHECK_INT(asb_entry_size(e), 7);
  CHECK_INT(asb_entry_type(e), ASB_FILE_TYPE_FILE);
  CHECK_STR(asb_entry_owner(e), "user");
  CHECK_STR(asb_entry_permissions(e), "-rw-r--r--");
  CHECK(asb_entry_modified_at(e) > 1700000000);
  asb_entry_free(e);

  asb_entry_list *l = NULL;
  REQUIRE_RC(asb_files_list(&l, SB, path_in("a"), 0, NULL), ASB_OK);
  CHECK_INT(asb_entry_list_count(l), 1);
  CHECK_STR(asb_entry_name(asb_entry_list_get(l, 0)), "b");
  CHECK_INT(asb_entry_type(asb_entry_list_get(l, 0)), ASB_FILE_TYPE_DIR);
  asb_entry_list_free(l);
  REQUIRE_RC(asb_files_list(&l, SB, path_in("a"), 2, NULL), ASB_OK);
  CHECK_INT(asb_entry_list_count(l), 2);
  asb_entry_list_free(l);

  CHECK_INT(asb_files_exists(SB, path_in("a/b/hello.txt"), NULL), 1);
  CHECK_INT(asb_files_exists(SB, path_in("nope"), NULL), 0);
  CHECK_RC(asb_files_read(&data, &n, SB, path_in("nope"), NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_files_stat(&e, SB, path_in("nope"), NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_files_list(&l, SB, path_in("nope"), 1, NULL), ASB_ENOTFOUND);
}

TEST(rename_remove_make_dir) {
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("mv-src"), "x", 1, NULL), ASB_OK);
  asb_entry *e = NULL;
  REQUIRE_RC(asb_files_rename(&e, SB, path_in("mv-src"), path_in("mv-dst"), NULL), ASB_OK);
  CHECK_STR(asb_entry_path(e), path_in("mv-dst"));
  asb_entry_free(e);
  CHECK_INT(asb_files_exists(SB, path_in("mv-src"), NULL), 0);
  CHECK_RC(asb_files_remove(SB, path_in("mv-dst"), NULL), ASB_OK);
  /* As in E2B's envd, removing what is not there is not an error. */
  CHECK_RC(asb_files_remove(SB, path_in("mv-dst"), NULL), ASB_OK);
  CHECK_RC(asb_files_rename(NULL, SB, path_in("mv-src"), path_in("x"), NULL), ASB_ENOTFOUND);
  CHECK_INT(asb_files_make_dir(SB, path_in("d1/d2"), NULL), 1);
  CHECK_INT(asb_files_make_dir(SB, path_in("d1/d2"), NULL), 0);
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("d1/d2/f"), "y", 1, NULL), ASB_OK);
  CHECK_RC(asb_files_remove(SB, path_in("d1"), NULL), ASB_OK);
  CHECK_INT(asb_files_exists(SB, path_in("d1"), NULL), 0);
}

TEST(write_many_and_gzip) {
  asb_write_entry files[3] = {
      {path_in("m/one"), "1", 1}, {path_in("m/two"), "22", 2}, {path_in("m/empty"), "", 0}};
  asb_entry_list *l = NULL;
  REQUIRE_RC(asb_files_write_many(&l, SB, files, 3, NULL), ASB_OK);
  CHECK_INT(asb_entry_list_count(l), 3);
  asb_entry_list_free(l);
  char *d = NULL;
  size_t n = 0;
  REQUIRE_RC(asb_files_read(&d, &n, SB, path_in("m/two"), NULL), ASB_OK);
  CHECK_MEM(d, n, "22", 2);
  asb_free(d);

  /* gzip both ways, with compressible and binary content. */
  size_t big = 3u << 20;
  char *src = malloc(big);
  REQUIRE(src != NULL);
  for (size_t i = 0; i < big; i++) src[i] = (char)(i % 251 < 200 ? 'a' : i % 256);
  asb_files_options o = ASB_FILES_OPTIONS_INIT;
  o.gzip = 1;
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("gz.bin"), src, big, &o), ASB_OK);
  REQUIRE_RC(asb_files_read(&d, &n, SB, path_in("gz.bin"), &o), ASB_OK);
  CHECK_MEM(d, n, src, big);
  asb_free(d);
  REQUIRE_RC(asb_files_read(&d, &n, SB, path_in("gz.bin"), NULL), ASB_OK);
  CHECK_MEM(d, n, src, big);
  asb_free(d);
  free(src);
}

typedef struct gen {
  long long left, total;
} gen;

static long gen_read(char *buf, size_t cap, void *ud) {
  gen *g = ud;
  if (g->left <= 0) return 0;
  size_t n = cap;
  if ((long long)n > g->left) n = (size_t)g->left;
  for (size_t i = 0; i < n; i++) buf[i] = (char)((g->total - g->left + (long long)i) % 241);
  g->left -= (long long)n;
  return (long)n;
}

typedef struct check {
  long long off;
  int bad;
} check;

static int check_read(const char *d, size_t n, void *ud) {
  check *c = ud;
  for (size_t i = 0; i < n; i++)
    if (d[i] != (char)((c->off + (long long)i) % 241)) c->bad = 1;
  c->off += (long long)n;
  return 0;
}

TEST(streamed_write_and_read_of_256_mib) {
  long long size = 256LL << 20;
#if defined(__SANITIZE_THREAD__)
  /* The TSan tree runs this test for its threads, not its volume: 256 MiB
   * through the instrumented client takes minutes on a loaded machine. */
  size = 16LL << 20;
#endif
  for (int sized = 0; sized < 2; sized++) {
    gen g = {size, size};
    REQUIRE(asb_files_write_stream(NULL, SB, path_in("big.bin"), gen_read, &g, sized ? size : -1,
                                   NULL) == ASB_OK);
    check c = {0, 0};
    REQUIRE_RC(asb_files_read_stream(SB, path_in("big.bin"), NULL, check_read, &c), ASB_OK);
    CHECK_INT(c.off, size);
    CHECK_INT(c.bad, 0);
  }
  /* A source that lies about its size is caught before anything lands. */
  gen g = {10, 10};
  CHECK_INT(asb_files_write_stream(NULL, SB, path_in("short.bin"), gen_read, &g, 100, NULL),
            ASB_EINVAL);
  remove(path_in("big.bin"));
}

typedef struct events {
  int create, write, remove;
  char names[1024];
} events;

static int on_event(asb_fs_event_type type, const char *name, const asb_entry *e, void *ud) {
  (void)e;
  events *ev = ud;
  if (type == ASB_FS_EVENT_CREATE) ev->create++;
  if (type == ASB_FS_EVENT_WRITE) ev->write++;
  if (type == ASB_FS_EVENT_REMOVE) ev->remove++;
  if (strlen(ev->names) + strlen(name) + 2 < sizeof ev->names) {
    strcat(ev->names, name);
    strcat(ev->names, ",");
  }
  return 0;
}

TEST(watch_dir_recursive) {
  REQUIRE(asb_files_make_dir(SB, path_in("w"), NULL) >= 0);
  events ev;
  memset(&ev, 0, sizeof ev);
  asb_watch_options o = ASB_WATCH_OPTIONS_INIT;
  o.recursive = 1;
  o.on_event = on_event;
  o.userdata = &ev;
  asb_watch *w = NULL;
  REQUIRE_RC(asb_files_watch_dir(&w, SB, path_in("w"), &o), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("w/f1"), "a", 1, NULL), ASB_OK);
  /* a file made right after its directory, before envd could watch it */
  REQUIRE(asb_files_make_dir(SB, path_in("w/sub"), NULL) == 1);
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("w/sub/f2"), "b", 1, NULL), ASB_OK);
  /* a tree made elsewhere and moved in: its contents never had a watch */
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/t/in && echo x > %s/t/in/deep && mv %s/t %s/w/moved", DIR_,
           DIR_, DIR_, DIR_);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, SB, cmd, NULL), ASB_OK);
  asb_command_result_free(r);
  REQUIRE_RC(asb_files_remove(SB, path_in("w/f1"), NULL), ASB_OK);
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS;
       !(ev.remove && strstr(ev.names, "sub/f2") && strstr(ev.names, "moved/in/deep")) &&
       asbt_now_ms() < end;)
    CHECK(asb_watch_wait(w, 100) >= 0);
  CHECK(ev.create >= 5);
  CHECK(ev.remove >= 1);
  CHECK(strstr(ev.names, "f1,") != NULL);
  CHECK(strstr(ev.names, "sub/f2,") != NULL);
  CHECK(strstr(ev.names, "moved,") != NULL);
  CHECK(strstr(ev.names, "moved/in,") != NULL);
  CHECK(strstr(ev.names, "moved/in/deep,") != NULL);
  asb_watch_free(w);
  CHECK_RC(asb_files_watch_dir(&w, SB, path_in("not-there"), &o), ASB_ENOTFOUND);
}

/* A polling watch (E2B's sync watcher): each poll holds every change made
 * before it, also the first one in a directory made just before (a
 * recursive watch's new directory), with no waiting; a poll takes only
 * what is new; a streaming watch has no poll. */
TEST(watch_polling_sees_every_change_made_before_the_poll) {
  REQUIRE(asb_files_make_dir(SB, path_in("pw"), NULL) >= 0);
  events ev;
  memset(&ev, 0, sizeof ev);
  asb_watch_options o = ASB_WATCH_OPTIONS_INIT;
  o.recursive = 1;
  o.polling = 1;
  o.on_event = on_event;
  o.userdata = &ev;
  asb_watch *w = NULL;
  REQUIRE_RC(asb_files_watch_dir(&w, SB, path_in("pw"), &o), ASB_OK);
  CHECK_INT(asb_watch_poll(w, NULL), 0);
  for (int i = 0; i < 20; i++) {
    char rel[64], want[80];
    snprintf(rel, sizeof rel, "pw/f%d", i);
    REQUIRE_RC(asb_files_write(NULL, SB, path_in(rel), "a", 1, NULL), ASB_OK);
    memset(&ev, 0, sizeof ev);
    CHECK(asb_watch_poll(w, NULL) >= 2);
    snprintf(want, sizeof want, "f%d,", i);
    CHECK(ev.create >= 1 && ev.write >= 1);
    CHECK(strstr(ev.names, want) != NULL);
  }
  /* a directory and a file in it, by a command that has ended */
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "mkdir %s/pw/sub && echo x > %s/pw/sub/g && rm %s/pw/f0", DIR_, DIR_,
           DIR_);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, SB, cmd, NULL), ASB_OK);
  asb_command_result_free(r);
  memset(&ev, 0, sizeof ev);
  CHECK(asb_watch_poll(w, NULL) >= 3);
  CHECK(strstr(ev.names, "sub,") != NULL);
  CHECK(strstr(ev.names, "sub/g,") != NULL);
  CHECK_INT(ev.remove, 1);
  CHECK_INT(asb_watch_poll(w, NULL), 0); /* nothing new */
  /* a tree of 3000 files moved in: envd scans it as it appears (its files
   * had no watch), and the poll right after has every one */
  snprintf(cmd, sizeof cmd,
           "mkdir %s/big && cd %s/big && seq 3000 | xargs touch && mv %s/big %s/pw/", DIR_, DIR_,
           DIR_, DIR_);
  CHECK_RC(asb_commands_run(&r, SB, cmd, NULL), ASB_OK);
  asb_command_result_free(r);
  memset(&ev, 0, sizeof ev);
  CHECK(asb_watch_poll(w, NULL) >= 3001);
  CHECK(ev.create >= 3001);
  /* wait on a polling watch polls */
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("pw/late"), "b", 1, NULL), ASB_OK);
  memset(&ev, 0, sizeof ev);
  CHECK(asb_watch_wait(w, ASBT_DEADLINE_MS) >= 1);
  CHECK(strstr(ev.names, "late,") != NULL);
  asb_watch_free(w);
  /* a streaming watch has no poll */
  o.polling = 0;
  REQUIRE_RC(asb_files_watch_dir(&w, SB, path_in("pw"), &o), ASB_OK);
  CHECK_RC(asb_watch_poll(w, NULL), ASB_EINVAL);
  asb_watch_free(w);
  o.polling = 1;
  CHECK_RC(asb_files_watch_dir(&w, SB, path_in("not-there"), &o), ASB_ENOTFOUND);
}

/* ---- auth, users, signed URLs ---------------------------------------------------- */

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  size_t len = s * n;
  char *buf = ud;
  size_t have = strlen(buf);
  if (have + len < 256) {
    memcpy(buf + have, p, len);
    buf[have + len] = 0;
  }
  return len;
}

static long http_status(const char *url, const char *post, char *body) {
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
  struct curl_slist *hl = NULL;
  if (post) {
    hl = curl_slist_append(hl, "Content-Type: application/octet-stream");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
  }
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  curl_slist_free_all(hl);
  curl_easy_cleanup(h);
  return st;
}

TEST(access_token_and_signed_urls) {
  envd_fixture f;
  const char *args[] = {"--access-token", "s3cret-token", NULL};
  REQUIRE(envd_start(&f, args) == 0);
  asb_client *c = NULL, *c2 = NULL;
  asb_sandbox *good = NULL, *bad = NULL;
  REQUIRE(envd_connect(&f, "s3cret-token", &c, &good) == 0);
  REQUIRE(envd_connect(&f, NULL, &c2, &bad) == 0);
  asb_command_result *r = NULL;
  CHECK_RC(asb_commands_run(&r, bad, "touch /tmp/asb-should-not-exist", NULL), ASB_EAUTH);
  CHECK_INT(asb_error_last()->http_status, 401);
  struct stat st;
  CHECK(stat("/tmp/asb-should-not-exist", &st) != 0);
  CHECK_RC(asb_files_write(NULL, bad, path_in("tok"), "x", 1, NULL), ASB_EAUTH);
  REQUIRE_RC(asb_commands_run(&r, good, "echo ok", NULL), ASB_OK);
  asb_command_result_free(r);

  /* Signed URLs work without the token; tampered or expired ones do not. */
  REQUIRE_RC(asb_files_write(NULL, good, path_in("signed.txt"), "signed!", 7, NULL), ASB_OK);
  char *url = NULL;
  REQUIRE_RC(asb_files_download_url(&url, good, path_in("signed.txt"), NULL, 60), ASB_OK);
  /* The public URL names the sandbox's host; reach envd through the fixture. */
  char *q = strstr(url, "/files?");
  REQUIRE(q != NULL);
  char local[1024], body[256] = "";
  snprintf(local, sizeof local, "%s%s", f.url, q);
  CHECK_INT(http_status(local, NULL, body), 200);
  CHECK_STR(body, "signed!");
  char *sig = strstr(local, "signature=v1_");
  REQUIRE(sig != NULL);
  sig[14] = sig[14] == 'A' ? 'B' : 'A';
  body[0] = 0;
  CHECK_INT(http_status(local, NULL, body), 401);
  asb_free(url);
  REQUIRE_RC(asb_files_upload_url(&url, good, path_in("up.txt"), NULL, 0), ASB_OK);
  q = strstr(url, "/files?");
  snprintf(local, sizeof local, "%s%s", f.url, q);
  body[0] = 0;
  CHECK_INT(http_status(local, "uploaded", body), 200);
  asb_free(url);
  char *d = NULL;
  size_t n = 0;
  REQUIRE_RC(asb_files_read(&d, &n, good, path_in("up.txt"), NULL), ASB_OK);
  CHECK_MEM(d, n, "uploaded", 8);
  asb_free(d);

  asb_sandbox_free(good);
  asb_sandbox_free(bad);
  asb_client_free(c);
  asb_client_free(c2);
  envd_stop(&f);
}

TEST(user_permissions_apply) {
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("private/secret"), "top", 3, NULL), ASB_OK);
  chmod(path_in("private"), 0700);
  chmod(path_in("private/secret"), 0600);
  asb_files_options o = ASB_FILES_OPTIONS_INIT;
  o.user = "nobody";
  char *d = NULL;
  size_t n;
  int rc = asb_files_read(&d, &n, SB, path_in("private/secret"), &o);
  CHECK(rc == ASB_EPERM || rc == ASB_EAUTH || rc == ASB_EINVAL);
  /* writes are E2B's: as root, what they create given to the user, in a
   * root-owned directory too (docs/envd.md, Users and credentials) */
  mkdir(path_in("rootonly"), 0755);
  REQUIRE_RC(asb_files_write(NULL, SB, path_in("rootonly/new/by-nobody"), "x", 1, &o), ASB_OK);
  struct stat st;
  struct passwd *nb = getpwnam("nobody");
  REQUIRE(nb != NULL);
  REQUIRE(stat(path_in("rootonly/new/by-nobody"), &st) == 0);
  CHECK_INT(st.st_uid, nb->pw_uid);
  REQUIRE(stat(path_in("rootonly/new"), &st) == 0);
  CHECK_INT(st.st_uid, nb->pw_uid);
  REQUIRE(stat(path_in("rootonly"), &st) == 0);
  CHECK_INT(st.st_uid, 0);
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.user = "nobody";
  co.cwd = "/tmp";
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_commands_run(&r, SB, "id -un", &co), ASB_OK);
  CHECK_STR(asb_command_result_stdout(r, NULL), "nobody\n");
  asb_command_result_free(r);
  co.user = "no-such-user-here";
  CHECK(asb_commands_run(&r, SB, "true", &co) != ASB_OK);
}

int main(void) {
  snprintf(DIR_, sizeof DIR_, "/tmp/asb-e2e-%d", (int)getpid());
  mkdir(DIR_, 0755);
  chmod(DIR_, 0755);
  struct passwd *pw = getpwnam("user");
  if (!pw) {
    fprintf(stderr,
            "this test needs a Unix account named 'user' (scripts/test.sh "
            "creates it)\n");
    return 1;
  }
  if (chown(DIR_, pw->pw_uid, pw->pw_gid) != 0) return 1;
  if (envd_start(&F, NULL) != 0 || envd_connect(&F, NULL, &C, &SB) != 0) {
    fprintf(stderr, "cannot start envd (%s)\n", ASB_ENVD_BIN);
    return 1;
  }
  RUN(run_echo);
  RUN(non_zero_exit_is_command_exit_with_result);
  RUN(envs_cwd_and_login_shell);
  RUN(large_output_streams_in_order);
  RUN(binary_output);
  RUN(stdin_send_and_close);
  RUN(background_disconnect_reconnect_and_list);
  RUN(two_clients_watch_one_process);
  RUN(kill_and_signals);
  RUN(command_timeout_is_enforced);
  RUN(cancel_a_running_call);
  RUN(stdin_data_and_kill_on_cancel);
  RUN(pull_output_and_file);
  RUN(callback_abort);
  RUN(concurrent_commands_on_one_client);
  RUN(pty_session);
  RUN(write_read_stat_list);
  RUN(rename_remove_make_dir);
  RUN(write_many_and_gzip);
  RUN(streamed_write_and_read_of_256_mib);
  RUN(watch_dir_recursive);
  RUN(watch_polling_sees_every_change_made_before_the_poll);
  RUN(access_token_and_signed_urls);
  RUN(user_permissions_apply);
  asb_sandbox_free(SB);
  asb_client_free(C);
  envd_stop(&F);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
  if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", DIR_);
  TEST_MAIN_END();
}
