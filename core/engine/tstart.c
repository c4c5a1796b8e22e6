/* A built template's start command and ready check, run while a sandbox is
 * created: the command starts in the background (as its user, with the
 * template's and the sandbox's environment and ASB_SERVER_TOKEN_SHA256 =
 * the SHA-256 of the sandbox's envd access token; output appended to
 * /var/log/asb/start.log
 * inside), then the ready check (a port accepting connections, or a
 * command exiting 0) is retried until it passes or its timeout ends. A
 * ready check without a start command is retried so too.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/pjson.h"
#include "sbxexec.h"
#include "tstart.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

#define CHECK_CMD_MAX_MS 10000
#define TAIL_BYTES 1500

static const char START_PREFIX[] =
    "log=/var/log/asb/start.log; [ -w /var/log/asb ] || log=/tmp/asb-start.log; "
    "exec >>\"$log\" 2>&1 </dev/null; ";

/* The last bytes the start command wrote (read inside the sandbox). */
static void start_output(sbx *s, char *out, size_t len) {
  out[0] = '\0';
  const char *argv[] = {"/bin/sh", "-c",
                        "tail -c "
                        "1500"
                        " /var/log/asb/start.log 2>/dev/null || "
                        "tail -c 1500 /tmp/asb-start.log 2>/dev/null",
                        NULL};
  char **envp = sbx_env(0, NULL, NULL, NULL, NULL);
  sbx_run_opts o = {argv, (const char *const *)envp, 0, "/", NULL, 0, 5000, TAIL_BYTES + 64, 1, 1};
  sbx_run_result r;
  if (envp && sbx_run(s->iso, &o, &r) == 0) {
    snprintf(out, len, "%s", r.out.data ? r.out.data : "");
    sbx_run_result_free(&r);
  }
  sbx_env_free(envp);
}

/* Starts a shell command: bash -l -c if the template has bash, else sh -c
 * (-ENOENT from the first means no bash there, or no cwd). */
static int exec_shell(sbx *s, const char *cmd, int uid, const char *cwd, char **envp,
                      asbe_proc **p) {
  static const char *const shells[][2] = {{"/bin/bash", "-lc"}, {"/bin/sh", "-c"}};
  int rc = -ENOENT;
  for (int i = 0; i < 2 && rc == -ENOENT; i++) {
    const char *argv[] = {shells[i][0], shells[i][1], cmd, NULL};
    asbe_exec_opts o;
    memset(&o, 0, sizeof o);
    o.argv = argv;
    o.envp = (const char *const *)envp;
    o.uid = (uid_t)uid;
    o.gid = (gid_t)uid;
    o.gid_set = 1;
    o.cwd = cwd;
    o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
    rc = asbe_sandbox_exec(s->iso, &o, p);
  }
  return rc;
}

/* A template's ready check as it runs: a port accepting connections or a
 * command exiting 0 (as uid in cwd with envp), retried until deadline. */
typedef struct {
  const cJSON *port_j, *cmd_j;
  int timeout_s, interval, uid;
  const char *cwd;
  char **envp;
  int64_t deadline;
  char check[300];             /* what it checks, for messages */
  char last[TAIL_BYTES + 200]; /* why its last run did not pass ("" if none) */
} ready_check;

static void ready_init(ready_check *ck, const cJSON *ready, int64_t t0, int uid, const char *cwd,
                       char **envp) {
  ck->port_j = cJSON_GetObjectItemCaseSensitive(ready, "port");
  ck->cmd_j = cJSON_GetObjectItemCaseSensitive(ready, "cmd");
  ck->timeout_s = cJSON_GetObjectItemCaseSensitive(ready, "timeout")->valueint;
  ck->interval = cJSON_GetObjectItemCaseSensitive(ready, "interval")->valueint;
  ck->uid = uid;
  ck->cwd = cwd;
  ck->envp = envp;
  ck->deadline = t0 + (int64_t)ck->timeout_s * 1000;
  ck->last[0] = '\0';
  if (cJSON_IsNumber(ck->port_j))
    snprintf(ck->check, sizeof ck->check, "port %d", ck->port_j->valueint);
  else
    snprintf(ck->check, sizeof ck->check, "command '%.200s'", ck->cmd_j->valuestring);
}

/* Runs the check once: 1 if it passed, else 0 with why in ck->last. */
static int ready_try(ready_check *ck, sbx *s) {
  if (cJSON_IsNumber(ck->port_j)) {
    int fd = asbe_sandbox_connect_tcp(s->iso, (uint16_t)ck->port_j->valueint);
    if (fd >= 0) {
      close(fd);
      return 1;
    }
    snprintf(ck->last, sizeof ck->last, "connecting to port %d: %s", ck->port_j->valueint,
             strerror(-fd));
    return 0;
  }
  int ok = 0;
  int64_t left = ck->deadline - asbi_unix_ms();
  const char *argv[] = {"/bin/sh", "-c", ck->cmd_j->valuestring, NULL};
  sbx_run_opts o = {argv,
                    (const char *const *)ck->envp,
                    ck->uid,
                    ck->cwd,
                    NULL,
                    0,
                    (int)(left < CHECK_CMD_MAX_MS ? (left > 100 ? left : 100) : CHECK_CMD_MAX_MS),
                    TAIL_BYTES,
                    1,
                    1};
  sbx_run_result r;
  if (sbx_run(s->iso, &o, &r) == 0) {
    if (!r.timed_out && r.exit_code == 0)
      ok = 1;
    else if (r.timed_out)
      snprintf(ck->last, sizeof ck->last, "timed out; output: %s", r.out.data);
    else
      snprintf(ck->last, sizeof ck->last, "exit code %d; output: %s", r.exit_code, r.out.data);
    sbx_run_result_free(&r);
  } else {
    snprintf(ck->last, sizeof ck->last, "cannot run it: %s", asbe_errmsg());
  }
  return ok;
}

/* Waits before the check's next run (attempt: the runs so far - 1),
 * backing off from 2 ms up to its interval: most servers are up within
 * milliseconds, and a slow one is not polled more than asked. -1 (no
 * wait) if that would pass its deadline. */
static int ready_nap(const ready_check *ck, int attempt) {
  int nap = 2 << (attempt < 16 ? attempt : 16);
  if (nap > ck->interval) nap = ck->interval;
  if (asbi_unix_ms() + nap >= ck->deadline) return -1;
  usleep((useconds_t)nap * 1000);
  return 0;
}

/* A ready check without a start command (E2B's setReadyCmd alone): E2B
 * loops it until it exits 0 before the template's snapshot, and a check
 * that never passes fails the build. Nothing here is snapshotted running,
 * so the sandbox's create is where it runs: as `user` in /home/user with
 * the template's and the sandbox's environment, retried with the same
 * back-off, create failing if it does not pass within its timeout. */
static int ready_alone(sbx *s, template_info *t, const cJSON *ready, char *err, size_t errlen) {
  int64_t t0 = asbi_unix_ms();
  char sid[64];
  snprintf(sid, sizeof sid, "ASB_SANDBOX_ID=%s", s->id);
  const char *extra[] = {sid, NULL};
  char **envp =
      sbx_env(1000, cJSON_GetObjectItemCaseSensitive(t->spec, "env"), s->env_vars, NULL, extra);
  if (!envp) {
    snprintf(err, errlen, "template %s: out of memory", t->alias);
    return -1;
  }
  ready_check rdy;
  ready_init(&rdy, ready, t0, 1000, "/home/user", envp);
  int ok = 0;
  for (int attempt = 0;; attempt++)
    if ((ok = ready_try(&rdy, s)) || ready_nap(&rdy, attempt)) break;
  sbx_env_free(envp);
  if (ok) {
    asbi_log("sandbox %s: ready (%s, no start command) after %lld ms", s->id, rdy.check,
             (long long)(asbi_unix_ms() - t0));
    return 0;
  }
  snprintf(err, errlen,
           "template %s: the ready check (%s) did not pass within %d s (no start command); "
           "last check: %s",
           t->alias, rdy.check, rdy.timeout_s, rdy.last[0] ? rdy.last : "none");
  return -1;
}

int tstart_run(engine *e, sbx *s, template_info *t, char *err, size_t errlen) {
  (void)e;
  const cJSON *start = cJSON_GetObjectItemCaseSensitive(t->spec, "start");
  const cJSON *ready = cJSON_GetObjectItemCaseSensitive(t->spec, "ready");
  if (!cJSON_IsObject(start))
    return cJSON_IsObject(ready) ? ready_alone(s, t, ready, err, errlen) : 0;
  const char *cmd = cJSON_GetObjectItemCaseSensitive(start, "cmd")->valuestring;
  const char *user = cJSON_GetObjectItemCaseSensitive(start, "user")->valuestring;
  const char *cwd = cJSON_GetObjectItemCaseSensitive(start, "cwd")->valuestring;
  int uid = !strcmp(user, "root") ? 0 : 1000;
  /* Not the token itself: the command runs as user (or root), and user
   * reads its processes' environment; with the envd token user would drive
   * envd as root. A server checks callers' tokens against the hash. */
  char tok[128], sid[64], hex[65];
  asbi_sha256_hex(s->token, strlen(s->token), hex);
  snprintf(tok, sizeof tok, "ASB_SERVER_TOKEN_SHA256=%s", hex);
  snprintf(sid, sizeof sid, "ASB_SANDBOX_ID=%s", s->id);
  const char *extra[] = {tok, sid, NULL};
  char **envp = sbx_env(uid, cJSON_GetObjectItemCaseSensitive(t->spec, "env"), s->env_vars,
                        cJSON_GetObjectItemCaseSensitive(start, "env"), extra);
  asbi_buf full = ASBI_BUF_INIT;
  asbi_buf_puts(&full, START_PREFIX);
  asbi_buf_puts(&full, cmd);
  asbe_proc *p = NULL;
  int64_t t0 = asbi_unix_ms();
  int rc = envp && full.data ? exec_shell(s, full.data, uid, cwd, envp, &p) : -ENOMEM;
  asbi_buf_free(&full);
  if (rc) {
    snprintf(err, errlen, "template %s: cannot run the start command '%.200s' as %s in %s: %s",
             t->alias, cmd, user, cwd, asbe_errmsg());
    sbx_env_free(envp);
    return -1;
  }
  if (!cJSON_IsObject(ready)) {
    asbi_log("sandbox %s: start command running", s->id);
    asbe_proc_free(p);
    sbx_env_free(envp);
    return 0;
  }
  ready_check rdy;
  ready_init(&rdy, ready, t0, uid, cwd, envp);
  /* The ready check decides, as in E2B (its ready command loops until it
   * passes, whatever became of the start command): a start command that
   * exits 0 (`echo hi`, a daemon that forks, one that writes the ready file
   * and ends) leaves the check running until it passes or times out. One
   * that exits non-zero failed to start: after one more check (its exit
   * may have raced a ready file it wrote first) create fails at once,
   * naming the exit code and its output, rather than at the timeout. */
  int ok = 0, died = 0, status = 0, exited = 0, failed = 0;
  int64_t exit_ms = 0;
  for (int attempt = 0;; attempt++) {
    ok = ready_try(&rdy, s);
    if (ok) break;
    if (failed) {
      died = 1; /* the check after a failed exit did not pass either */
      break;
    }
    if (!exited && asbe_proc_wait(p, 0, &status) == 0) {
      exited = 1;
      exit_ms = asbi_unix_ms() - t0;
      if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        failed = 1;
        continue; /* one more check, at once */
      }
      asbi_log(
          "sandbox %s: the start command exited (code 0) after %lld ms; waiting for the "
          "ready check (%s)",
          s->id, (long long)exit_ms, rdy.check);
    }
    if (ready_nap(&rdy, attempt)) break;
  }
  sbx_env_free(envp);
  if (ok) {
    asbi_log("sandbox %s: ready (%s) after %lld ms", s->id, rdy.check,
             (long long)(asbi_unix_ms() - t0));
    asbe_proc_free(p);
    return 0;
  }
  char out[TAIL_BYTES + 64];
  start_output(s, out, sizeof out);
  if (died) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    snprintf(err, errlen,
             "template %s: the start command '%.200s' exited (code %d) before the ready check "
             "(%s) passed; last check: %s; start command output: %s",
             t->alias, cmd, code, rdy.check, rdy.last[0] ? rdy.last : "none",
             out[0] ? out : "(none)");
  } else {
    char ended[96] = "";
    if (exited)
      snprintf(ended, sizeof ended, " (the start command exited with code 0 after %lld ms)",
               (long long)exit_ms);
    snprintf(err, errlen,
             "template %s: the ready check (%s) did not pass within %d s%s; last check: %s; "
             "start command output: %s",
             t->alias, rdy.check, rdy.timeout_s, ended, rdy.last[0] ? rdy.last : "none",
             out[0] ? out : "(none)");
  }
  if (!exited) asbe_proc_signal(p, SIGKILL);
  asbe_proc_free(p);
  return -1;
}
