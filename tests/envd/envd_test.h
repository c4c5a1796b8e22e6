/* Helpers for the envd tests and benchmark: start an envd, a small
 * keep-alive HTTP/1.1 client on raw sockets (so tests can also send
 * malformed bytes), Connect envelopes. Header-only; each test includes it
 * once. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_TEST_H
#define ASB_ENVD_TEST_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct et_envd {
  pid_t pid;
  int port;
} et_envd;

/* Starts envd (ENVD_BIN or the path given at build time) with extra args
 * (NULL-terminated), under the program wrap names (NULL-terminated, its
 * arguments before envd's path: e.g. strace; NULL: none); e->pid is the
 * first program's. 0 or -1. */
static inline int et_start_wrapped(et_envd *e, const char *const *wrap, const char *const *extra) {
  const char *bin = getenv("ENVD_BIN");
#ifdef ENVD_BIN_PATH
  if (!bin) bin = ENVD_BIN_PATH;
#endif
  if (!bin) return -1;
  int p[2];
  if (pipe(p) != 0) return -1;
  const char *argv[48];
  int n = 0;
  for (int i = 0; wrap && wrap[i] && n < 16; i++) argv[n++] = wrap[i];
  argv[n++] = bin;
  argv[n++] = "--port";
  argv[n++] = "0";
  for (int i = 0; extra && extra[i] && n < 46; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  char buf[64];
  size_t got = 0;
  while (got < sizeof buf - 1) {
    ssize_t r = read(p[0], buf + got, sizeof buf - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    if (memchr(buf, '\n', got)) break;
  }
  close(p[0]);
  buf[got] = '\0';
  e->pid = pid;
  e->port = atoi(buf);
  return e->port > 0 ? 0 : -1;
}

static inline int et_start(et_envd *e, const char *const *extra) {
  return et_start_wrapped(e, NULL, extra);
}

static inline int et_stop(et_envd *e) {
  int st = 0;
  kill(e->pid, SIGTERM);
  waitpid(e->pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- HTTP client --------------------------------------------------------- */
typedef struct et_conn {
  int fd;
  int port;
  char buf[65536];
  size_t have, off;
} et_conn;

typedef struct et_resp {
  int status;
  char headers[8192];
  char *body;
  size_t len;
} et_resp;

static inline void et_resp_free(et_resp *r) {
  free(r->body);
  memset(r, 0, sizeof *r);
}

static inline int et_connect(et_conn *c, int port) {
  memset(c, 0, sizeof *c);
  c->port = port;
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(c->fd);
    c->fd = -1;
    return -1;
  }
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return 0;
}

static inline void et_close(et_conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

static inline int et_send(et_conn *c, const void *d, size_t n) {
  const char *p = d;
  while (n) {
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static inline int et_getc(et_conn *c) {
  if (c->off == c->have) {
    ssize_t r;
    do r = recv(c->fd, c->buf, sizeof c->buf, 0);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return -1;
    c->have = (size_t)r;
    c->off = 0;
  }
  return (unsigned char)c->buf[c->off++];
}

static inline int et_line(et_conn *c, char *out, size_t n) {
  size_t i = 0;
  for (;;) {
    int ch = et_getc(c);
    if (ch < 0) return -1;
    if (ch == '\n') break;
    if (i + 1 < n) out[i++] = (char)ch;
  }
  if (i && out[i - 1] == '\r') i--;
  out[i] = '\0';
  return (int)i;
}

/* Reads n body bytes; with sink the bytes are counted, not kept. */
typedef void (*et_sink)(void *ud, const char *d, size_t n);

static inline int et_read_n(et_conn *c, et_resp *r, size_t n, et_sink sink, void *ud) {
  while (n) {
    if (c->off == c->have) {
      ssize_t got;
      do got = recv(c->fd, c->buf, sizeof c->buf, 0);
      while (got < 0 && errno == EINTR);
      if (got <= 0) return -1;
      c->have = (size_t)got;
      c->off = 0;
    }
    size_t take = c->have - c->off;
    if (take > n) take = n;
    if (sink) {
      sink(ud, c->buf + c->off, take);
    } else {
      char *nb = realloc(r->body, r->len + take + 1);
      if (!nb) return -1;
      r->body = nb;
      memcpy(r->body + r->len, c->buf + c->off, take);
      r->body[r->len + take] = '\0';
    }
    r->len += take;
    c->off += take;
    n -= take;
  }
  return 0;
}

static inline const char *et_header(const et_resp *r, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = r->headers; *p;) {
    if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      p += nl + 1;
      while (*p == ' ') p++;
      return p;
    }
    const char *e = strchr(p, '\n');
    if (!e) break;
    p = e + 1;
  }
  return NULL;
}

/* The status line and headers only (et_read_body reads the rest): for a
 * stream, its head says the server has set it up. */
static inline int et_read_head(et_conn *c, et_resp *r) {
  memset(r, 0, sizeof *r);
  char line[8192];
  if (et_line(c, line, sizeof line) < 0) return -1;
  if (sscanf(line, "HTTP/1.%*d %d", &r->status) != 1) return -1;
  size_t hl = 0;
  for (;;) {
    int n = et_line(c, line, sizeof line);
    if (n < 0) return -1;
    if (n == 0) break;
    if (hl + (size_t)n + 2 < sizeof r->headers) {
      memcpy(r->headers + hl, line, (size_t)n);
      hl += (size_t)n;
      r->headers[hl++] = '\n';
      r->headers[hl] = '\0';
    }
  }
  return 0;
}

static inline int et_read_body(et_conn *c, et_resp *r, et_sink sink, void *ud) {
  char line[8192];
  r->body = calloc(1, 1);
  const char *te = et_header(r, "Transfer-Encoding");
  const char *cl = et_header(r, "Content-Length");
  if (te && strncasecmp(te, "chunked", 7) == 0) {
    for (;;) {
      if (et_line(c, line, sizeof line) < 0) return -1;
      size_t n = (size_t)strtoul(line, NULL, 16);
      if (n == 0) {
        while (et_line(c, line, sizeof line) > 0) {
        }
        break;
      }
      if (et_read_n(c, r, n, sink, ud) != 0) return -1;
      if (et_line(c, line, sizeof line) < 0) return -1;
    }
  } else if (cl) {
    if (et_read_n(c, r, (size_t)strtoull(cl, NULL, 10), sink, ud) != 0) return -1;
  } else if (r->status != 204 && r->status != 304) {
    /* until close */
    while (et_read_n(c, r, 1, sink, ud) == 0) {
    }
  }
  return 0;
}

static inline int et_read_resp(et_conn *c, et_resp *r, et_sink sink, void *ud) {
  if (et_read_head(c, r) != 0) return -1;
  return et_read_body(c, r, sink, ud);
}

/* One request on c (reconnects if needed). extra_headers: "K: V\r\n"... */
static inline int et_request(et_conn *c, const char *method, const char *path,
                             const char *extra_headers, const void *body, size_t len, et_resp *r) {
  char head[4096];
  int hn = snprintf(head, sizeof head,
                    "%s %s HTTP/1.1\r\nHost: localhost\r\n%sContent-Length: "
                    "%zu\r\n\r\n",
                    method, path, extra_headers ? extra_headers : "", len);
  memset(r, 0, sizeof *r);
  for (int attempt = 0; attempt < 2; attempt++) {
    if (c->fd < 0 && et_connect(c, c->port) != 0) return -1;
    if (et_send(c, head, (size_t)hn) == 0 && (!len || et_send(c, body, len) == 0) &&
        et_read_resp(c, r, NULL, NULL) == 0)
      return 0;
    et_resp_free(r);
    et_close(c);
  }
  return -1;
}

/* Connect helpers. */
static inline int et_unary(et_conn *c, const char *method, const char *json, const char *extra,
                           et_resp *r) {
  char path[256], h[2048];
  snprintf(path, sizeof path, "/%s", method);
  snprintf(h, sizeof h, "Content-Type: application/json\r\n%s", extra ? extra : "");
  return et_request(c, "POST", path, h, json, strlen(json), r);
}

static inline int et_stream(et_conn *c, const char *method, const char *json, const char *extra,
                            et_resp *r) {
  char path[256], h[2048];
  snprintf(path, sizeof path, "/%s", method);
  snprintf(h, sizeof h, "Content-Type: application/connect+json\r\n%s", extra ? extra : "");
  size_t n = strlen(json);
  char *env = malloc(n + 5);
  env[0] = 0;
  env[1] = (char)(n >> 24);
  env[2] = (char)(n >> 16);
  env[3] = (char)(n >> 8);
  env[4] = (char)n;
  memcpy(env + 5, json, n);
  int rc = et_request(c, "POST", path, h, env, n + 5, r);
  free(env);
  return rc;
}

static inline int et_contains(const et_resp *r, const char *s) {
  return r->body && memmem(r->body, r->len, s, strlen(s)) != NULL;
}

/* Pointer to the JSON of the end-stream envelope in a stream body ("" if
 * none); *nmsg = number of data envelopes. */
static inline const char *et_end_json(et_resp *r, int *nmsg) {
  size_t i = 0;
  int n = 0;
  static _Thread_local char end[4096];
  end[0] = '\0';
  while (i + 5 <= r->len) {
    unsigned char *h = (unsigned char *)r->body + i;
    size_t l = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
    if (i + 5 + l > r->len) break;
    if (h[0] & 2)
      snprintf(end, sizeof end, "%.*s", (int)l, r->body + i + 5);
    else
      n++;
    i += 5 + l;
  }
  if (nmsg) *nmsg = n;
  return end;
}

static inline long et_proc_status(pid_t pid, const char *key) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%d/status", pid);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  long v = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, kl) == 0 && line[kl] == ':') v = atol(line + kl + 1);
  fclose(f);
  return v;
}

static inline int et_count_fds(pid_t pid) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/fd", pid);
  DIR *d = opendir(p);
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* Zombie children of pid. */
static inline int et_count_zombies(pid_t pid) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%s/stat", de->d_name);
    FILE *f = fopen(p, "r");
    if (!f) continue;
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[r] = '\0';
    char *cp = strrchr(buf, ')');
    char st;
    int ppid;
    if (cp && sscanf(cp + 2, "%c %d", &st, &ppid) == 2 && st == 'Z' && ppid == pid) n++;
  }
  closedir(d);
  return n;
}

static inline double et_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
