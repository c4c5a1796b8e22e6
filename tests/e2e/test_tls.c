/* https on the engine's port (core/engine/front.c, tlsca.c) from libcurl
 * with the engine's CA: the control plane, sandbox ports and envd on
 * https://<port>-<id>.localhost:<engine port>, signed /files URLs, the
 * error shapes the plain router gives, and bad handshakes (bad SNI,
 * truncated, garbage, silent) that end in a clear error with the engine
 * serving on. Runs as root. SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static char CA[256];

typedef struct reply {
  char body[4096];
  size_t len;
} reply;

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  reply *r = ud;
  size_t len = s * n;
  if (r->len + len < sizeof r->body) {
    memcpy(r->body + r->len, p, len);
    r->len += len;
    r->body[r->len] = 0;
  }
  return len;
}

/* GET url (https://host:port/...), host resolved to 127.0.0.1, verifying
 * with cafile (NULL: the system's store only). The curl code; *status and
 * r filled on CURLE_OK. */
static CURLcode get(const char *url, const char *cafile, const char *const *headers, long *status,
                    reply *r) {
  CURL *h = curl_easy_init();
  struct curl_slist *hl = NULL, *res = NULL;
  for (size_t i = 0; headers && headers[i]; i++) hl = curl_slist_append(hl, headers[i]);
  /* the host part of url: <name>:<port> -> 127.0.0.1 (libcurl resolves
   * *.localhost itself, but say it outright) */
  char host[256] = "", rs[300];
  const char *p = strstr(url, "://");
  if (p && sscanf(p + 3, "%255[^/]", host) == 1) {
    snprintf(rs, sizeof rs, "%s:127.0.0.1", host);
    res = curl_slist_append(NULL, rs);
    curl_easy_setopt(h, CURLOPT_RESOLVE, res);
  }
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  if (cafile) curl_easy_setopt(h, CURLOPT_CAINFO, cafile);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
  r->len = 0;
  r->body[0] = 0;
  *status = 0;
  CURLcode rc = curl_easy_perform(h);
  if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_slist_free_all(hl);
  curl_slist_free_all(res);
  curl_easy_cleanup(h);
  return rc;
}

static long get_ok(const char *url, const char *const *headers, reply *r) {
  long st = 0;
  CURLcode rc = get(url, CA, headers, &st, r);
  if (rc != CURLE_OK) fprintf(stderr, "GET %s: %s\n", url, curl_easy_strerror(rc));
  return st;
}

TEST(ca_in_the_state_dir) {
  char want[256];
  snprintf(want, sizeof want, "%s/tls/ca.pem", F.state);
  CHECK_STR(CA, want);
  struct stat st;
  char key[256];
  snprintf(key, sizeof key, "%s/tls/ca.key", F.state);
  REQUIRE(stat(key, &st) == 0);
  CHECK_INT(st.st_mode & 0777, 0600);
  snprintf(key, sizeof key, "%s/tls", F.state);
  REQUIRE(stat(key, &st) == 0);
  CHECK_INT(st.st_mode & 0777, 0700);
  REQUIRE(stat(CA, &st) == 0);
  CHECK(S_ISREG(st.st_mode) && st.st_size > 100);
}

TEST(control_plane_over_https_and_http_on_one_port) {
  char url[128], hdr[160];
  snprintf(hdr, sizeof hdr, "X-API-Key: %s", F.key);
  const char *h[] = {hdr, NULL};
  reply r;
  snprintf(url, sizeof url, "https://127.0.0.1:%d/sandboxes", F.port);
  CHECK_INT(get_ok(url, h, &r), 200);
  CHECK(r.body[0] == '[');
  snprintf(url, sizeof url, "https://localhost:%d/sandboxes", F.port);
  CHECK_INT(get_ok(url, h, &r), 200);
  /* the chain is checked: without the engine's CA, no trust */
  long st = 0;
  snprintf(url, sizeof url, "https://127.0.0.1:%d/health", F.port);
  CHECK_INT(get(url, NULL, NULL, &st, &r), CURLE_PEER_FAILED_VERIFICATION);
  /* and the same port still speaks plain HTTP */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/sandboxes", F.port);
  CHECK_INT(get_ok(url, h, &r), 200);
  /* no key over TLS: the API's own 401 */
  snprintf(url, sizeof url, "https://127.0.0.1:%d/sandboxes", F.port);
  CHECK_INT(get_ok(url, NULL, &r), 401);
}

TEST(sandbox_ports_envd_and_signed_files_over_https) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.timeout_ms = 120000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &so), ASB_OK);
  const char *id = asb_sandbox_id(sb);
  REQUIRE_RC(asb_files_write(NULL, sb, "/home/user/www/index.txt", "over tls", 8, NULL), ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.cwd = "/home/user/www";
  o.timeout_ms = -1;
  asb_process *p = NULL;
  REQUIRE_RC(asb_commands_start(&p, sb, "python3 -m http.server 8000 --bind 127.0.0.1", &o),
             ASB_OK);
  /* the URL a user builds from getHost */
  char host[128], url[256];
  REQUIRE_RC(asb_sandbox_get_host(host, sizeof host, sb, 8000), ASB_OK);
  snprintf(url, sizeof url, "https://%s/index.txt", host);
  reply r;
  long st = 0;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; st != 200 && asbt_now_ms() < end;) {
    st = get_ok(url, NULL, &r);
    if (st != 200) usleep(100000);
  }
  CHECK_INT(st, 200);
  CHECK_STR(r.body, "over tls");
  /* envd's port: its /health answers without a token */
  snprintf(url, sizeof url, "https://49983-%s.localhost:%d/health", id, F.port);
  st = get_ok(url, NULL, &r);
  CHECK(st == 200 || st == 204);
  /* a closed port: the router's 502 port_closed, over TLS too */
  snprintf(url, sizeof url, "https://8001-%s.localhost:%d/", id, F.port);
  CHECK_INT(get_ok(url, NULL, &r), 502);
  CHECK(strstr(r.body, "\"port_closed\"") != NULL);
  /* a signed download URL with https: routed by its signature */
  char *du = NULL;
  REQUIRE_RC(asb_files_download_url(&du, sb, "/home/user/www/index.txt", NULL, 300), ASB_OK);
  REQUIRE(strncmp(du, "http://", 7) == 0);
  snprintf(url, sizeof url, "https://%s", du + 7);
  asb_free(du);
  CHECK_INT(get_ok(url, NULL, &r), 200);
  CHECK_STR(r.body, "over tls");
  /* the C ABI's loopback URL for the port: plain HTTP, no name to resolve */
  char *lu = NULL, *lu2 = NULL;
  REQUIRE_RC(asb_sandbox_loopback_url(&lu, sb, 8000, NULL), ASB_OK);
  REQUIRE_RC(asb_sandbox_loopback_url(&lu2, sb, 8000, NULL), ASB_OK);
  CHECK_STR(lu2, lu);
  CHECK(strncmp(lu, "http://127.0.0.1:", 17) == 0);
  snprintf(url, sizeof url, "%s/index.txt", lu);
  CHECK_INT(get_ok(url, NULL, &r), 200);
  CHECK_STR(r.body, "over tls");
  asb_free(lu2);
  CHECK_RC(asb_sandbox_loopback_url(&lu2, sb, 0, NULL), ASB_EINVAL);
  CHECK(lu2 == NULL);
  /* killed: the same 502 shape as over plain HTTP */
  REQUIRE_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  snprintf(url, sizeof url, "https://8000-%s.localhost:%d/index.txt", id, F.port);
  CHECK_INT(get_ok(url, NULL, &r), 502);
  CHECK(strstr(r.body, "\"sandbox_not_found\"") != NULL);
  /* and its loopback URL's listener is gone: refused */
  snprintf(url, sizeof url, "%s/index.txt", lu);
  CHECK_INT(get(url, NULL, NULL, &st, &r), CURLE_COULDNT_CONNECT);
  asb_free(lu);
  asb_process_free(p);
  asb_sandbox_free(sb);
  /* a sandbox that never was */
  snprintf(url, sizeof url, "https://8000-nosuchsandbox0000000.localhost:%d/", F.port);
  CHECK_INT(get_ok(url, NULL, &r), 502);
  CHECK(strstr(r.body, "The sandbox was not found") != NULL);
}

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)F.port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Reads until the engine closes fd (generous deadline). 1 when it did. */
static int closed_by_engine(int fd) {
  char buf[512];
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end;) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) < 0) return 0;
    if (!p.revents) continue;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return 1;
  }
  return 0;
}

static int health_over_tls(void) {
  char url[128];
  reply r;
  snprintf(url, sizeof url, "https://127.0.0.1:%d/health", F.port);
  long st = get_ok(url, NULL, &r);
  return st == 204 || st == 200;
}

TEST(bad_handshakes_end_clearly_and_the_engine_serves_on) {
  reply r;
  long st = 0;
  char url[128];
  /* an SNI name the engine has no business with: unrecognized_name */
  snprintf(url, sizeof url, "https://www.example.com:%d/health", F.port);
  CHECK_INT(get(url, CA, NULL, &st, &r), CURLE_SSL_CONNECT_ERROR);
  snprintf(url, sizeof url, "https://a..localhost:%d/health", F.port);
  CHECK(get(url, CA, NULL, &st, &r) != CURLE_OK);
  /* a handshake record cut short, then the client leaves */
  int fd = dial();
  REQUIRE(fd >= 0);
  CHECK(send(fd, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11, MSG_NOSIGNAL) == 11);
  close(fd);
  /* a handshake record cut short, the client stays: closed by the
   * handshake deadline (--header-timeout) */
  fd = dial();
  REQUIRE(fd >= 0);
  CHECK(send(fd, "\x16\x03\x01", 3, MSG_NOSIGNAL) == 3);
  CHECK(closed_by_engine(fd));
  close(fd);
  /* a TLS record of garbage: an alert, then closed */
  fd = dial();
  REQUIRE(fd >= 0);
  char junk[300];
  memset(junk, 0xA5, sizeof junk);
  memcpy(junk, "\x16\x03\x01\x01\x20", 5);
  CHECK(send(fd, junk, sizeof junk, MSG_NOSIGNAL) == (ssize_t)sizeof junk);
  CHECK(closed_by_engine(fd));
  close(fd);
  /* a connection that sends nothing: closed by the same deadline */
  fd = dial();
  REQUIRE(fd >= 0);
  CHECK(closed_by_engine(fd));
  close(fd);
  /* plain HTTP garbage on the port: libmicrohttpd's 400, as before */
  fd = dial();
  REQUIRE(fd >= 0);
  CHECK(send(fd, "\x01\x02 nonsense\r\n\r\n", 15, MSG_NOSIGNAL) == 15);
  CHECK(closed_by_engine(fd));
  close(fd);
  CHECK(health_over_tls());
}

TEST(the_ca_survives_a_restart) {
  char before[4096] = "", after[4096] = "";
  FILE *f = fopen(CA, "r");
  REQUIRE(f);
  CHECK(fread(before, 1, sizeof before - 1, f) > 0);
  fclose(f);
  F.keep_state = 1;
  asb_client_free(C);
  C = NULL;
  engine_fixture_signal(&F, SIGTERM);
  REQUIRE(engine_fixture_launch(&F, 1) == 0);
  F.keep_state = 0;
  REQUIRE_RC(engine_fixture_client(&F, &C), ASB_OK);
  f = fopen(CA, "r");
  REQUIRE(f);
  CHECK(fread(after, 1, sizeof after - 1, f) > 0);
  fclose(f);
  CHECK_STR(after, before);
  CHECK(health_over_tls());
}

static int SETUP_OK;

static void setup(void) {
  static const char *const args[] = {"--header-timeout", "3", NULL};
  REQUIRE(engine_fixture_start_args(&F, "tls", args) == 0);
  REQUIRE_RC(engine_fixture_client(&F, &C), ASB_OK);
  /* what --print-ca-path says is where the CA is */
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --state-dir %s --print-ca-path", ASB_ENGINE_BIN, F.state);
  FILE *pp = popen(cmd, "r");
  REQUIRE(pp);
  if (!fgets(CA, sizeof CA, pp)) CA[0] = 0;
  pclose(pp);
  CA[strcspn(CA, "\n")] = 0;
  SETUP_OK = 1;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  setup();
  if (SETUP_OK) {
    RUN(ca_in_the_state_dir);
    RUN(control_plane_over_https_and_http_on_one_port);
    RUN(sandbox_ports_envd_and_signed_files_over_https);
    RUN(bad_handshakes_end_clearly_and_the_engine_serves_on);
    RUN(the_ca_survives_a_restart);
  }
  asb_client_free(C);
  engine_fixture_stop(&F);
  curl_global_cleanup();
  TEST_MAIN_END();
}
