/* Fuzz the Jupyter wire-message parser and what is built from its parts.
 * Input: [flags][frame...], each frame [len:2 BE][bytes]. flags bit 0: sign
 * with key "k" (the frames after "<IDS|MSG>" are re-signed first with
 * bit 1, so the JSON parsing is reached); bits 2-3: lazy content
 * threshold. Invariants: parsing never fails open (OK means the header has
 * msg_type and msg_id, the signature matched); every NDJSON line made from
 * the parts (stream lines from the raw content, results, errors) is strict
 * JSON; a built message parses back to its content.
 * SPDX-License-Identifier: Apache-2.0 */
#include "codeinterp/jmsg.h"
#include "codeinterp/ndout.h"
#include "fuzz.h"
#include "proto/pjson.h"

#define MAXF 16

static void check_lines(const asbi_buf *b) {
  size_t start = 0;
  for (size_t i = 0; i < b->len; i++) {
    if (b->data[i] != '\n') continue;
    cJSON *j = asbi_pj_parse(b->data + start, i - start, NULL);
    FUZZ_CHECK(cJSON_IsObject(j));
    cJSON_Delete(j);
    start = i + 1;
  }
  FUZZ_CHECK(start == b->len);
}

static void use_message(ci_jmsg *m) {
  asbi_buf b = ASBI_BUF_INIT;
  if (!m->content) {
    const char *body;
    size_t len;
    if (ci_json_member_body(m->raw_content.data, m->raw_content.len, "text", &body, &len) == 0) {
      FUZZ_CHECK(body >= (const char *)m->raw_content.data &&
                 body + len <= (const char *)m->raw_content.data + m->raw_content.len);
      if (ci_json_body_valid(body, len)) {
        size_t off = 0;
        do {
          size_t k = ci_out_stream_line(&b, 0, body + off, len - off, m->date, 1);
          FUZZ_CHECK(k > 0);
          off += k;
        } while (off < len);
      }
    }
    if (ci_jmsg_content(m) != CI_JMSG_OK) {
      check_lines(&b);
      asbi_buf_free(&b);
      return;
    }
  }
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(m->content, "data");
  if (cJSON_IsObject(data)) FUZZ_CHECK(ci_out_result(&b, data, 1) == 0);
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(m->content, "text");
  if (cJSON_IsString(text))
    FUZZ_CHECK(ci_out_stream(&b, 1, text->valuestring, strlen(text->valuestring), m->date) == 0);
  const cJSON *en = cJSON_GetObjectItemCaseSensitive(m->content, "ename");
  FUZZ_CHECK(
      ci_out_error(&b, cJSON_IsString(en) ? en->valuestring : NULL, m->msg_type, m->msg_id) == 0);
  check_lines(&b);
  asbi_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned flags = data[0];
  static const size_t lazy[] = {0, 1, 16, 256};
  ci_hmac *h = NULL;
  if (ci_hmac_new(&h, "k", (flags & 1) ? 1 : 0) != 0) return 0;
  char *bufs[MAXF];
  ci_frame f[MAXF];
  size_t n = 0, at = 1;
  while (n < MAXF && at + 2 <= size) {
    size_t len = (size_t)data[at] << 8 | data[at + 1];
    at += 2;
    if (len > size - at) len = size - at;
    bufs[n] = malloc(len + 1);
    memcpy(bufs[n], data + at, len);
    f[n] = (ci_frame){bufs[n], len};
    n++;
    at += len;
  }
  /* re-sign so the fuzzer gets past the signature */
  if ((flags & 3) == 3) {
    for (size_t d = 0; d + 6 <= n; d++) {
      if (f[d].len != 9 || memcmp(f[d].data, "<IDS|MSG>", 9) != 0) continue;
      char sig[65];
      if (ci_hmac_sign(h, &f[d + 2], sig) == 0) {
        free(bufs[d + 1]);
        bufs[d + 1] = strdup(sig);
        f[d + 1] = (ci_frame){bufs[d + 1], 64};
      }
      break;
    }
  }
  ci_jmsg m;
  int rc = ci_jmsg_parse_lazy(h, f, n, lazy[(flags >> 2) & 3], &m);
  FUZZ_CHECK(rc <= 0 && rc >= CI_JMSG_ENOMEM);
  if (rc == CI_JMSG_OK) {
    FUZZ_CHECK(m.msg_type && m.msg_id && m.header && m.parent && m.metadata);
    FUZZ_CHECK(m.content || m.raw_content.data);
    FUZZ_CHECK(m.nids < n && f[m.nids].len == 9);
    use_message(&m);
    ci_jmsg_free(&m);
  } else {
    FUZZ_CHECK(!m.header && !m.content);
  }
  /* the last frame as content of a message we build: it parses back */
  if (n) {
    cJSON *c = asbi_pj_parse(f[n - 1].data, f[n - 1].len, NULL);
    char *txt = cJSON_IsObject(c) ? cJSON_PrintUnformatted(c) : NULL;
    ci_jout o;
    if (txt && ci_jmsg_build(h, "s", "execute_request", txt, &o) == 0) {
      char *copy[6];
      ci_frame g[6];
      for (int i = 0; i < 6; i++) {
        copy[i] = malloc(o.frames[i].len + 1);
        memcpy(copy[i], o.frames[i].data, o.frames[i].len);
        g[i] = (ci_frame){copy[i], o.frames[i].len};
      }
      ci_jmsg back;
      int brc = ci_jmsg_parse(h, g, 6, &back);
      /* pjson reads "\u0000" where cJSON wrote one, the only difference */
      if (!strstr(txt, "\\u0000")) {
        FUZZ_CHECK(brc == CI_JMSG_OK);
        char *again = cJSON_PrintUnformatted(back.content);
        FUZZ_CHECK(again && strcmp(again, txt) == 0);
        free(again);
      }
      if (brc == CI_JMSG_OK) ci_jmsg_free(&back);
      for (int i = 0; i < 6; i++) free(copy[i]);
      ci_jout_free(&o);
    }
    free(txt);
    cJSON_Delete(c);
  }
  for (size_t i = 0; i < n; i++) free(bufs[i]);
  ci_hmac_free(h);
  return 0;
}
