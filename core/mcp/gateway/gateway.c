/* mcp-gateway: E2B's `mcp` create option, served inside a sandbox.
 *
 *   GATEWAY_ACCESS_TOKEN=<token> mcp-gateway --config '<json>'
 *
 * What E2B's SDKs run (as root, in the foreground) right after creating a
 * sandbox from the `mcp-gateway` template. It starts every configured
 * stdio MCP server (gwconf.h: installCmd, then runCmd, in a session and
 * process group of its own), speaks MCP to each over its stdin/stdout,
 * and serves their tools together — each named "<prefix>.<tool>" — on one
 * Streamable HTTP endpoint, http://0.0.0.0:50005/mcp, which wants
 * `Authorization: Bearer <token>` (401 otherwise). The token is written to
 * /etc/mcp-gateway/.token (root, 0600: E2B's getMcpToken reads it as root).
 *
 * The command returns once the gateway is serving (exit 0), or with the
 * reason on stderr and exit status 1 when a server cannot be started
 * (its own stderr's last lines included), which the SDKs turn into
 * "Failed to start MCP gateway: <stderr>". The gateway itself goes on in
 * the background, in its own session, until SIGTERM.
 *
 * A server that exits is restarted when it is next needed (at most
 * GW_MAX_RESTARTS times); a call in flight when it exited, or one made
 * after it can no longer be restarted, is a tool error that says so.
 *
 * Written here rather than reusing agent-sandbox-mcp's session machinery:
 * that one is a server of its own tools over libagentsandbox, this is a
 * forwarder with no library client (the sandbox runs it on the host's
 * /usr with cJSON and libmicrohttpd only). SPDX-License-Identifier: Apache-2.0 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "gwconf.h"
#include "selftools.h"
#include "httpd/httpd.h"
#include "proto/pjson.h"
#include "util/buf.h"

extern char **environ;

#define GW_NAME "mcp-gateway"
#define GW_VERSION "1.0.0"
#define GW_MAX_RESTARTS 5
#define GW_MAX_BODY (4u << 20)
#define GW_MAX_LINE (16u << 20)
#define GW_INIT_TIMEOUT_MS 30000L
#define GW_CALL_TIMEOUT_MS 600000L
#define GW_TAIL 2048
#define GW_EXIT_GRACE_MS 2000

static const char *const revisions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                        "2024-10-07"};

/* ---- a pending request to a child ------------------------------------------------ */

typedef struct pend {
  struct pend *next;
  long id;
  cJSON *reply; /* the child's whole answer, or NULL */
  int done;
} pend;

typedef struct child {
  gw_server_conf *conf;
  char workdir[512], logpath[512];
  pthread_mutex_t mu; /* everything below */
  pthread_cond_t cv;
  pthread_mutex_t start_mu; /* one (re)start at a time */
  pid_t pid;
  int in_fd, out_fd;
  int alive; /* initialized and reading */
  int reader_running;
  pthread_t reader;
  int restarts;
  int last_status; /* wait status of the last exit, -1 none */
  long next_id;
  pend *pending;
  cJSON *tools; /* array, names as the child gave them */
} child;

static child *g_kids;
static size_t g_nkids;
static const char *g_token;
static FILE *g_log;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  if (!g_log) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(g_log, GW_NAME ": ");
  vfprintf(g_log, fmt, ap);
  fputc('\n', g_log);
  fflush(g_log);
  va_end(ap);
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The last GW_TAIL bytes of a server's stderr log (caller frees). */
static char *log_tail(const child *k) {
  char *out = calloc(1, GW_TAIL + 1);
  if (!out) return NULL;
  int fd = open(k->logpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return out;
  struct stat st;
  if (fstat(fd, &st) == 0) {
    off_t at = st.st_size > GW_TAIL ? st.st_size - GW_TAIL : 0;
    ssize_t n = pread(fd, out, GW_TAIL, at);
    if (n > 0) out[n] = 0;
  }
  close(fd);
  size_t l = strlen(out);
  while (l && (out[l - 1] == '\n' || out[l - 1] == ' ')) out[--l] = 0;
  return out;
}

static void describe_status(int st, char *buf, size_t n) {
  if (st < 0)
    snprintf(buf, n, "exited");
  else if (WIFEXITED(st))
    snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st))
    snprintf(buf, n, "was killed by signal %d", WTERMSIG(st));
  else
    snprintf(buf, n, "ended");
}

/* ---- talking to a child ---------------------------------------------------------- */

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

/* One line of JSON to the child (k->mu held). */
static int send_line(child *k, cJSON *msg) {
  char *t = cJSON_PrintUnformatted(msg);
  if (!t) return -1;
  size_t l = strlen(t);
  int rc = k->in_fd >= 0 ? write_all(k->in_fd, t, l) : -1;
  if (rc == 0) rc = write_all(k->in_fd, "\n", 1);
  cJSON_free(t);
  return rc;
}

static void handle_line(child *k, const char *line, size_t len) {
  cJSON *m = asbi_pj_parse(line, len, NULL);
  if (!cJSON_IsObject(m)) {
    logf_("%s: not a JSON-RPC message on stdout (ignored)", k->conf->key);
    cJSON_Delete(m);
    return;
  }
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
  pthread_mutex_lock(&k->mu);
  if (cJSON_IsString(method) && id) {
    /* a request of the server's own (roots, sampling, elicitation): the
     * gateway offers none of them */
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddNumberToObject(e, "code", -32601);
    cJSON_AddStringToObject(e, "message", "the gateway offers no client features");
    send_line(k, r);
    cJSON_Delete(r);
  } else if (!method && cJSON_IsNumber(id)) {
    for (pend *p = k->pending; p; p = p->next) {
      if (p->id == (long)id->valuedouble && !p->done) {
        p->reply = m;
        m = NULL;
        p->done = 1;
        pthread_cond_broadcast(&k->cv);
        break;
      }
    }
  } /* notifications: not forwarded (each HTTP answer is one JSON body) */
  pthread_mutex_unlock(&k->mu);
  cJSON_Delete(m);
}

static void *reader_main(void *arg) {
  child *k = arg;
  asbi_buf b;
  asbi_buf_init(&b, 0);
  char chunk[65536];
  int fd = k->out_fd;
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (asbi_buf_append(&b, chunk, (size_t)n) != 0) break;
    size_t start = 0;
    for (size_t i = 0; i < b.len; i++) {
      if (b.data[i] != '\n') continue;
      size_t l = i - start;
      if (l && b.data[start + l - 1] == '\r') l--;
      if (l) handle_line(k, b.data + start, l);
      start = i + 1;
    }
    if (start) {
      memmove(b.data, b.data + start, b.len - start);
      b.len -= start;
    }
    if (b.len > GW_MAX_LINE) {
      logf_("%s: a line over %u bytes on stdout: stopping it", k->conf->key, GW_MAX_LINE);
      break;
    }
  }
  asbi_buf_free(&b);
  /* the server is gone (or unusable): end it and wake every waiter */
  pthread_mutex_lock(&k->mu);
  pid_t pid = k->pid;
  pthread_mutex_unlock(&k->mu);
  /* its stdout ended: give it a moment to finish exiting on its own (so
   * its own exit status is what is reported), then end it and its group */
  int st = -1, reaped = 0;
  for (uint64_t until = now_ms() + GW_EXIT_GRACE_MS; pid > 0;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) {
      reaped = 1;
      break;
    }
    if (now_ms() >= until) break;
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  if (pid > 0) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  while (pid > 0 && !reaped && waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&k->mu);
  k->alive = 0;
  k->pid = -1;
  k->last_status = st;
  if (k->in_fd >= 0) close(k->in_fd);
  k->in_fd = -1;
  close(k->out_fd);
  k->out_fd = -1;
  for (pend *p = k->pending; p; p = p->next) p->done = 1;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
  char how[64];
  describe_status(st, how, sizeof how);
  logf_("%s %s", k->conf->key, how);
  return NULL;
}

/* Send a request and wait for its answer. NULL when the child is not
 * running, ended meanwhile, or did not answer in time (*why says which). */
static cJSON *child_rpc(child *k, const char *method, cJSON *params, long timeout_ms,
                        const char **why) {
  pthread_mutex_lock(&k->mu);
  if (k->in_fd < 0) {
    pthread_mutex_unlock(&k->mu);
    cJSON_Delete(params);
    *why = "exited"; /* the reader closed it: the server ended */
    return NULL;
  }
  pend p = {k->pending, ++k->next_id, NULL, 0};
  k->pending = &p;
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "jsonrpc", "2.0");
  cJSON_AddNumberToObject(m, "id", (double)p.id);
  cJSON_AddStringToObject(m, "method", method);
  if (params) cJSON_AddItemToObject(m, "params", params);
  int wrc = send_line(k, m);
  cJSON_Delete(m);
  uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
  while (wrc == 0 && !p.done) {
    uint64_t t = now_ms();
    if (t >= deadline) break;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t left = deadline - t;
    ts.tv_sec += (time_t)(left / 1000);
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&k->cv, &k->mu, &ts);
  }
  for (pend **pp = &k->pending; *pp; pp = &(*pp)->next)
    if (*pp == &p) {
      *pp = p.next;
      break;
    }
  pthread_mutex_unlock(&k->mu);
  if (!p.reply) *why = wrc != 0 || p.done ? "exited" : "did not answer in time";
  return p.reply;
}

static void child_notify(child *k, const char *method) {
  pthread_mutex_lock(&k->mu);
  if (k->in_fd >= 0) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "jsonrpc", "2.0");
    cJSON_AddStringToObject(m, "method", method);
    send_line(k, m);
    cJSON_Delete(m);
  }
  pthread_mutex_unlock(&k->mu);
}

/* ---- starting a child ------------------------------------------------------------ */

/* The environment a server gets: the gateway's (without the token) plus
 * its envs. Built before fork (no allocation in the child). */
static char **child_env(const gw_server_conf *c) {
  size_t n = 0, ne = 0;
  for (char **e = environ; *e; e++) n++;
  for (char **e = c->envs; e && *e; e++) ne++;
  char **v = calloc(n + ne + 1, sizeof *v);
  if (!v) return NULL;
  size_t j = 0;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    size_t kl = eq ? (size_t)(eq - *e) : strlen(*e);
    int overridden = 0;
    for (char **o = c->envs; o && *o; o++)
      if (!strncmp(*o, *e, kl) && (*o)[kl] == '=') overridden = 1;
    if (!overridden) v[j++] = *e;
  }
  for (char **o = c->envs; o && *o; o++) v[j++] = *o;
  return v;
}

/* fork + exec /bin/sh -c cmd in its own session, in workdir, stdin/stdout
 * on the fds given (-1: /dev/null), stderr to the server's log. */
static pid_t spawn_sh(child *k, const char *cmd, int in, int out) {
  char **envp = child_env(k->conf);
  if (!envp) return -1;
  int logfd = open(k->logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};
  sigset_t all;
  sigfillset(&all);
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    if (dup2(in >= 0 ? in : devnull, 0) < 0 ||
        dup2(out >= 0 ? out : (logfd >= 0 ? logfd : devnull), 1) < 0 ||
        dup2(logfd >= 0 ? logfd : devnull, 2) < 0)
      _exit(126);
    if (chdir(k->workdir) != 0) _exit(126);
    execve("/bin/sh", argv, envp);
    _exit(127);
  }
  free(envp);
  if (logfd >= 0) close(logfd);
  if (devnull >= 0) close(devnull);
  return pid;
}

static int mkdir_p(const char *path, mode_t mode) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, mode) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* Start (or restart) a server: run it, initialize, read its tools. 0, or
 * -1 with the reason in err. Takes k->start_mu. */
static int child_start(child *k, char *err, size_t n) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    snprintf(err, n, "pipe: %s", strerror(errno));
    return -1;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    snprintf(err, n, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t pid = spawn_sh(k, k->conf->run_cmd, in[0], out[1]);
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    snprintf(err, n, "fork: %s", strerror(errno));
    return -1;
  }
  pthread_mutex_lock(&k->mu);
  k->pid = pid;
  k->in_fd = in[1];
  k->out_fd = out[0];
  pthread_mutex_unlock(&k->mu);
  if (pthread_create(&k->reader, NULL, reader_main, k) != 0) {
    kill(-pid, SIGKILL);
    close(in[1]);
    close(out[0]);
    waitpid(pid, NULL, 0);
    snprintf(err, n, "cannot start a thread");
    return -1;
  }
  k->reader_running = 1;

  const char *why = NULL;
  cJSON *ip = cJSON_CreateObject();
  cJSON_AddStringToObject(ip, "protocolVersion", "2025-06-18");
  cJSON_AddObjectToObject(ip, "capabilities");
  cJSON *ci = cJSON_AddObjectToObject(ip, "clientInfo");
  cJSON_AddStringToObject(ci, "name", GW_NAME);
  cJSON_AddStringToObject(ci, "version", GW_VERSION);
  cJSON *r = child_rpc(k, "initialize", ip, GW_INIT_TIMEOUT_MS, &why);
  if (!r || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "result"))) {
    if (r) why = "refused initialize";
    cJSON_Delete(r);
    goto fail;
  }
  cJSON_Delete(r);
  child_notify(k, "notifications/initialized");
  /* every page of tools/list */
  cJSON *tools = cJSON_CreateArray();
  char *cursor = NULL;
  for (int page = 0; page < 1000; page++) {
    cJSON *lp = cJSON_CreateObject();
    if (cursor) cJSON_AddStringToObject(lp, "cursor", cursor);
    free(cursor);
    cursor = NULL;
    r = child_rpc(k, "tools/list", lp, GW_INIT_TIMEOUT_MS, &why);
    const cJSON *res = r ? cJSON_GetObjectItemCaseSensitive(r, "result") : NULL;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(res, "tools");
    if (!cJSON_IsArray(arr)) {
      if (r) why = "gave no tools/list result";
      cJSON_Delete(r);
      cJSON_Delete(tools);
      goto fail;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, arr) {
      const cJSON *nm = cJSON_GetObjectItemCaseSensitive(t, "name");
      if (cJSON_IsObject(t) && cJSON_IsString(nm))
        cJSON_AddItemToArray(tools, cJSON_Duplicate(t, 1));
    }
    const cJSON *nc = cJSON_GetObjectItemCaseSensitive(res, "nextCursor");
    if (cJSON_IsString(nc) && *nc->valuestring) cursor = strdup(nc->valuestring);
    cJSON_Delete(r);
    if (!cursor) break;
  }
  free(cursor);
  pthread_mutex_lock(&k->mu);
  cJSON_Delete(k->tools);
  k->tools = tools;
  k->alive = k->in_fd >= 0;
  pthread_mutex_unlock(&k->mu);
  logf_("%s: started (pid %d, %d tools)", k->conf->key, (int)pid, cJSON_GetArraySize(tools));
  return 0;

fail:
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  pthread_join(k->reader, NULL);
  k->reader_running = 0;
  {
    char how[64] = "";
    if (!strcmp(why, "exited")) describe_status(k->last_status, how, sizeof how);
    char *tail = log_tail(k);
    snprintf(err, n, "MCP server '%s' (runCmd %.60s%s) %s%s%s", k->conf->key, k->conf->run_cmd,
             strlen(k->conf->run_cmd) > 60 ? "..." : "", how[0] ? how : why,
             tail && *tail ? ": " : "", tail ? tail : "");
    free(tail);
  }
  return -1;
}

/* The server, running: restarts it if it ended (GW_MAX_RESTARTS times). */
static int child_ensure(child *k, char *err, size_t n) {
  pthread_mutex_lock(&k->start_mu);
  pthread_mutex_lock(&k->mu);
  int alive = k->alive;
  pthread_mutex_unlock(&k->mu);
  int rc = 0;
  if (!alive) {
    if (k->reader_running) {
      pthread_join(k->reader, NULL);
      k->reader_running = 0;
    }
    if (k->restarts >= GW_MAX_RESTARTS) {
      char how[64];
      describe_status(k->last_status, how, sizeof how);
      snprintf(err, n, "MCP server '%s' %s and was restarted %d times already: not again",
               k->conf->key, how, GW_MAX_RESTARTS);
      rc = -1;
    } else {
      k->restarts++;
      logf_("%s: restarting (%d of %d)", k->conf->key, k->restarts, GW_MAX_RESTARTS);
      rc = child_start(k, err, n);
    }
  }
  pthread_mutex_unlock(&k->start_mu);
  return rc;
}

static void child_stop(child *k) {
  pthread_mutex_lock(&k->mu);
  pid_t pid = k->pid;
  if (k->in_fd >= 0) close(k->in_fd); /* end of input: the polite stop */
  k->in_fd = -1;
  pthread_mutex_unlock(&k->mu);
  if (pid > 0) {
    kill(-pid, SIGTERM);
    kill(pid, SIGTERM);
  }
  if (k->reader_running) pthread_join(k->reader, NULL);
  k->reader_running = 0;
}

static int run_install(child *k, char *err, size_t n) {
  pid_t pid = spawn_sh(k, k->conf->install_cmd, -1, -1);
  if (pid < 0) {
    snprintf(err, n, "fork: %s", strerror(errno));
    return -1;
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL); /* what it left running in its group */
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  char how[64];
  describe_status(st, how, sizeof how);
  char *tail = log_tail(k);
  snprintf(err, n, "installCmd of MCP server '%s' (%.60s%s) %s%s%s", k->conf->key,
           k->conf->install_cmd, strlen(k->conf->install_cmd) > 60 ? "..." : "", how,
           tail && *tail ? ": " : "", tail ? tail : "");
  free(tail);
  return -1;
}

/* ---- the MCP endpoint ------------------------------------------------------------ */

static child *child_by_prefix(const char *name, size_t plen) {
  for (size_t i = 0; i < g_nkids; i++)
    if (strlen(g_kids[i].conf->prefix) == plen && !strncmp(g_kids[i].conf->prefix, name, plen))
      return &g_kids[i];
  return NULL;
}

static cJSON *rpc_error(const cJSON *id, int code, const char *msg) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "jsonrpc", "2.0");
  cJSON_AddItemToObject(r, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
  cJSON *e = cJSON_AddObjectToObject(r, "error");
  cJSON_AddNumberToObject(e, "code", code);
  cJSON_AddStringToObject(e, "message", msg);
  return r;
}

static cJSON *rpc_result(const cJSON *id, cJSON *result) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "jsonrpc", "2.0");
  cJSON_AddItemToObject(r, "id", cJSON_Duplicate(id, 1));
  cJSON_AddItemToObject(r, "result", result);
  return r;
}

static cJSON *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *tool_error(const char *fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cJSON *res = cJSON_CreateObject();
  cJSON *c = cJSON_AddArrayToObject(res, "content");
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "text");
  cJSON_AddStringToObject(t, "text", msg);
  cJSON_AddItemToArray(c, t);
  cJSON_AddBoolToObject(res, "isError", 1);
  return res;
}

static cJSON *do_initialize(const cJSON *id, const cJSON *params) {
  const cJSON *pv = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
  const char *rev = revisions[0];
  for (size_t i = 0; cJSON_IsString(pv) && i < sizeof revisions / sizeof *revisions; i++)
    if (!strcmp(pv->valuestring, revisions[i])) rev = revisions[i];
  cJSON *res = cJSON_CreateObject();
  cJSON_AddStringToObject(res, "protocolVersion", rev);
  cJSON *caps = cJSON_AddObjectToObject(res, "capabilities");
  cJSON *tc = cJSON_AddObjectToObject(caps, "tools");
  cJSON_AddBoolToObject(tc, "listChanged", 0);
  cJSON *si = cJSON_AddObjectToObject(res, "serverInfo");
  cJSON_AddStringToObject(si, "name", GW_NAME);
  cJSON_AddStringToObject(si, "version", GW_VERSION);
  cJSON_AddStringToObject(res, "instructions",
                          "Tools of the sandbox's MCP servers, each named <server>.<tool>, "
                          "and the sandbox's own (sandbox.run_command, sandbox.read_file, "
                          "sandbox.write_file, sandbox.list_files).");
  return rpc_result(id, res);
}

static cJSON *do_tools_list(const cJSON *id) {
  cJSON *res = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(res, "tools");
  for (size_t i = 0; i < g_nkids; i++) {
    child *k = &g_kids[i];
    char err[512];
    if (child_ensure(k, err, sizeof err) != 0) logf_("tools/list: %s", err);
    pthread_mutex_lock(&k->mu);
    const cJSON *t;
    cJSON_ArrayForEach(t, k->tools) {
      cJSON *d = cJSON_Duplicate(t, 1);
      const char *nm = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
      size_t l = strlen(k->conf->prefix) + strlen(nm) + 2;
      char *full = malloc(l);
      if (!d || !full) {
        cJSON_Delete(d);
        free(full);
        continue;
      }
      snprintf(full, l, "%s.%s", k->conf->prefix, nm);
      cJSON_ReplaceItemInObjectCaseSensitive(d, "name", cJSON_CreateString(full));
      free(full);
      cJSON_AddItemToArray(arr, d);
    }
    pthread_mutex_unlock(&k->mu);
  }
  cJSON *own = gw_self_tools();
  while (own && cJSON_GetArraySize(own) > 0)
    cJSON_AddItemToArray(arr, cJSON_DetachItemFromArray(own, 0));
  cJSON_Delete(own);
  return rpc_result(id, res);
}

static cJSON *do_tools_call(const cJSON *id, const cJSON *params) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
  if (!cJSON_IsString(name))
    return rpc_error(id, -32602, "tools/call: params.name must be a string");
  if (args && !cJSON_IsObject(args))
    return rpc_error(id, -32602, "tools/call: params.arguments must be an object");
  const char *dot = strchr(name->valuestring, '.');
  if (dot && (size_t)(dot - name->valuestring) == strlen(GW_SELF_PREFIX) &&
      !strncmp(name->valuestring, GW_SELF_PREFIX, strlen(GW_SELF_PREFIX))) {
    cJSON *empty = cJSON_CreateObject();
    cJSON *res = gw_self_call(dot + 1, args ? args : empty);
    cJSON_Delete(empty);
    if (res) return rpc_result(id, res);
    dot = NULL; /* an unknown sandbox.<tool> */
  }
  child *k = dot ? child_by_prefix(name->valuestring, (size_t)(dot - name->valuestring)) : NULL;
  if (!k || !dot[1]) {
    char msg[512];
    snprintf(msg, sizeof msg, "unknown tool '%.200s' (tools are named <server>.<tool>)",
             name->valuestring);
    return rpc_error(id, -32602, msg);
  }
  char err[4096];
  if (child_ensure(k, err, sizeof err) != 0) return rpc_result(id, tool_error("%s", err));
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "name", dot + 1);
  if (args) cJSON_AddItemToObject(p, "arguments", cJSON_Duplicate(args, 1));
  const char *why = NULL;
  cJSON *r = child_rpc(k, "tools/call", p, GW_CALL_TIMEOUT_MS, &why);
  if (!r) {
    char how[64] = "";
    if (!strcmp(why, "exited")) {
      /* the reader records the exit status before it wakes us */
      pthread_mutex_lock(&k->mu);
      describe_status(k->last_status, how, sizeof how);
      pthread_mutex_unlock(&k->mu);
    }
    return rpc_result(id, tool_error("MCP server '%s' %s during the call (it is restarted on the "
                                     "next one)",
                                     k->conf->key, how[0] ? how : why));
  }
  cJSON *res = cJSON_DetachItemFromObjectCaseSensitive(r, "result");
  cJSON *e = cJSON_DetachItemFromObjectCaseSensitive(r, "error");
  cJSON_Delete(r);
  if (res) {
    cJSON_Delete(e);
    return rpc_result(id, res);
  }
  cJSON *out = rpc_error(id, -32603, "the server gave no result");
  if (cJSON_IsObject(e))
    cJSON_ReplaceItemInObjectCaseSensitive(out, "error", e);
  else
    cJSON_Delete(e);
  return out;
}

static cJSON *dispatch(const cJSON *msg) {
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
  const char *m = method->valuestring;
  if (!strcmp(m, "initialize")) return do_initialize(id, params);
  if (!strcmp(m, "ping")) return rpc_result(id, cJSON_CreateObject());
  if (!strcmp(m, "tools/list")) return do_tools_list(id);
  if (!strcmp(m, "tools/call")) return do_tools_call(id, params);
  return rpc_error(id, -32601, "method not found");
}

typedef struct req {
  asbi_httpd_body body;
} req;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body,
                             const char *ctype) {
  struct MHD_Response *r =
      body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
  if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  if (status == 405) MHD_add_response_header(r, "Allow", "POST");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result reply_err(struct MHD_Connection *c, unsigned status, const char *msg) {
  struct MHD_Response *r = asbi_httpd_json_error(status, "%s", msg);
  if (!r) return MHD_NO;
  if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  if (status == 405) MHD_add_response_header(r, "Allow", "POST");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result reply_rpc(struct MHD_Connection *c, unsigned status, cJSON *msg) {
  char *t = msg ? cJSON_PrintUnformatted(msg) : NULL;
  cJSON_Delete(msg);
  if (!t) return reply_err(c, 500, "out of memory");
  /* cJSON's allocator is malloc here: MHD frees it with free() */
  return reply(c, status, t, "application/json");
}

static int authorized(struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
  h += 7;
  while (*h == ' ') h++;
  return asbi_httpd_token_eq(h, g_token);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **con_cls) {
  (void)cls;
  (void)version;
  req *r = *con_cls;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    asbi_httpd_body_init(&r->body, GW_MAX_BODY);
    *con_cls = r;
    return MHD_YES;
  }
  if (*size) {
    asbi_httpd_body_append(&r->body, data, *size);
    *size = 0;
    return MHD_YES;
  }
  if (strcmp(url, "/mcp") != 0) return reply_err(c, 404, "not found: the endpoint is /mcp");
  if (!authorized(c)) return reply_err(c, 401, "missing or invalid bearer token");
  if (strcmp(method, "POST") != 0)
    return reply_err(c, 405, "this gateway answers POST only (no server-sent stream)");
  if (r->body.too_big) return reply_err(c, 413, "message too large");
  const char *perr = NULL;
  cJSON *msg = asbi_pj_parse(r->body.buf.data ? r->body.buf.data : "", r->body.buf.len, &perr);
  if (!msg) return reply_rpc(c, 400, rpc_error(NULL, -32700, perr ? perr : "parse error"));
  if (!cJSON_IsObject(msg)) {
    cJSON_Delete(msg);
    return reply_rpc(c, 400, rpc_error(NULL, -32600, "one JSON-RPC message per request"));
  }
  const cJSON *method_j = cJSON_GetObjectItemCaseSensitive(msg, "method");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
  if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0 ||
      (method_j && !cJSON_IsString(method_j)) ||
      (id && !cJSON_IsString(id) && !cJSON_IsNumber(id))) {
    cJSON *e = rpc_error(NULL, -32600, "not a JSON-RPC 2.0 message");
    cJSON_Delete(msg);
    return reply_rpc(c, 400, e);
  }
  if (!method_j || !id) { /* a notification or a response: nothing to answer */
    cJSON_Delete(msg);
    return reply(c, 202, NULL, NULL);
  }
  cJSON *ans = dispatch(msg);
  cJSON_Delete(msg);
  return reply_rpc(c, 200, ans);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode t) {
  (void)cls;
  (void)c;
  (void)t;
  req *r = *con_cls;
  if (!r) return;
  asbi_httpd_body_free(&r->body);
  free(r);
  *con_cls = NULL;
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(FILE *f) {
  fprintf(f, "usage: GATEWAY_ACCESS_TOKEN=<token> " GW_NAME
             " --config JSON [--listen HOST:PORT] [--state-dir DIR] [--foreground]\n"
             "  --config      E2B's mcp option: {\"github/<owner>/<repo>\": {\"runCmd\": ...,\n"
             "                \"installCmd\"?: ..., \"envs\"?: {...}}, ...}\n"
             "  --listen      default 0.0.0.0:50005 (the endpoint is /mcp)\n"
             "  --state-dir   the token (.token), logs and servers' working directories;\n"
             "                default /etc/mcp-gateway\n"
             "  --foreground  do not go to the background once serving\n");
}

/* Report to the waiting parent: "O" ready, else the error text. */
static void report(int fd, const char *msg) {
  if (fd < 0) {
    if (msg) fprintf(stderr, GW_NAME ": %s\n", msg);
    return;
  }
  if (msg)
    write_all(fd, msg, strlen(msg));
  else
    write_all(fd, "O", 1);
  close(fd);
}

int main(int argc, char **argv) {
  const char *config = NULL, *listen_s = "0.0.0.0:50005", *state = "/etc/mcp-gateway";
  int foreground = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--foreground")) {
      foreground = 1;
    } else if (i + 1 < argc && !strcmp(a, "--config")) {
      config = argv[++i];
    } else if (i + 1 < argc && !strcmp(a, "--listen")) {
      listen_s = argv[++i];
    } else if (i + 1 < argc && !strcmp(a, "--state-dir")) {
      state = argv[++i];
    } else {
      fprintf(stderr, GW_NAME ": unknown or incomplete option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!config) {
    fprintf(stderr, GW_NAME ": --config JSON is required\n");
    usage(stderr);
    return 2;
  }
  const char *tok = getenv("GATEWAY_ACCESS_TOKEN");
  if (!tok || !*tok) {
    fprintf(stderr, GW_NAME ": GATEWAY_ACCESS_TOKEN must be set (the bearer token clients send)\n");
    return 2;
  }
  char *token = strdup(tok);
  unsetenv("GATEWAY_ACCESS_TOKEN"); /* the servers do not get it */
  g_token = token;
  char err[8192];
  gw_conf conf;
  if (gw_conf_parse(config, strlen(config), &conf, err, sizeof err) != 0) {
    fprintf(stderr, GW_NAME ": %s\n", err);
    free(token);
    return 2;
  }
  char host[256] = "";
  const char *colon = strrchr(listen_s, ':');
  int port = colon ? atoi(colon + 1) : -1;
  if (!colon || (size_t)(colon - listen_s) >= sizeof host || port < 0 || port > 65535) {
    fprintf(stderr, GW_NAME ": --listen %s: want HOST:PORT\n", listen_s);
    gw_conf_free(&conf);
    free(token);
    return 2;
  }
  memcpy(host, listen_s, (size_t)(colon - listen_s));
  asbi_httpd_addr addr = {NULL, host, port};
  int lfd = asbi_httpd_listen(&addr, &port, err, sizeof err);
  if (lfd < 0) {
    fprintf(stderr, GW_NAME ": cannot listen on %s: %s (is a gateway already running?)\n", listen_s,
            err);
    gw_conf_free(&conf);
    free(token);
    return 1;
  }
  if (mkdir_p(state, 0755) != 0) {
    fprintf(stderr, GW_NAME ": %s: %s\n", state, strerror(errno));
    return 1;
  }

  signal(SIGPIPE, SIG_IGN);
  int pfd[2] = {-1, -1};
  if (!foreground) {
    if (pipe2(pfd, O_CLOEXEC) != 0) {
      perror(GW_NAME ": pipe");
      return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      perror(GW_NAME ": fork");
      return 1;
    }
    if (pid > 0) { /* wait for the gateway to be serving, or its reason */
      close(pfd[1]);
      close(lfd);
      asbi_buf b;
      asbi_buf_init(&b, 0);
      char chunk[4096];
      ssize_t n;
      while ((n = read(pfd[0], chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        asbi_buf_append(&b, chunk, (size_t)n);
      }
      int ok = b.len == 1 && b.data[0] == 'O';
      if (!ok)
        fprintf(stderr, GW_NAME ": %.*s\n", (int)b.len,
                b.len ? b.data : "the gateway ended before it was serving");
      else
        printf("MCP gateway serving on http://%s:%d/mcp\n", host, port);
      asbi_buf_free(&b);
      gw_conf_free(&conf);
      free(token);
      return ok ? 0 : 1;
    }
    close(pfd[0]);
    setsid();
    int dn = open("/dev/null", O_RDWR);
    if (dn >= 0) {
      dup2(dn, 0);
      dup2(dn, 1);
      if (dn > 2) close(dn);
    }
  }
  char path[600];
  snprintf(path, sizeof path, "%s/gateway.log", state);
  if (!foreground) {
    int lf = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lf >= 0) {
      dup2(lf, 2);
      close(lf);
    }
  }
  g_log = stderr;
  /* signals go to the main thread's sigwait only */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);

  int rc = 1;
  g_nkids = conf.n;
  g_kids = calloc(conf.n, sizeof *g_kids);
  size_t started = 0;
  asbi_httpd *h = NULL;
  if (!g_kids) {
    report(pfd[1], "out of memory");
    goto out;
  }
  for (size_t i = 0; i < conf.n; i++) {
    child *k = &g_kids[i];
    k->conf = &conf.servers[i];
    k->pid = -1;
    k->in_fd = k->out_fd = -1;
    k->last_status = -1;
    pthread_mutex_init(&k->mu, NULL);
    pthread_mutex_init(&k->start_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    snprintf(k->workdir, sizeof k->workdir, "%s/servers/%s", state, k->conf->prefix);
    snprintf(k->logpath, sizeof k->logpath, "%s/logs/%s.log", state, k->conf->prefix);
    snprintf(path, sizeof path, "%s/logs", state);
    if (mkdir_p(path, 0700) != 0 || mkdir_p(k->workdir, 0755) != 0) {
      snprintf(err, sizeof err, "%s: %s", k->workdir, strerror(errno));
      report(pfd[1], err);
      goto out;
    }
  }
  for (size_t i = 0; i < conf.n; i++) {
    child *k = &g_kids[i];
    if ((k->conf->install_cmd && run_install(k, err, sizeof err) != 0) ||
        child_start(k, err, sizeof err) != 0) {
      report(pfd[1], err);
      goto out;
    }
    started = i + 1;
  }
  asbi_httpd_opts ho = {
      .listen_fd = lfd,
      .handler = handler,
      .completed = on_done,
      .max_connections = 256,
      .head_timeout_ms = 10000,
      .idle_timeout_s = 120,
  };
  lfd = -1;
  h = asbi_httpd_start(&ho, err, sizeof err);
  if (!h) {
    report(pfd[1], err);
    goto out;
  }
  /* the token, for E2B's getMcpToken (which reads it as root) */
  snprintf(path, sizeof path, "%s/.token", state);
  int tf = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (tf < 0 || fchmod(tf, 0600) != 0 || write_all(tf, token, strlen(token)) != 0) {
    snprintf(err, sizeof err, "%s: %s", path, strerror(errno));
    if (tf >= 0) close(tf);
    report(pfd[1], err);
    goto out;
  }
  close(tf);
  logf_("serving on http://%s:%d/mcp (%zu servers)", host, port, conf.n);
  report(pfd[1], NULL);
  pfd[1] = -1;
  if (foreground) {
    printf("MCP gateway serving on http://%s:%d/mcp\n", host, port);
    fflush(stdout);
  }
  int sig = 0;
  sigwait(&sigs, &sig);
  logf_("signal %d: stopping", sig);
  rc = 0;
out:
  if (lfd >= 0) close(lfd);
  asbi_httpd_quiesce(h);
  for (size_t i = 0; i < started; i++) child_stop(&g_kids[i]);
  asbi_httpd_stop(h);
  for (size_t i = 0; g_kids && i < conf.n; i++) {
    cJSON_Delete(g_kids[i].tools);
    pthread_mutex_destroy(&g_kids[i].mu);
    pthread_mutex_destroy(&g_kids[i].start_mu);
    pthread_cond_destroy(&g_kids[i].cv);
  }
  free(g_kids);
  gw_conf_free(&conf);
  free(token);
  return rc;
}
