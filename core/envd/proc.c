/* envd: the process service (process.Process): Start, which spawns a
 * process and registers it in the table and with the I/O thread, and the
 * streams of Start and Connect, which send a process's output and end as
 * they come. The service starts and stops here; the table is proc_tab.c, the
 * I/O thread proc_io.c, the unary methods and StreamInput proc_rpc.c.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"
#include "path.h"
#include "prestart.h"
#include "proc.h"
#include "proc_io.h"
#include "proc_tab.h"
#include "proto/pjson.h"
#include "spawn.h"
#include "state.h"
#include "util/base64.h"
#include "util/util.h"

#define EVENT_RAW_MAX (1u << 20) /* bytes of output coalesced in one event */

/* /dev/null for the stdin of processes started with stdin false: opened
 * once (the child dup2s it; an fd without a position to share). */
static int g_devnull = -1;

int envd_proc_init(void) {
  g_devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (g_devnull < 0) return -1;
  if (envd_pio_start() != 0) return -1;
  if (envd_pre_init() != 0) envd_log("pre-started shells off: %s", strerror(errno));
  return 0;
}

void envd_proc_shutdown(void) {
  envd_pre_shutdown();
  envd_ptab_lock();
  for (envd_proc *p = envd_ptab_live(); p; p = p->next) {
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
  }
  envd_ptab_unlock();
  envd_pio_stop();
  envd_ptab_clear();
  if (g_devnull >= 0) close(g_devnull);
  g_devnull = -1;
}

/* ---- streams (Start, Connect) ------------------------------------------ */

typedef struct pstream {
  envd_stream base;
  envd_proc *p;
  envd_sub *s;
  int sent_start;
  uint64_t deadline_ms;
  int ka_ms;
  uint64_t next_ka;
  int sock;
  /* ASB_TIMING (log.h), a Start's stream only: ns of the request's head and
   * body, before and after the spawn; 0 with the timers off */
  uint64_t t_head, t_body, t_spawn0, t_spawn1, t_start;
  int wakeups;
  int pre;  /* run by the pre-started shell */
  int hold; /* the next pre-started shell waits for this stream (prestart.h) */
  uint64_t hold_until_ms;
} pstream;

/* One line per Start with its phases, when the end event is encoded. */
static void log_phases(const pstream *ps, const envd_proc *p) {
  if (!ps->t_head) return;
  uint64_t now = envd_tns();
  uint64_t ex = p->t_exit ? p->t_exit : ps->t_spawn1;
  uint64_t en = p->t_ended ? p->t_ended : ex;
#define US(a, b) ((double)((int64_t)((b) - (a))) / 1e3)
  envd_timing_line(
      "Start pid=%d recv_us=%.1f prep_us=%.1f spawn_us=%.1f start_ev_us=%.1f "
      "run_us=%.1f drain_us=%.1f deliver_us=%.1f total_us=%.1f wakeups=%d pre=%d",
      p->pid, US(ps->t_head, ps->t_body), US(ps->t_body, ps->t_spawn0),
      US(ps->t_spawn0, ps->t_spawn1), US(ps->t_spawn1, ps->t_start), US(ps->t_spawn1, ex),
      US(ex, en), US(en, now), US(ps->t_head, now), ps->wakeups, ps->pre);
#undef US
}

static void put_event(asbi_buf *out, const char *json, size_t len) {
  envd_env_msg(out, json, len);
}

static void encode_data(asbi_buf *out, int kind, const char *data, size_t n) {
  static const char *names[] = {"", "stdout", "stderr", "pty"};
  asbi_buf j = ASBI_BUF_INIT;
  size_t b64 = asbi_b64_encoded_len(n);
  if (asbi_buf_reserve(&j, b64 + 64) != 0) return;
  j.len = (size_t)snprintf(j.data, 64, "{\"event\":{\"data\":{\"%s\":\"", names[kind]);
  j.len += asbi_b64_encode(data, n, j.data + j.len, 0, 1);
  asbi_buf_puts(&j, "\"}}}");
  put_event(out, j.data, j.len);
  asbi_buf_free(&j);
}

static void encode_chunks(asbi_buf *out, envd_chunk *c) {
  asbi_buf acc = ASBI_BUF_INIT;
  int kind = 0;
  for (; c; c = c->next) {
    if (acc.len && (c->kind != kind || acc.len + c->len > EVENT_RAW_MAX)) {
      encode_data(out, kind, acc.data, acc.len);
      asbi_buf_clear(&acc);
    }
    kind = c->kind;
    asbi_buf_append(&acc, c->data, c->len);
  }
  if (acc.len) encode_data(out, kind, acc.data, acc.len);
  asbi_buf_free(&acc);
}

static void encode_end(asbi_buf *out, const envd_proc *p) {
  cJSON *end = cJSON_CreateObject();
  asbi_pj_add_i32(end, "exitCode", p->exit_code);
  asbi_pj_add_bool(end, "exited", p->exited_normally);
  asbi_pj_add_str(end, "status", p->status);
  if (p->error[0]) cJSON_AddStringToObject(end, "error", p->error);
  cJSON *ev = cJSON_CreateObject();
  cJSON_AddItemToObject(ev, "end", end);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddItemToObject(root, "event", ev);
  char *s = asbi_pj_print(root);
  if (s) put_event(out, s, strlen(s));
  free(s);
  cJSON_Delete(root);
}

/* The next pre-started shell may start (prestart.h): this stream is done,
 * or its command runs longer than a short one. */
static void release_hold(pstream *ps) {
  if (!ps->hold) return;
  ps->hold = 0;
  envd_pre_release(ps->p->pid);
}

/* Start's streams hold the next pre-started shell back (envd_pre_want). */
static pid_t hold_for(pstream *ps, pid_t pid) {
  ps->hold = 1;
  ps->hold_until_ms = asbi_now_ms() + ENVD_PRE_HOLD_MS;
  return pid;
}

static int pstream_next(envd_stream *base, asbi_buf *out) {
  pstream *ps = (pstream *)base;
  envd_proc *p = ps->p;
  if (!ps->sent_start) {
    char j[96];
    int n = snprintf(j, sizeof j, "{\"event\":{\"start\":{\"pid\":%d}}}", p->pid);
    put_event(out, j, (size_t)n);
    ps->sent_start = 1;
    if (ps->t_head) ps->t_start = envd_tns();
    ps->next_ka = asbi_now_ms() + (uint64_t)ps->ka_ms;
    return 1;
  }
  for (;;) {
    uint64_t now = asbi_now_ms();
    if (ps->hold && now >= ps->hold_until_ms) release_hold(ps); /* also while output flows */
    if (ps->deadline_ms && now >= ps->deadline_ms) {
      envd_env_end(out, "deadline_exceeded", "context deadline exceeded");
      return 0;
    }
    envd_chunk *c = NULL;
    int of = 0, ended;
    pthread_mutex_lock(&p->lock);
    if (ps->s) {
      c = ps->s->head;
      ps->s->head = ps->s->tail = NULL;
      ps->s->queued = 0;
      of = ps->s->overflow;
      envd_pio_maybe_resume(p);
    }
    ended = p->ended;
    pthread_mutex_unlock(&p->lock);
    if (of) {
      envd_ptab_free_chunks(c);
      char m[200];
      snprintf(m, sizeof m,
               "stream reader stuck: more than %zu bytes of output waited "
               "%u s; the process keeps running (reattach with Connect)",
               g_envd.sub_buffer, g_envd.stall_ms / 1000);
      envd_env_end(out, "resource_exhausted", m);
      return 0;
    }
    if (c) {
      encode_chunks(out, c);
      envd_ptab_free_chunks(c);
      ps->next_ka = now + (uint64_t)ps->ka_ms;
      return 1;
    }
    if (ended) {
      if (ps->t_head) log_phases(ps, p);
      encode_end(out, p);
      envd_env_end(out, NULL, NULL);
      return 0;
    }
    uint64_t until = ps->next_ka;
    if (ps->deadline_ms && ps->deadline_ms < until) until = ps->deadline_ms;
    if (ps->hold && ps->hold_until_ms < until) until = ps->hold_until_ms;
    int to = until > now ? (int)(until - now) : 0;
    int rc = envd_wait(ps->s ? ps->s->wake : -1, ps->sock, to);
    if (rc < 0) return -1; /* client gone: the process keeps running */
    if (rc > 0 && ps->s) {
      ps->wakeups++;
      uint64_t v;
      if (read(ps->s->wake, &v, sizeof v) < 0) { /* nothing */
      }
    }
    now = asbi_now_ms();
    if (now >= ps->next_ka) {
      static const char ka[] = "{\"event\":{\"keepalive\":{}}}";
      put_event(out, ka, sizeof ka - 1);
      ps->next_ka = now + (uint64_t)ps->ka_ms;
      return 1;
    }
  }
}

static void pstream_destroy(envd_stream *base) {
  pstream *ps = (pstream *)base;
  release_hold(ps);
  if (ps->s) {
    pthread_mutex_lock(&ps->p->lock);
    for (envd_sub **pp = &ps->p->subs; *pp; pp = &(*pp)->next) {
      if (*pp == ps->s) {
        *pp = ps->s->next;
        break;
      }
    }
    envd_pio_maybe_resume(ps->p); /* a reader that leaves no longer holds it up */
    pthread_mutex_unlock(&ps->p->lock);
    envd_ptab_free_chunks(ps->s->head);
    close(ps->s->wake);
    free(ps->s);
  }
  envd_ptab_unref(ps->p);
  free(ps);
}

/* Subscribes a new stream to p (ref transferred to the stream). */
static pstream *pstream_new(envd_proc *p, const envd_call *c) {
  pstream *ps = calloc(1, sizeof *ps);
  envd_sub *s = calloc(1, sizeof *s);
  int wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!ps || !s || wfd < 0) {
    free(ps);
    free(s);
    if (wfd >= 0) close(wfd);
    return NULL;
  }
  s->wake = wfd;
  ps->base.next = pstream_next;
  ps->base.destroy = pstream_destroy;
  ps->p = p;
  ps->s = s;
  ps->sock = c->sock;
  ps->ka_ms = c->keepalive_s * 1000;
  if (c->timeout_ms) ps->deadline_ms = asbi_now_ms() + (uint64_t)c->timeout_ms;
  pthread_mutex_lock(&p->lock);
  s->next = p->subs;
  p->subs = s;
  pthread_mutex_unlock(&p->lock);
  return ps;
}

/* ---- Start ------------------------------------------------------------- */

static int find_exec(const char *cmd, const char *pathenv, char *out, size_t n) {
  if (strchr(cmd, '/')) {
    snprintf(out, n, "%s", cmd);
    return 0;
  }
  const char *p = pathenv ? pathenv : "/usr/local/bin:/usr/bin:/bin";
  while (*p) {
    const char *e = strchr(p, ':');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == 0)
      snprintf(out, n, "./%s", cmd);
    else
      snprintf(out, n, "%.*s/%s", (int)l, p, cmd);
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) return 0;
    if (!e) break;
    p = e + 1;
  }
  snprintf(out, n, "%s", cmd);
  return -1;
}

/* The read ends of fresh pipes and the pty master: their only status flag
 * is O_RDWR/O_RDONLY, so no F_GETFL first (a system call per fd saved). */
static int set_nonblock(int fd, int accmode) {
  return fcntl(fd, F_SETFL, accmode | O_NONBLOCK);
}

/* List reports the configuration as given. */
static cJSON *config_json(const char *cmd, const cJSON *args, const cJSON *envs, const char *cwd) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "cmd", cmd);
  if (cJSON_GetArraySize(args)) cJSON_AddItemToObject(c, "args", cJSON_Duplicate(args, 1));
  if (cJSON_GetArraySize(envs)) cJSON_AddItemToObject(c, "envs", cJSON_Duplicate(envs, 1));
  if (cwd) cJSON_AddStringToObject(c, "cwd", cwd);
  return c;
}

/* The Start of an eligible command (prestart.h) on the pre-started shell:
 * the stream, or NULL when there is none for this user, cwd and stdin mode
 * (the caller takes the fresh path; nothing was changed). */
static envd_stream *start_prestarted(const envd_call *c, const char *cmd, const cJSON *args,
                                     const char *cwd, const char *tag, const char *dir,
                                     const struct stat *st, int want_stdin, const char *pre_cmd) {
  envd_proc *p = envd_ptab_new(tag, 0); /* the ref: the table's */
  if (!p) return NULL;
  envd_ptab_ref(p); /* the stream's */
  pstream *ps = pstream_new(p, c);
  if (!ps) {
    envd_ptab_unref(p);
    envd_ptab_unref(p);
    return NULL;
  }
  p->config = config_json(cmd, args, NULL, cwd);
  p->oom_before = envd_ptab_oom_count();
  ps->t_head = c->t_head;
  ps->t_body = c->t_body;
  ps->t_spawn0 = envd_tns();
  envd_pre_proc pp;
  envd_ptab_lock();
  if (envd_pre_take(c->user, dir, st, want_stdin, &pp) != 0) {
    envd_ptab_unlock();
    ps->base.destroy(&ps->base);
    envd_ptab_unref(p);
    return NULL;
  }
  p->pid = pp.pid;
  p->fd_out = pp.fd_out;
  p->fd_err = pp.fd_err;
  p->fd_in = pp.fd_in;
  envd_ptab_insert(p);
  if (c->timeout_ms) p->deadline_ms = asbi_now_ms() + (uint64_t)c->timeout_ms;
  envd_pio_watch(p);
  int wake = p->deadline_ms && envd_pio_deadline_wakes(p->deadline_ms);
  envd_ptab_unlock();
  if (wake) envd_pio_wake();
  envd_pre_send(&pp, pre_cmd);
  ps->t_spawn1 = envd_tns();
  ps->pre = 1;
  envd_pre_want(c->user, dir, want_stdin, hold_for(ps, p->pid));
  return &ps->base;
}

envd_stream *envd_proc_start(const envd_call *c, const cJSON *req, envd_err *e) {
  const cJSON *pj = asbi_pj_field(req, "process");
  if (pj && !cJSON_IsObject(pj)) {
    envd_err_set(e, "invalid_argument", "process must be an object");
    return NULL;
  }
  const char *cmd = NULL, *cwd = NULL, *tag = NULL;
  if (asbi_pj_get_str(pj, "cmd", &cmd) != 0 || asbi_pj_get_str(pj, "cwd", &cwd) != 0 ||
      asbi_pj_get_str(req, "tag", &tag) != 0) {
    envd_err_set(e, "invalid_argument", "invalid process configuration");
    return NULL;
  }
  if (asbi_empty(cmd)) {
    envd_err_set(e, "invalid_argument", "process.cmd is required");
    return NULL;
  }
  const cJSON *args = asbi_pj_field(pj, "args");
  const cJSON *envs = asbi_pj_field(pj, "envs");
  const cJSON *pty = asbi_pj_field(req, "pty");
  const cJSON *stdinj = asbi_pj_field(req, "stdin");
  if ((args && !cJSON_IsArray(args)) || (envs && !cJSON_IsObject(envs)) ||
      (pty && !cJSON_IsObject(pty)) || (stdinj && !cJSON_IsBool(stdinj))) {
    envd_err_set(e, "invalid_argument", "invalid start request");
    return NULL;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, args) {
    if (!cJSON_IsString(it)) {
      envd_err_set(e, "invalid_argument", "process.args must be strings");
      return NULL;
    }
  }
  cJSON_ArrayForEach(it, envs) {
    if (!cJSON_IsString(it) || strchr(it->string, '=') || !it->string[0]) {
      envd_err_set(e, "invalid_argument", "invalid environment variable '%s'", it->string);
      return NULL;
    }
  }
  uint32_t cols = 0, rows = 0;
  if (pty) {
    const cJSON *size = asbi_pj_field(pty, "size");
    if (asbi_pj_get_u32(size, "cols", &cols) != 0 || asbi_pj_get_u32(size, "rows", &rows) != 0 ||
        cols > 65535 || rows > 65535) {
      envd_err_set(e, "invalid_argument", "invalid pty size");
      return NULL;
    }
  }
  int want_stdin = !stdinj || cJSON_IsTrue(stdinj);

  const envd_user *u = c->user;
  const char *perr = NULL;
  char *dir = envd_resolve_path(cwd ? cwd : "", u, &perr);
  if (!dir) {
    envd_err_set(e, "invalid_argument", "failed to expand path '%s' for user '%s': %s",
                 cwd ? cwd : "", u->name, perr);
    return NULL;
  }
  struct stat st;
  int st_ok = stat(dir, &st) == 0;
  if (!st_ok && errno == ENOENT) {
    envd_err_set(e, "invalid_argument", "cwd '%s' does not exist", dir);
    free(dir);
    return NULL;
  }

  const char *pre_cmd = st_ok ? envd_pre_eligible(cmd, args, envs, pty) : NULL;
  if (pre_cmd) {
    envd_stream *s = start_prestarted(c, cmd, args, cwd, tag, dir, &st, want_stdin, pre_cmd);
    if (s) {
      free(dir);
      return s;
    }
  }
  /* Environment: PATH, HOME, USER, LOGNAME, /init vars, request vars. */
  const char *child_path = NULL;
  char **envp = envd_child_env(u, envs, &child_path);
  if (!envp) {
    envd_err_set(e, "internal", "out of memory");
    free(dir);
    return NULL;
  }
  size_t nargs = (size_t)cJSON_GetArraySize(args);
  char **argv = calloc(nargs + 2, sizeof *argv);
  argv[0] = (char *)cmd;
  size_t ai = 1;
  cJSON_ArrayForEach(it, args) argv[ai++] = it->valuestring;
  char exe[4096];
  find_exec(cmd, child_path, exe, sizeof exe);
  /* The SDKs send every command as /bin/bash -l -c; a root without bash
   * (busybox, an Alpine-like image) runs it with /bin/sh, as the engine's
   * start and custom commands do (POSIX shells take -l and -c). */
  if (!strcmp(cmd, "/bin/bash") && access(exe, F_OK) != 0 && access("/bin/sh", X_OK) == 0) {
    snprintf(exe, sizeof exe, "/bin/sh");
    argv[0] = (char *)"/bin/sh";
  }
  char msg_noent[512], msg_acces[512];
  snprintf(msg_noent, sizeof msg_noent, "exec: %s: not found\n", cmd);
  snprintf(msg_acces, sizeof msg_acces, "exec: %s: Permission denied\n", cmd);

  envd_proc *p = envd_ptab_new(tag, pty != NULL); /* the ref: the table's */
  p->config = config_json(cmd, args, envs, cwd);

  int child_in = -1, child_out = -1, child_err = -1;
  int ok = 1;
  const char *fail_what = "pipe";
  if (pty) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char sname[128];
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, sname, sizeof sname) != 0) {
      ok = 0;
      fail_what = "pty";
      if (m >= 0) close(m);
    } else {
      int s = open(sname, O_RDWR | O_NOCTTY | O_CLOEXEC);
      if (s < 0) {
        ok = 0;
        fail_what = "pty";
        close(m);
      } else {
        struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
        ioctl(m, TIOCSWINSZ, &ws);
        p->fd_pty = m;
        p->pty_w = m;
        set_nonblock(m, O_RDWR);
        child_in = child_out = child_err = s;
      }
    }
  } else {
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0 ||
        (want_stdin && pipe2(pi, O_CLOEXEC) != 0)) {
      ok = 0;
      for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
        if (pi[i] >= 0) close(pi[i]);
      }
    } else {
      p->fd_out = po[0];
      p->fd_err = pe[0];
      set_nonblock(po[0], O_RDONLY);
      set_nonblock(pe[0], O_RDONLY);
      child_out = po[1];
      child_err = pe[1];
      if (want_stdin) {
        p->fd_in = pi[1];
        child_in = pi[0];
      } else {
        child_in = g_devnull; /* shared: never closed here */
      }
    }
  }
  pstream *ps = NULL;
  if (ok) {
    envd_ptab_ref(p); /* the stream's */
    ps = pstream_new(p, c);
    if (!ps) {
      envd_ptab_unref(p);
      ok = 0;
      fail_what = "stream";
    }
  }
  if (!ok) {
    envd_err_set(e, "internal", "error creating %s for command '%s': %s", fail_what, cmd,
                 strerror(errno));
    goto fail;
  }

  envd_spawn sp;
  memset(&sp, 0, sizeof sp);
  sp.path = exe;
  sp.argv = argv;
  sp.envp = envp;
  sp.cwd = dir;
  sp.fd_in = child_in;
  sp.fd_out = child_out;
  sp.fd_err = child_err;
  sp.pty = p->is_pty;
  sp.set_ids = geteuid() == 0;
  sp.uid = u->uid;
  sp.gid = u->gid;
  sp.groups = u->groups;
  sp.ngroups = u->ngroups;
  sp.cgroup_procs = g_envd.cgroup_procs;
  sp.oom_score_adj = 100;
  sp.nofile_cur = g_envd.nofile_cur;
  sp.nofile_max = g_envd.nofile_max;
  sp.msg_noent = msg_noent;
  sp.msg_acces = msg_acces;
  p->oom_before = envd_ptab_oom_count();

  ps->t_head = c->t_head;
  ps->t_body = c->t_body;
  ps->t_spawn0 = envd_tns();
  envd_ptab_lock();
  pid_t pid = envd_spawn_run(&sp);
  int serr = errno;
  ps->t_spawn1 = envd_tns();
  if (pid > 0 && sp.fail_errno) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (pid > 0 && !sp.fail_errno) {
    p->pid = pid;
    envd_ptab_insert(p);
    if (c->timeout_ms) p->deadline_ms = asbi_now_ms() + (uint64_t)c->timeout_ms;
    envd_pio_watch(p);
  }
  int wake = pid > 0 && !sp.fail_errno && p->deadline_ms && envd_pio_deadline_wakes(p->deadline_ms);
  envd_ptab_unlock();
  if (pid > 0 && !sp.fail_errno) {
    if (wake) envd_pio_wake();
    /* Close the child's ends. */
    if (child_in >= 0 && child_in != g_devnull) close(child_in);
    if (child_out >= 0 && child_out != child_in) close(child_out);
    if (child_err >= 0 && child_err != child_out && child_err != child_in) close(child_err);
    envd_strv_free(envp);
    free(argv);
    if (pre_cmd) envd_pre_want(u, dir, want_stdin, hold_for(ps, pid));
    free(dir);
    return &ps->base;
  }
  if (pid < 0)
    envd_err_set(e, "invalid_argument", "error starting process '%s': fork: %s", cmd,
                 strerror(serr));
  else
    envd_err_set(e, "invalid_argument", "error starting process '%s': %s%s%s: %s", cmd,
                 sp.fail_stage, strcmp(sp.fail_stage, "chdir") == 0 ? " " : "",
                 strcmp(sp.fail_stage, "chdir") == 0 ? dir : "", strerror(sp.fail_errno));
fail:
  if (child_in >= 0 && child_in != g_devnull) close(child_in);
  if (child_out >= 0 && child_out != child_in) close(child_out);
  if (child_err >= 0 && child_err != child_out && child_err != child_in) close(child_err);
  if (ps) ps->base.destroy(&ps->base);
  envd_ptab_unref(p);
  envd_strv_free(envp);
  free(argv);
  free(dir);
  return NULL;
}

/* ---- Connect ----------------------------------------------------------- */

envd_stream *envd_proc_connect(const envd_call *c, const cJSON *req, envd_err *e) {
  envd_proc *p = envd_ptab_find(asbi_pj_field(req, "process"), 1, e);
  if (!p) return NULL;
  pstream *ps = pstream_new(p, c);
  if (!ps) {
    envd_ptab_unref(p);
    envd_err_set(e, "internal", "out of memory");
    return NULL;
  }
  return &ps->base;
}
