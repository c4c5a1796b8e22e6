/* codec_bench: throughput of the codecs on the process-output path.
 *
 * envd streams process output as Connect envelopes holding
 * {"event":{"data":{"stdout":"<base64>"}}}; the client decodes the envelope,
 * parses the JSON strictly and base64-decodes the bytes. This measures each
 * step on its own and the whole chain, in one run:
 *
 *   codec_bench [seconds-per-case [name-filter]]     (default 0.4, all)
 *
 * With a filter only benchmarks whose name contains it run (for profiling,
 * e.g. perf record codec_bench 2 client).
 *
 * Sizes name the base64 string of each event (for base64 and UTF-8: the
 * buffer). "in MB/s" counts the bytes a step consumes (raw bytes for encode, base64
 * text for decode, JSON text for the parser, wire bytes for the Connect
 * decoder); "payload MB/s" counts the process output those bytes carry.
 * MB = 10^6 bytes. Each figure is the best of five timed repetitions.
 * Not a test: it checks its own results once, then only times.
 *
 * SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/connect.h"
#include "proto/pjson.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/util.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static double g_seconds = 0.4;
static const char *g_filter;   /* run only benchmarks whose name has this */
static volatile size_t g_sink; /* keeps results observable */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
  fprintf(stderr, "codec_bench: %s\n", what);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

/* Deterministic pseudo-random bytes (process output is arbitrary). */
static void fill_random(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (unsigned char)(x >> 24);
  }
}

static int wanted(const char *name) {
  return !g_filter || strstr(name, g_filter) != NULL;
}

/* Calls fn(ctx) repeatedly; returns the best seconds per call. */
static double time_best(void (*fn)(void *), void *ctx) {
  /* Calibrate: how many calls fill a fifth of the budget. */
  size_t iters = 1;
  for (;;) {
    double t0 = now_s();
    for (size_t i = 0; i < iters; i++) fn(ctx);
    double dt = now_s() - t0;
    if (dt >= g_seconds / 10 || iters >= ((size_t)1 << 30)) break;
    iters *= 2;
  }
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now_s();
    for (size_t i = 0; i < iters; i++) fn(ctx);
    double per = (now_s() - t0) / (double)iters;
    if (per < best) best = per;
  }
  return best;
}

static void report(const char *name, const char *size, double secs, size_t in_bytes,
                   size_t payload_bytes) {
  printf("%-34s %8s %12.1f %14.1f\n", name, size, (double)in_bytes / secs / 1e6,
         (double)payload_bytes / secs / 1e6);
  fflush(stdout);
}

/* ---- base64 -------------------------------------------------------------- */

typedef struct b64_ctx {
  unsigned char *raw;
  size_t raw_len;
  char *text;
  size_t text_len;
  unsigned char *out;
} b64_ctx;

static void run_encode(void *p) {
  b64_ctx *c = p;
  g_sink += asbi_b64_encode(c->raw, c->raw_len, c->text, 0, 1);
}

static void run_decode(void *p) {
  b64_ctx *c = p;
  size_t got = 0;
  if (asbi_b64_decode(c->text, c->text_len, c->out, &got) != 0) die("decode");
  g_sink += got;
}

static void bench_base64(size_t raw_len, const char *label) {
  b64_ctx c;
  c.raw_len = raw_len;
  c.raw = xmalloc(raw_len);
  fill_random(c.raw, raw_len, raw_len);
  c.text = xmalloc(asbi_b64_encoded_len(raw_len) + 1);
  c.text_len = asbi_b64_encode(c.raw, raw_len, c.text, 0, 1);
  c.out = xmalloc(asbi_b64_decoded_max(c.text_len) + 1);
  size_t got = 0;
  if (asbi_b64_decode(c.text, c.text_len, c.out, &got) != 0 || got != raw_len ||
      memcmp(c.out, c.raw, raw_len) != 0)
    die("base64 round trip");
  if (wanted("base64 encode"))
    report("base64 encode", label, time_best(run_encode, &c), raw_len, raw_len);
  if (wanted("base64 decode"))
    report("base64 decode", label, time_best(run_decode, &c), c.text_len, raw_len);
  free(c.raw);
  free(c.text);
  free(c.out);
}

/* ---- UTF-8 --------------------------------------------------------------- */

typedef struct utf8_ctx {
  char *s;
  size_t n;
} utf8_ctx;

static void run_utf8(void *p) {
  utf8_ctx *c = p;
  if (!asbi_utf8_valid(c->s, c->n)) die("utf8_valid");
  g_sink += c->n;
}

static void bench_utf8(void) {
  utf8_ctx c;
  c.n = MIB;
  c.s = xmalloc(c.n);
  /* ASCII: printable text with newlines, like command output. */
  for (size_t i = 0; i < c.n; i++) c.s[i] = (i % 80 == 79) ? '\n' : (char)(' ' + i % 95);
  if (wanted("utf8_valid ascii"))
    report("utf8_valid ascii", "1MiB", time_best(run_utf8, &c), c.n, c.n);
  /* Mixed: ASCII words with 2-, 3- and 4-byte sequences between them. */
  static const char piece[] =
      "build: \xC3\xA9t\xC3\xA9 \xE2\x9C\x93 ok \xE6\x97\xA5\xE6\x9C\xAC "
      "\xF0\x9F\x98\x80 done\n";
  size_t pl = sizeof piece - 1, o = 0;
  while (o + pl <= c.n) {
    memcpy(c.s + o, piece, pl);
    o += pl;
  }
  memset(c.s + o, 'x', c.n - o);
  if (wanted("utf8_valid mixed"))
    report("utf8_valid mixed", "1MiB", time_best(run_utf8, &c), c.n, c.n);
  free(c.s);
}

/* ---- data events ----------------------------------------------------------- */

/* {"event":{"data":{"stdout":"<base64 of raw>"}}} */
static char *make_event(const unsigned char *raw, size_t n, size_t *len) {
  static const char head[] = "{\"event\":{\"data\":{\"stdout\":\"";
  static const char tail[] = "\"}}}";
  size_t b = asbi_b64_encoded_len(n);
  char *j = xmalloc(sizeof head - 1 + b + sizeof tail);
  memcpy(j, head, sizeof head - 1);
  size_t o = sizeof head - 1;
  o += asbi_b64_encode(raw, n, j + o, 0, 1);
  memcpy(j + o, tail, sizeof tail);
  *len = o + sizeof tail - 1;
  return j;
}

typedef struct event_ctx {
  char *json;
  size_t len;
} event_ctx;

static void run_parse(void *p) {
  event_ctx *c = p;
  const char *err = NULL;
  cJSON *v = asbi_pj_parse(c->json, c->len, &err);
  if (!v) die(err ? err : "parse");
  g_sink += (size_t)v->type;
  cJSON_Delete(v);
}

static void bench_parse(size_t b64_len, const char *label) {
  size_t raw_len = b64_len / 4 * 3;
  unsigned char *raw = xmalloc(raw_len);
  fill_random(raw, raw_len, b64_len);
  event_ctx c;
  c.json = make_event(raw, raw_len, &c.len);
  if (wanted("pj_parse data event"))
    report("pj_parse data event", label, time_best(run_parse, &c), c.len, raw_len);
  free(c.json);
  free(raw);
}

/* ---- Connect streams -------------------------------------------------------- */

/* A stream of `count` data events of `raw_len` bytes each, then the
 * end-stream envelope. */
typedef struct stream_ctx {
  asbi_buf wire;
  unsigned char *raw; /* the output of event i is raw + i */
  size_t raw_len;
  size_t count;
  size_t payload; /* sum of raw_len */
  size_t chunk;   /* the decoder is fed this much at a time */
  /* per run */
  size_t seen, got_bytes;
  int ended;
  int check;    /* compare decoded output against raw */
  asbi_buf out; /* the client keeps the output it collects */
} stream_ctx;

static void stream_init(stream_ctx *c, size_t raw_len, size_t count) {
  memset(c, 0, sizeof *c);
  c->raw_len = raw_len;
  c->count = count;
  c->raw = xmalloc(raw_len + count);
  fill_random(c->raw, raw_len + count, raw_len);
  asbi_buf_init(&c->wire, 0);
  asbi_buf_init(&c->out, 0);
  for (size_t i = 0; i < count; i++) {
    size_t jl;
    char *j = make_event(c->raw + i, raw_len, &jl);
    if (asbi_connect_encode(&c->wire, 0, j, jl) != 0) die("encode");
    free(j);
  }
  if (asbi_connect_encode(&c->wire, ASBI_CONNECT_FLAG_END_STREAM, "{}", 2) != 0) die("encode");
  c->payload = raw_len * count;
}

static void stream_free(stream_ctx *c) {
  asbi_buf_free(&c->wire);
  asbi_buf_free(&c->out);
  free(c->raw);
}

static void feed_all(stream_ctx *c, asbi_connect_msg_fn fn) {
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 0);
  c->seen = c->got_bytes = 0;
  c->ended = 0;
  for (size_t off = 0; off < c->wire.len; off += c->chunk) {
    size_t n = c->wire.len - off < c->chunk ? c->wire.len - off : c->chunk;
    int rc = asbi_connect_dec_feed(&d, c->wire.data + off, n, fn, c);
    if (rc != 0) die(asbi_connect_strerror(rc));
  }
  if (asbi_connect_dec_finish(&d) != 0 || c->seen != c->count || !c->ended)
    die("stream did not end cleanly");
  asbi_connect_dec_free(&d);
}

static int on_envelope_only(void *ud, unsigned flags, const char *data, size_t len) {
  stream_ctx *c = ud;
  if (flags & ASBI_CONNECT_FLAG_END_STREAM) {
    c->ended = 1;
    return 0;
  }
  if (data[len] != '\0') die("data[len] != 0");
  c->seen++;
  g_sink += (unsigned char)data[len / 2];
  return 0;
}

static void run_connect(void *p) {
  feed_all(p, on_envelope_only);
}

/* What the client does per envelope (core/client/envd.c on_envelope, then
 * core/client/commands.c pump/deliver): strict parse, look the event up,
 * base64-decode the output onto the output it keeps. */
static int on_envelope_client(void *ud, unsigned flags, const char *data, size_t len) {
  stream_ctx *c = ud;
  if (flags & ASBI_CONNECT_FLAG_END_STREAM) {
    char *code = NULL, *message = NULL;
    if (asbi_connect_parse_end(data, len, &code, &message) != 0) die("end-stream");
    c->ended = 1;
    return 0;
  }
  const char *err = NULL;
  cJSON *m = asbi_pj_parse(data, len, &err);
  if (!m) die(err ? err : "parse");
  const cJSON *ev = asbi_pj_field(m, "event");
  const cJSON *dat = asbi_pj_field(ev, "data");
  if (!dat || !asbi_pj_field(dat, "stdout")) die("not a stdout event");
  size_t n = 0;
  if (asbi_pj_append_bytes(dat, "stdout", &c->out, &n) != 0) die("base64");
  cJSON_Delete(m);
  if (c->check &&
      (n != c->raw_len || memcmp(c->out.data + c->out.len - n, c->raw + c->seen, n) != 0))
    die("client path: wrong output");
  c->seen++;
  c->got_bytes += n;
  return 0;
}

static void run_client(void *p) {
  stream_ctx *c = p;
  asbi_buf_clear(&c->out); /* one command's output per run */
  feed_all(c, on_envelope_client);
  g_sink += c->got_bytes;
}

static void bench_stream(size_t b64_len, size_t count, const char *label, size_t chunk,
                         const char *dec_name, const char *client_name) {
  stream_ctx c;
  stream_init(&c, b64_len / 4 * 3, count);
  c.chunk = chunk;
  c.check = 1;
  run_client(&c);
  c.check = 0;
  if (wanted(dec_name)) report(dec_name, label, time_best(run_connect, &c), c.wire.len, c.payload);
  if (wanted(client_name))
    report(client_name, label, time_best(run_client, &c), c.wire.len, c.payload);
  stream_free(&c);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    g_seconds = atof(argv[1]);
    if (!(g_seconds > 0)) die("usage: codec_bench [seconds-per-case [name-filter]]");
  }
  if (argc > 2) g_filter = argv[2];
  printf("%-34s %8s %12s %14s\n", "benchmark", "size", "in MB/s", "payload MB/s");
  bench_base64(64 * KIB, "64KiB");
  bench_base64(MIB, "1MiB");
  bench_utf8();
  bench_parse(64 * KIB, "64KiB");
  bench_parse(MIB, "1MiB");
  /* 16 KiB is a typical socket read; 256 KiB is the client's curl buffer,
   * so a chunk often holds whole smaller events. */
  for (int big = 0; big < 2; big++) {
    size_t chunk = big ? 256 * KIB : 16 * KIB;
    const char *dn = big ? "connect decode (256KiB chunks)" : "connect decode (16KiB chunks)";
    const char *cn = big ? "client path, 256KiB chunks" : "client path (env+parse+b64)";
    bench_stream(64 * KIB, 128, "64KiB", chunk, dn, cn);
    bench_stream(MIB, 8, "1MiB", chunk, dn, cn);
  }
  return (int)(g_sink & 0);
}
