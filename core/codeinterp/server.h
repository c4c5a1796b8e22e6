/* The code interpreter's HTTP API (E2B's, port 49999) on libmicrohttpd.
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_SERVER_H
#define ASB_CODEINTERP_SERVER_H

#include <stddef.h>

/* Largest request body taken; larger ones get 400. */
#define CI_MAX_BODY (16u << 20)
/* A keepalive line goes out after this long without output. */
#define CI_KEEPALIVE_MS 5000

typedef struct ci_server_opts {
  const char *listen;       /* IPv4 or IPv6 address */
  int port;                 /* 0 = any free port */
  const char *access_token; /* NULL = no auth */
  /* 1: the token guards only POST /execute (what runs code). E2B's stock
   * SDKs send X-Access-Token on /execute alone, so this is how the engine
   * runs it; a wrong token on any route is still a 401. 0: every route but
   * GET /health needs it. */
  int token_execute_only;
} ci_server_opts;

/* Start serving (threads of its own). Returns the bound port, or -1 with a
 * message in err. */
int ci_server_start(const ci_server_opts *o, char *err, size_t errlen);
/* Stop taking connections, then end those open. */
void ci_server_stop(void);

#endif
