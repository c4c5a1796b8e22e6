/* L1 transport on libcurl.
 *
 * Design: the pool is a stack of idle "slots", each a curl multi handle with
 * one easy handle. Connections live in the multi's connection cache, so a
 * slot that goes back to the pool keeps its connections alive for the next
 * call. A call takes a slot (or makes one), drives the transfer on the
 * calling thread with curl_multi_poll(), and returns the slot. Concurrent
 * calls use different slots, so no curl handle is ever used by two threads
 * at once. Cancellation wakes the poll with curl_multi_wakeup(); the same
 * poll doubles as the cancellable back-off sleep between retries. DNS and
 * TLS sessions are shared between slots through a locked CURLSH.
 *
 * SPDX-License-Identifier: Apache-2.0 */
#include "http.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "util/util.h"
#include "internal.h"

#define POOL_MAX_IDLE 32
#define DEFAULT_MAX_BODY (64u * 1024u * 1024u)
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define BACKOFF_BASE_MS 100L
#define BACKOFF_CAP_MS 5000L
#define RETRY_AFTER_MAX_S 10 /* longer waits go back to the caller as 429 */
#define IO_BUFFER_SIZE (256L * 1024L)

typedef struct slot {
  CURLM *multi;
  CURL *easy;
  struct slot *next;
} slot;

struct asbi_http {
  pthread_mutex_t mu;
  slot *idle;
  unsigned nidle;
  CURLSH *share;
  pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
  atomic_uint_fast64_t requests, connections, retries;
};

/* ---- share locking ------------------------------------------------------ */

static void share_lock(CURL *e, curl_lock_data d, curl_lock_access a, void *ud) {
  asbi_http *h = ud;
  (void)e;
  (void)a;
  if ((unsigned)d < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&h->share_mu[d]);
}

static void share_unlock(CURL *e, curl_lock_data d, void *ud) {
  asbi_http *h = ud;
  (void)e;
  if ((unsigned)d < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&h->share_mu[d]);
}

int asbi_http_new(asbi_http **out) {
  int rc = asbi_global_hold();
  if (rc) return rc;
  asbi_http *h = calloc(1, sizeof *h);
  if (!h) {
    asbi_global_release();
    return asbi_oom();
  }
  pthread_mutex_init(&h->mu, NULL);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&h->share_mu[i], NULL);
  h->share = curl_share_init();
  if (!h->share) {
    asbi_http_free(h);
    return asbi_oom();
  }
  curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(h->share, CURLSHOPT_USERDATA, h);
  curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  *out = h;
  return ASB_OK;
}

static void slot_free(slot *s) {
  if (!s) return;
  if (s->easy) curl_easy_cleanup(s->easy);
  if (s->multi) curl_multi_cleanup(s->multi);
  free(s);
}

void asbi_http_free(asbi_http *h) {
  if (!h) return;
  while (h->idle) {
    slot *s = h->idle;
    h->idle = s->next;
    slot_free(s);
  }
  if (h->share) curl_share_cleanup(h->share);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&h->share_mu[i]);
  pthread_mutex_destroy(&h->mu);
  free(h);
  asbi_global_release();
}

void asbi_http_get_stats(asbi_http *h, asbi_http_stats *out) {
  out->requests = atomic_load(&h->requests);
  out->connections = atomic_load(&h->connections);
  out->retries = atomic_load(&h->retries);
}

/* ---- close-on-exec for libcurl's own descriptors -------------------------- */

/* The probes below go to the kernel with syscall(), not through libc's
 * wrappers: they look at descriptor *numbers* that another thread of the
 * host may be creating at that instant (an accept, a socket), which
 * ThreadSanitizer's descriptor model reports as a data race although no
 * memory is shared; what they may act on is checked below. */
static int fd_flags(int fd) {
  return (int)syscall(SYS_fcntl, fd, F_GETFD);
}

static int fstat_raw(int fd, struct stat *st) {
#ifdef SYS_fstat
  return (int)syscall(SYS_fstat, fd, st);
#else
  return fstat(fd, st);
#endif
}

/* fd is an inheritable AF_UNIX stream socket; *ino is its inode. */
static int inheritable_unix_stream(int fd, unsigned long long *ino) {
  int dom = 0, type = 0, fl;
  socklen_t dl = sizeof dom, tl = sizeof type;
  struct stat st;
  /* cheapest first: most of a careful host's descriptors are close-on-exec */
  if (fd < 0 || (fl = fd_flags(fd)) < 0 || (fl & FD_CLOEXEC) ||
      syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) != 0 || dom != AF_UNIX ||
      syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM ||
      fstat_raw(fd, &st) != 0)
    return 0;
  *ino = (unsigned long long)st.st_ino;
  return 1;
}

/* The inheritable AF_UNIX stream sockets open in this process, as
 * (descriptor, inode) pairs in *out (free it); -1 when /proc cannot say
 * or memory runs out (then nothing is known, not "none"). */
typedef struct {
  int fd;
  unsigned long long ino;
} usock;

static int unix_socks(usock **out, size_t *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir("/proc/self/fd"); /* O_CLOEXEC and a directory: never a candidate */
  if (!d) return -1;
  usock *v = NULL;
  int rc = 0;
  size_t cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    char *endp;
    long fd = strtol(e->d_name, &endp, 10);
    unsigned long long ino;
    if (*endp || endp == e->d_name || fd < 0 || fd > 0x7fffffff ||
        !inheritable_unix_stream((int)fd, &ino))
      continue;
    if (*n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      usock *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        rc = -1;
        break;
      }
      v = nv;
      cap = nc;
    }
    v[(*n)++] = (usock){(int)fd, ino};
  }
  closedir(d);
  *out = v;
  return rc;
}

static int usock_has(const usock *v, size_t n, usock u) {
  for (size_t i = 0; i < n; i++)
    if (v[i].fd == u.fd && v[i].ino == u.ino) return 1;
  return 0;
}

/* curl_multi_init (libcurl 7.88; still so upstream, curl issue #13618)
 * makes the multi handle's wakeup socketpair (what curl_multi_wakeup
 * writes to) without SOCK_CLOEXEC, and libcurl lets no one see or flag
 * it: every child a program using this library starts (popen, system,
 * fork+exec, posix_spawn) would hold two sockets of every pooled slot
 * for its whole life. The pair is found by what it is, not by where it
 * should be: the inheritable AF_UNIX stream sockets (descriptor and
 * inode) that exist after curl_multi_init and did not before. It is
 * flagged close-on-exec only if there are exactly two such and a
 * curl_multi_wakeup of the new handle makes one of them readable (the
 * byte is left for curl_multi_poll, which drains it: one early return of
 * the first poll). The library's own handles are made one at a time
 * (make_mu), so another thread of this library cannot add a pair; another
 * thread of the host opening or closing other descriptors meanwhile
 * changes nothing (predicting the lowest free numbers did: a /proc file
 * opened in that instant moved the pair, which stayed inheritable). Only
 * the host itself making an inheritable AF_UNIX stream socket in that
 * instant leaves the pair as libcurl made it. A libcurl that makes its
 * wakeup close-on-exec (an eventfd in 8.x) shows no new sockets and needs
 * nothing here. */
static pthread_mutex_t make_mu = PTHREAD_MUTEX_INITIALIZER;

static CURLM *multi_new(void) {
  pthread_mutex_lock(&make_mu);
  size_t nb = 0, na = 0;
  usock *before = NULL, *after = NULL;
  int known = unix_socks(&before, &nb) == 0;
  CURLM *m = curl_multi_init();
  known = known && m && unix_socks(&after, &na) == 0;
  usock fresh[2];
  size_t nf = 0;
  for (size_t i = 0; known && i < na; i++)
    if (!usock_has(before, nb, after[i])) {
      if (nf < 2) fresh[nf] = after[i];
      nf++;
    }
  if (nf == 2 && curl_multi_wakeup(m) == CURLM_OK) {
    int p0 = 0, p1 = 0;
    if (syscall(SYS_ioctl, fresh[0].fd, FIONREAD, &p0) != 0) p0 = 0;
    if (syscall(SYS_ioctl, fresh[1].fd, FIONREAD, &p1) != 0) p1 = 0;
    if ((p0 > 0) != (p1 > 0)) {
      syscall(SYS_fcntl, fresh[0].fd, F_SETFD, FD_CLOEXEC);
      syscall(SYS_fcntl, fresh[1].fd, F_SETFD, FD_CLOEXEC);
    }
  }
  free(before);
  free(after);
  pthread_mutex_unlock(&make_mu);
  return m;
}

static slot *slot_get(asbi_http *h) {
  pthread_mutex_lock(&h->mu);
  slot *s = h->idle;
  if (s) {
    h->idle = s->next;
    h->nidle--;
  }
  pthread_mutex_unlock(&h->mu);
  if (s) return s;
  s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->multi = multi_new();
  s->easy = curl_easy_init();
  if (!s->multi || !s->easy) {
    slot_free(s);
    return NULL;
  }
  return s;
}

static void slot_put(asbi_http *h, slot *s) {
  pthread_mutex_lock(&h->mu);
  if (h->nidle < POOL_MAX_IDLE) {
    s->next = h->idle;
    h->idle = s;
    h->nidle++;
    s = NULL;
  }
  pthread_mutex_unlock(&h->mu);
  slot_free(s);
}

/* ---- response helpers --------------------------------------------------- */

void asbi_http_resp_free(asbi_http_resp *r) {
  if (!r) return;
  asbi_buf_free(&r->body);
  for (size_t i = 0; i < r->nhdrs; i++) {
    free(r->hdr_names[i]);
    free(r->hdr_values[i]);
  }
  free(r->hdr_names);
  free(r->hdr_values);
  r->hdr_names = r->hdr_values = NULL;
  r->nhdrs = r->hdr_cap = 0;
}

static void resp_reset(asbi_http_resp *r) {
  size_t max = r->body.max;
  asbi_http_resp_free(r);
  asbi_buf_init(&r->body, max);
  r->status = 0;
  r->body_streamed = 0;
}

const char *asbi_http_resp_header(const asbi_http_resp *r, const char *name) {
  for (size_t i = 0; i < r->nhdrs; i++)
    if (asbi_strcaseeq(r->hdr_names[i], name)) return r->hdr_values[i];
  return NULL;
}

static int resp_add_header(asbi_http_resp *r, const char *name, size_t nlen, const char *val,
                           size_t vlen) {
  if (r->nhdrs == r->hdr_cap) {
    size_t cap = r->hdr_cap ? r->hdr_cap * 2 : 16;
    if (cap > 1024) return -1; /* absurd header count */
    char **n = realloc(r->hdr_names, cap * sizeof *n);
    if (!n) return -1;
    r->hdr_names = n;
    char **v = realloc(r->hdr_values, cap * sizeof *v);
    if (!v) return -1;
    r->hdr_values = v;
    r->hdr_cap = cap;
  }
  char *nn = asbi_strndup(name, nlen);
  char *vv = asbi_strndup(val, vlen);
  if (!nn || !vv) {
    free(nn);
    free(vv);
    return -1;
  }
  for (char *p = nn; *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p + 32);
  r->hdr_names[r->nhdrs] = nn;
  r->hdr_values[r->nhdrs] = vv;
  r->nhdrs++;
  return 0;
}

int asbi_http_parse_retry_after(const char *v) {
  if (!v) return -1;
  while (*v == ' ') v++;
  int64_t secs;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\r')) n--;
  if (n && asbi_parse_i64(v, n, &secs) == 0)
    return secs < 0 ? -1 : (secs > 86400 * 365 ? 86400 * 365 : (int)secs);
  time_t when = curl_getdate(v, NULL);
  if (when < 0) return -1;
  time_t now = time(NULL);
  return when <= now ? 0 : (int)(when - now);
}

/* ---- one transfer attempt ----------------------------------------------- */

#define STREAM_PAUSE_AT (1u << 20) /* pause the transfer past 1 MiB unread */

typedef struct xfer {
  const asbi_http_req *req;
  asbi_http_resp *resp;
  CURL *easy;
  int may_retry_status; /* a 429/502/503 may still be retried */
  int began;            /* status known, body mode decided */
  int retry_status;     /* this response is a retryable status */
  int streaming;        /* body goes to on_data / the pull buffer */
  int pull;             /* stream mode: body goes to `pending` */
  int paused;
  int delivered; /* user saw something: no more retries */
  int cb_rc;     /* a callback's abort code */
  int too_big;
  int read_err;
  size_t body_off;
  uint64_t last_rx_ms; /* last body bytes (stream idle detection) */
  asbi_buf pending;    /* stream mode: received, not yet handed out */
  char errbuf[CURL_ERROR_SIZE];
} xfer;

static int is_retry_status(long st) {
  return st == 429 || st == 502 || st == 503;
}

static int begin_body(xfer *x) {
  if (x->began) return 0;
  x->began = 1;
  long st = 0;
  curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &st);
  x->resp->status = st;
  if (x->may_retry_status && is_retry_status(st)) {
    x->retry_status = 1;
    return 0; /* buffered, never shown to callbacks */
  }
  x->delivered = 1;
  if (x->req->on_headers) {
    int rc = x->req->on_headers(x->req->ud, x->resp);
    if (rc) {
      x->cb_rc = rc;
      return -1;
    }
  }
  x->streaming = (x->pull || x->req->on_data) && st < 400;
  x->resp->body_streamed = x->streaming;
  return 0;
}

static size_t on_write(char *p, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  size_t n = sz * nm;
  x->last_rx_ms = asbi_now_ms();
  if (x->streaming && x->pull) {
    if (x->pending.len >= STREAM_PAUSE_AT) {
      x->paused = 1;
      return CURL_WRITEFUNC_PAUSE; /* curl keeps the data for later */
    }
    if (asbi_buf_append(&x->pending, p, n) != 0) {
      x->cb_rc = asbi_oom();
      return 0;
    }
    return n;
  }
  if (x->streaming) {
    /* No callback once the call is cancelled or its handle stopped (a free
     * that returned must not see another one start). */
    if (asbi_cancel_requested(x->req->cancel) || asbi_cancel_requested(x->req->stop)) {
      x->cb_rc = asbi_err(ASB_ECANCELED, "%s %s: cancelled",
                          x->req->method ? x->req->method : "GET", x->req->url);
      return 0;
    }
    int rc = x->req->on_data(x->req->ud, p, n);
    if (rc) {
      x->cb_rc = rc;
      return 0;
    }
    return n;
  }
  if (asbi_buf_append(&x->resp->body, p, n) != 0) {
    x->too_big = 1;
    return 0;
  }
  return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  size_t n = sz * nm;
  if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
    /* A new header block (after 1xx or a redirect) replaces the last. */
    resp_reset(x->resp);
    return n;
  }
  if (n <= 2) { /* blank line: end of this block */
    long st = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &st);
    if (st >= 200 && begin_body(x) != 0) return 0;
    return n;
  }
  const char *colon = memchr(p, ':', n);
  if (!colon) return n;
  size_t nlen = (size_t)(colon - p);
  const char *v = colon + 1;
  size_t vlen = n - nlen - 1;
  while (vlen && (*v == ' ' || *v == '\t')) {
    v++;
    vlen--;
  }
  while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' ')) vlen--;
  if (resp_add_header(x->resp, p, nlen, v, vlen) != 0) return 0;
  return n;
}

static size_t on_read(char *buf, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  size_t n = sz * nm;
  const asbi_http_req *r = x->req;
  if (r->body) {
    size_t left = r->body_len - x->body_off;
    if (n > left) n = left;
    memcpy(buf, (const char *)r->body + x->body_off, n);
    x->body_off += n;
    return n;
  }
  size_t got = r->read(r->ud, buf, n);
  if (got == ASBI_HTTP_READ_ABORT) {
    x->read_err = 1;
    return CURL_READFUNC_ABORT;
  }
  return got;
}

static int on_seek(void *ud, curl_off_t off, int origin) {
  xfer *x = ud;
  if (origin != SEEK_SET || off != 0) return CURL_SEEKFUNC_CANTSEEK;
  if (x->req->body) {
    x->body_off = 0;
    return CURL_SEEKFUNC_OK;
  }
  if (x->req->rewind && x->req->rewind(x->req->ud) == 0) return CURL_SEEKFUNC_OK;
  return CURL_SEEKFUNC_CANTSEEK;
}

static void wake_multi(void *target) {
  curl_multi_wakeup((CURLM *)target);
}

static int is_conn_error(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return 1;
    default:
      return 0;
  }
}

static struct curl_slist *add_headers(struct curl_slist *l, const char *const *hs, int *ok) {
  for (; hs && *hs && *ok; hs++) {
    struct curl_slist *n = curl_slist_append(l, *hs);
    if (!n) {
      *ok = 0;
      return l;
    }
    l = n;
  }
  return l;
}

static struct curl_slist *build_headers(const asbi_http_req *req) {
  int ok = 1;
  struct curl_slist *hl = NULL;
  hl = add_headers(hl, req->headers, &ok);
  hl = add_headers(hl, req->headers2, &ok);
  const char *fixed[] = {"Expect:", NULL, NULL};
  if (req->read && !req->body && req->body_size < 0) fixed[1] = "Transfer-Encoding: chunked";
  hl = add_headers(hl, fixed, &ok);
  if (!ok) {
    curl_slist_free_all(hl);
    return NULL;
  }
  return hl;
}

static long remaining_ms(uint64_t deadline_ms) {
  if (!deadline_ms) return 0;
  uint64_t now = asbi_now_ms();
  return now >= deadline_ms ? -1 : (long)(deadline_ms - now);
}

/* Sleep up to ms, waking early on cancellation. Returns ASB_ECANCELED or 0. */
static int cancellable_sleep(slot *s, const asbi_http_req *req, long ms) {
  uint64_t end = asbi_now_ms() + (uint64_t)ms;
  for (;;) {
    if (asbi_cancel_requested(req->cancel) || asbi_cancel_requested(req->stop))
      return ASB_ECANCELED;
    long left = remaining_ms(end);
    if (left <= 0) return 0;
    curl_multi_poll(s->multi, NULL, 0, (int)left, NULL);
  }
}

static long backoff_ms(int attempt) {
  long ms = BACKOFF_BASE_MS << (attempt > 6 ? 6 : attempt);
  if (ms > BACKOFF_CAP_MS) ms = BACKOFF_CAP_MS;
  unsigned char r = 0;
  asbi_random_bytes(&r, 1);
  return ms * 3 / 4 + (ms / 2) * r / 255; /* ±25 % jitter */
}

/* libcurl (7.88) makes its sockets without SOCK_CLOEXEC, so every child
 * its host forks and execs would inherit this library's pooled
 * connections (and keep them open past their use: a host, FFI or not,
 * cannot know about them). We make the socket ourselves, close-on-exec. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a) {
  (void)ud;
  (void)purpose;
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void setup_easy(CURL *e, const asbi_http_req *req, xfer *x, struct curl_slist *hl,
                       asbi_http *h, long timeout_ms) {
  curl_easy_reset(e);
  curl_easy_setopt(e, CURLOPT_URL, req->url);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_SHARE, h->share);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, IO_BUFFER_SIZE);
  curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, IO_BUFFER_SIZE);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(
      e, CURLOPT_CONNECTTIMEOUT_MS,
      req->connect_timeout_ms > 0 ? req->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS);
  if (timeout_ms > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  if (req->unix_socket) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
  if (req->accept_encoding) curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, req->accept_encoding);
  const char *m = req->method ? req->method : "GET";
  int has_body = req->body || req->read;
  if (has_body) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, x);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
    curl_off_t size = req->body ? (curl_off_t)req->body_len : (curl_off_t)req->body_size;
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, size);
    if (strcmp(m, "POST") != 0) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
  } else if (strcmp(m, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (strcmp(m, "GET") == 0) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
    if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    }
  }
}

/* What to drive a transfer until. */
typedef enum { UNTIL_DONE, UNTIL_BEGAN, UNTIL_DATA } until_t;

typedef struct driver {
  asbi_http *h;
  slot *s;
  const asbi_http_req *req;
  xfer x;
  int active; /* easy handle added to the multi */
  int done;   /* transfer finished */
  CURLcode result;
  uint64_t deadline;        /* overall (whole call / stream opening); 0 = none */
  long idle_timeout_ms;     /* stream: max silence while not paused; 0 = none */
  asb_cancel *extra_cancel; /* stream reads: a second token for one read */
} driver;

static void driver_finish_attempt(driver *d) {
  if (!d->active) return;
  long nconn = 0;
  curl_easy_getinfo(d->s->easy, CURLINFO_NUM_CONNECTS, &nconn);
  if (nconn > 0) atomic_fetch_add(&d->h->connections, (uint64_t)nconn);
  curl_multi_remove_handle(d->s->multi, d->s->easy);
  d->active = 0;
}

/* Drive the transfer until the condition holds or it finishes. Returns 0,
 * ASB_ECANCELED or ASB_ETIMEOUT (the transfer is left as it is). */
static int drive(driver *d, until_t until) {
  xfer *x = &d->x;
  for (;;) {
    if (!d->done) {
      int running = 0;
      CURLMcode mc = curl_multi_perform(d->s->multi, &running);
      if (mc != CURLM_OK) {
        d->result = CURLE_FAILED_INIT;
        snprintf(x->errbuf, sizeof x->errbuf, "%s", curl_multi_strerror(mc));
        d->done = 1;
      }
      int q;
      CURLMsg *msg;
      while ((msg = curl_multi_info_read(d->s->multi, &q)))
        if (msg->msg == CURLMSG_DONE) {
          d->result = msg->data.result;
          d->done = 1;
        }
    }
    if (d->done) return 0;
    if (until == UNTIL_BEGAN && x->began && !x->retry_status) return 0;
    if (until == UNTIL_DATA && x->pending.len > 0) return 0;
    if (asbi_cancel_requested(d->req->cancel) || asbi_cancel_requested(d->req->stop) ||
        asbi_cancel_requested(d->extra_cancel))
      return ASB_ECANCELED;
    long wait = 1000;
    if (d->deadline) {
      long left = remaining_ms(d->deadline);
      if (left < 0) return ASB_ETIMEOUT;
      if (left < wait) wait = left + 1;
    }
    if (d->idle_timeout_ms > 0 && !x->paused) {
      uint64_t idle = asbi_now_ms() - x->last_rx_ms;
      if (idle >= (uint64_t)d->idle_timeout_ms) return ASB_ETIMEOUT;
      if ((long)((uint64_t)d->idle_timeout_ms - idle) < wait)
        wait = (long)((uint64_t)d->idle_timeout_ms - idle) + 1;
    }
    curl_multi_poll(d->s->multi, NULL, 0, (int)wait, NULL);
  }
}

/* Outcome of a finished (or abandoned) attempt. */
enum { ATTEMPT_OK, ATTEMPT_RETRY, ATTEMPT_FAIL };

/* Decide what a finished attempt means; on RETRY the back-off sleep was
 * already taken. *rc holds the error for FAIL. */
static int judge(driver *d, int attempt, int max_retries, int *rc) {
  xfer *x = &d->x;
  const asbi_http_req *req = d->req;
  const char *m = req->method ? req->method : "GET";
  if (x->cb_rc) {
    *rc = x->cb_rc < 0 ? x->cb_rc : ASB_EUSER;
    if (asb_error_last()->code != *rc) asbi_err(*rc, "%s %s: aborted by callback", m, req->url);
    return ATTEMPT_FAIL;
  }
  if (x->too_big) {
    *rc = asbi_err(ASB_EPROTOCOL, "%s %s: response body exceeds %zu bytes", m, req->url,
                   x->resp->body.max);
    return ATTEMPT_FAIL;
  }
  if (x->read_err) {
    if (asb_error_last()->code == ASB_OK)
      asbi_err(ASB_EUSER, "%s %s: request body source failed", m, req->url);
    *rc = asb_error_last()->code;
    return ATTEMPT_FAIL;
  }
  long wait = -1;
  if (d->result == CURLE_OK) {
    if (!x->began && begin_body(x) != 0) {
      *rc = x->cb_rc < 0 ? x->cb_rc : ASB_EUSER;
      return ATTEMPT_FAIL;
    }
    if (!x->retry_status) return ATTEMPT_OK;
    int ra = asbi_http_parse_retry_after(asbi_http_resp_header(x->resp, "retry-after"));
    if (ra <= RETRY_AFTER_MAX_S) wait = ra >= 0 ? ra * 1000L : backoff_ms(attempt);
  } else if (d->result == CURLE_OPERATION_TIMEDOUT) {
    *rc = asbi_err(ASB_ETIMEOUT, "%s %s: timed out: %s", m, req->url,
                   x->errbuf[0] ? x->errbuf : curl_easy_strerror(d->result));
    return ATTEMPT_FAIL;
  } else if (is_conn_error(d->result) && !x->delivered && attempt < max_retries) {
    wait = backoff_ms(attempt);
  }
  if (wait >= 0 && (!d->deadline || remaining_ms(d->deadline) > wait)) {
    atomic_fetch_add(&d->h->retries, 1);
    if (cancellable_sleep(d->s, req, wait)) {
      *rc = asbi_err(ASB_ECANCELED, "%s %s: cancelled", m, req->url);
      return ATTEMPT_FAIL;
    }
    return ATTEMPT_RETRY;
  }
  if (d->result == CURLE_OK) {
    /* A retryable status we are not retrying: it is the final response. */
    x->retry_status = 0;
    if (req->on_headers && (*rc = req->on_headers(req->ud, x->resp)) != 0) {
      *rc = *rc < 0 ? *rc : ASB_EUSER;
      return ATTEMPT_FAIL;
    }
    return ATTEMPT_OK;
  }
  *rc = asbi_err(ASB_ECONNECTION, "%s %s: %s", m, req->url,
                 x->errbuf[0] ? x->errbuf : curl_easy_strerror(d->result));
  return ATTEMPT_FAIL;
}

static int driver_begin(driver *d, asbi_http *h, const asbi_http_req *req) {
  memset(d, 0, sizeof *d);
  d->h = h;
  d->req = req;
  d->s = slot_get(h);
  if (!d->s) return asbi_oom();
  int rc = asbi_cancel_register(req->cancel, wake_multi, d->s->multi);
  if (rc == ASB_OK && (rc = asbi_cancel_register(req->stop, wake_multi, d->s->multi)))
    asbi_cancel_unregister(req->cancel, d->s->multi);
  if (rc) {
    slot_put(h, d->s);
    return rc;
  }
  d->deadline = req->timeout_ms > 0 ? asbi_now_ms() + (uint64_t)req->timeout_ms : 0;
  return ASB_OK;
}

static void driver_end(driver *d, struct curl_slist *hl) {
  driver_finish_attempt(d);
  asbi_cancel_unregister(d->req->cancel, d->s->multi);
  asbi_cancel_unregister(d->req->stop, d->s->multi);
  /* The easy handle still points at the header list: detach before free. */
  curl_easy_setopt(d->s->easy, CURLOPT_HTTPHEADER, NULL);
  curl_slist_free_all(hl);
  asbi_buf_free(&d->x.pending);
  slot_put(d->h, d->s);
}

/* Runs attempts until the response is final (whole call: finished; stream:
 * headers of a non-retried response arrived). */
static int run_attempts(driver *d, asbi_http_resp *resp, struct curl_slist *hl, int pull) {
  const asbi_http_req *req = d->req;
  const char *m = req->method ? req->method : "GET";
  int rewindable = !req->read || req->body || req->rewind;
  int max_retries = (req->idempotent && rewindable && req->max_retries > 0) ? req->max_retries : 0;
  for (int attempt = 0;; attempt++) {
    xfer *x = &d->x;
    asbi_buf_free(&x->pending);
    memset(x, 0, sizeof *x);
    x->req = req;
    x->resp = resp;
    x->easy = d->s->easy;
    x->pull = pull;
    x->may_retry_status = attempt < max_retries;
    x->last_rx_ms = asbi_now_ms();
    d->done = 0;
    d->result = CURLE_OK;
    resp_reset(resp);
    long left = remaining_ms(d->deadline);
    if (left < 0)
      return asbi_err(ASB_ETIMEOUT, "%s %s: timed out after %ld ms", m, req->url, req->timeout_ms);
    if (attempt > 0 && !req->body && req->read && req->rewind && req->rewind(req->ud) != 0)
      return asbi_err(ASB_ECONNECTION, "%s %s: request body cannot be replayed", m, req->url);
    /* Streams enforce their opening deadline themselves, since curl's
     * timeout would also cut the open-ended body. */
    setup_easy(d->s->easy, req, x, hl, d->h, pull ? 0 : left);
    atomic_fetch_add(&d->h->requests, 1);
    curl_multi_add_handle(d->s->multi, d->s->easy);
    d->active = 1;
    int rc = drive(d, pull ? UNTIL_BEGAN : UNTIL_DONE);
    if (rc == ASB_ECANCELED) return asbi_err(ASB_ECANCELED, "%s %s: cancelled", m, req->url);
    if (rc == ASB_ETIMEOUT)
      return asbi_err(ASB_ETIMEOUT, "%s %s: timed out after %ld ms", m, req->url, req->timeout_ms);
    if (pull && !d->done) {
      if (d->x.resp->status < 400) return ASB_OK; /* the stream is open */
      /* Error replies are small: read them whole now. */
      rc = drive(d, UNTIL_DONE);
      if (rc) return asbi_err(rc, "%s %s: %s", m, req->url, asb_strerror(rc));
    }
    driver_finish_attempt(d);
    int verdict = judge(d, attempt, max_retries, &rc);
    if (verdict == ATTEMPT_OK) return ASB_OK;
    if (verdict == ATTEMPT_FAIL) return rc;
  }
}

int asbi_http_do(asbi_http *h, const asbi_http_req *req, asbi_http_resp *resp) {
  asbi_buf_init(&resp->body, req->max_body ? req->max_body : DEFAULT_MAX_BODY);
  struct curl_slist *hl = build_headers(req);
  if (!hl) return asbi_oom();
  driver d;
  int rc = driver_begin(&d, h, req);
  if (rc) {
    curl_slist_free_all(hl);
    return rc;
  }
  rc = run_attempts(&d, resp, hl, 0);
  driver_end(&d, hl);
  return rc;
}

/* ---- pull streams ------------------------------------------------------- */

struct asbi_http_stream {
  driver d;
  asbi_http_req req; /* private copy: the caller's may go away */
  char *url;
  void *body;
  struct curl_slist *hl;
  asbi_http_resp *resp;
  asbi_buf handed; /* the chunk returned by the last read */
  int eof;
};

int asbi_http_stream_open(asbi_http *h, const asbi_http_req *req, asbi_http_resp *resp,
                          asbi_http_stream **out) {
  asbi_buf_init(&resp->body, req->max_body ? req->max_body : DEFAULT_MAX_BODY);
  if (req->on_data || req->read)
    return asbi_err(ASB_EINVAL, "streams take a memory body and no on_data");
  asbi_http_stream *st = calloc(1, sizeof *st);
  if (!st) return asbi_oom();
  st->req = *req;
  st->url = asbi_strdup(req->url);
  if (req->body_len) st->body = malloc(req->body_len);
  if (!st->url || (req->body_len && !st->body)) {
    free(st->url);
    free(st->body);
    free(st);
    return asbi_oom();
  }
  if (req->body_len) memcpy(st->body, req->body, req->body_len);
  st->req.url = st->url;
  st->req.body = req->body ? (st->body ? st->body : "") : NULL;
  st->resp = resp;
  st->hl = build_headers(req); /* copies the caller's header strings */
  st->req.headers = st->req.headers2 = NULL;
  int rc = st->hl ? driver_begin(&st->d, h, &st->req) : asbi_oom();
  if (rc) {
    curl_slist_free_all(st->hl);
    free(st->url);
    free(st->body);
    free(st);
    return rc;
  }
  rc = run_attempts(&st->d, resp, st->hl, 1);
  if (rc) {
    asbi_http_stream_close(st);
    return rc;
  }
  st->d.deadline = 0; /* the request timeout covered the opening only */
  st->d.idle_timeout_ms = req->idle_timeout_ms;
  st->d.x.last_rx_ms = asbi_now_ms();
  st->eof = st->d.done || resp->status >= 400;
  *out = st;
  return ASB_OK;
}

int asbi_http_stream_read(asbi_http_stream *st, const char **data, size_t *len) {
  return asbi_http_stream_read_ex(st, data, len, 0, NULL);
}

static int stream_read(asbi_http_stream *st, const char **data, size_t *len);

int asbi_http_stream_read_ex(asbi_http_stream *st, const char **data, size_t *len, long timeout_ms,
                             asb_cancel *extra) {
  driver *d = &st->d;
  if (extra) {
    int rc = asbi_cancel_register(extra, wake_multi, d->s->multi);
    if (rc) return rc;
  }
  d->extra_cancel = extra;
  d->deadline = timeout_ms > 0 ? asbi_now_ms() + (uint64_t)timeout_ms : 0;
  int rc = stream_read(st, data, len);
  d->deadline = 0;
  d->extra_cancel = NULL;
  if (extra) asbi_cancel_unregister(extra, d->s->multi);
  return rc;
}

static int stream_read(asbi_http_stream *st, const char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  asbi_buf_clear(&st->handed);
  driver *d = &st->d;
  xfer *x = &d->x;
  const char *m = st->req.method ? st->req.method : "GET";
  for (;;) {
    if (x->pending.len > 0) {
      asbi_buf tmp = st->handed;
      st->handed = x->pending;
      x->pending = tmp;
      asbi_buf_clear(&x->pending);
      if (x->paused && !d->done) {
        x->paused = 0;
        curl_easy_pause(d->s->easy, CURLPAUSE_CONT);
      }
      *data = st->handed.data;
      *len = st->handed.len;
      return ASB_OK;
    }
    if (st->eof) return ASB_OK;
    if (d->done) {
      st->eof = 1;
      driver_finish_attempt(d);
      if (x->cb_rc) return x->cb_rc < 0 ? x->cb_rc : ASB_EUSER;
      if (d->result == CURLE_OK) return ASB_OK;
      return asbi_err(ASB_ECONNECTION, "%s %s: stream broke: %s", m, st->url,
                      x->errbuf[0] ? x->errbuf : curl_easy_strerror(d->result));
    }
    int rc = drive(d, UNTIL_DATA);
    if (rc == ASB_ECANCELED) return asbi_err(ASB_ECANCELED, "%s %s: cancelled", m, st->url);
    if (rc == ASB_ETIMEOUT && d->deadline && asbi_now_ms() >= d->deadline)
      return asbi_err(ASB_ETIMEOUT, "%s %s: nothing received in time", m, st->url);
    if (rc == ASB_ETIMEOUT)
      return asbi_err(ASB_ETIMEOUT, "%s %s: no data for %ld ms", m, st->url, d->idle_timeout_ms);
  }
}

void asbi_http_stream_set_tokens(asbi_http_stream *st, asb_cancel *cancel, asb_cancel *stop) {
  if (!st) return;
  CURLM *m = st->d.s->multi;
  asbi_cancel_unregister(st->req.cancel, m);
  asbi_cancel_unregister(st->req.stop, m);
  st->req.cancel = cancel;
  st->req.stop = stop;
  /* A token requested already is not registered (ASB_ECANCELED, which is
   * no error of this caller's): drive() reads its flag before every wait. */
  asbi_err_saved saved;
  asbi_err_save(&saved);
  asbi_cancel_register(cancel, wake_multi, m);
  asbi_cancel_register(stop, wake_multi, m);
  asbi_err_restore(&saved);
}

int asbi_http_stream_finish(asbi_http_stream *st, long timeout_ms) {
  asbi_err_saved saved;
  asbi_err_save(&saved);
  int rc = -1;
  for (int i = 0; i < 4; i++) {
    const char *p;
    size_t len = 0;
    if (asbi_http_stream_read_ex(st, &p, &len, timeout_ms, NULL) != ASB_OK) break;
    if (len == 0) {
      rc = 0;
      break;
    }
  }
  asbi_err_restore(&saved);
  return rc;
}

void asbi_http_stream_close(asbi_http_stream *st) {
  if (!st) return;
  driver_end(&st->d, st->hl);
  asbi_buf_free(&st->handed);
  free(st->url);
  free(st->body);
  free(st);
}
