/* Unit tests for the HTTP-service shelf (core/httpd): the token comparison,
 * the bounded body, listening (TCP, unix, bad addresses), and a real daemon
 * on loopback: the JSON error reply as sent, the caller's completion
 * callback, the request-head deadline cutting a client that never finishes
 * its head, and a quiesce that stops accepting.
 * SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "httpd/httpd.h"
#include "testing.h"

TEST(token_eq) {
  CHECK(asbi_httpd_token_eq("abc", "abc"));
  CHECK(asbi_httpd_token_eq("", ""));
  CHECK(!asbi_httpd_token_eq("abc", "abd"));
  CHECK(!asbi_httpd_token_eq("abd", "abc"));
  CHECK(!asbi_httpd_token_eq("abc", "ab"));
  CHECK(!asbi_httpd_token_eq("ab", "abc"));
  CHECK(!asbi_httpd_token_eq("abc", ""));
  CHECK(!asbi_httpd_token_eq(NULL, "abc"));
  CHECK(!asbi_httpd_token_eq("abc", NULL));
  CHECK(!asbi_httpd_token_eq(NULL, NULL));
}

TEST(body_is_bounded) {
  asbi_httpd_body b;
  asbi_httpd_body_init(&b, 8);
  asbi_httpd_body_append(&b, "hello", 5);
  asbi_httpd_body_append(&b, "abc", 3);
  CHECK(!b.too_big);
  CHECK_MEM(b.buf.data, b.buf.len, "helloabc", 8);
  asbi_httpd_body_append(&b, "x", 1);
  CHECK(b.too_big);
  CHECK(b.buf.data == NULL);
  CHECK_INT(b.buf.len, 0);
  asbi_httpd_body_append(&b, "y", 1); /* dropped */
  CHECK(b.too_big);
  CHECK(b.buf.data == NULL);
  asbi_httpd_body_free(&b);
}

TEST(listen_errors) {
  char err[256] = "";
  int port = -1;
  asbi_httpd_addr bad = {NULL, "not-an-address", 0};
  CHECK_INT(asbi_httpd_listen(&bad, &port, err, sizeof err), -1);
  CHECK_STR(err, "bad listen address 'not-an-address'");
  asbi_httpd_addr range = {NULL, "127.0.0.1", 70000};
  CHECK_INT(asbi_httpd_listen(&range, &port, err, sizeof err), -1);
  CHECK_STR(err, "bad port 70000");
  char longp[200];
  memset(longp, 'a', sizeof longp - 1);
  longp[0] = '/';
  longp[sizeof longp - 1] = '\0';
  asbi_httpd_addr lng = {longp, NULL, 0};
  CHECK_INT(asbi_httpd_listen(&lng, &port, err, sizeof err), -1);
  CHECK_STR(err, "unix socket path too long");
}

TEST(listen_unix) {
  char path[64], err[256];
  snprintf(path, sizeof path, "/tmp/asb-httpd-test-%d.sock", (int)getpid());
  int port = -1;
  asbi_httpd_addr a = {path, NULL, 0};
  int fd = asbi_httpd_listen(&a, &port, err, sizeof err);
  REQUIRE(fd >= 0);
  CHECK_INT(port, 0);
  struct stat st;
  CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode));
  CHECK_INT(st.st_mode & 0777, 0666);
  close(fd);
  /* An existing file there is replaced. */
  fd = asbi_httpd_listen(&a, &port, err, sizeof err);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  unlink(path);
}

/* ---- a daemon on loopback ---------------------------------------------- */

static atomic_int g_completed;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)cls, (void)url, (void)method, (void)version, (void)upload;
  (void)upload_size;
  static int marker;
  if (!*con_cls) { /* the head: answer on the second call */
    *con_cls = &marker;
    return MHD_YES;
  }
  struct MHD_Response *r = asbi_httpd_json_error(418, "a \"quoted\" %s", "line\nbreak");
  if (!r) return MHD_NO;
  enum MHD_Result rc = MHD_queue_response(c, 418, r);
  MHD_destroy_response(r);
  return rc;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)cls, (void)c, (void)toe;
  *con_cls = NULL;
  atomic_fetch_add(&g_completed, 1);
}

static void tlog(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  vfprintf(stderr, fmt, ap);
}

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* Everything until the peer closes, or -1 past the deadline. */
static ssize_t read_to_eof(int fd, char *buf, size_t cap) {
  size_t len = 0;
  long long end = asbt_now_ms() + ASBT_DEADLINE_MS;
  while (asbt_now_ms() < end) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      buf[len] = '\0';
      return (ssize_t)len;
    }
    len += (size_t)n;
    if (len == cap - 1) break;
  }
  return -1;
}

TEST(daemon_round_trip_deadline_and_quiesce) {
  char err[256];
  int port = 0;
  asbi_httpd_addr a = {NULL, "127.0.0.1", 0};
  int lfd = asbi_httpd_listen(&a, &port, err, sizeof err);
  REQUIRE(lfd >= 0);
  CHECK(port > 0);
  asbi_httpd_opts o = {.listen_fd = lfd,
                       .handler = handler,
                       .completed = completed,
                       .max_connections = 8,
                       .head_timeout_ms = 300,
                       .idle_timeout_s = 600,
                       .log = tlog};
  asbi_httpd *h = asbi_httpd_start(&o, err, sizeof err);
  REQUIRE(h != NULL);
  CHECK(asbi_httpd_daemon(h) != NULL);

  /* A request: E2B's JSON error as sent on the wire. */
  int fd = connect_to(port);
  REQUIRE(fd >= 0);
  const char *req = "GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
  char buf[4096];
  ssize_t n = read_to_eof(fd, buf, sizeof buf);
  close(fd);
  REQUIRE(n > 0);
  CHECK(strncmp(buf, "HTTP/1.1 418", 12) == 0);
  CHECK(strstr(buf, "\r\nContent-Type: application/json; charset=utf-8\r\n") != NULL);
  CHECK(strstr(buf, "\r\nX-Content-Type-Options: nosniff\r\n") != NULL);
  const char *body = strstr(buf, "\r\n\r\n");
  REQUIRE(body != NULL);
  CHECK_STR(body + 4, "{\"code\":418,\"message\":\"a \\\"quoted\\\" line\\nbreak\"}\n");
  WAIT_UNTIL(atomic_load(&g_completed) == 1, ASBT_DEADLINE_MS);
  CHECK_INT(atomic_load(&g_completed), 1);

  /* A client that sends its request line and never ends the head is cut
   * once the head deadline passes (the guard is wired to the daemon). */
  fd = connect_to(port);
  REQUIRE(fd >= 0);
  const char *line = "GET /slow HTTP/1.1\r\nHost: t\r\n";
  CHECK(write(fd, line, strlen(line)) == (ssize_t)strlen(line));
  n = read_to_eof(fd, buf, sizeof buf);
  close(fd);
  CHECK_INT(n, 0); /* closed, nothing answered */

  /* Quiesced: no new connections. */
  asbi_httpd_quiesce(h);
  asbi_httpd_quiesce(h); /* idempotent */
  errno = 0;
  fd = connect_to(port);
  CHECK(fd < 0 && errno == ECONNREFUSED);
  if (fd >= 0) close(fd);
  asbi_httpd_stop(h);
  asbi_httpd_stop(NULL);
}

/* Reads until buf holds needle; 0 or -1 past the deadline or on EOF. */
static int read_until(int fd, char *buf, size_t cap, const char *needle) {
  size_t len = 0;
  buf[0] = '\0';
  long long end = asbt_now_ms() + ASBT_DEADLINE_MS;
  while (!strstr(buf, needle) && asbt_now_ms() < end && len < cap - 1) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n <= 0) return -1;
    len += (size_t)n;
    buf[len] = '\0';
  }
  return strstr(buf, needle) ? 0 : -1;
}

TEST(per_address_limit) {
  char err[256];
  int port = 0;
  asbi_httpd_addr a = {NULL, "127.0.0.1", 0};
  int lfd = asbi_httpd_listen(&a, &port, err, sizeof err);
  REQUIRE(lfd >= 0);
  asbi_httpd_opts o = {.listen_fd = lfd,
                       .handler = handler,
                       .completed = completed,
                       .per_ip_limit = 1,
                       .idle_timeout_s = 600,
                       .log = tlog};
  asbi_httpd *h = asbi_httpd_start(&o, err, sizeof err);
  REQUIRE(h != NULL);
  /* The first connection is served and kept alive ... */
  int c1 = connect_to(port);
  REQUIRE(c1 >= 0);
  const char *req = "GET /a HTTP/1.1\r\nHost: t\r\n\r\n";
  CHECK(write(c1, req, strlen(req)) == (ssize_t)strlen(req));
  char buf[4096];
  CHECK_INT(read_until(c1, buf, sizeof buf, "break\"}\n"), 0);
  /* ... so a second one from the same address is closed unanswered. */
  int c2 = connect_to(port);
  if (c2 >= 0) {
    if (write(c2, req, strlen(req)) < 0) { /* a reset counts as closed */
    }
    CHECK_INT(read_to_eof(c2, buf, sizeof buf), 0); /* EOF or reset */
    close(c2);
  }
  close(c1);
  asbi_httpd_stop(h);
}

/* The uri hook: the raw target (escapes and query as sent) becomes the
 * request's *con_cls, and the head deadline still holds (the module tells
 * the handler's first call from the later ones itself). */
static void *raw_target(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls, (void)c;
  return strdup(uri);
}

static enum MHD_Result echo_target(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload,
                                   size_t *upload_size, void **con_cls) {
  (void)cls, (void)url, (void)method, (void)version, (void)upload;
  if (*upload_size) { /* no body expected; drop one */
    *upload_size = 0;
    return MHD_YES;
  }
  const char *raw = *con_cls;
  if (!raw) return MHD_NO;
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(raw), (void *)raw, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  enum MHD_Result rc = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return rc;
}

static void free_target(void *cls, struct MHD_Connection *c, void **con_cls,
                        enum MHD_RequestTerminationCode toe) {
  (void)cls, (void)c, (void)toe;
  free(*con_cls);
  *con_cls = NULL;
}

TEST(uri_hook) {
  char err[256];
  int port = 0;
  asbi_httpd_addr a = {NULL, "127.0.0.1", 0};
  int lfd = asbi_httpd_listen(&a, &port, err, sizeof err);
  REQUIRE(lfd >= 0);
  asbi_httpd_opts o = {.listen_fd = lfd,
                       .handler = echo_target,
                       .completed = free_target,
                       .uri = raw_target,
                       .head_timeout_ms = 300,
                       .idle_timeout_s = 600,
                       .log = tlog};
  asbi_httpd *h = asbi_httpd_start(&o, err, sizeof err);
  REQUIRE(h != NULL);
  int fd = connect_to(port);
  REQUIRE(fd >= 0);
  const char *req = "GET /a%2Fb?x=1&y=%20 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
  char buf[4096];
  ssize_t n = read_to_eof(fd, buf, sizeof buf);
  close(fd);
  REQUIRE(n > 0);
  CHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0);
  const char *body = strstr(buf, "\r\n\r\n");
  REQUIRE(body != NULL);
  CHECK_STR(body + 4, "/a%2Fb?x=1&y=%20");
  /* A head that never ends is cut with the hook set too. */
  fd = connect_to(port);
  REQUIRE(fd >= 0);
  const char *line = "GET /slow HTTP/1.1\r\nHost: t\r\n";
  CHECK(write(fd, line, strlen(line)) == (ssize_t)strlen(line));
  CHECK_INT(read_to_eof(fd, buf, sizeof buf), 0);
  close(fd);
  asbi_httpd_stop(h);
}

int main(void) {
  RUN(token_eq);
  RUN(body_is_bounded);
  RUN(listen_errors);
  RUN(listen_unix);
  RUN(daemon_round_trip_deadline_and_quiesce);
  RUN(per_address_limit);
  RUN(uri_hook);
  TEST_MAIN_END();
}
