/* The code interpreter's HTTP API (E2B's, port 49999) on libmicrohttpd.
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_SERVER_H
#define ASB_CODEINTERP_SERVER_H

#include <stddef.h>

/* Largest request body taken; larger ones get 400. */
#define CI_MAX_BODY (16u << 20)
/* A keepalive line goes out after this long without output. */
#define CI_KEEPALIVE_MS 5000

/* Seconds a request head may take from its request line. */
#define CI_HEAD_TIMEOUT_S 30
/* Connections served at once. */
#define CI_MAX_CONNECTIONS 512

typedef struct ci_server_opts {
  const char *listen; /* IPv4 or IPv6 address */
  int port;           /* 0 = any free port */
  /* SHA-256 of the tokens taken (NULL = that one is not configured). With
   * either configured, every route but GET /health needs X-Access-Token
   * matching access_sha256 or E2B-Traffic-Access-Token matching
   * traffic_sha256 (the stock SDKs send the second one on their context
   * calls, the first only on /execute). Only hashes: the server runs as
   * the sandbox's user, who can read whatever it holds. */
  const unsigned char *access_sha256;
  const unsigned char *traffic_sha256;
  /* The hashes from this file instead ("access <hex>" and "traffic <hex>"
   * lines), read again for every request; while it is missing or
   * unreadable every route but GET /health is refused. NULL = none. */
  const char *token_file;
} ci_server_opts;

/* Start serving (threads of its own). Returns the bound port, or -1 with a
 * message in err. */
int ci_server_start(const ci_server_opts *o, char *err, size_t errlen);
/* Stop taking connections, then end those open. */
void ci_server_stop(void);

#endif
