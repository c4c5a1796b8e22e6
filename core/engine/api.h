/* Control-plane request/reply shapes shared by server.c and api.c.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_API_H
#define ASB_ENGINE_API_H

#include <stdarg.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "registry.h"

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
  char *body;            /* JSON, malloc'd; NULL = no body */
  char next_token[64];   /* X-Next-Token when set */
  long long total_running; /* X-Total-Running when >= 0 */
} api_reply;

/* Decoded value of a query parameter, or NULL. */
const char *api_query(api_req *q, const char *name);
void api_req_free(api_req *q);

void api_handle(engine *e, api_req *q, api_reply *r);
/* Talk to the envd of a sandbox over its unix socket: one request, whole
 * reply. Returns the HTTP status, or a negative errno. */
int envd_request(sbx *s, const char *method, const char *path,
                 const char *body, char **reply, int timeout_ms);
void api_reply_json(api_reply *r, int status, cJSON *body);
void api_error(api_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
