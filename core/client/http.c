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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../util/util.h"
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
  int rc = asbi_global_ensure();
  if (rc) return rc;
  asbi_http *h = calloc(1, sizeof *h);
  if (!h) return asbi_oom();
  pthread_mutex_init(&h->mu, NULL);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_init(&h->share_mu[i], NULL);
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
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_destroy(&h->share_mu[i]);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

void asbi_http_get_stats(asbi_http *h, asbi_http_stats *out) {
  out->requests = atomic_load(&h->requests);
  out->connections = atomic_load(&h->connections);
  out->retries = atomic_load(&h->retries);
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
  s->multi = curl_multi_init();
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

static int resp_add_header(asbi_http_resp *r, const char *name, size_t nlen,
                           const char *val, size_t vlen) {
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

typedef struct xfer {
  const asbi_http_req *req;
  asbi_http_resp *resp;
  int may_retry_status; /* a 429/502/503 may still be retried */
  int began;            /* status known, body mode decided */
  int retry_status;     /* this response is a retryable status */
  int streaming;        /* body goes to on_data */
  int delivered;        /* user callbacks saw something: no more retries */
  int cb_rc;            /* a callback's abort code */
  int too_big;
  int read_err;
  size_t body_off;
  char errbuf[CURL_ERROR_SIZE];
} xfer;

static int is_retry_status(long st) { return st == 429 || st == 502 || st == 503; }

static int begin_body(xfer *x, CURL *easy) {
  if (x->began) return 0;
  x->began = 1;
  long st = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &st);
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
  x->streaming = x->req->on_data && st < 400;
  x->resp->body_streamed = x->streaming;
  return 0;
}

static size_t on_write(char *p, size_t sz, size_t nm, void *ud) {
  xfer *x = ud;
  size_t n = sz * nm;
  if (x->streaming) {
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

typedef struct xfer_ctx {
  xfer *x;
  CURL *easy;
} xfer_ctx;

static size_t on_header(char *p, size_t sz, size_t nm, void *ud) {
  xfer_ctx *c = ud;
  xfer *x = c->x;
  size_t n = sz * nm;
  if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
    /* A new header block (after 1xx or a redirect) replaces the last. */
    size_t max = x->resp->body.max;
    asbi_http_resp_free(x->resp);
    asbi_buf_init(&x->resp->body, max);
    return n;
  }
  if (n <= 2) { /* blank line: end of this block */
    long st = 0;
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &st);
    if (st >= 200 && begin_body(x, c->easy) != 0) return 0;
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
  while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' ||
                  v[vlen - 1] == ' '))
    vlen--;
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

static void wake_multi(void *target) { curl_multi_wakeup((CURLM *)target); }

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

static struct curl_slist *add_headers(struct curl_slist *l,
                                      const char *const *hs, int *ok) {
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

static long remaining_ms(uint64_t deadline_ms) {
  if (!deadline_ms) return 0;
  uint64_t now = asbi_now_ms();
  return now >= deadline_ms ? -1 : (long)(deadline_ms - now);
}

/* Sleep up to ms, waking early on cancellation. Returns ASB_ECANCELED or 0. */
static int cancellable_sleep(slot *s, asb_cancel *cancel, long ms) {
  uint64_t end = asbi_now_ms() + (uint64_t)ms;
  for (;;) {
    if (asbi_cancel_requested(cancel)) return ASB_ECANCELED;
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

static int setup_easy(CURL *e, const asbi_http_req *req, xfer *x, xfer_ctx *c,
                      struct curl_slist *hl, asbi_http *h, long timeout_ms) {
  curl_easy_reset(e);
  curl_easy_setopt(e, CURLOPT_URL, req->url);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_SHARE, h->share);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, IO_BUFFER_SIZE);
  curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, IO_BUFFER_SIZE);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   req->connect_timeout_ms > 0 ? req->connect_timeout_ms
                                               : DEFAULT_CONNECT_TIMEOUT_MS);
  if (timeout_ms > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  if (req->unix_socket)
    curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
  const char *m = req->method ? req->method : "GET";
  int has_body = req->body || req->read;
  if (has_body) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, x);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
    curl_off_t size = req->body ? (curl_off_t)req->body_len
                                : (curl_off_t)req->body_size;
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, size);
    if (strcmp(m, "POST") != 0) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
  } else if (strcmp(m, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (strcmp(m, "GET") == 0) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
    if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 ||
        strcmp(m, "PATCH") == 0) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    }
  }
  return 0;
}

int asbi_http_do(asbi_http *h, const asbi_http_req *req, asbi_http_resp *resp) {
  asbi_buf_init(&resp->body, req->max_body ? req->max_body : DEFAULT_MAX_BODY);
  slot *s = slot_get(h);
  if (!s) return asbi_oom();
  int ok = 1;
  struct curl_slist *hl = NULL;
  hl = add_headers(hl, req->headers, &ok);
  hl = add_headers(hl, req->headers2, &ok);
  const char *fixed[] = {"Expect:", NULL, NULL};
  if (req->read && !req->body && req->body_size < 0)
    fixed[1] = "Transfer-Encoding: chunked";
  hl = add_headers(hl, fixed, &ok);
  if (!ok) {
    curl_slist_free_all(hl);
    slot_put(h, s);
    return asbi_oom();
  }
  int rc = asbi_cancel_register(req->cancel, wake_multi, s->multi);
  if (rc) {
    curl_slist_free_all(hl);
    slot_put(h, s);
    return rc;
  }

  uint64_t deadline = req->timeout_ms > 0
                          ? asbi_now_ms() + (uint64_t)req->timeout_ms
                          : 0;
  int rewindable = !req->read || req->body || req->rewind;
  int max_retries = (req->idempotent && rewindable && req->max_retries > 0)
                        ? req->max_retries
                        : 0;
  const char *m = req->method ? req->method : "GET";

  for (int attempt = 0;; attempt++) {
    xfer x;
    memset(&x, 0, sizeof x);
    x.req = req;
    x.resp = resp;
    x.may_retry_status = attempt < max_retries;
    xfer_ctx c = {&x, s->easy};
    resp_reset(resp);
    long left = remaining_ms(deadline);
    if (left < 0) {
      rc = asbi_err(ASB_ETIMEOUT, "%s %s: timed out after %ld ms", m, req->url,
                    req->timeout_ms);
      break;
    }
    if (attempt > 0 && !req->body && req->read && req->rewind &&
        req->rewind(req->ud) != 0) {
      rc = asbi_err(ASB_ECONNECTION, "%s %s: request body cannot be replayed",
                    m, req->url);
      break;
    }
    setup_easy(s->easy, req, &x, &c, hl, h, left);
    atomic_fetch_add(&h->requests, 1);
    curl_multi_add_handle(s->multi, s->easy);
    CURLcode result = CURLE_OK;
    int done = 0, cancelled = 0;
    while (!done) {
      int running = 0;
      CURLMcode mc = curl_multi_perform(s->multi, &running);
      if (mc != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        snprintf(x.errbuf, sizeof x.errbuf, "%s", curl_multi_strerror(mc));
        break;
      }
      int q;
      CURLMsg *msg;
      while ((msg = curl_multi_info_read(s->multi, &q)))
        if (msg->msg == CURLMSG_DONE) {
          result = msg->data.result;
          done = 1;
        }
      if (done) break;
      if (asbi_cancel_requested(req->cancel)) {
        cancelled = 1;
        break;
      }
      curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
      if (asbi_cancel_requested(req->cancel)) {
        cancelled = 1;
        break;
      }
    }
    long nconn = 0;
    curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &nconn);
    if (nconn > 0) atomic_fetch_add(&h->connections, (uint64_t)nconn);
    curl_multi_remove_handle(s->multi, s->easy);

    if (cancelled) {
      rc = asbi_err(ASB_ECANCELED, "%s %s: cancelled", m, req->url);
      break;
    }
    if (x.cb_rc) {
      rc = x.cb_rc < 0 ? x.cb_rc : ASB_EUSER;
      /* The callback may have recorded a precise error; keep it if so. */
      if (asb_error_last()->code != rc)
        asbi_err(rc, "%s %s: aborted by callback", m, req->url);
      break;
    }
    if (x.too_big) {
      rc = asbi_err(ASB_EPROTOCOL, "%s %s: response body exceeds %zu bytes", m,
                    req->url, resp->body.max);
      break;
    }
    if (x.read_err) {
      if (asb_error_last()->code == ASB_OK)
        asbi_err(ASB_EUSER, "%s %s: request body source failed", m, req->url);
      rc = asb_error_last()->code;
      break;
    }
    if (result == CURLE_OK) {
      if (!x.began && begin_body(&x, s->easy) != 0) {
        rc = x.cb_rc < 0 ? x.cb_rc : ASB_EUSER;
        break;
      }
      if (x.retry_status) {
        int ra = asbi_http_parse_retry_after(
            asbi_http_resp_header(resp, "retry-after"));
        if (ra <= RETRY_AFTER_MAX_S) {
          long wait = ra >= 0 ? ra * 1000L : backoff_ms(attempt);
          long l2 = remaining_ms(deadline);
          if (!deadline || l2 > wait) {
            atomic_fetch_add(&h->retries, 1);
            if (cancellable_sleep(s, req->cancel, wait)) {
              rc = asbi_err(ASB_ECANCELED, "%s %s: cancelled", m, req->url);
              break;
            }
            continue;
          }
        }
        /* Not retrying after all: hand the response over as final. */
        x.retry_status = 0;
        if (req->on_headers && (rc = req->on_headers(req->ud, resp)) != 0) {
          rc = rc < 0 ? rc : ASB_EUSER;
          break;
        }
      }
      rc = ASB_OK;
      break;
    }
    if (result == CURLE_OPERATION_TIMEDOUT) {
      rc = asbi_err(ASB_ETIMEOUT, "%s %s: timed out: %s", m, req->url,
                    x.errbuf[0] ? x.errbuf : curl_easy_strerror(result));
      break;
    }
    if (is_conn_error(result) && !x.delivered && attempt < max_retries) {
      long wait = backoff_ms(attempt);
      long l2 = remaining_ms(deadline);
      if (!deadline || l2 > wait) {
        atomic_fetch_add(&h->retries, 1);
        if (cancellable_sleep(s, req->cancel, wait)) {
          rc = asbi_err(ASB_ECANCELED, "%s %s: cancelled", m, req->url);
          break;
        }
        continue;
      }
    }
    rc = asbi_err(ASB_ECONNECTION, "%s %s: %s", m, req->url,
                  x.errbuf[0] ? x.errbuf : curl_easy_strerror(result));
    break;
  }
  asbi_cancel_unregister(req->cancel, s->multi);
  /* The easy handle still points at our header list: detach before free. */
  curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, NULL);
  curl_slist_free_all(hl);
  slot_put(h, s);
  return rc;
}
