/* Running a program in a sandbox and collecting what it prints (build
 * steps, a template's custom commands and ready checks), and the
 * environment such programs get.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/http1.h"
#include "sbxexec.h"
#include "util/buf.h"
#include "util/util.h"

static void add_env(char ***v, size_t *n, size_t *cap, const char *k, const char *val) {
  /* later entries override earlier ones with the same key */
  size_t kl = strlen(k);
  for (size_t i = 0; i < *n; i++)
    if (!strncmp((*v)[i], k, kl) && (*v)[i][kl] == '=') {
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_printf(&b, "%s=%s", k, val);
      char *s = asbi_buf_detach(&b, NULL);
      if (s) {
        free((*v)[i]);
        (*v)[i] = s;
      }
      return;
    }
  if (*n + 1 >= *cap) {
    size_t nc = *cap ? *cap * 2 : 32;
    char **nv = realloc(*v, nc * sizeof *nv);
    if (!nv) return;
    *v = nv;
    *cap = nc;
  }
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "%s=%s", k, val);
  char *s = asbi_buf_detach(&b, NULL);
  if (s) (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
}

static void add_map(char ***v, size_t *n, size_t *cap, const cJSON *m) {
  const cJSON *it;
  cJSON_ArrayForEach(it, m) {
    if (cJSON_IsString(it) && it->string) add_env(v, n, cap, it->string, it->valuestring);
  }
}

char **sbx_env(int uid, const cJSON *tmpl_env, const cJSON *sandbox_env, const cJSON *call_env,
               const char *const *extra) {
  char **v = NULL;
  size_t n = 0, cap = 0;
  int root = uid == 0;
  add_env(&v, &n, &cap, "PATH",
          root ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
               : "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin");
  add_env(&v, &n, &cap, "HOME", root ? "/root" : "/home/user");
  add_env(&v, &n, &cap, "USER", root ? "root" : "user");
  add_env(&v, &n, &cap, "LOGNAME", root ? "root" : "user");
  add_env(&v, &n, &cap, "LANG", "C.UTF-8");
  add_env(&v, &n, &cap, "TERM", "xterm");
  add_env(&v, &n, &cap, "E2B_SANDBOX", "true");
  add_map(&v, &n, &cap, tmpl_env);
  add_map(&v, &n, &cap, sandbox_env);
  add_map(&v, &n, &cap, call_env);
  for (const char *const *e = extra; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - *e), *e);
    add_env(&v, &n, &cap, key, eq + 1);
  }
  if (!v) {
    v = calloc(1, sizeof *v);
  }
  return v;
}

void sbx_env_free(char **env) {
  for (size_t i = 0; env && env[i]; i++) free(env[i]);
  free(env);
}

/* Appends to b, keeping at most max bytes: the head, or the tail if
 * keep_tail (the start of the kept text is then marked). */
static void capped_append(asbi_buf *b, const char *p, size_t n, size_t max, int keep_tail) {
  if (!keep_tail) {
    if (b->len < max) asbi_buf_append(b, p, n < max - b->len ? n : max - b->len);
    return;
  }
  asbi_buf_append(b, p, n);
  if (b->len > max + max / 2) {
    static const char mark[] = "[... earlier output dropped ...]\n";
    size_t drop = b->len - max;
    memmove(b->data + sizeof mark - 1, b->data + drop, b->len - drop);
    memcpy(b->data, mark, sizeof mark - 1);
    b->len = b->len - drop + sizeof mark - 1;
    b->data[b->len] = '\0';
  }
}

int sbx_run(asbe_sandbox *iso, const sbx_run_opts *o, sbx_run_result *res) {
  return sbx_run_until(iso, o, NULL, res);
}

/* 1 once *stop is set (stop may be NULL). */
static int stop_set(const int *stop) {
  return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

int sbx_run_until(asbe_sandbox *iso, const sbx_run_opts *o, const int *stop, sbx_run_result *res) {
  memset(res, 0, sizeof *res);
  res->status = -1;
  asbe_exec_opts x;
  memset(&x, 0, sizeof x);
  x.argv = o->argv;
  x.envp = o->envp;
  x.uid = (uid_t)o->uid;
  x.gid = (gid_t)o->uid;
  x.gid_set = 1;
  x.cwd = o->cwd ? o->cwd : "/";
  x.pipes = ASBE_PIPE_STDOUT | ASBE_PIPE_STDERR | (o->in ? ASBE_PIPE_STDIN : 0);
  x.stdin_fd = -1;
  uint64_t t0 = asbi_now_ms();
  asbe_proc *p = NULL;
  int rc = asbe_sandbox_exec(iso, &x, &p);
  if (rc) return rc;
  int fin = asbe_proc_stdin(p), fout = asbe_proc_stdout(p), ferr = asbe_proc_stderr(p);
  if (fin >= 0) fcntl(fin, F_SETFL, fcntl(fin, F_GETFL) | O_NONBLOCK);
  size_t in_off = 0;
  if (o->in && o->in_len == 0) {
    asbe_proc_close_stdin(p);
    fin = -1;
  }
  uint64_t deadline = o->timeout_ms > 0 ? t0 + (uint64_t)o->timeout_ms : UINT64_MAX;
  size_t max = o->max_output ? o->max_output : (1u << 20);
  while (fout >= 0 || ferr >= 0) {
    uint64_t now = asbi_now_ms();
    if (now >= deadline) {
      res->timed_out = 1;
      break;
    }
    if (stop_set(stop)) { /* polls wake at least once a second to see it */
      res->stopped = 1;
      break;
    }
    struct pollfd pf[3] = {{fout, POLLIN, 0}, {ferr, POLLIN, 0}, {fin, POLLOUT, 0}};
    int wait = deadline == UINT64_MAX ? 1000 : (int)(deadline - now > 1000 ? 1000 : deadline - now);
    int pr = poll(pf, 3, wait);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    if (fin >= 0 && (pf[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(fin, (const char *)o->in + in_off, o->in_len - in_off);
      if (w > 0) in_off += (size_t)w;
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off >= o->in_len) {
        asbe_proc_close_stdin(p);
        fin = -1;
      }
    }
    for (int i = 0; i < 2; i++) {
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int *fd = i ? &ferr : &fout;
      char chunk[16384];
      ssize_t n = read(*fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *fd = -1; /* closed by asbe_proc_free */
        continue;
      }
      asbi_buf *dst = i && !o->merge ? &res->err : &res->out;
      capped_append(dst, chunk, (size_t)n, max, o->keep_tail);
    }
  }
  if (fin >= 0) asbe_proc_close_stdin(p);
  int status = 0;
  if (!res->timed_out && !res->stopped) {
    /* its output ended: wait for its exit, a second at a time for stop */
    for (;;) {
      uint64_t now = asbi_now_ms();
      if (now >= deadline) {
        res->timed_out = 1;
        break;
      }
      if (stop_set(stop)) {
        res->stopped = 1;
        break;
      }
      int left = deadline == UINT64_MAX || deadline - now > 1000 ? 1000 : (int)(deadline - now);
      int w = asbe_proc_wait(p, left, &status);
      if (w == 0) break;     /* reaped */
      if (w != -ETIMEDOUT) { /* as a timeout: killed and reaped below */
        res->timed_out = 1;
        break;
      }
    }
  }
  if (res->timed_out || res->stopped) {
    asbe_proc_signal(p, SIGKILL);
    asbe_proc_wait(p, -1, &status);
  }
  asbe_proc_free(p);
  res->status = res->timed_out || res->stopped ? -1 : status;
  res->exit_code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (res->timed_out || res->stopped) res->exit_code = -1;
  res->ms = (int64_t)(asbi_now_ms() - t0);
  if (!res->out.data) asbi_buf_puts(&res->out, "");
  if (!res->err.data) asbi_buf_puts(&res->err, "");
  return 0;
}

void sbx_run_result_free(sbx_run_result *r) {
  asbi_buf_free(&r->out);
  asbi_buf_free(&r->err);
}

/* Waits until fd is ready for ev or the deadline passes: 0 or -errno. */
static int wait_fd(int fd, short ev, uint64_t deadline) {
  for (;;) {
    uint64_t now = asbi_now_ms();
    if (now >= deadline) return -ETIMEDOUT;
    struct pollfd p = {fd, ev, 0};
    int n = poll(&p, 1, (int)(deadline - now));
    if (n > 0) return 0;
    if (n < 0 && errno != EINTR) return -errno;
  }
}

int sbx_http_fd(int fd, const char *method, const char *path, const char *const *headers,
                const char *body, size_t len, char **reply, int timeout_ms, size_t max) {
  if (reply) *reply = NULL;
  asbi_buf req = ASBI_BUF_INIT;
  asbi_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", method, path);
  for (const char *const *h = headers; h && *h; h++) asbi_buf_printf(&req, "%s\r\n", *h);
  if (body) asbi_buf_printf(&req, "Content-Length: %zu\r\n", len);
  asbi_buf_puts(&req, "\r\n");
  if (body) asbi_buf_append(&req, body, len);
  uint64_t deadline = asbi_now_ms() + (uint64_t)timeout_ms;
  int rc = req.data ? 0 : -ENOMEM;
  for (size_t off = 0; !rc && off < req.len;) {
    if ((rc = wait_fd(fd, POLLOUT, deadline))) break;
    ssize_t w = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      rc = -errno;
    else if (w == 0)
      rc = -EIO;
    else
      off += (size_t)w;
  }
  asbi_buf_free(&req);
  asbi_buf in = ASBI_BUF_INIT;
  while (!rc) {
    if ((rc = wait_fd(fd, POLLIN, deadline))) break;
    char chunk[8192];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = -errno;
    if (n <= 0) break;
    if (asbi_buf_append(&in, chunk, (size_t)n) || in.len > max) rc = -E2BIG;
  }
  close(fd);
  if (rc) {
    asbi_buf_free(&in);
    return rc;
  }
  asbi_h1_resp h;
  long head = in.data ? asbi_h1_parse_response(in.data, in.len, 0, &h) : -1;
  if (head <= 0) {
    asbi_buf_free(&in);
    return -EPROTO;
  }
  if (reply) {
    asbi_buf out = ASBI_BUF_INIT;
    char *b = in.data + head;
    size_t blen = in.len - (size_t)head;
    if (h.body == ASBI_H1_BODY_CHUNKED) {
      asbi_h1_chunked ch;
      asbi_h1_chunked_init(&ch);
      size_t used = blen, outn = 0;
      if (asbi_h1_chunked_decode(&ch, b, &used, &outn) == 0) asbi_buf_append(&out, b, outn);
    } else if (h.body == ASBI_H1_BODY_LENGTH) {
      asbi_buf_append(&out, b, h.content_length < blen ? (size_t)h.content_length : blen);
    } else if (h.body == ASBI_H1_BODY_CLOSE) {
      asbi_buf_append(&out, b, blen);
    }
    if (!out.data) asbi_buf_puts(&out, "");
    *reply = asbi_buf_detach(&out, NULL);
  }
  int status = h.status;
  asbi_buf_free(&in);
  return status;
}

/* One request to a port inside the sandbox, whole reply (small replies
 * only: a command server's). Returns the HTTP status or a negative errno. */
int sbx_http(asbe_sandbox *iso, int port, const char *method, const char *path,
             const char *const *headers, const char *body, size_t len, char **reply,
             int timeout_ms) {
  *reply = NULL;
  int fd = asbe_sandbox_connect_tcp(iso, (uint16_t)port);
  if (fd < 0) return fd;
  return sbx_http_fd(fd, method, path, headers, body, len, reply, timeout_ms, 8u << 20);
}

int sbx_envd_request(asbe_sandbox *iso, const char *token, const char *method, const char *path,
                     const char *body, char **reply, int timeout_ms) {
  if (reply) *reply = NULL;
  int fd = asbe_sandbox_connect_unix(iso, "envd.sock");
  if (fd < 0) return fd;
  char hdr[160];
  snprintf(hdr, sizeof hdr, "X-Access-Token: %s", token);
  const char *hs[4];
  size_t n = 0;
  hs[n++] = "User-Agent: agent-sandboxd";
  if (token[0]) hs[n++] = hdr;
  if (body) hs[n++] = "Content-Type: application/json";
  hs[n] = NULL;
  return sbx_http_fd(fd, method, path, hs, body, body ? strlen(body) : 0, reply, timeout_ms,
                     4u << 20);
}
