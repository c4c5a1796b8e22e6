/* https vs http on the engine's port (core/engine/front.c): a small
 * request through the router (envd's /health on
 * <scheme>://49983-<id>.localhost:<port>), interleaved request by request
 * so the four series share the machine's load:
 *   - keep-alive: one connection reused (TLS: one handshake in all)
 *   - a new connection per request (TLS: a full handshake each, no
 *     session resumption)
 * p50/p99 and the https/http ratios.
 * usage: tls_bench [iterations]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"
#include "bench_signals.h"

static engine_fixture F;

static size_t sink(char *p, size_t s, size_t n, void *ud) {
  (void)p;
  (void)ud;
  return s * n;
}

static CURL *handle(const char *url, const char *ca, int fresh, struct curl_slist *res) {
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_RESOLVE, res);
  curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  if (fresh) {
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_SESSIONID_CACHE, 0L);
  }
  return h;
}

static int one(CURL *h, double *t) {
  double t0 = bench_now();
  long st = 0;
  if (curl_easy_perform(h) != CURLE_OK) return -1;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  *t = bench_now() - t0;
  return st == 200 || st == 204 ? 0 : -1;
}

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int n = argc > 1 ? atoi(argv[1]) : 2000;
  if (n < 10) n = 10;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start(&F, "tlsbench") != 0) return 1;
  asb_client *C = NULL;
  asb_sandbox *sb = NULL;
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.timeout_ms = 600000;
  if (engine_fixture_client(&F, &C) || asb_sandbox_create(&sb, C, &so)) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    engine_fixture_stop(&F);
    return 1;
  }
  char ca[256], host[128], rs[160], url_http[256], url_https[256];
  snprintf(ca, sizeof ca, "%s/tls/ca.pem", F.state);
  snprintf(host, sizeof host, "49983-%s.localhost:%d", asb_sandbox_id(sb), F.port);
  snprintf(rs, sizeof rs, "%s:127.0.0.1", host);
  snprintf(url_http, sizeof url_http, "http://%s/health", host);
  snprintf(url_https, sizeof url_https, "https://%s/health", host);
  struct curl_slist *res = curl_slist_append(NULL, rs);
  CURL *h[4] = {handle(url_http, ca, 0, res), handle(url_https, ca, 0, res),
                handle(url_http, ca, 1, res), handle(url_https, ca, 1, res)};
  const char *names[4] = {"http  keep-alive", "https keep-alive", "http  new connection",
                          "https new connection (full handshake)"};
  double *v[4];
  for (int k = 0; k < 4; k++) v[k] = calloc((size_t)n, sizeof(double));
  int rc = 0;
  for (int i = 0; i < n + 20 && !rc; i++) /* 20 warm-up rounds */
    for (int k = 0; k < 4 && !rc; k++) {
      double t = 0;
      rc = one(h[k], &t);
      if (i >= 20) v[k][i - 20] = t;
    }
  if (rc) {
    fprintf(stderr, "a request failed\n");
  } else {
    printf("tls_bench: envd /health through the router, %d requests per series\n", n);
    double p[4];
    for (int k = 0; k < 4; k++) p[k] = bench_report(names[k], v[k], n);
    printf("ratio https/http keep-alive (p50)        %.2fx\n", p[1] / p[0]);
    printf("ratio https/http new connection (p50)    %.2fx\n", p[3] / p[2]);
  }
  for (int k = 0; k < 4; k++) {
    curl_easy_cleanup(h[k]);
    free(v[k]);
  }
  curl_slist_free_all(res);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(C);
  engine_fixture_stop(&F);
  curl_global_cleanup();
  return rc ? 1 : 0;
}
