/* L1 transport against a real HTTP server (libmicrohttpd, in-process):
 * keep-alive reuse, concurrency, retries and their limits, Retry-After,
 * timeouts, cancellation, streaming in both directions, body bounds.
 * SPDX-License-Identifier: Apache-2.0 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "client/http.h"
#include "client/internal.h"
#include "testing.h"
#include "util/util.h"

static struct MHD_Daemon *d;
static int port;
static atomic_int conns;     /* connections accepted */
static atomic_int hits;      /* requests to /flaky */
static atomic_long uploaded; /* bytes received by /upload */

/* /slow and /stall hold their reply until the test has seen what it wants
 * (a timeout) and releases them, rather than for a fixed time that a slow
 * machine could outlast; the deadline only keeps a broken test finite. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int released;

static void hold(void) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += ASBT_DEADLINE_MS / 1000;
  pthread_mutex_lock(&hold_mu);
  while (!released && pthread_cond_timedwait(&hold_cv, &hold_mu, &dl) == 0) {
  }
  pthread_mutex_unlock(&hold_mu);
}

static void set_released(int on) {
  pthread_mutex_lock(&hold_mu);
  released = on;
  pthread_cond_broadcast(&hold_cv);
  pthread_mutex_unlock(&hold_mu);
}

static void on_conn(void *cls, struct MHD_Connection *c, void **socket_ctx,
                    enum MHD_ConnectionNotificationCode code) {
  (void)cls;
  (void)c;
  (void)socket_ctx;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) atomic_fetch_add(&conns, 1);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             const char *hname, const char *hval) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  if (hname) MHD_add_response_header(r, hname, hval);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* Streams `total` bytes (or forever when total < 0) in 64 KiB chunks, with
 * an optional pause between chunks. */
typedef struct stream_state {
  long long total, sent;
  int delay_ms;
} stream_state;

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max) {
  stream_state *s = cls;
  (void)pos;
  if (s->total >= 0 && s->sent >= s->total) return MHD_CONTENT_READER_END_OF_STREAM;
  if (s->delay_ms > 0) usleep((useconds_t)s->delay_ms * 1000);
  if (s->delay_ms < 0 && s->sent > 0) { /* stall after the first chunk */
    hold();
    return MHD_CONTENT_READER_END_OF_STREAM;
  }
  size_t n = max > 65536 ? 65536 : max;
  if (s->total >= 0 && (long long)n > s->total - s->sent) n = (size_t)(s->total - s->sent);
  memset(buf, 'x', n);
  s->sent += (long long)n;
  return (ssize_t)n;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **ctx) {
  (void)cls;
  (void)version;
  if (!*ctx) { /* first call: headers only */
    *ctx = (void *)1;
    return MHD_YES;
  }
  if (strcmp(url, "/upload") == 0) {
    if (*upload_size) {
      atomic_fetch_add(&uploaded, (long)*upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    char b[64];
    snprintf(b, sizeof b, "%ld", atomic_load(&uploaded));
    return reply(c, 200, b, NULL, NULL);
  }
  if (*upload_size) { /* consume request bodies; reply once they are in */
    *upload_size = 0;
    return MHD_YES;
  }
  if (strcmp(url, "/ok") == 0) return reply(c, 200, "hello", "X-Test", "yes");
  if (strcmp(url, "/method") == 0) return reply(c, 200, method, NULL, NULL);
  if (strcmp(url, "/flaky") == 0) /* 503 twice, then 200 */
    return atomic_fetch_add(&hits, 1) % 3 < 2 ? reply(c, 503, "busy", NULL, NULL)
                                              : reply(c, 200, "finally", NULL, NULL);
  if (strcmp(url, "/always503") == 0) {
    atomic_fetch_add(&hits, 1);
    return reply(c, 503, "down", NULL, NULL);
  }
  if (strcmp(url, "/ratelimit0") == 0)
    return atomic_fetch_add(&hits, 1) % 2 == 0 ? reply(c, 429, "slow down", "Retry-After", "0")
                                               : reply(c, 200, "ok", NULL, NULL);
  if (strcmp(url, "/ratelimit120") == 0) {
    atomic_fetch_add(&hits, 1);
    return reply(c, 429, "{\"code\":429,\"message\":\"slow down\"}", "Retry-After", "120");
  }
  if (strcmp(url, "/notfound") == 0)
    return reply(c, 404, "{\"code\":404,\"message\":\"nope\"}", NULL, NULL);
  if (strcmp(url, "/slow") == 0) {
    hold();
    return reply(c, 200, "late", NULL, NULL);
  }
  stream_state *s = calloc(1, sizeof *s);
  if (strcmp(url, "/stream10m") == 0) {
    s->total = 10LL << 20;
  } else if (strcmp(url, "/stall") == 0) {
    s->total = -1;
    s->delay_ms = -1;
  } else if (strcmp(url, "/forever") == 0) {
    s->total = -1;
    s->delay_ms = 20;
  } else {
    free(s);
    return reply(c, 404, "unknown", NULL, NULL);
  }
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, stream_cb, s, free);
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static void server_start(void) {
  d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
                       NULL, handler, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_conn, NULL,
                       MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "cannot start test server\n");
    exit(2);
  }
  port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

static char *url_of(const char *path) {
  static _Thread_local char u[256];
  snprintf(u, sizeof u, "http://127.0.0.1:%d%s", port, path);
  return u;
}

static asbi_http *pool(void) {
  asbi_http *h = NULL;
  if (asbi_http_new(&h) != 0) exit(2);
  return h;
}

TEST(keepalive_reuses_one_connection) {
  asbi_http *h = pool();
  int before = atomic_load(&conns);
  for (int i = 0; i < 50; i++) {
    asbi_http_req req = {.method = "GET", .url = url_of("/ok")};
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
    CHECK_INT(resp.status, 200);
    CHECK_STR(resp.body.data, "hello");
    CHECK_STR(asbi_http_resp_header(&resp, "x-test"), "yes");
    asbi_http_resp_free(&resp);
  }
  asbi_http_stats st;
  asbi_http_get_stats(h, &st);
  CHECK_INT(st.connections, 1);
  CHECK_INT(atomic_load(&conns) - before, 1);
  asbi_http_free(h);
}

static void *worker(void *arg) {
  asbi_http *h = arg;
  long ok = 0;
  for (int i = 0; i < 100; i++) {
    asbi_http_req req = {.method = "GET", .url = url_of("/ok")};
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    if (asbi_http_do(h, &req, &resp) == ASB_OK && resp.status == 200 &&
        strcmp(resp.body.data, "hello") == 0)
      ok++;
    asbi_http_resp_free(&resp);
  }
  return (void *)ok;
}

TEST(concurrent_calls_share_the_pool) {
  asbi_http *h = pool();
  pthread_t t[8];
  for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, worker, h);
  long total = 0;
  for (int i = 0; i < 8; i++) {
    void *r;
    pthread_join(t[i], &r);
    total += (long)r;
  }
  CHECK_INT(total, 800);
  asbi_http_stats st;
  asbi_http_get_stats(h, &st);
  CHECK(st.connections <= 8); /* at most one per concurrent caller */
  asbi_http_free(h);
}

TEST(methods_and_memory_body) {
  asbi_http *h = pool();
  const char *methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  for (size_t i = 0; i < 5; i++) {
    asbi_http_req req = {.method = methods[i], .url = url_of("/method")};
    if (i == 1) {
      req.body = "{}";
      req.body_len = 2;
    }
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
    CHECK_STR(resp.body.data, methods[i]);
    asbi_http_resp_free(&resp);
  }
  asbi_http_free(h);
}

TEST(idempotent_request_retries_503) {
  asbi_http *h = pool();
  atomic_store(&hits, 0);
  asbi_http_req req = {.method = "GET", .url = url_of("/flaky"), .idempotent = 1, .max_retries = 3};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
  CHECK_INT(resp.status, 200);
  CHECK_STR(resp.body.data, "finally");
  asbi_http_stats st;
  asbi_http_get_stats(h, &st);
  CHECK_INT(st.retries, 2);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(retries_are_bounded) {
  asbi_http *h = pool();
  atomic_store(&hits, 0);
  asbi_http_req req = {
      .method = "GET", .url = url_of("/always503"), .idempotent = 1, .max_retries = 2};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
  CHECK_INT(resp.status, 503);
  CHECK_STR(resp.body.data, "down");
  CHECK_INT(atomic_load(&hits), 3);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(non_idempotent_request_is_not_retried) {
  asbi_http *h = pool();
  atomic_store(&hits, 0);
  asbi_http_req req = {
      .method = "POST", .url = url_of("/always503"), .body = "x", .body_len = 1, .max_retries = 3};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
  CHECK_INT(resp.status, 503);
  CHECK_INT(atomic_load(&hits), 1);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(rate_limit_retry_after) {
  asbi_http *h = pool();
  atomic_store(&hits, 0);
  asbi_http_req req = {
      .method = "GET", .url = url_of("/ratelimit0"), .idempotent = 1, .max_retries = 3};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
  CHECK_INT(resp.status, 200);
  asbi_http_resp_free(&resp);

  /* A long Retry-After is not slept through: the 429 reaches the caller
   * with its header, at once. */
  atomic_store(&hits, 0);
  asbi_http_req req2 = {
      .method = "GET", .url = url_of("/ratelimit120"), .idempotent = 1, .max_retries = 3};
  asbi_http_resp resp2 = ASBI_HTTP_RESP_INIT;
  uint64_t t0 = asbi_now_ms();
  CHECK_INT(asbi_http_do(h, &req2, &resp2), ASB_OK);
  CHECK(asbi_now_ms() - t0 < 60000); /* not the 120 s it asked for */
  CHECK_INT(resp2.status, 429);
  CHECK_INT(atomic_load(&hits), 1);
  CHECK_INT(asbi_http_parse_retry_after(asbi_http_resp_header(&resp2, "Retry-After")), 120);
  asbi_http_resp_free(&resp2);
  asbi_http_free(h);
}

TEST(retry_after_parsing) {
  CHECK_INT(asbi_http_parse_retry_after("7"), 7);
  CHECK_INT(asbi_http_parse_retry_after(" 30 "), 30);
  CHECK_INT(asbi_http_parse_retry_after(NULL), -1);
  CHECK_INT(asbi_http_parse_retry_after("soon"), -1);
  CHECK_INT(asbi_http_parse_retry_after("-5"), -1);
  CHECK_INT(asbi_http_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
}

static int closed_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(s, (struct sockaddr *)&a, sizeof a);
  socklen_t l = sizeof a;
  getsockname(s, (struct sockaddr *)&a, &l);
  close(s); /* nothing listens there now */
  return ntohs(a.sin_port);
}

TEST(connection_refused_is_a_connection_error) {
  asbi_http *h = pool();
  char u[64];
  snprintf(u, sizeof u, "http://127.0.0.1:%d/x", closed_port());
  asbi_http_req req = {.method = "GET", .url = u, .idempotent = 1, .max_retries = 2};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_ECONNECTION);
  CHECK_INT(asb_error_last()->code, ASB_ECONNECTION);
  CHECK(strstr(asb_error_last()->message, u) != NULL);
  asbi_http_stats st;
  asbi_http_get_stats(h, &st);
  CHECK_INT(st.retries, 2);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(timeout) {
  asbi_http *h = pool();
  set_released(0);
  asbi_http_req req = {.method = "GET", .url = url_of("/slow"), .timeout_ms = 200};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  /* the reply comes only once released, after the call returned: the
   * timeout ended it */
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_ETIMEOUT);
  set_released(1);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

/* Cancels once *after (when set) is positive, e.g. data has arrived, then
 * after delay_ms more. */
typedef struct canceller {
  asb_cancel *c;
  int delay_ms;
  atomic_llong *after;
} canceller;

static void *cancel_later(void *arg) {
  canceller *k = arg;
  if (k->after) WAIT_UNTIL(atomic_load(k->after) > 0, ASBT_DEADLINE_MS);
  usleep((useconds_t)k->delay_ms * 1000);
  asb_cancel_request(k->c);
  return NULL;
}

static int count_data(void *ud, const char *p, size_t n) {
  (void)p;
  *(long long *)ud += (long long)n;
  return 0;
}

static int count_data_atomic(void *ud, const char *p, size_t n) {
  (void)p;
  atomic_fetch_add((atomic_llong *)ud, (long long)n);
  return 0;
}

TEST(cancel_from_another_thread_stops_a_stream) {
  asbi_http *h = pool();
  asb_cancel *c;
  REQUIRE(asb_cancel_new(&c) == ASB_OK);
  atomic_llong got = 0;
  asbi_http_req req = {.method = "GET",
                       .url = url_of("/forever"),
                       .cancel = c,
                       .on_data = count_data_atomic,
                       .ud = &got};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  canceller k = {c, 100, &got}; /* once the stream flows */
  pthread_t t;
  pthread_create(&t, NULL, cancel_later, &k);
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_ECANCELED); /* /forever never ends */
  CHECK(atomic_load(&got) > 0);
  pthread_join(t, NULL);
  asbi_http_resp_free(&resp);
  /* A requested token fails new calls at once, until reset. */
  asbi_http_req req2 = {.method = "GET", .url = url_of("/ok"), .cancel = c};
  asbi_http_resp resp2 = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req2, &resp2), ASB_ECANCELED);
  asbi_http_resp_free(&resp2);
  asb_cancel_reset(c);
  asbi_http_resp resp3 = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req2, &resp3), ASB_OK);
  asbi_http_resp_free(&resp3);
  asb_cancel_free(c);
  asbi_http_free(h);
}

TEST(cancel_interrupts_retry_backoff) {
  asbi_http *h = pool();
  asb_cancel *c;
  REQUIRE(asb_cancel_new(&c) == ASB_OK);
  asbi_http_req req = {.method = "GET",
                       .url = url_of("/always503"),
                       .idempotent = 1,
                       .max_retries = 50,
                       .cancel = c};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  canceller k = {c, 250, NULL};
  pthread_t t;
  pthread_create(&t, NULL, cancel_later, &k);
  uint64_t t0 = asbi_now_ms();
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_ECANCELED);
  /* 50 retries would back off for minutes (5 s each at the cap) */
  CHECK(asbi_now_ms() - t0 < 60000);
  pthread_join(t, NULL);
  asbi_http_resp_free(&resp);
  asb_cancel_free(c);
  asbi_http_free(h);
}

TEST(streamed_download_is_not_buffered) {
  asbi_http *h = pool();
  long long got = 0;
  asbi_http_req req = {.method = "GET",
                       .url = url_of("/stream10m"),
                       .on_data = count_data,
                       .ud = &got,
                       .max_body = 1024};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
  CHECK_INT(got, 10LL << 20);
  CHECK(resp.body_streamed);
  CHECK_INT(resp.body.len, 0);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(buffered_body_is_bounded) {
  asbi_http *h = pool();
  asbi_http_req req = {.method = "GET", .url = url_of("/stream10m"), .max_body = 1 << 20};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_EPROTOCOL);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(error_bodies_are_buffered_not_streamed) {
  asbi_http *h = pool();
  long long got = 0;
  asbi_http_req req = {
      .method = "GET", .url = url_of("/notfound"), .on_data = count_data, .ud = &got};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
  CHECK_INT(resp.status, 404);
  CHECK_INT(got, 0);
  CHECK(strstr(resp.body.data, "nope") != NULL);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

static int abort_data(void *ud, const char *p, size_t n) {
  (void)ud;
  (void)p;
  (void)n;
  return asbi_err(ASB_EINVAL, "callback says no");
}

TEST(callback_abort_returns_its_code) {
  asbi_http *h = pool();
  asbi_http_req req = {.method = "GET", .url = url_of("/stream10m"), .on_data = abort_data};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_EINVAL);
  CHECK_STR(asb_error_last()->message, "callback says no");
  asbi_http_resp_free(&resp);
  /* The pool still works after an aborted transfer. */
  asbi_http_req ok = {.method = "GET", .url = url_of("/ok")};
  asbi_http_resp resp2 = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &ok, &resp2), ASB_OK);
  CHECK_INT(resp2.status, 200);
  asbi_http_resp_free(&resp2);
  asbi_http_free(h);
}

typedef struct gen {
  long long left;
} gen;

static size_t gen_read(void *ud, char *buf, size_t n) {
  gen *g = ud;
  if (g->left <= 0) return 0;
  if ((long long)n > g->left) n = (size_t)g->left;
  memset(buf, 'u', n);
  g->left -= (long long)n;
  return n;
}

TEST(streamed_upload_chunked_and_sized) {
  asbi_http *h = pool();
  for (int sized = 0; sized < 2; sized++) {
    atomic_store(&uploaded, 0);
    gen g = {50LL << 20};
    asbi_http_req req = {.method = "POST",
                         .url = url_of("/upload"),
                         .read = gen_read,
                         .ud = &g,
                         .body_size = sized ? (50LL << 20) : -1};
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    CHECK_INT(asbi_http_do(h, &req, &resp), ASB_OK);
    CHECK_INT(resp.status, 200);
    CHECK_INT(atol(resp.body.data), 50LL << 20);
    asbi_http_resp_free(&resp);
  }
  asbi_http_free(h);
}

static size_t fail_read(void *ud, char *buf, size_t n) {
  (void)ud;
  (void)buf;
  (void)n;
  asbi_err(ASB_EINVAL, "source broke");
  return ASBI_HTTP_READ_ABORT;
}

TEST(upload_source_failure) {
  asbi_http *h = pool();
  asbi_http_req req = {
      .method = "POST", .url = url_of("/upload"), .read = fail_read, .body_size = -1};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &req, &resp), ASB_EINVAL);
  CHECK_STR(asb_error_last()->message, "source broke");
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(pull_stream_reads_everything_with_backpressure) {
  asbi_http *h = pool();
  asbi_http_req req = {.method = "GET", .url = url_of("/stream10m")};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  asbi_http_stream *st = NULL;
  REQUIRE(asbi_http_stream_open(h, &req, &resp, &st) == ASB_OK);
  CHECK_INT(resp.status, 200);
  long long total = 0;
  size_t biggest = 0;
  for (int i = 0;; i++) {
    const char *p;
    size_t n;
    REQUIRE(asbi_http_stream_read(st, &p, &n) == ASB_OK);
    if (n == 0) break;
    if (n > biggest) biggest = n;
    for (size_t k = 0; k < n; k++)
      if (p[k] != 'x') {
        CHECK(!"corrupt stream data");
        break;
      }
    total += (long long)n;
    if (i == 0) usleep(200 * 1000); /* a slow reader makes the transfer pause */
  }
  CHECK_INT(total, 10LL << 20);
  CHECK(biggest <= (1u << 20) + 300 * 1024); /* bounded by the pause point */
  asbi_http_stream_close(st);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(pull_stream_early_close_keeps_pool_usable) {
  asbi_http *h = pool();
  for (int i = 0; i < 3; i++) {
    asbi_http_req req = {.method = "GET", .url = url_of("/forever")};
    asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
    asbi_http_stream *st = NULL;
    REQUIRE(asbi_http_stream_open(h, &req, &resp, &st) == ASB_OK);
    const char *p;
    size_t n;
    CHECK_INT(asbi_http_stream_read(st, &p, &n), ASB_OK);
    CHECK(n > 0);
    asbi_http_stream_close(st);
    asbi_http_resp_free(&resp);
  }
  asbi_http_req ok = {.method = "GET", .url = url_of("/ok")};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &ok, &resp), ASB_OK);
  CHECK_STR(resp.body.data, "hello");
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(pull_stream_error_reply_is_buffered) {
  asbi_http *h = pool();
  asbi_http_req req = {.method = "GET", .url = url_of("/notfound")};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  asbi_http_stream *st = NULL;
  REQUIRE(asbi_http_stream_open(h, &req, &resp, &st) == ASB_OK);
  CHECK_INT(resp.status, 404);
  CHECK(strstr(resp.body.data, "nope") != NULL);
  const char *p;
  size_t n = 99;
  CHECK_INT(asbi_http_stream_read(st, &p, &n), ASB_OK);
  CHECK_INT(n, 0);
  asbi_http_stream_close(st);
  asbi_http_resp_free(&resp);
  asbi_http_free(h);
}

TEST(pull_stream_idle_timeout_and_cancel) {
  asbi_http *h = pool();
  set_released(0);
  asbi_http_req req = {.method = "GET", .url = url_of("/stall"), .idle_timeout_ms = 300};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  asbi_http_stream *st = NULL;
  REQUIRE(asbi_http_stream_open(h, &req, &resp, &st) == ASB_OK);
  const char *p;
  size_t n;
  CHECK_INT(asbi_http_stream_read(st, &p, &n), ASB_OK);
  CHECK(n > 0);
  /* /stall sends nothing more until released, after the read returned: the
   * idle timeout ended it */
  CHECK_INT(asbi_http_stream_read(st, &p, &n), ASB_ETIMEOUT);
  set_released(1);
  asbi_http_stream_close(st);
  asbi_http_resp_free(&resp);

  asb_cancel *c;
  REQUIRE(asb_cancel_new(&c) == ASB_OK);
  asbi_http_req req2 = {.method = "GET", .url = url_of("/forever"), .cancel = c};
  asbi_http_resp resp2 = ASBI_HTTP_RESP_INIT;
  REQUIRE(asbi_http_stream_open(h, &req2, &resp2, &st) == ASB_OK);
  canceller k = {c, 200, NULL};
  pthread_t t;
  pthread_create(&t, NULL, cancel_later, &k);
  int rc;
  /* /forever never ends: only the cancel stops the reads */
  while ((rc = asbi_http_stream_read(st, &p, &n)) == ASB_OK && n > 0) {
  }
  CHECK_INT(rc, ASB_ECANCELED);
  pthread_join(t, NULL);
  asbi_http_stream_close(st);
  asbi_http_resp_free(&resp2);
  asb_cancel_free(c);
  asbi_http_free(h);
}

/* A stream read to its protocol's end (the caller knows it from the bytes)
 * but not to the HTTP body's end: finish reads the last chunk, so closing
 * it keeps the connection for the next call (issue 23: a commands.run whose
 * end event came before the last chunk closed its connection). */
TEST(pull_stream_finished_keeps_its_connection) {
  asbi_http *h = pool();
  set_released(0);
  int before = atomic_load(&conns);
  asbi_http_req req = {.method = "GET", .url = url_of("/stall")};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  asbi_http_stream *st = NULL;
  REQUIRE(asbi_http_stream_open(h, &req, &resp, &st) == ASB_OK);
  const char *p;
  size_t n;
  CHECK_INT(asbi_http_stream_read(st, &p, &n), ASB_OK);
  CHECK(n > 0);
  set_released(1); /* /stall ends its body now; nothing here has read that */
  CHECK_INT(asbi_http_stream_finish(st, 5000), 0);
  asbi_http_stream_close(st);
  asbi_http_resp_free(&resp);
  asbi_http_req ok = {.method = "GET", .url = url_of("/ok")};
  asbi_http_resp r2 = ASBI_HTTP_RESP_INIT;
  CHECK_INT(asbi_http_do(h, &ok, &r2), ASB_OK);
  CHECK_STR(r2.body.data, "hello");
  asbi_http_resp_free(&r2);
  CHECK_INT(atomic_load(&conns) - before, 1);
  asbi_http_free(h);
}

int main(void) {
  server_start();
  RUN(keepalive_reuses_one_connection);
  RUN(concurrent_calls_share_the_pool);
  RUN(methods_and_memory_body);
  RUN(idempotent_request_retries_503);
  RUN(retries_are_bounded);
  RUN(non_idempotent_request_is_not_retried);
  RUN(rate_limit_retry_after);
  RUN(retry_after_parsing);
  RUN(connection_refused_is_a_connection_error);
  RUN(timeout);
  RUN(cancel_from_another_thread_stops_a_stream);
  RUN(cancel_interrupts_retry_backoff);
  RUN(streamed_download_is_not_buffered);
  RUN(buffered_body_is_bounded);
  RUN(error_bodies_are_buffered_not_streamed);
  RUN(callback_abort_returns_its_code);
  RUN(streamed_upload_chunked_and_sized);
  RUN(upload_source_failure);
  RUN(pull_stream_reads_everything_with_backpressure);
  RUN(pull_stream_early_close_keeps_pool_usable);
  RUN(pull_stream_error_reply_is_buffered);
  RUN(pull_stream_idle_timeout_and_cancel);
  RUN(pull_stream_finished_keeps_its_connection);
  set_released(1);
  MHD_stop_daemon(d);
  asb_global_cleanup();
  TEST_MAIN_END();
}
