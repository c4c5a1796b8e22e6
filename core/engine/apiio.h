/* Request and reply shapes of the engine's HTTP fronts (server.c passes
 * them to api.c), and their helpers (apiio.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_APIIO_H
#define ASB_ENGINE_APIIO_H

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stddef.h>

#include "eng_err.h"

typedef struct api_req {
  const char *method;
  const char *path;  /* decoded path, no query */
  const char *query; /* raw query string (after '?'), or "" */
  const char *body;
  size_t body_len;
  /* decoded query values, filled lazily by api_query */
  char **qk, **qv;
  size_t nq;
  int q_parsed;
} api_req;

typedef struct api_reply {
  int status;
  char *body;              /* JSON, malloc'd; NULL = no body */
  char next_token[64];     /* X-Next-Token when set */
  long long total_running; /* X-Total-Running when >= 0 */
} api_reply;

/* Decoded value of a query parameter, or NULL. */
const char *api_query(api_req *q, const char *name);
void api_req_free(api_req *q);
/* r = status with body (taken; NULL = no body). */
void api_reply_json(api_reply *r, int status, cJSON *body);
/* r = status with {"code": status, "message": <fmt...>}. */
void api_error(api_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The error body every engine reply uses, {"code": status, "message":
 * fmt...} (the volumes API and the router add their own keys to it). */
cJSON *api_error_body(int status, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* The HTTP status of an operation's failure: 400 invalid, 404 not found,
 * 409 conflict, 422 failed, 500 internal. */
int api_status_of(const eng_err *err);
/* r = that status with {"code": status, "message": err's, "error": err's
 * code when it has one}. */
void api_reply_err(api_reply *r, const eng_err *err);

#endif
