/* Raw HTTP to a test engine (engine_fixture.h), for the e2e tests and
 * benchmarks that talk to its API or, through its router, to a sandbox's
 * port without the library: one request, its status and its reply's body.
 * libcurl (the caller's main runs curl_global_init).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_HTTP_H
#define ASB_ENGINE_HTTP_H

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"

typedef struct engine_req {
  const char *json;           /* the request's body (or NULL: none) */
  int api_key;                /* 1: X-API-Key (the fixture's) and Content-Type:
                                 application/json, as E2B's SDKs call the API */
  const char *sandbox;        /* through the router to this sandbox (E2b-Sandbox-Id) */
  int port;                   /* and this port of it (E2b-Sandbox-Port; 0: not sent) */
  const char *const *headers; /* more header lines, NULL-ended (or NULL) */
  long timeout_s;             /* 0: no limit */
} engine_req;

typedef struct engine_http_buf {
  char *p;
  size_t n;
} engine_http_buf;

static inline size_t engine_http_sink(char *d, size_t s, size_t n, void *u) {
  engine_http_buf *b = u;
  size_t len = s * n;
  char *np = realloc(b->p, b->n + len + 1);
  if (!np) return 0;
  memcpy(np + b->n, d, len);
  b->n += len;
  np[b->n] = 0;
  b->p = np;
  return len;
}

/* METHOD f's URL + path as r says (NULL: no key, no body, no limit). The
 * HTTP status, 0 without a reply; with body, the reply's body in *body
 * (malloc'd, "" if none: free it). */
static inline long engine_http(const engine_fixture *f, const char *method, const char *path,
                               const engine_req *r, char **body) {
  static const engine_req none;
  if (!r) r = &none;
  CURL *h = curl_easy_init();
  engine_http_buf b = {calloc(1, 1), 0};
  char url[512], k[200], hi[128], hp[64];
  snprintf(url, sizeof url, "%s%s", f->url, path);
  struct curl_slist *hl = NULL;
  if (r->api_key) {
    snprintf(k, sizeof k, "X-API-Key: %s", f->key);
    hl = curl_slist_append(hl, k);
    hl = curl_slist_append(hl, "Content-Type: application/json");
  }
  if (r->sandbox) {
    snprintf(hi, sizeof hi, "E2b-Sandbox-Id: %s", r->sandbox);
    hl = curl_slist_append(hl, hi);
  }
  if (r->port) {
    snprintf(hp, sizeof hp, "E2b-Sandbox-Port: %d", r->port);
    hl = curl_slist_append(hl, hp);
  }
  for (size_t i = 0; r->headers && r->headers[i]; i++) hl = curl_slist_append(hl, r->headers[i]);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  if (r->json) curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->json);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, engine_http_sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  if (r->timeout_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT, r->timeout_s);
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  curl_slist_free_all(hl);
  curl_easy_cleanup(h);
  if (body)
    *body = b.p;
  else
    free(b.p);
  return st;
}

/* The engine's API with its key: METHOD path with json (or NULL), within
 * 300 s. */
static inline long engine_api(const engine_fixture *f, const char *method, const char *path,
                              const char *json, char **body) {
  engine_req r = {.json = json, .api_key = 1, .timeout_s = 300};
  return engine_http(f, method, path, &r, body);
}

/* POST /sandboxes/{id}/{action} (pause, connect, timeout...) with json and
 * the API key, within timeout_s (0: no limit): the status. */
static inline long engine_sandbox_post(const engine_fixture *f, const char *id, const char *action,
                                       const char *json, long timeout_s) {
  char p[256];
  snprintf(p, sizeof p, "/sandboxes/%s/%s", id, action);
  engine_req r = {.json = json, .api_key = 1, .timeout_s = timeout_s};
  return engine_http(f, "POST", p, &r, NULL);
}

#endif
