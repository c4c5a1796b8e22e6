/* envd: the RPC plumbing every service uses (rpc.c): Connect errors and the
 * errno mapping, the call context, the handler kinds (unary, server stream,
 * client stream) and a method table's entries, stream envelopes and the
 * stream wait. Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_RPC_H
#define ASB_ENVD_RPC_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "util/buf.h"

/* A Connect error: code is one of the Connect code names. */
typedef struct envd_err {
  const char *code;
  char msg[512];
} envd_err;
void envd_err_set(envd_err *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Map errno to a Connect code (ENOENT not_found, EACCES/EPERM
 * permission_denied, ENOSPC/EDQUOT resource_exhausted, ...). */
const char *envd_errno_code(int err);
/* Go's syscall error text for errno: strerror, first letter in lower case. */
void envd_errno_text(int err, char *out, size_t n);

/* Per-request context handed to RPC handlers. */
typedef struct envd_call {
  const envd_user *user;
  int64_t timeout_ms; /* Connect-Timeout-Ms, 0 = none */
  int keepalive_s;    /* Keepalive-Ping-Interval (default 90) */
  int sock;           /* client socket (for hang-up detection), -1 */
  /* ASB_TIMING (log.h): ns when the request's head arrived and when its
   * body was complete; 0 with the timers off */
  uint64_t t_head, t_body;
} envd_call;

/* Unary handler: fills *resp (a JSON object) or e. 0 or -1. */
typedef int (*envd_unary_fn)(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e);

/* Server-streaming: the handler returns a stream, or NULL and e. The stream
 * produces envelopes through next(): it appends bytes to out (whole
 * envelopes, the end-stream one last) and returns 1 while more may follow, 0
 * when done, -1 to abort the connection. next() may block. */
typedef struct envd_stream envd_stream;
struct envd_stream {
  int (*next)(envd_stream *s, asbi_buf *out);
  void (*destroy)(envd_stream *s);
};
typedef envd_stream *(*envd_stream_fn)(const envd_call *c, const cJSON *req, envd_err *e);

/* Envelope helpers for streams. */
int envd_env_msg(asbi_buf *out, const char *json, size_t len);
int envd_env_end(asbi_buf *out, const char *code, const char *msg);

/* Client-streaming: begin/message/finish. */
typedef struct envd_cstream envd_cstream;
struct envd_cstream {
  int (*message)(envd_cstream *s, const cJSON *msg, envd_err *e);
  int (*finish)(envd_cstream *s, cJSON **resp, envd_err *e);
  void (*destroy)(envd_cstream *s);
};
typedef envd_cstream *(*envd_cstream_fn)(const envd_call *c, envd_err *e);

/* envd_method.kind */
enum { ENVD_UNARY = 0, ENVD_SERVER_STREAM = 1, ENVD_CLIENT_STREAM = 2 };

typedef struct envd_method {
  const char *path; /* "/process.Process/Start" */
  int kind;         /* ENVD_UNARY, ENVD_SERVER_STREAM or ENVD_CLIENT_STREAM */
  envd_unary_fn unary;
  envd_stream_fn stream;
  envd_cstream_fn cstream;
  int fs_creds; /* run with the user's filesystem credentials */
} envd_method;

/* Wait helper for streams: poll wake_fd and the client socket until
 * timeout_ms (-1 = forever). 1 woken, 0 timeout, -1 client gone. */
int envd_wait(int wake_fd, int sock, int timeout_ms);

#endif
