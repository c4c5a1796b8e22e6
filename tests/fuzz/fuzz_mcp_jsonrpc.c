/* Fuzz agent-sandbox-mcp's JSON-RPC reader: the stdio framer, the message
 * reader, the answer builders and the argument validator.
 * Input: [max selector][stream...].
 * Invariants: any chunking of the stream gives the same lines and
 * over-long events, in the order the input has them (each line bounded,
 * non-blank, without LF); every line parses to a result or a JSON-RPC
 * error (-32700, -32600), each message is classified consistently (requests
 * and notifications have a method; request ids are a string or an integer
 * whose JSON text parses back); every answer the server would build from
 * it is valid JSON-RPC; the validator returns a verdict for any value
 * against a fixed schema and any schema against itself.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "mcp/jsonrpc.h"
#include "proto/pjson.h"
#include "util/util.h"

char *mcp_schema_check(const cJSON *schema, const cJSON *value, const char *where);

typedef struct run {
  asbi_buf log; /* 'L' len:4 bytes... per line, 'O' per over-long line */
  size_t max;
  int lines;
  int events, stop_every; /* stop the feed every stop_every events (0 = never) */
} run;

static void check_json_rpc(const char *text, int want_id) {
  FUZZ_CHECK(text != NULL);
  cJSON *v = asbi_pj_parse(text, strlen(text), NULL);
  FUZZ_CHECK(cJSON_IsObject(v));
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(v, "jsonrpc");
  FUZZ_CHECK(cJSON_IsString(ver) && strcmp(ver->valuestring, "2.0") == 0);
  if (want_id) FUZZ_CHECK(cJSON_GetObjectItemCaseSensitive(v, "id") != NULL);
  cJSON_Delete(v);
}

static const char SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"minLength\":1},"
    "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400},"
    "\"envs\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"state\":{\"type\":\"string\",\"enum\":[\"all\",\"running\"]},"
    "\"list\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":3}},"
    "\"required\":[\"command\"],\"additionalProperties\":false}";

static void check_message(const char *line, size_t len) {
  mcp_parsed p;
  int rc = mcp_rpc_parse(&p, line, len);
  FUZZ_CHECK(rc == 0 || rc == MCP_PARSE_ERROR || rc == MCP_INVALID_REQUEST);
  if (rc) {
    FUZZ_CHECK(p.err_code == rc && p.count == 0 && p.err_msg[0]);
    char *e = mcp_rpc_error(NULL, 0, rc, p.err_msg, NULL);
    check_json_rpc(e, 0);
    free(e);
    e = mcp_rpc_error(NULL, 1, rc, p.err_msg, NULL);
    check_json_rpc(e, 1);
    free(e);
  } else {
    FUZZ_CHECK(p.count >= 1 && (p.batch || p.count == 1));
    FUZZ_CHECK(mcp_parsed_replies(&p) <= p.count);
    for (size_t i = 0; i < p.count; i++) {
      const mcp_msg *m = &p.msgs[i];
      FUZZ_CHECK(m->kind >= MCP_MSG_REQUEST && m->kind <= MCP_MSG_INVALID);
      if (m->kind == MCP_MSG_REQUEST || m->kind == MCP_MSG_NOTIFICATION)
        FUZZ_CHECK(m->method && m->method[0]);
      if (m->kind == MCP_MSG_REQUEST) FUZZ_CHECK(m->id != NULL);
      if (m->kind == MCP_MSG_NOTIFICATION) FUZZ_CHECK(m->id == NULL);
      if (m->kind == MCP_MSG_INVALID) FUZZ_CHECK(m->err_code < 0 && m->err_msg);
      if (m->params) FUZZ_CHECK(cJSON_IsObject(m->params));
      if (m->id) {
        cJSON *id = asbi_pj_parse(m->id, strlen(m->id), NULL);
        FUZZ_CHECK(cJSON_IsString(id) || cJSON_IsNumber(id));
        cJSON_Delete(id);
        char *r = mcp_rpc_result(m->id, "{}");
        check_json_rpc(r, 1);
        free(r);
        char *e = mcp_rpc_error(m->id, 0, MCP_INVALID_PARAMS, m->method, m->params);
        check_json_rpc(e, 1);
        free(e);
      }
      /* The validator, on whatever the client sent as arguments. */
      cJSON *schema = asbi_pj_parse(SCHEMA, sizeof SCHEMA - 1, NULL);
      FUZZ_CHECK(schema != NULL);
      const cJSON *args =
          m->params ? cJSON_GetObjectItemCaseSensitive(m->params, "arguments") : NULL;
      free(mcp_schema_check(schema, args ? args : m->json, "arguments"));
      free(mcp_schema_check(m->json, m->json, "arguments"));
      cJSON_Delete(schema);
    }
  }
  mcp_parsed_free(&p);
}

static int on_line(void *ud, const char *line, size_t len) {
  run *r = ud;
  int stop = r->stop_every && ++r->events % r->stop_every == 0;
  if (!line) {
    FUZZ_CHECK(len > r->max);
    asbi_buf_putc(&r->log, 'O');
    return stop;
  }
  FUZZ_CHECK(len > 0 && len <= r->max);
  FUZZ_CHECK(line[len] == '\0');
  FUZZ_CHECK(memchr(line, '\n', len) == NULL);
  unsigned char l4[5] = {'L', (unsigned char)(len >> 24), (unsigned char)(len >> 16),
                         (unsigned char)(len >> 8), (unsigned char)len};
  asbi_buf_append(&r->log, l4, 5);
  asbi_buf_append(&r->log, line, len);
  r->lines++;
  /* Text the server echoes back must come out as valid UTF-8. */
  char *clean = mcp_utf8_clean(line, len);
  FUZZ_CHECK(clean && asbi_utf8_valid(clean, strlen(clean)));
  free(clean);
  return stop;
}

/* mode 0: one feed; 1: random chunks; 2: byte by byte; 3: random chunks,
 * stopping after some lines and feeding the rest again (what the stdio
 * reader does when it hands reading over to another thread). */
static void frame(const uint8_t *p, size_t n, size_t max, int mode, run *r) {
  mcp_framer f;
  mcp_framer_init(&f, max);
  memset(r, 0, sizeof *r);
  asbi_buf_init(&r->log, 0);
  r->max = f.max;
  fuzz_rng rng;
  fuzz_rng_init(&rng, p, n, 7);
  if (mode == 3) r->stop_every = 1 + (int)(fuzz_rng_next(&rng) % 3);
  size_t at = 0;
  while (at < n) {
    size_t k = mode == 0 ? n : mode == 2 ? 1 : fuzz_chunk(&rng, n - at);
    size_t used = 0;
    int rc = mcp_framer_feed(&f, p + at, k, on_line, r, &used);
    FUZZ_CHECK(used <= k);
    if (rc == 0) {
      FUZZ_CHECK(used == k);
    } else {
      /* Stopped after a line (its newline taken), or on an over-long line
       * whose rest will be skipped (all of this chunk taken). */
      FUZZ_CHECK(rc == 1 && mode == 3 && used > 0 && (p[at + used - 1] == '\n' || used == k));
    }
    at += used;
  }
  int rc = mcp_framer_finish(&f, on_line, r);
  FUZZ_CHECK(rc == 0 || (rc == 1 && mode == 3));
  mcp_framer_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const size_t maxes[] = {1, 2, 8, 64, 256, 1024, 4096, 65536};
  size_t max = maxes[data[0] & 7];
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  run a, b, c, d;
  frame(p, n, max, 0, &a);
  frame(p, n, max, 1, &b);
  frame(p, n, max, 2, &c);
  frame(p, n, max, 3, &d);
  FUZZ_CHECK(a.log.len == b.log.len && a.log.len == c.log.len && a.log.len == d.log.len);
  FUZZ_CHECK(a.log.len == 0 || (memcmp(a.log.data, b.log.data, a.log.len) == 0 &&
                                memcmp(a.log.data, c.log.data, a.log.len) == 0 &&
                                memcmp(a.log.data, d.log.data, a.log.len) == 0));
  /* Against a model: split on LF, drop one CR before it (or at the end),
   * blank lines vanish, longer than max is an over-long event. */
  asbi_buf ref = ASBI_BUF_INIT;
  size_t i = 0;
  while (i < n) {
    const uint8_t *nl = memchr(p + i, '\n', n - i);
    size_t e = nl ? (size_t)(nl - p) : n;
    size_t l = e - i;
    if (l && p[e - 1] == '\r') l--;
    int blank = 1;
    for (size_t j = 0; j < l; j++)
      if (p[i + j] != ' ' && p[i + j] != '\t' && p[i + j] != '\r') blank = 0;
    if (l > a.max) {
      asbi_buf_putc(&ref, 'O');
    } else if (l && !blank) {
      unsigned char l4[5] = {'L', (unsigned char)(l >> 24), (unsigned char)(l >> 16),
                             (unsigned char)(l >> 8), (unsigned char)l};
      asbi_buf_append(&ref, l4, 5);
      asbi_buf_append(&ref, p + i, l);
    }
    i = e + 1;
  }
  FUZZ_CHECK(ref.len == a.log.len && (ref.len == 0 || memcmp(ref.data, a.log.data, ref.len) == 0));
  asbi_buf_free(&ref);
  /* Every line through the reader. */
  size_t at = 0;
  while (at < a.log.len) {
    if (a.log.data[at] == 'O') {
      at++;
      continue;
    }
    const unsigned char *h = (const unsigned char *)a.log.data + at + 1;
    size_t len = ((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) | h[3];
    check_message(a.log.data + at + 5, len);
    at += 5 + len;
  }
  asbi_buf_free(&a.log);
  asbi_buf_free(&b.log);
  asbi_buf_free(&c.log);
  asbi_buf_free(&d.log);
  return 0;
}
