/* L1 transport: HTTP over libcurl with a shared connection pool, per-call
 * timeouts, cancellation, bounded retries and streaming bodies. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CLIENT_HTTP_H
#define ASB_CLIENT_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "agentsandbox/cancel.h"

typedef struct asbi_http asbi_http;

/* Create a pool. Connections are kept alive and reused across calls; the
 * pool is safe to use from many threads. */
int asbi_http_new(asbi_http **out);
void asbi_http_free(asbi_http *h);

/* Statistics for tests and benchmarks. */
typedef struct asbi_http_stats {
  uint64_t requests;    /* attempts sent (retries count) */
  uint64_t connections; /* new connections opened */
  uint64_t retries;
} asbi_http_stats;
void asbi_http_get_stats(asbi_http *h, asbi_http_stats *out);

/* Return value of a read callback to abort the transfer (→ ASB_EUSER unless
 * the callback recorded another error and set *err). */
#define ASBI_HTTP_READ_ABORT ((size_t)-1)

typedef struct asbi_http_resp asbi_http_resp;

typedef struct asbi_http_req {
  const char *method; /* "GET", "POST", ... */
  const char *url;
  const char *unix_socket;     /* connect through this unix socket, or NULL */
  const char *const *headers;  /* "Name: value", NULL-ended; may be NULL */
  const char *const *headers2; /* a second list (e.g. the client's extra) */
  /* Request body: either memory... */
  const void *body;
  size_t body_len;
  /* ...or streamed from a callback (body must be NULL). body_size -1 =
   * unknown (chunked transfer encoding). read returns bytes written to buf
   * (0 = end), or ASBI_HTTP_READ_ABORT. rewind (optional) restarts the body
   * for a retry; without it a streamed body is never retried. */
  size_t (*read)(void *ud, char *buf, size_t n);
  int (*rewind)(void *ud);
  int64_t body_size;
  /* Timeouts: timeout_ms bounds the whole call including retries (<=0 =
   * none); connect_timeout_ms bounds each connection attempt (0 = 10 s). */
  long timeout_ms;
  long connect_timeout_ms;
  asb_cancel *cancel;
  /* The stop token of the handle the call acts on (requested when that
   * handle is freed or stopped: docs/abi.md, Lifecycle). It interrupts the
   * call like cancel does, for the whole request or stream. */
  asb_cancel *stop;
  /* Retry on connection errors, 429, 502, 503 up to max_retries times, with
   * exponential back-off (or Retry-After), only when idempotent is set. */
  int idempotent;
  int max_retries;
  /* Response handling. on_headers runs once for the final response, before
   * its body. With on_data set, bodies of statuses < 400 stream to it in
   * arbitrary chunks; bodies of errors, and all bodies without on_data, are
   * buffered into resp->body (at most max_body bytes, default 64 MiB; larger
   * is an ASB_EPROTOCOL failure). A non-zero return from either aborts with
   * that value (use negative asb_status codes; positive → ASB_EUSER). */
  int (*on_headers)(void *ud, const asbi_http_resp *resp);
  int (*on_data)(void *ud, const char *p, size_t n);
  void *ud;
  size_t max_body;
  /* Streams only: fail with ASB_ETIMEOUT after this long without a byte
   * while the reader is waiting (0 = never). */
  long idle_timeout_ms;
  /* Ask for (and transparently decode) compressed responses, e.g. "gzip". */
  const char *accept_encoding;
} asbi_http_req;

struct asbi_http_resp {
  long status;
  asbi_buf body;
  /* Headers of the final response, lower-cased names. */
  char **hdr_names;
  char **hdr_values;
  size_t nhdrs;
  size_t hdr_cap;
  int body_streamed; /* the body went to on_data */
};

#define ASBI_HTTP_RESP_INIT \
  { 0, ASBI_BUF_INIT, NULL, NULL, 0, 0, 0 }

/* Perform a request. Returns ASB_OK once a response arrived (whatever its
 * status; callers map statuses), or ASB_ECONNECTION, ASB_ETIMEOUT,
 * ASB_ECANCELED, ASB_EPROTOCOL, ASB_ENOMEM, ASB_EUSER / a callback's code,
 * with asb_error_last() describing it. resp must be initialised with
 * ASBI_HTTP_RESP_INIT and freed with asbi_http_resp_free in all cases. */
int asbi_http_do(asbi_http *h, const asbi_http_req *req, asbi_http_resp *resp);
void asbi_http_resp_free(asbi_http_resp *resp);
/* Case-insensitive header lookup; NULL if absent. */
const char *asbi_http_resp_header(const asbi_http_resp *resp, const char *name);

/* ---- pull streams --------------------------------------------------------
 * For long responses read at the caller's pace (process output, watch
 * events): open returns once the final response's headers arrived (after any
 * retries); reads then hand out body chunks as they come. A reader that stops
 * reading pauses the transfer (back-pressure) once 1 MiB is waiting. The
 * request's timeout_ms bounds only the opening. Error replies (status >= 400)
 * are read whole into resp->body by open, and reads then report EOF. One
 * thread at a time per stream. req may go away after open (it is copied);
 * streams take a memory body only and no on_data. */
typedef struct asbi_http_stream asbi_http_stream;
int asbi_http_stream_open(asbi_http *h, const asbi_http_req *req, asbi_http_resp *resp,
                          asbi_http_stream **out);
/* Next chunk: ASB_OK with *len > 0 (valid until the next call), ASB_OK with
 * *len == 0 at the end, or an error (ECONNECTION if the stream broke,
 * ECANCELED, ETIMEOUT on idle). */
int asbi_http_stream_read(asbi_http_stream *st, const char **data, size_t *len);
/* The same, also giving up after timeout_ms (> 0) with ASB_ETIMEOUT (the
 * stream stays usable) and honouring a second cancel token. */
int asbi_http_stream_read_ex(asbi_http_stream *st, const char **data, size_t *len, long timeout_ms,
                             asb_cancel *extra);
/* Replace the request's cancel and stop tokens for the rest of the stream
 * (either may be NULL): an opener's tokens may go away once it is open, and
 * the handle that owns the stream from then on has its own. */
void asbi_http_stream_set_tokens(asbi_http_stream *st, asb_cancel *cancel, asb_cancel *stop);
/* Reads what is left of the body to its end (a few reads, each within
 * timeout_ms; the bytes are dropped), so that close gives the connection
 * back to the pool: a transfer closed before libcurl saw its end closes
 * its connection. 0 at the end, -1 otherwise (the error is not kept). */
int asbi_http_stream_finish(asbi_http_stream *st, long timeout_ms);
/* Abort (if unfinished) and release. Accepts NULL. */
void asbi_http_stream_close(asbi_http_stream *st);

/* Parse a Retry-After value (delta-seconds or an HTTP date) into seconds
 * from now; -1 if absent or malformed. */
int asbi_http_parse_retry_after(const char *v);

#endif
