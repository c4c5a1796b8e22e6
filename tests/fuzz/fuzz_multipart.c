/* Fuzz the multipart/form-data parser (and the writer through round trips).
 * Input: [mode][...]. mode bit 0 set: the Content-Type is the input up to
 * the first '\n' and the body is the rest; clear: the boundary is fixed
 * ("BB" or "----asb" by bit 1) and the body is the rest.
 * Invariants: any chunking gives the same parts and result; callbacks come
 * in order; a body that parses re-encodes with the writer (exact length)
 * and parses back to the same parts.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/multipart.h"
#include "util/buf.h"

#define MAX_PARTS 64

typedef struct part {
  char *name, *filename, *ctype;
  asbi_buf data;
} part;

typedef struct run {
  asbi_buf log;
  part parts[MAX_PARTS];
  int nparts;
  int in_part;
} run;

static void put_str(asbi_buf *b, const char *s) {
  if (!s) {
    asbi_buf_puts(b, "\x01N");
    return;
  }
  asbi_buf_puts(b, s);
  asbi_buf_putc(b, '\x02');
}

static int on_begin(void *ud, const asbi_mp_part *p) {
  run *r = ud;
  FUZZ_CHECK(!r->in_part);
  FUZZ_CHECK(p->name != NULL);
  r->in_part = 1;
  FUZZ_CHECK(r->nparts < MAX_PARTS);
  part *pt = &r->parts[r->nparts++];
  pt->name = strdup(p->name);
  pt->filename = p->filename ? strdup(p->filename) : NULL;
  pt->ctype = p->content_type ? strdup(p->content_type) : NULL;
  asbi_buf_init(&pt->data, 0);
  asbi_buf_puts(&r->log, "B");
  put_str(&r->log, p->name);
  put_str(&r->log, p->filename);
  put_str(&r->log, p->content_type);
  return 0;
}

static int on_data(void *ud, const char *d, size_t n) {
  run *r = ud;
  FUZZ_CHECK(r->in_part && n > 0);
  asbi_buf_append(&r->parts[r->nparts - 1].data, d, n);
  asbi_buf_append(&r->log, d, n);
  return 0;
}

static int on_end(void *ud) {
  run *r = ud;
  FUZZ_CHECK(r->in_part);
  r->in_part = 0;
  asbi_buf_puts(&r->log, "E");
  return 0;
}

static const asbi_mp_callbacks CB = {on_begin, on_data, on_end};

static void run_free(run *r) {
  for (int i = 0; i < r->nparts; i++) {
    free(r->parts[i].name);
    free(r->parts[i].filename);
    free(r->parts[i].ctype);
    asbi_buf_free(&r->parts[i].data);
  }
  asbi_buf_free(&r->log);
}

/* mode 0: one feed; 1: pseudo-random chunks; 2: byte by byte. */
static int parse(const char *ct, const uint8_t *p, size_t n, int mode, run *r) {
  memset(r, 0, sizeof *r);
  asbi_buf_init(&r->log, 0);
  asbi_mp_parser *mp;
  int rc = asbi_mp_parser_new(&mp, ct, &CB, r, MAX_PARTS);
  if (rc) return rc;
  fuzz_rng rng;
  fuzz_rng_init(&rng, p, n, 11);
  size_t at = 0;
  while (at < n && rc == 0) {
    size_t k = mode == 0 ? n : mode == 2 ? 1 : fuzz_chunk(&rng, n - at);
    rc = asbi_mp_parser_feed(mp, (const char *)p + at, k);
    at += k;
  }
  int fin = asbi_mp_parser_finish(mp);
  if (rc) FUZZ_CHECK(fin == rc);
  if (!rc && !fin) FUZZ_CHECK(!r->in_part);
  asbi_mp_parser_free(mp);
  return rc ? rc : fin;
}

static int has_crlf(const char *s) {
  return s && strpbrk(s, "\r\n") != NULL;
}

/* ---- a whole-buffer reference for the framing (not the headers) --------
 * A delimiter is "\r\n--" boundary (or "--" boundary at offset 0) followed
 * by "--" (close) or by up to 64 spaces/tabs and CRLF. Finds the next one
 * at or after *at; returns its start, sets *after and *close. */
static size_t ref_delim(const uint8_t *p, size_t n, const char *b, size_t from, size_t *after,
                        int *close) {
  size_t bl = strlen(b);
  for (size_t i = from; i < n; i++) {
    size_t j;
    if (i == 0 && from == 0 && n >= 2 + bl && p[0] == '-' && p[1] == '-' &&
        memcmp(p + 2, b, bl) == 0) {
      j = 2 + bl;
    } else if (n - i >= 4 + bl && memcmp(p + i, "\r\n--", 4) == 0 &&
               memcmp(p + i + 4, b, bl) == 0) {
      j = i + 4 + bl;
    } else {
      continue;
    }
    if (n - j >= 2 && p[j] == '-' && p[j + 1] == '-') {
      *after = j + 2;
      *close = 1;
      return i;
    }
    size_t pad = 0;
    while (j + pad < n && pad <= 64 && (p[j + pad] == ' ' || p[j + pad] == '\t')) pad++;
    if (pad <= 64 && n - (j + pad) >= 2 && p[j + pad] == '\r' && p[j + pad + 1] == '\n') {
      *after = j + pad + 2;
      *close = 0;
      return i;
    }
  }
  return (size_t)-1;
}

/* Checks the parts' data against the reference framing. rc is the result
 * of the incremental parser over the same body. */
static void check_reference(const uint8_t *p, size_t n, const char *b, int rc, const run *r) {
  if (rc != 0 && rc != ASBI_MP_ETRUNCATED) return; /* header errors: skip */
  size_t after;
  int close, closed = 0, np = 0;
  size_t at = ref_delim(p, n, b, 0, &after, &close);
  while (at != (size_t)-1 && !close) {
    /* headers end at the first empty line */
    size_t h = after, body;
    if (n - h >= 2 && p[h] == '\r' && p[h + 1] == '\n') {
      body = h + 2;
    } else {
      const uint8_t *e = memmem(p + h, n - h, "\r\n\r\n", 4);
      if (!e) break;
      body = (size_t)(e - p) + 4;
    }
    size_t next = ref_delim(p, n, b, body, &after, &close);
    if (next == (size_t)-1) break;
    if (rc == 0) {
      FUZZ_CHECK(np < r->nparts);
      const asbi_buf *d = &r->parts[np].data;
      FUZZ_CHECK(d->len == next - body && (d->len == 0 || memcmp(d->data, p + body, d->len) == 0));
    }
    np++;
    at = next;
  }
  if (at != (size_t)-1 && close) closed = 1;
  if (rc == 0) {
    FUZZ_CHECK(closed && np == r->nparts);
  } else {
    FUZZ_CHECK(!closed || np >= MAX_PARTS);
  }
}

/* Writer -> parser round trip of what was parsed. */
static void round_trip(const run *r) {
  for (int i = 0; i < r->nparts; i++)
    if (has_crlf(r->parts[i].name) || has_crlf(r->parts[i].filename) || has_crlf(r->parts[i].ctype))
      return; /* the writer refuses these, as it must */
  asbi_mpw w;
  FUZZ_CHECK(asbi_mpw_init(&w) == 0);
  char ct[96];
  asbi_mpw_content_type(&w, ct, sizeof ct);
  asbi_buf body = ASBI_BUF_INIT;
  int64_t want = 0;
  for (int i = 0; i < r->nparts; i++) {
    const part *pt = &r->parts[i];
    const char *ctype = pt->ctype ? pt->ctype : "application/octet-stream";
    int64_t hl = asbi_mpw_part_head_len(&w, i, pt->name, pt->filename, ctype);
    FUZZ_CHECK(hl > 0);
    want += hl + (int64_t)pt->data.len;
    FUZZ_CHECK(asbi_mpw_part_head(&w, &body, pt->name, pt->filename, ctype) == 0);
    asbi_buf_append(&body, pt->data.data, pt->data.len);
  }
  want += (int64_t)asbi_mpw_finish_len(&w);
  FUZZ_CHECK(asbi_mpw_finish(&w, &body) == 0);
  FUZZ_CHECK((int64_t)body.len == want);
  run back;
  /* Random data may hold the new boundary only with negligible odds. */
  int rc = parse(ct, (const uint8_t *)body.data, body.len, 1, &back);
  FUZZ_CHECK(rc == 0);
  FUZZ_CHECK(back.nparts == r->nparts);
  for (int i = 0; i < r->nparts; i++) {
    const part *a = &r->parts[i], *b = &back.parts[i];
    FUZZ_CHECK(strcmp(a->name, b->name) == 0);
    FUZZ_CHECK((!a->filename && !b->filename) ||
               (a->filename && b->filename && strcmp(a->filename, b->filename) == 0));
    FUZZ_CHECK(strcmp(a->ctype ? a->ctype : "application/octet-stream", b->ctype) == 0);
    FUZZ_CHECK(a->data.len == b->data.len &&
               (a->data.len == 0 || memcmp(a->data.data, b->data.data, a->data.len) == 0));
  }
  run_free(&back);
  asbi_buf_free(&body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  char ct[256];
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  if (data[0] & 1) {
    const uint8_t *nl = memchr(p, '\n', n);
    size_t l = nl ? (size_t)(nl - p) : n;
    if (l >= sizeof ct) return 0;
    memcpy(ct, p, l);
    ct[l] = '\0';
    if (strlen(ct) != l) return 0; /* a C string cannot hold NUL */
    p += nl ? l + 1 : l;
    n -= nl ? l + 1 : l;
  } else {
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", (data[0] & 2) ? "----asb" : "BB");
  }
  run a, b, c;
  int ra = parse(ct, p, n, 0, &a);
  int rb = parse(ct, p, n, 1, &b);
  int rc = parse(ct, p, n, 2, &c);
  FUZZ_CHECK(ra == rb && ra == rc);
  FUZZ_CHECK(asbi_mp_strerror(ra) != NULL);
  FUZZ_CHECK(a.log.len == b.log.len && a.log.len == c.log.len);
  FUZZ_CHECK(a.log.len == 0 || (memcmp(a.log.data, b.log.data, a.log.len) == 0 &&
                                memcmp(a.log.data, c.log.data, a.log.len) == 0));
  if (!(data[0] & 1)) check_reference(p, n, (data[0] & 2) ? "----asb" : "BB", ra, &a);
  if (ra == 0) round_trip(&a);
  run_free(&a);
  run_free(&b);
  run_free(&c);
  return 0;
}
