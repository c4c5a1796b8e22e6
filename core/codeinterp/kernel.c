/* Kernels: processes, the Jupyter protocol over ZeroMQ, and the node, bash
 * and java drivers. SPDX-License-Identifier: Apache-2.0 */
#include "kernel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drivers.h"
#include "jmsg.h"
#include "ndout.h"
#include "proto/pjson.h"
#include "util/buf.h"
#include "util/util.h"

extern char **environ;

#define START_TIMEOUT_MS 60000 /* kernel_info must be answered by then */
#define IOPUB_RETRY_MS 250     /* re-ask kernel_info until iopub is heard */
/* After execute_reply, output and the idle status may lag on iopub (an
 * ipykernel whose flush timed out sends the reply first). If the idle status
 * has not come PROBE_AFTER_REPLY_MS after the reply, a kernel_info_request
 * is sent as a barrier: iopub is one ordered stream, so once a message about
 * the probe arrives, everything the cell published has arrived too. A cell
 * ends without either only after IDLE_AFTER_REPLY_MS with nothing on iopub. */
#define PROBE_AFTER_REPLY_MS 1000
#define IDLE_AFTER_REPLY_MS 30000
#define HB_INTERVAL_MS 5000
#define HB_TIMEOUT_MS 30000
#define MAX_FRAMES 64
#define READ_CHUNK 65536
#define LAZY_CONTENT (256u * 1024u) /* larger iopub contents: see on_iopub */

struct ci_kernel {
  ci_kind kind;
  int interrupt_message;
  pid_t pid;
  int pidfd;
  int ready;
  char why[768];
  char tag[64];
  char conn_path[600];
  char cell_path[600];
  uint64_t started_ms;
  int diag_fd; /* the Jupyter kernel's own stdout+stderr */
  char diag[1024];
  size_t diag_len;
  /* the running execution */
  int busy;
  int silent;
  int interrupted;
  /* An interrupt names its execution: once the interrupted execution has
   * ended, its DONE waits until the interrupt is known consumed or moot
   * (settle_*), so it cannot stop the next cell. See settle_start. */
  int settling;      /* the execution ended; waiting on the barrier */
  int settle_phase;  /* Jupyter: 0 waits for interrupt_reply, 1 the first
                        barrier's idle, 2 the second's reply */
  int settle_status; /* the ended execution's CI_DONE_* */
  int int_reply_due; /* message mode: interrupt_reply not yet received */
  int sigint_sent;   /* node: the SIGINT after the named interrupt */
  char settle_id[33];
  unsigned settle_first_seq; /* drivers: the first barrier's seq */
  /* Jupyter */
  void *shell, *iopub, *control, *hb;
  ci_hmac *hmac;
  char session[33];
  char cur_id[33];
  int got_reply, got_idle, errored, reply_status;
  char probe_id[33]; /* the barrier's msg_id, "" when none was sent */
  uint64_t reply_ms; /* the reply, or the last iopub message after it */
  int got_info, iopub_seen;
  uint64_t info_sent_ms;
  int hb_out;
  uint64_t hb_sent_ms, hb_next_ms;
  /* drivers */
  int cmd_fd, out_fd, err_fd, ev_fd;
  int count;         /* executions counted by the driver side */
  int count_pending; /* announce the count before any output */
  asbi_buf evline;
  unsigned char carry[2][4];
  size_t carry_len[2];
  unsigned seq;
};

/* ASB_CODEI_TRACE=1: log each kernel message to stderr. */
static int g_trace = -1;

/* ---- ZeroMQ context ------------------------------------------------------ */

static void *g_zctx;
static pthread_once_t g_zonce = PTHREAD_ONCE_INIT;
static void zctx_init(void) {
  g_zctx = zmq_ctx_new();
  if (g_zctx) zmq_ctx_set(g_zctx, ZMQ_BLOCKY, 0);
}
void *ci_zmq_ctx(void) {
  pthread_once(&g_zonce, zctx_init);
  return g_zctx;
}
void ci_zmq_term(void) {
  if (g_zctx) zmq_ctx_term(g_zctx);
  g_zctx = NULL;
}

/* ---- processes ------------------------------------------------------------- */

typedef struct spawn_req {
  char *const *argv;
  char *const *envp;
  const char *cwd;
  int fds[5]; /* the child's fds 0..4: a descriptor, or -1 (0-2: /dev/null) */
} spawn_req;

static int dup_high(int fd) {
  return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 16);
}

/* Where kernels go when the server runs as a sandbox's agent (see
 * ci_kernel_workload): the cgroup.procs files each kernel's child writes
 * itself into before it execs, and the open-file limit of user processes. */
#define MAX_WORKLOAD_CG 8
static char *g_cg_procs[MAX_WORKLOAD_CG];
static int g_ncg;
static struct rlimit g_nofile;
static int g_have_nofile;
static unsigned long long g_mem_max; /* the workload's memory limit, 0: none found */

/* The memory limit in a workload cgroup dir (v2 memory.max, v1
 * memory.limit_in_bytes), 0 if none: given to the JVMs of java kernels,
 * which otherwise size their heap from what they can find themselves (the
 * machine's memory when the sandbox's cgroup file system is not mounted). */
static unsigned long long cg_mem_limit(const char *dir, size_t n) {
  static const char *const files[] = {"memory.max", "memory.limit_in_bytes"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(files); i++) {
    char path[4096], v[64];
    snprintf(path, sizeof path, "%.*s/%s", (int)n, dir, files[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t r = read(fd, v, sizeof v - 1);
    close(fd);
    unsigned long long x = 0;
    if (r > 0 && (v[r] = '\0', sscanf(v, "%llu", &x) == 1) && x < (1ull << 62)) return x;
  }
  return 0;
}

void ci_kernel_workload(const char *cgroups, const char *nofile) {
  for (const char *p = cgroups; p && *p && g_ncg < MAX_WORKLOAD_CG;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n) {
      unsigned long long lim = cg_mem_limit(p, n);
      if (lim && (!g_mem_max || lim < g_mem_max)) g_mem_max = lim;
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_append(&b, p, n);
      asbi_buf_puts(&b, "/cgroup.procs");
      if (b.data) g_cg_procs[g_ncg++] = b.data;
    }
    p = end ? end + 1 : p + n;
  }
  unsigned long soft, hard;
  if (nofile && sscanf(nofile, "%lu:%lu", &soft, &hard) == 2 && soft <= hard) {
    g_nofile.rlim_cur = soft;
    g_nofile.rlim_max = hard;
    g_have_nofile = 1;
  }
}

/* fork + exec with a new session, death signal on our exit, default signal
 * handling, fds 0..4 as asked. Returns the pid, or -1 with err set. */
static pid_t spawn(const spawn_req *r, char *err, size_t errlen) {
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return -1;
  }
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  int hi[5];
  for (int i = 0; i < 5; i++) hi[i] = dup_high(r->fds[i] >= 0 ? r->fds[i] : (i < 3 ? devnull : -1));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    int e = 0;
    const char *what = "exec";
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < NSIG; s++)
      if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    for (int i = 0; i < 5; i++) {
      if (hi[i] >= 0 && dup2(hi[i], i) < 0) {
        e = errno;
        what = "dup2";
        goto fail;
      }
      if (hi[i] < 0) close(i);
    }
    for (int i = 0; i < g_ncg; i++) { /* into the workload, as a user process */
      int cg = open(g_cg_procs[i], O_WRONLY | O_CLOEXEC);
      if (cg < 0 || write(cg, "0\n", 2) != 2) {
        e = errno;
        what = "cgroup";
        goto fail;
      }
      close(cg);
    }
    if (g_have_nofile) {
      struct rlimit cur;
      if (getrlimit(RLIMIT_NOFILE, &cur) == 0) { /* lowering only */
        struct rlimit want = g_nofile;
        if (want.rlim_max > cur.rlim_max) want.rlim_max = cur.rlim_max;
        if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
        setrlimit(RLIMIT_NOFILE, &want);
      }
    }
    if (r->cwd && chdir(r->cwd) != 0) {
      e = errno;
      what = "chdir";
      goto fail;
    }
    syscall(SYS_close_range, 5u, ~0u, 0u);
    execvpe(r->argv[0], r->argv, r->envp);
    e = errno;
  fail:;
    char msg[64];
    int n = snprintf(msg, sizeof msg, "%s %d", what, e);
    ssize_t w = write(ep[1], msg, (size_t)n);
    (void)w;
    _exit(127);
  }
  int fork_errno = errno;
  for (int i = 0; i < 5; i++)
    if (hi[i] >= 0) close(hi[i]);
  if (devnull >= 0) close(devnull);
  close(ep[1]);
  if (pid < 0) {
    close(ep[0]);
    snprintf(err, errlen, "fork: %s", strerror(fork_errno));
    return -1;
  }
  char msg[64] = {0};
  ssize_t n;
  do n = read(ep[0], msg, sizeof msg - 1);
  while (n < 0 && errno == EINTR);
  close(ep[0]);
  if (n > 0) {
    char what[16] = "exec";
    int e = 0;
    sscanf(msg, "%15s %d", what, &e);
    waitpid(pid, NULL, 0);
    if (strcmp(what, "chdir") == 0)
      snprintf(err, errlen, "cannot enter the working directory %s: %s", r->cwd, strerror(e));
    else if (strcmp(what, "cgroup") == 0)
      snprintf(err, errlen, "cannot move the kernel into the workload cgroup: %s", strerror(e));
    else
      snprintf(err, errlen, "cannot run %s: %s", r->argv[0], strerror(e));
    return -1;
  }
  return pid;
}

/* Our environment changes while we run (POST /envs, ctx.c's ci_set_envs):
 * setenv and whoever reads environ (a kernel being started, the values
 * per-call env_vars are restored to) take turns. */
static pthread_mutex_t g_env_mu = PTHREAD_MUTEX_INITIALIZER;
void ci_env_lock(void) {
  pthread_mutex_lock(&g_env_mu);
}
void ci_env_unlock(void) {
  pthread_mutex_unlock(&g_env_mu);
}

/* The environment of kernels: ours, with the kernelspec's additions and
 * without the variables listed in drop. */
static char **make_env(char *const *add, const char *const *drop) {
  size_t n = 0, na = 0;
  while (environ[n]) n++;
  while (add && add[na]) na++;
  char **v = calloc(n + na + 1, sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t kl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
    int skip = 0;
    for (size_t j = 0; !skip && j < na; j++)
      skip = strncmp(add[j], environ[i], kl) == 0 && add[j][kl] == '=';
    for (size_t j = 0; !skip && drop && drop[j]; j++)
      skip = strlen(drop[j]) == kl && strncmp(drop[j], environ[i], kl) == 0;
    if (!skip) v[k++] = environ[i];
  }
  for (size_t j = 0; j < na; j++) v[k++] = add[j];
  v[k] = NULL;
  return v; /* the strings stay owned by environ and the spec */
}

static long pidfd_open_(pid_t pid) {
  return syscall(SYS_pidfd_open, pid, 0);
}

static void describe_exit(ci_kernel *k, int st) {
  char how[160];
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    snprintf(how, sizeof how, "was killed by signal %d (%s)", sig, strsignal(sig));
  } else {
    snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
  }
  size_t dl = k->diag_len;
  while (dl && (k->diag[dl - 1] == '\n' || k->diag[dl - 1] == ' ')) dl--;
  if (dl)
    snprintf(k->why, sizeof k->why, "the kernel process %s; its last output: %.*s", how, (int)dl,
             k->diag);
  else
    snprintf(k->why, sizeof k->why, "the kernel process %s", how);
}

/* Kill the whole process group and reap the leader. */
static void kill_reap(ci_kernel *k, int describe) {
  if (k->pid <= 0) return;
  kill(-k->pid, SIGKILL);
  kill(k->pid, SIGKILL);
  int st = 0;
  pid_t r;
  do r = waitpid(k->pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (describe && r == k->pid) describe_exit(k, st);
  k->pid = -1;
}

static void keep_diag(ci_kernel *k, const char *p, size_t n) {
  if (n >= sizeof k->diag) {
    p += n - (sizeof k->diag - 1);
    n = sizeof k->diag - 1;
  }
  if (k->diag_len + n >= sizeof k->diag) {
    size_t drop = k->diag_len + n - (sizeof k->diag - 1);
    memmove(k->diag, k->diag + drop, k->diag_len - drop);
    k->diag_len -= drop;
  }
  memcpy(k->diag + k->diag_len, p, n);
  k->diag_len += n;
}

static void set_nonblock(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---- Jupyter -------------------------------------------------------------- */

static int free_ports(int *ports, int n) {
  int fds[8];
  int rc = 0, i;
  for (i = 0; i < n; i++) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fds[i], (struct sockaddr *)&a, &al) != 0) {
      rc = -1;
      i++;
      break;
    }
    ports[i] = ntohs(a.sin_port);
  }
  while (i-- > 0)
    if (fds[i] >= 0) close(fds[i]);
  return rc;
}

static void *zsock(ci_kernel *k, int type, int port) {
  void *s = zmq_socket(ci_zmq_ctx(), type);
  if (!s) return NULL;
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  if (type == ZMQ_SUB) {
    zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
    /* drained promptly into the execution's queue (which spools) */
    zmq_setsockopt(s, ZMQ_RCVHWM, &zero, sizeof zero);
  }
  if (type == ZMQ_DEALER) zmq_setsockopt(s, ZMQ_IDENTITY, k->session, 32);
  char ep[64];
  snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", port);
  if (zmq_connect(s, ep) != 0) {
    zmq_close(s);
    return NULL;
  }
  return s;
}

static int send_frames(void *sock, const ci_frame *f, int n) {
  for (int i = 0; i < n; i++)
    if (zmq_send(sock, f[i].data, f[i].len, i + 1 < n ? ZMQ_SNDMORE : 0) < 0) return -1;
  return 0;
}

static int jsend(ci_kernel *k, void *sock, const char *type, const char *content, char *id_out) {
  ci_jout o;
  if (ci_jmsg_build(k->hmac, k->session, type, content, &o) != 0) return -1;
  int rc = send_frames(sock, o.frames, 6);
  if (id_out) memcpy(id_out, o.msg_id, 33);
  ci_jout_free(&o);
  return rc;
}

static char *subst(const char *arg, const char *key, const char *val) {
  const char *at = strstr(arg, key);
  if (!at || !val) return asbi_strdup(arg);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_append(&b, arg, (size_t)(at - arg));
  asbi_buf_puts(&b, val);
  asbi_buf_puts(&b, at + strlen(key));
  return b.data;
}

static int start_jupyter(ci_kernel *k, const ci_kspec *spec, const char *cwd, const char *rundir,
                         char *err, size_t errlen) {
  char key[65];
  int ports[5];
  if (asbi_random_hex(key, 64) != 0 || asbi_random_hex(k->session, 32) != 0 ||
      free_ports(ports, 5) != 0 || ci_hmac_new(&k->hmac, key, 64) != 0) {
    snprintf(err, errlen, "cannot prepare the kernel's connection: %s", strerror(errno));
    return -1;
  }
  snprintf(k->conn_path, sizeof k->conn_path, "%s/kernel-%s.json", rundir, k->tag);
  FILE *f = NULL;
  int cfd = open(k->conn_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (cfd >= 0) f = fdopen(cfd, "w");
  if (!f) {
    if (cfd >= 0) close(cfd);
    snprintf(err, errlen, "cannot write %s: %s", k->conn_path, strerror(errno));
    return -1;
  }
  fprintf(f,
          "{\"shell_port\":%d,\"iopub_port\":%d,\"stdin_port\":%d,\"control_port\":%d,"
          "\"hb_port\":%d,\"ip\":\"127.0.0.1\",\"key\":\"%s\",\"transport\":\"tcp\","
          "\"signature_scheme\":\"hmac-sha256\",\"kernel_name\":\"%s\"}\n",
          ports[0], ports[1], ports[2], ports[3], ports[4], key, spec->name);
  if (fclose(f) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", k->conn_path, strerror(errno));
    return -1;
  }
  size_t na = 0;
  while (spec->argv[na]) na++;
  char **argv = calloc(na + 1, sizeof *argv);
  int rc = argv ? 0 : -1;
  ci_env_lock(); /* until the child has its copy: envp points into environ */
  for (size_t i = 0; rc == 0 && i < na; i++) {
    /* `python3 -m ipykernel_launcher` imports debugpy (0.2-0.3 s of the
     * ~1 s start on a 2-core VM) for a debugger no E2B client uses; the
     * same launcher with debugpy masked starts without it (ipykernel then
     * reports debugging unavailable). IPython's SQLite history is off: it
     * costs ~1.5 ms of every cell and nothing reads it back. */
    if (i == 1 && na > 2 && strcmp(spec->argv[1], "-m") == 0 &&
        strcmp(spec->argv[2], "ipykernel_launcher") == 0 &&
        !asbi_parse_bool(asbi_getenv("ASB_CODEI_DEBUGPY"), 0)) {
      argv[1] = asbi_strdup("-c");
      argv[2] = asbi_strdup(
          "import sys; sys.modules.setdefault('debugpy', None); "
          "sys.argv.append('--HistoryManager.enabled=False'); "
          "from ipykernel import kernelapp; kernelapp.launch_new_instance()");
      if (!argv[1] || !argv[2]) rc = -1;
      i++;
      continue;
    }
    char *a = subst(spec->argv[i], "{connection_file}", k->conn_path);
    argv[i] = a ? subst(a, "{resource_dir}", spec->dir) : NULL;
    free(a);
    if (!argv[i]) rc = -1;
  }
  static const char *const drop[] = {"JPY_PARENT_PID", NULL};
  /* ipykernel's debugger warns about frozen modules on every start */
  char *quiet[] = {"PYDEVD_DISABLE_FILE_VALIDATION=1", NULL};
  char **envp = NULL;
  if (rc == 0) {
    size_t ne = 0;
    while (spec->env[ne]) ne++;
    char **add = calloc(ne + 2, sizeof *add);
    if (add) {
      add[0] = quiet[0];
      memcpy(add + 1, spec->env, ne * sizeof *add);
      envp = make_env(add, drop);
      free(add);
    }
  }
  int dp[2] = {-1, -1};
  if (!envp || pipe2(dp, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "out of resources starting the kernel");
    rc = -1;
  }
  if (rc == 0) {
    spawn_req r = {argv, envp, cwd, {-1, dp[1], dp[1], -1, -1}};
    k->pid = spawn(&r, err, errlen);
    if (k->pid < 0) rc = -1;
  }
  ci_env_unlock();
  if (dp[1] >= 0) close(dp[1]);
  k->diag_fd = dp[0];
  if (k->diag_fd >= 0) set_nonblock(k->diag_fd);
  for (size_t i = 0; argv && i < na; i++) free(argv[i]);
  free(argv);
  free(envp);
  if (rc) return -1;
  k->shell = zsock(k, ZMQ_DEALER, ports[0]);
  k->iopub = zsock(k, ZMQ_SUB, ports[1]);
  k->control = zsock(k, ZMQ_DEALER, ports[3]);
  k->hb = zsock(k, ZMQ_REQ, ports[4]);
  if (!k->shell || !k->iopub || !k->control || !k->hb ||
      jsend(k, k->shell, "kernel_info_request", "{}", NULL) != 0) {
    snprintf(err, errlen, "cannot connect to the kernel: %s", zmq_strerror(zmq_errno()));
    return -1;
  }
  k->info_sent_ms = asbi_now_ms();
  return 0;
}

static char *join_traceback(const cJSON *tb) {
  asbi_buf b = ASBI_BUF_INIT;
  const cJSON *it;
  int first = 1;
  cJSON_ArrayForEach(it, tb) {
    if (!cJSON_IsString(it)) continue;
    if (!first) asbi_buf_putc(&b, '\n');
    asbi_buf_puts(&b, it->valuestring);
    first = 0;
  }
  return b.data ? b.data : asbi_strdup("");
}

static const char *cstr(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void emit_error(ci_kernel *k, const cJSON *c, ci_ev_fn fn, void *ud) {
  if (k->errored) return;
  k->errored = 1;
  char *tb = join_traceback(cJSON_GetObjectItemCaseSensitive(c, "traceback"));
  ci_ev ev = {.kind = CI_EV_ERROR,
              .ename = cstr(c, "ename"),
              .evalue = cstr(c, "evalue"),
              .traceback = tb ? tb : ""};
  if (!ev.ename) ev.ename = "";
  if (!ev.evalue) ev.evalue = "";
  fn(ud, &ev);
  free(tb);
}

static int write_all(int fd, const char *p, size_t n);

static void end_exec(ci_kernel *k, int status, ci_ev_fn fn, void *ud) {
  k->busy = 0;
  k->settling = 0;
  ci_ev ev = {.kind = CI_EV_DONE, .status = status};
  fn(ud, &ev);
}

/* The interrupted execution has ended (or its kernel went idle without a
 * reply: a SIGINT that came after the cell's code, in ipykernel's flush
 * before the reply, ends the handler with no reply). The signal may not
 * have been taken yet: a Jupyter kernel runs Python's handler at its next
 * bytecode, a driver may not have been scheduled since. So the next cell
 * waits for a barrier the kernel handles after the signal:
 *  - Jupyter: (interrupt_mode message: the interrupt_reply, sent once the
 *    kernel signalled itself), then a kernel_info_request, whose handling
 *    runs Python code with ipykernel's SIGINT handler set and reset (a
 *    pending signal is raised and caught there, or dropped); its idle
 *    status ends phase 1. Phase 1's reply may be lost to that signal, so a
 *    second kernel_info_request follows: its reply comes on the shell
 *    channel after the ended cell's execute_reply, if that was ever sent.
 *  - drivers: a silent empty cell (bash: sent again if bash reports the
 *    prompt of an older cell, its answer to a SIGINT that may have dropped
 *    the barrier's line). */
static void settle_start(ci_kernel *k, int status) {
  k->settling = 1;
  k->settle_status = status;
  if (k->kind == CI_KIND_JUPYTER) {
    k->settle_phase = k->int_reply_due ? 0 : 1;
    if (k->settle_phase == 1) jsend(k, k->shell, "kernel_info_request", "{}", k->settle_id);
    return;
  }
  k->seq++;
  if (k->kind == CI_KIND_NODE) {
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_printf(&b, "{\"seq\":%u,\"silent\":true,\"code\":\"\"}\n", k->seq);
    if (b.data) write_all(k->cmd_fd, b.data, b.len);
    asbi_buf_free(&b);
  } else if (k->kind == CI_KIND_JAVA) {
    char h[32];
    int n = snprintf(h, sizeof h, "%u 1 0\n", k->seq);
    write_all(k->cmd_fd, h, (size_t)n);
  } else {
    char line[48];
    int n = snprintf(line, sizeof line, "__asb_n=%u; :\n", k->seq);
    write_all(k->cmd_fd, line, (size_t)n);
  }
}

static void check_done(ci_kernel *k, ci_ev_fn fn, void *ud, int force) {
  if (!k->busy || k->settling) return;
  if (k->interrupted && k->got_idle && !k->got_reply) {
    settle_start(k, CI_DONE_ABORT);
    return;
  }
  if (!k->got_reply || (!k->got_idle && !force)) return;
  if (k->interrupted) {
    settle_start(k, k->reply_status);
    return;
  }
  end_exec(k, k->reply_status, fn, ud);
}

static void on_iopub(ci_kernel *k, ci_jmsg *m, ci_ev_fn fn, void *ud) {
  k->iopub_seen = 1;
  if (k->settling) {
    if (k->settle_phase == 1 && m->parent_id && strcmp(m->parent_id, k->settle_id) == 0 &&
        strcmp(m->msg_type, "status") == 0 && ci_jmsg_content(m) == CI_JMSG_OK) {
      const char *st = cstr(m->content, "execution_state");
      if (st && strcmp(st, "idle") == 0) {
        k->settle_phase = 2;
        jsend(k, k->shell, "kernel_info_request", "{}", k->settle_id);
      }
    }
    return; /* the ended cell's late output is not its client's any more */
  }
  if (k->busy && k->got_reply) k->reply_ms = asbi_now_ms();
  if (k->busy && k->probe_id[0] && m->parent_id && strcmp(m->parent_id, k->probe_id) == 0) {
    k->got_idle = 1; /* the barrier: nothing of the cell's is still on its way */
    check_done(k, fn, ud, 0);
    return;
  }
  if (!k->busy || !m->parent_id || strcmp(m->parent_id, k->cur_id) != 0) return;
  const char *t = m->msg_type;
  if (!m->content && strcmp(t, "stream") == 0) {
    /* Large output (ipykernel sends all that was printed since its last
     * flush, tens of MB when the cell prints fast): copy the text's JSON
     * escapes straight into our lines instead of parsing a copy. */
    const char *s = m->raw_content.data, *name, *text;
    size_t sl = m->raw_content.len, nl, tl;
    if (ci_json_member_body(s, sl, "name", &name, &nl) == 0 &&
        ci_json_member_body(s, sl, "text", &text, &tl) == 0 && ci_json_body_valid(text, tl)) {
      ci_ev ev = {.kind = CI_EV_STREAM,
                  .is_stderr = nl == 6 && memcmp(name, "stderr", 6) == 0,
                  .text = text,
                  .len = tl,
                  .ts = m->date,
                  .escaped = 1};
      fn(ud, &ev);
      return;
    }
  }
  if (ci_jmsg_content(m) != CI_JMSG_OK) return;
  const cJSON *c = m->content;
  if (strcmp(t, "status") == 0) {
    const char *st = cstr(c, "execution_state");
    if (st && strcmp(st, "idle") == 0) {
      k->got_idle = 1;
      check_done(k, fn, ud, 0);
    }
  } else if (strcmp(t, "execute_input") == 0) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "execution_count");
    ci_ev ev = {.kind = CI_EV_COUNT, .count = cJSON_IsNumber(n) ? n->valueint : -1};
    if (!k->silent) fn(ud, &ev);
  } else if (strcmp(t, "stream") == 0) {
    const char *name = cstr(c, "name"), *text = cstr(c, "text");
    if (!name || !text) return;
    ci_ev ev = {.kind = CI_EV_STREAM,
                .is_stderr = strcmp(name, "stderr") == 0,
                .text = text,
                .len = strlen(text),
                .ts = m->date};
    fn(ud, &ev);
  } else if (strcmp(t, "display_data") == 0 || strcmp(t, "execute_result") == 0) {
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(c, "data");
    if (!cJSON_IsObject(data)) return;
    ci_ev ev = {.kind = CI_EV_RESULT, .bundle = data, .is_main = t[0] == 'e'};
    fn(ud, &ev);
  } else if (strcmp(t, "error") == 0) {
    emit_error(k, c, fn, ud);
  }
}

static void on_shell(ci_kernel *k, const ci_jmsg *m, ci_ev_fn fn, void *ud) {
  if (strcmp(m->msg_type, "kernel_info_reply") == 0) {
    k->got_info = 1;
    if (k->settling && k->settle_phase == 2 && m->parent_id &&
        strcmp(m->parent_id, k->settle_id) == 0)
      end_exec(k, k->settle_status, fn, ud);
    return;
  }
  if (k->settling) return;
  if (strcmp(m->msg_type, "execute_reply") != 0 || !k->busy || !m->parent_id ||
      strcmp(m->parent_id, k->cur_id) != 0)
    return;
  const char *st = cstr(m->content, "status");
  k->got_reply = 1;
  k->reply_ms = asbi_now_ms();
  k->reply_status = CI_DONE_OK;
  if (st && strcmp(st, "error") == 0) {
    k->reply_status = CI_DONE_ERROR;
    emit_error(k, m->content, fn, ud);
  } else if (st && (strcmp(st, "abort") == 0 || strcmp(st, "aborted") == 0)) {
    k->reply_status = CI_DONE_ABORT;
    if (!k->errored) {
      k->errored = 1;
      ci_ev ev = {.kind = CI_EV_ERROR,
                  .ename = "ExecutionAborted",
                  .evalue = "Execution was aborted",
                  .traceback = ""};
      fn(ud, &ev);
    }
  }
  check_done(k, fn, ud, 0);
}

/* Receive and handle the messages waiting on sock (a bounded number, so one
 * busy socket does not starve the others). */
static int drain_socket(ci_kernel *k, void *sock, int which, ci_ev_fn fn, void *ud) {
  for (int count = 0; count < 64; count++) {
    zmq_msg_t parts[MAX_FRAMES];
    ci_frame frames[MAX_FRAMES];
    size_t n = 0;
    int more = 1, rc = 0;
    while (more) {
      zmq_msg_t tmp;
      zmq_msg_init(&tmp);
      if (zmq_msg_recv(&tmp, sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
        zmq_msg_close(&tmp);
        rc = zmq_errno() == EAGAIN && n == 0 ? 1 : -1;
        break;
      }
      more = zmq_msg_more(&tmp);
      if (n < MAX_FRAMES) {
        parts[n] = tmp;
        frames[n].data = zmq_msg_data(&parts[n]);
        frames[n].len = zmq_msg_size(&parts[n]);
        n++;
      } else {
        zmq_msg_close(&tmp);
      }
    }
    if (rc == 0 && which == 3) {
      k->hb_out = 0;
      k->hb_next_ms = asbi_now_ms() + HB_INTERVAL_MS;
    } else if (rc == 0 && which == 2) {
      ci_jmsg m;
      if (ci_jmsg_parse_lazy(k->hmac, frames, n, 0, &m) == CI_JMSG_OK) {
        if (strcmp(m.msg_type, "interrupt_reply") == 0 && k->int_reply_due) {
          k->int_reply_due = 0;
          if (k->settling && k->settle_phase == 0) {
            k->settle_phase = 1;
            jsend(k, k->shell, "kernel_info_request", "{}", k->settle_id);
          }
        }
        ci_jmsg_free(&m);
      }
    } else if (rc == 0) {
      ci_jmsg m;
      int prc = ci_jmsg_parse_lazy(k->hmac, frames, n, which == 1 ? LAZY_CONTENT : 0, &m);
      if (prc == CI_JMSG_OK && g_trace) {
        size_t tot = 0;
        for (size_t i = 0; i < n; i++) tot += frames[i].len;
        fprintf(stderr, "code-interpreter: %llu us %s %s %s %zu bytes%s\n",
                (unsigned long long)asbi_now_us(), k->tag, which ? "iopub" : "shell", m.msg_type,
                tot, m.parent_id && strcmp(m.parent_id, k->cur_id) == 0 ? " (current)" : "");
      }
      if (prc == CI_JMSG_OK) {
        if (which == 0)
          on_shell(k, &m, fn, ud);
        else
          on_iopub(k, &m, fn, ud);
        ci_jmsg_free(&m);
      } else {
        fprintf(stderr, "code-interpreter: kernel %s: dropped a malformed message: %s\n", k->tag,
                ci_jmsg_strerror(prc));
      }
    }
    for (size_t i = 0; i < n; i++) zmq_msg_close(&parts[i]);
    if (rc) return rc < 0 ? -1 : 0;
  }
  return 0;
}

static void read_diag(ci_kernel *k) {
  char buf[4096];
  ssize_t r;
  while ((r = read(k->diag_fd, buf, sizeof buf)) > 0) keep_diag(k, buf, (size_t)r);
  if (r == 0) {
    close(k->diag_fd);
    k->diag_fd = -1;
  }
}

/* ---- drivers --------------------------------------------------------------- */

/* The java driver's jar, written for each java kernel (its class path;
 * removed with the kernel). */
static int write_java_driver(ci_kernel *k, const char *rundir, char *err, size_t errlen) {
#if CI_HAVE_JAVA
  snprintf(k->cell_path, sizeof k->cell_path, "%s/java-driver-%s.jar", rundir, k->tag);
  int fd = open(k->cell_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  int rc = fd >= 0 ? write_all(fd, ci_java_driver_jar, ci_java_driver_jar_size) : -1;
  if (fd >= 0 && close(fd) != 0) rc = -1;
  if (rc != 0) snprintf(err, errlen, "cannot write the java driver: %s", strerror(errno));
  return rc;
#else
  (void)k, (void)rundir;
  snprintf(err, errlen, "built without the java driver (no JDK at build time)");
  return -1;
#endif
}

static int start_driver(ci_kernel *k, const ci_kspec *spec, const char *cwd, const char *rundir,
                        char *err, size_t errlen) {
  int cmd[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, ev[2] = {-1, -1};
  if (pipe2(cmd, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC) ||
      pipe2(ev, O_CLOEXEC)) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
      if (cmd[i] >= 0) close(cmd[i]);
      if (out[i] >= 0) close(out[i]);
      if (er[i] >= 0) close(er[i]);
      if (ev[i] >= 0) close(ev[i]);
    }
    return -1;
  }
  int bash = spec->kind == CI_KIND_BASH, java = spec->kind == CI_KIND_JAVA;
  int ts = spec->language && strcmp(spec->language, "typescript") == 0;
  char *node_argv[] = {"node", "-e", (char *)ci_node_driver, ts ? "typescript" : NULL, NULL};
  char *bash_argv[] = {"bash", "--noprofile", "--norc", "--noediting", "-i", NULL};
  /* The JVM: the serial GC (the least memory besides the heap; cells are
   * short), the heap at most half the workload cgroup's memory limit
   * (given as MaxRAM; without one, half of what the JVM finds), C1 only
   * (JShell compiles every snippet: the start and small cells win, long
   * computations lose ~2x of C2's peak speed), no /tmp/hsperfdata file.
   * $JDK_JAVA_OPTIONS (the java launcher's, put before these) adds flags. */
  char maxram[64];
  snprintf(maxram, sizeof maxram, "-XX:MaxRAM=%llu", g_mem_max);
  char *java_argv[] = {"java",
                       "-XX:+UseSerialGC",
                       "-XX:TieredStopAtLevel=1",
                       "-XX:MaxRAMPercentage=50",
                       "-XX:-UsePerfData",
                       "-Dfile.encoding=UTF-8",
                       "-cp",
                       k->cell_path,
                       maxram,
                       "asb.JavaDriver",
                       NULL};
  if (!g_mem_max) /* no limit found: the JVM's own view */
    memmove(&java_argv[8], &java_argv[9], 2 * sizeof java_argv[0]);
  if (java && write_java_driver(k, rundir, err, errlen) != 0) {
    for (int i = 0; i < 2; i++) close(cmd[i]), close(out[i]), close(er[i]), close(ev[i]);
    return -1;
  }
  static const char *const drop[] = {"PROMPT_COMMAND", "BASH_ENV", "ENV",
                                     "NODE_REPL_EXTERNAL_MODULE", NULL};
  ci_env_lock(); /* until the child has its copy: envp points into environ */
  char **envp = make_env(spec->env, drop);
  spawn_req r = {bash   ? bash_argv
                 : java ? java_argv
                        : node_argv,
                 envp,
                 cwd,
                 {bash ? cmd[0] : -1, out[1], er[1], bash ? -1 : cmd[0], ev[1]}};
  if (envp)
    k->pid = spawn(&r, err, errlen);
  else
    snprintf(err, errlen, "out of memory");
  ci_env_unlock();
  free(envp);
  close(cmd[0]);
  close(out[1]);
  close(er[1]);
  close(ev[1]);
  k->cmd_fd = cmd[1];
  k->out_fd = out[0];
  k->err_fd = er[0];
  k->ev_fd = ev[0];
  set_nonblock(k->out_fd);
  set_nonblock(k->err_fd);
  set_nonblock(k->ev_fd);
  if (!envp || k->pid < 0) return -1;
  if (bash) {
    snprintf(k->cell_path, sizeof k->cell_path, "%s/cell-%s.sh", rundir, k->tag);
    size_t n = strlen(ci_bash_init);
    if (write(k->cmd_fd, ci_bash_init, n) != (ssize_t)n) {
      snprintf(err, errlen, "bash did not take its set-up line: %s", strerror(errno));
      return -1;
    }
  }
  return 0;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Bytes at the end of p[0..n) that begin an incomplete UTF-8 sequence. */
static size_t utf8_tail(const unsigned char *p, size_t n) {
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    unsigned char c = p[n - back];
    if ((c & 0xC0) == 0x80) continue; /* continuation: look further back */
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/* Read what one of the output pipes holds (at most one chunk unless
 * drain), passing it on while an execution runs. */
static void read_out(ci_kernel *k, int which, int drain, ci_ev_fn fn, void *ud) {
  int *fdp = which ? &k->err_fd : &k->out_fd;
  unsigned char buf[READ_CHUNK + 4];
  do {
    if (*fdp < 0) return;
    size_t c = k->carry_len[which];
    memcpy(buf, k->carry[which], c);
    ssize_t r = read(*fdp, buf + c, READ_CHUNK);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) {
        close(*fdp);
        *fdp = -1;
      }
      return;
    }
    size_t n = c + (size_t)r;
    size_t keep = utf8_tail(buf, n);
    k->carry_len[which] = keep;
    memcpy(k->carry[which], buf + n - keep, keep);
    if (n - keep && k->ready && k->busy) {
      ci_ev ev = {
          .kind = CI_EV_STREAM, .is_stderr = which, .text = (const char *)buf, .len = n - keep};
      fn(ud, &ev);
    }
  } while (drain);
}

static void driver_done(ci_kernel *k, int status, ci_ev_fn fn, void *ud) {
  if (k->settling) { /* the barrier ran: the interrupt is behind us */
    end_exec(k, k->settle_status, fn, ud);
    return;
  }
  /* what the pipes hold was written before the report */
  read_out(k, 0, 1, fn, ud);
  read_out(k, 1, 1, fn, ud);
  for (int w = 0; w < 2; w++)
    if (k->carry_len[w] && k->busy) {
      ci_ev ev = {.kind = CI_EV_STREAM,
                  .is_stderr = w,
                  .text = (const char *)k->carry[w],
                  .len = k->carry_len[w]};
      fn(ud, &ev);
      k->carry_len[w] = 0;
    }
  int done_status = status;
  if (k->kind == CI_KIND_BASH && status != 0 && !k->silent) {
    char val[32];
    snprintf(val, sizeof val, "%d", status);
    ci_ev ev = {.kind = CI_EV_ERROR,
                .ename = k->interrupted ? "ExecutionAborted" : "Error",
                .evalue = k->interrupted ? "Execution was aborted" : val,
                .traceback = ""};
    char tb[64];
    if (!k->interrupted) {
      snprintf(tb, sizeof tb, "the cell's last command exited with status %d", status);
      ev.traceback = tb;
    }
    fn(ud, &ev);
    done_status = k->interrupted ? CI_DONE_ABORT : CI_DONE_ERROR;
  }
  if (k->interrupted) {
    k->settle_first_seq = k->seq + 1;
    settle_start(k, done_status);
    return;
  }
  end_exec(k, done_status, fn, ud);
}

static void driver_event(ci_kernel *k, const char *line, size_t len, ci_ev_fn fn, void *ud) {
  if (k->kind == CI_KIND_BASH) {
    unsigned seq = 0;
    int status = 0;
    if (len < 2 || line[0] != 'D' || sscanf(line + 1, "%u %d", &seq, &status) != 2) return;
    if (!k->ready) {
      k->ready = 1;
      return;
    }
    if (k->busy && seq == k->seq) {
      driver_done(k, status, fn, ud);
    } else if (k->settling && seq >= k->settle_first_seq && status == 0) {
      driver_done(k, status, fn, ud); /* an earlier barrier ran after all */
    } else if (k->settling && status == 128 + SIGINT) {
      /* bash's prompt after the late SIGINT, which drops the line it was
       * reading: the barrier may be gone, send another */
      settle_start(k, k->settle_status);
    }
    return;
  }
  cJSON *j = asbi_pj_parse(line, len, NULL);
  const char *t = cstr(j, "t");
  if (!t) {
    cJSON_Delete(j);
    return;
  }
  if (strcmp(t, "ready") == 0) {
    k->ready = 1;
  } else if (k->busy && strcmp(t, "done") == 0) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "seq");
    if (cJSON_IsNumber(s) && (unsigned)s->valuedouble == k->seq)
      driver_done(k, k->errored ? CI_DONE_ERROR : CI_DONE_OK, fn, ud);
  } else if (strcmp(t, "stream") == 0) {
    /* the java driver's System.out / System.err: one write, one message
     * (IJava's split); what reached the pipes before (a child's output)
     * goes first */
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
    int is_err = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "err"));
    if (k->busy && cJSON_IsString(text) && *text->valuestring) {
      read_out(k, is_err, 1, fn, ud);
      ci_ev ev = {.kind = CI_EV_STREAM,
                  .is_stderr = is_err,
                  .text = text->valuestring,
                  .len = strlen(text->valuestring)};
      fn(ud, &ev);
    }
  } else if (k->busy && strcmp(t, "display") == 0) {
    read_out(k, 0, 1, fn, ud);
    read_out(k, 1, 1, fn, ud);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
    if (cJSON_IsObject(data)) {
      ci_ev ev = {.kind = CI_EV_RESULT,
                  .bundle = data,
                  .is_main = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "main"))};
      fn(ud, &ev);
    }
  } else if (k->busy && strcmp(t, "error") == 0) {
    read_out(k, 0, 1, fn, ud);
    read_out(k, 1, 1, fn, ud);
    k->errored = 1;
    ci_ev ev = {.kind = CI_EV_ERROR,
                .ename = cstr(j, "name"),
                .evalue = cstr(j, "value"),
                .traceback = cstr(j, "traceback")};
    if (!k->silent) fn(ud, &ev);
  }
  cJSON_Delete(j);
}

static void read_events(ci_kernel *k, ci_ev_fn fn, void *ud) {
  char buf[READ_CHUNK];
  for (;;) {
    ssize_t r = read(k->ev_fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) {
        close(k->ev_fd);
        k->ev_fd = -1;
      }
      return;
    }
    if (asbi_buf_append(&k->evline, buf, (size_t)r) != 0) return;
    size_t start = 0;
    for (size_t i = 0; i < k->evline.len; i++) {
      if (k->evline.data[i] != '\n') continue;
      k->evline.data[i] = '\0';
      driver_event(k, k->evline.data + start, i - start, fn, ud);
      start = i + 1;
    }
    asbi_buf_consume(&k->evline, start);
  }
}

/* ---- common ------------------------------------------------------------------ */

int ci_kernel_start(ci_kernel **out, const ci_kspec *spec, const char *cwd, const char *rundir,
                    const char *tag, char *err, size_t errlen) {
  *out = NULL;
  ci_kernel *k = calloc(1, sizeof *k);
  if (!k) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  k->kind = spec->kind;
  k->interrupt_message = spec->interrupt_message;
  k->pid = -1;
  k->pidfd = k->diag_fd = k->cmd_fd = k->out_fd = k->err_fd = k->ev_fd = -1;
  k->started_ms = asbi_now_ms();
  snprintf(k->tag, sizeof k->tag, "%s", tag);
  if (g_trace < 0) g_trace = asbi_parse_bool(asbi_getenv("ASB_CODEI_TRACE"), 0);
  int rc = spec->kind == CI_KIND_JUPYTER ? start_jupyter(k, spec, cwd, rundir, err, errlen)
                                         : start_driver(k, spec, cwd, rundir, err, errlen);
  if (rc == 0) {
    k->pidfd = (int)pidfd_open_(k->pid);
    if (k->pidfd < 0) {
      snprintf(err, errlen, "pidfd_open: %s", strerror(errno));
      rc = -1;
    }
  }
  if (rc) {
    ci_kernel_destroy(k);
    return -1;
  }
  *out = k;
  return 0;
}

static int add_item(zmq_pollitem_t *items, int n, void *sock, int fd) {
  items[n].socket = sock;
  items[n].fd = fd;
  items[n].events = ZMQ_POLLIN;
  items[n].revents = 0;
  return n + 1;
}

/* Item order is fixed per kind so ci_kernel_handle can find its own. */
int ci_kernel_items(ci_kernel *k, zmq_pollitem_t *items, int want_output) {
  int n = 0;
  n = add_item(items, n, NULL, k->pidfd);
  if (k->kind == CI_KIND_JUPYTER) {
    n = add_item(items, n, k->shell, -1);
    n = add_item(items, n, k->iopub, -1);
    n = add_item(items, n, k->control, -1);
    n = add_item(items, n, k->hb, -1);
    n = add_item(items, n, NULL, k->diag_fd);
  } else {
    int open_ = !k->busy || want_output;
    n = add_item(items, n, NULL, open_ ? k->out_fd : -1);
    n = add_item(items, n, NULL, open_ ? k->err_fd : -1);
    n = add_item(items, n, NULL, open_ ? k->ev_fd : -1);
  }
  /* zmq_poll ignores raw items whose fd is -1 only if events is 0 */
  for (int i = 0; i < n; i++)
    if (!items[i].socket && items[i].fd < 0) items[i].events = 0;
  return n;
}

static int died(ci_kernel *k) {
  kill_reap(k, 1);
  return CI_K_DEAD;
}

int ci_kernel_handle(ci_kernel *k, const zmq_pollitem_t *items, int n, ci_ev_fn fn, void *ud) {
  if (n > 0 && (items[0].revents & ZMQ_POLLIN)) {
    if (k->kind == CI_KIND_JUPYTER && k->diag_fd >= 0) read_diag(k);
    return died(k);
  }
  uint64_t now;
  if (k->kind == CI_KIND_JUPYTER) {
    if (items[5].revents & ZMQ_POLLIN) read_diag(k);
    /* iopub before shell: outputs precede the reply that ends them */
    if ((items[2].revents & ZMQ_POLLIN) && drain_socket(k, k->iopub, 1, fn, ud) < 0)
      return snprintf(k->why, sizeof k->why, "lost the kernel's iopub channel"), died(k);
    if ((items[1].revents & ZMQ_POLLIN) && drain_socket(k, k->shell, 0, fn, ud) < 0)
      return snprintf(k->why, sizeof k->why, "lost the kernel's shell channel"), died(k);
    if (items[3].revents & ZMQ_POLLIN) drain_socket(k, k->control, 2, fn, ud);
    if (items[4].revents & ZMQ_POLLIN) drain_socket(k, k->hb, 3, fn, ud);
    /* Read the clock after draining: the handlers above stamp reply_ms and
     * info_sent_ms with the time they ran, and deadlines are compared as
     * now >= stamp + interval, which cannot wrap the way now - stamp did
     * when a stamp was a millisecond newer than a clock read before it (a
     * slow drain then ended the cell as if 30 s had passed). */
    now = asbi_now_ms();
    if (!k->ready) {
      if (k->got_info && k->iopub_seen) {
        k->ready = 1;
        k->diag_len = 0; /* start-up chatter; keep what comes later */
      } else if (now > k->started_ms + START_TIMEOUT_MS) {
        snprintf(k->why, sizeof k->why, "the kernel did not answer kernel_info within %d s",
                 START_TIMEOUT_MS / 1000);
        return died(k);
      } else if (k->got_info && now >= k->info_sent_ms + IOPUB_RETRY_MS) {
        /* the reply came before our iopub subscription took: ask again */
        k->got_info = 0;
        jsend(k, k->shell, "kernel_info_request", "{}", NULL);
        k->info_sent_ms = now;
      }
    }
    if (k->busy) {
      if (k->got_reply && !k->got_idle && !k->probe_id[0] &&
          now >= k->reply_ms + PROBE_AFTER_REPLY_MS)
        jsend(k, k->shell, "kernel_info_request", "{}", k->probe_id);
      if (k->got_reply && !k->got_idle && now >= k->reply_ms + IDLE_AFTER_REPLY_MS) {
        static const char note[] =
            "[code-interpreter: the kernel replied but sent no idle status for 30 s; "
            "output it sends later is not part of this execution]\n";
        ci_ev ev = {.kind = CI_EV_STREAM, .is_stderr = 1, .text = note, .len = sizeof note - 1};
        fn(ud, &ev);
        check_done(k, fn, ud, 1);
      }
      if (k->hb_out && now >= k->hb_sent_ms + HB_TIMEOUT_MS) {
        snprintf(k->why, sizeof k->why, "the kernel stopped answering its heartbeat for %d s",
                 HB_TIMEOUT_MS / 1000);
        return died(k);
      }
      if (!k->hb_out && now >= k->hb_next_ms && zmq_send(k->hb, "ping", 4, ZMQ_DONTWAIT) == 4) {
        k->hb_out = 1;
        k->hb_sent_ms = now;
      }
    }
    return CI_K_OK;
  }
  now = asbi_now_ms();
  if (k->count_pending) {
    k->count_pending = 0;
    ci_ev ev = {.kind = CI_EV_COUNT, .count = k->count};
    fn(ud, &ev);
  }
  if (items[3].revents & ZMQ_POLLIN) read_events(k, fn, ud);
  if (items[1].revents & ZMQ_POLLIN) read_out(k, 0, 0, fn, ud);
  if (items[2].revents & ZMQ_POLLIN) read_out(k, 1, 0, fn, ud);
  if (!k->ready && now > k->started_ms + START_TIMEOUT_MS) {
    snprintf(k->why, sizeof k->why, "the %s driver did not start within %d s",
             k->kind == CI_KIND_BASH   ? "bash"
             : k->kind == CI_KIND_JAVA ? "java"
                                       : "node",
             START_TIMEOUT_MS / 1000);
    return died(k);
  }
  return CI_K_OK;
}

long ci_kernel_timeout(ci_kernel *k) {
  uint64_t now = asbi_now_ms();
  long t = -1;
#define AT(ms)                                   \
  do {                                           \
    long d_ = (ms) > now ? (long)((ms)-now) : 0; \
    if (t < 0 || d_ < t) t = d_;                 \
  } while (0)
  if (!k->ready) {
    AT(k->started_ms + START_TIMEOUT_MS);
    if (k->kind == CI_KIND_JUPYTER && k->got_info) AT(k->info_sent_ms + IOPUB_RETRY_MS);
  }
  if (k->kind == CI_KIND_JUPYTER && k->busy) {
    if (k->got_reply && !k->got_idle) {
      if (!k->probe_id[0]) AT(k->reply_ms + PROBE_AFTER_REPLY_MS);
      AT(k->reply_ms + IDLE_AFTER_REPLY_MS);
    }
    if (k->hb_out)
      AT(k->hb_sent_ms + HB_TIMEOUT_MS);
    else
      AT(k->hb_next_ms);
  }
#undef AT
  return t;
}

const char *ci_kernel_why(const ci_kernel *k) {
  return k->why[0] ? k->why : "the kernel died";
}
int ci_kernel_ready(const ci_kernel *k) {
  return k->ready;
}
pid_t ci_kernel_pid(const ci_kernel *k) {
  return k->pid;
}

int ci_kernel_execute(ci_kernel *k, const char *code, int silent) {
  if (!k->ready || k->busy) return -1;
  k->silent = silent;
  k->interrupted = 0;
  k->settling = 0;
  k->int_reply_due = 0;
  k->sigint_sent = 0;
  k->errored = 0;
  k->got_reply = k->got_idle = 0;
  k->probe_id[0] = '\0';
  k->reply_status = CI_DONE_OK;
  asbi_buf b = ASBI_BUF_INIT;
  int rc;
  if (k->kind == CI_KIND_JUPYTER) {
    asbi_buf_puts(&b, "{\"code\":");
    ci_out_json_str(&b, code, strlen(code));
    asbi_buf_printf(&b,
                    ",\"silent\":%s,\"store_history\":%s,\"user_expressions\":{},"
                    "\"allow_stdin\":false,\"stop_on_error\":false}",
                    silent ? "true" : "false", silent ? "false" : "true");
    /* stop_on_error false: we send one cell at a time, and ipykernel would
     * otherwise abort a cell that arrives just after one that failed */
    rc = b.data ? jsend(k, k->shell, "execute_request", b.data, k->cur_id) : -1;
    k->hb_out = 0;
    k->hb_next_ms = asbi_now_ms() + HB_INTERVAL_MS;
  } else if (k->kind == CI_KIND_NODE) {
    k->seq++;
    if (!silent) k->count++, k->count_pending = 1;
    asbi_buf_printf(&b, "{\"seq\":%u,\"silent\":%s,\"code\":", k->seq, silent ? "true" : "false");
    ci_out_json_str(&b, code, strlen(code));
    asbi_buf_puts(&b, "}\n");
    rc = b.data ? write_all(k->cmd_fd, b.data, b.len) : -1;
  } else if (k->kind == CI_KIND_JAVA) {
    /* a header line, then the cell's bytes (the driver needs no JSON parser) */
    k->seq++;
    if (!silent) k->count++, k->count_pending = 1;
    size_t n = strlen(code);
    asbi_buf_printf(&b, "%u %d %zu\n", k->seq, silent ? 1 : 0, n);
    rc = b.data && asbi_buf_append(&b, code, n) == 0 ? write_all(k->cmd_fd, b.data, b.len) : -1;
  } else {
    k->seq++;
    if (!silent) k->count++, k->count_pending = 1;
    int fd = open(k->cell_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    rc = fd >= 0 ? write_all(fd, code, strlen(code)) : -1;
    if (fd >= 0 && close(fd) != 0) rc = -1;
    asbi_buf_printf(&b,
                    "__asb_n=%u; IFS= read -r -d '' __asb_c <'%s'; eval \"$__asb_c\" </dev/null\n",
                    k->seq, k->cell_path);
    if (rc == 0) rc = b.data ? write_all(k->cmd_fd, b.data, b.len) : -1;
  }
  asbi_buf_free(&b);
  if (rc == 0) k->busy = 1;
  return rc;
}

void ci_kernel_interrupt(ci_kernel *k) {
  /* not once the execution is known to have ended (its reply came, or it
   * settles an interrupt already) */
  if (!k->busy || k->pid <= 0 || k->settling) return;
  if (k->kind == CI_KIND_JUPYTER && k->got_reply) return;
  /* again only for bash, which loses a SIGINT that comes while it forks a
   * command, and node (below) */
  if (k->interrupted && k->kind != CI_KIND_BASH && !(k->kind == CI_KIND_NODE && !k->sigint_sent))
    return;
  if (k->kind == CI_KIND_JUPYTER && k->interrupt_message) {
    k->int_reply_due = 1;
    jsend(k, k->control, "interrupt_request", "{}", NULL);
  } else {
    if (k->kind == CI_KIND_NODE && !k->interrupted) {
      /* First the interrupt named for this cell, which stops its await (see
       * drivers.c). A SIGINT only if it runs on (a synchronous loop, which
       * breakOnSigint breaks): node loses or keeps one that comes as a
       * breakOnSigint run ends, for the next run to throw. */
      char line[48];
      int n = snprintf(line, sizeof line, "{\"interrupt\":%u}\n", k->seq);
      write_all(k->cmd_fd, line, (size_t)n);
      k->interrupted = 1;
      return;
    }
    if (k->kind == CI_KIND_NODE) k->sigint_sent = 1;
    kill(-k->pid, SIGINT);
  }
  k->interrupted = 1;
}

void ci_kernel_destroy(ci_kernel *k) {
  if (!k) return;
  kill_reap(k, 0);
  if (k->shell) zmq_close(k->shell);
  if (k->iopub) zmq_close(k->iopub);
  if (k->control) zmq_close(k->control);
  if (k->hb) zmq_close(k->hb);
  ci_hmac_free(k->hmac);
  int fds[] = {k->pidfd, k->diag_fd, k->cmd_fd, k->out_fd, k->err_fd, k->ev_fd};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(fds); i++)
    if (fds[i] >= 0) close(fds[i]);
  if (k->conn_path[0]) unlink(k->conn_path);
  if (k->cell_path[0]) unlink(k->cell_path);
  asbi_buf_free(&k->evline);
  free(k);
}
