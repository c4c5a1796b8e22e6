/* SPDX-License-Identifier: Apache-2.0 */
#include "multipart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

/* ======================================================================
 * writer
 * ====================================================================== */

#define BOUNDARY_PREFIX "----asbFormBoundary"
#define BOUNDARY_RANDOM 24

int asbi_mpw_init(asbi_mpw *w) {
  memset(w, 0, sizeof *w);
  size_t pl = sizeof BOUNDARY_PREFIX - 1;
  memcpy(w->boundary, BOUNDARY_PREFIX, pl);
  if (asbi_random_alnum(w->boundary + pl, BOUNDARY_RANDOM) != 0) return -1;
  return 0;
}

void asbi_mpw_content_type(const asbi_mpw *w, char *out, size_t outlen) {
  if (!out || !outlen) return;
  snprintf(out, outlen, "multipart/form-data; boundary=%s", w->boundary);
}

/* Adds s (escaped for a quoted-string) to out, or only counts when out is
 * NULL. -1 if s holds CR or LF. */
static int64_t quoted(asbi_buf *out, const char *s) {
  int64_t n = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '\r' || *p == '\n') return -1;
    n += (*p == '"' || *p == '\\') ? 2 : 1;
  }
  if (!out) return n;
  for (const char *p = s; *p; p++) {
    if ((*p == '"' || *p == '\\') && asbi_buf_putc(out, '\\') != 0) return -1;
    if (asbi_buf_putc(out, *p) != 0) return -1;
  }
  return n;
}

/* One code path both measures (out NULL) and writes the head, so the
 * precomputed length cannot drift from the bytes produced. */
static int64_t part_head(const asbi_mpw *w, asbi_buf *out, int index, const char *field,
                         const char *filename, const char *content_type) {
  if (!field || index < 0) return -1;
  if (!content_type) content_type = "application/octet-stream";
  if (strchr(content_type, '\r') || strchr(content_type, '\n')) return -1;
  /* Validate everything before writing anything. */
  int64_t fl = quoted(NULL, field);
  int64_t nl = filename ? quoted(NULL, filename) : 0;
  if (fl < 0 || nl < 0) return -1;
  static const char cd[] = "Content-Disposition: form-data; name=\"";
  static const char fn[] = "; filename=\"";
  static const char ct[] = "Content-Type: ";
  size_t bl = strlen(w->boundary);
  int64_t total = (index > 0 ? 2 : 0) + 2 + (int64_t)bl + 2 + (int64_t)(sizeof cd - 1) + fl + 1 +
                  (filename ? (int64_t)(sizeof fn - 1) + nl + 1 : 0) + 2 +
                  (int64_t)(sizeof ct - 1) + (int64_t)strlen(content_type) + 2 + 2;
  if (!out) return total;
  size_t mark = out->len;
  if (asbi_buf_reserve(out, (size_t)total) != 0) return -1;
  int bad = 0;
  if (index > 0) bad |= asbi_buf_puts(out, "\r\n");
  bad |= asbi_buf_puts(out, "--");
  bad |= asbi_buf_puts(out, w->boundary);
  bad |= asbi_buf_puts(out, "\r\n");
  bad |= asbi_buf_puts(out, cd);
  bad |= quoted(out, field) < 0;
  bad |= asbi_buf_putc(out, '"');
  if (filename) {
    bad |= asbi_buf_puts(out, fn);
    bad |= quoted(out, filename) < 0;
    bad |= asbi_buf_putc(out, '"');
  }
  bad |= asbi_buf_puts(out, "\r\n");
  bad |= asbi_buf_puts(out, ct);
  bad |= asbi_buf_puts(out, content_type);
  bad |= asbi_buf_puts(out, "\r\n\r\n");
  if (bad || out->len - mark != (size_t)total) {
    out->len = mark;
    if (out->data) out->data[mark] = '\0';
    return -1;
  }
  return total;
}

int asbi_mpw_part_head(asbi_mpw *w, asbi_buf *out, const char *field, const char *filename,
                       const char *content_type) {
  if (part_head(w, out, w->parts, field, filename, content_type) < 0) return -1;
  w->parts++;
  return 0;
}

int64_t asbi_mpw_part_head_len(const asbi_mpw *w, int index, const char *field,
                               const char *filename, const char *content_type) {
  return part_head(w, NULL, index, field, filename, content_type);
}

/* The close delimiter always carries its leading CRLF, so its length does
 * not depend on how many parts were written and a client can compute the
 * Content-Length up front. With zero parts the body "\r\n--B--\r\n" is an
 * empty preamble followed by the close delimiter, which parsers accept. */
size_t asbi_mpw_finish_len(const asbi_mpw *w) {
  return 2 + 2 + strlen(w->boundary) + 2 + 2;
}

int asbi_mpw_finish(asbi_mpw *w, asbi_buf *out) {
  size_t need = asbi_mpw_finish_len(w);
  if (asbi_buf_reserve(out, need) != 0) return -1;
  asbi_buf_puts(out, "\r\n--");
  asbi_buf_puts(out, w->boundary);
  asbi_buf_puts(out, "--\r\n");
  return 0;
}

/* ======================================================================
 * parser
 * ====================================================================== */

#define MAX_BOUNDARY 70
#define MAX_PART_HEADERS (16u * 1024u)
#define MAX_PADDING 64
#define MAX_PARAMS 16
#define DEFAULT_MAX_PARTS 1000

enum { S_PREAMBLE, S_HEADERS, S_BODY, S_EPILOGUE };
/* What follows a complete "\r\n--boundary". */
enum { T_NONE, T_AFTER, T_DASH, T_PAD, T_CR };

struct asbi_mp_parser {
  asbi_mp_callbacks cb;
  void *ud;
  char delim[4 + MAX_BOUNDARY + 1]; /* "\r\n--" boundary */
  size_t dlen;
  int state;
  size_t match; /* bytes of delim matched so far */
  int tail;
  char pad[MAX_PADDING];
  size_t npad;
  asbi_buf hdr;
  unsigned parts, max_parts;
  int failed;
  int in_part;
  char *name, *filename, *ctype;
  /* Small pieces of part data (runs between CRs, near-delimiters) are
   * gathered here so binary data does not cost a callback per CR. */
  char out[8192];
  size_t nout;
};

const char *asbi_mp_strerror(int code) {
  switch (code) {
    case ASBI_MP_OK:
      return "ok";
    case ASBI_MP_EBOUNDARY:
      return "multipart: missing or invalid boundary in Content-Type";
    case ASBI_MP_EHEADER:
      return "multipart: malformed or oversized part headers";
    case ASBI_MP_ESYNTAX:
      return "multipart: body does not follow multipart framing";
    case ASBI_MP_ETRUNCATED:
      return "multipart: body ended before the closing boundary";
    case ASBI_MP_ETOOMANY:
      return "multipart: too many parts";
    case ASBI_MP_ENOMEM:
      return "out of memory";
    default:
      return "multipart: aborted";
  }
}

/* ---- header value parsing (RFC 7231 media types, RFC 6266) ------------- */

typedef struct mparam {
  char name[32]; /* lower-cased */
  char *value;   /* quoted-string unescaped */
} mparam;

static int is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_tspecial(unsigned char c) {
  return c && strchr("()<>@,;:\\\"/[]?=", c) != NULL;
}

static void skip_ows(const char *s, size_t n, size_t *i) {
  while (*i < n && (s[*i] == ' ' || s[*i] == '\t')) (*i)++;
}

static void free_params(mparam *ps, size_t np) {
  for (size_t k = 0; k < np; k++) free(ps[k].value);
}

/* value = type *( OWS ";" OWS name "=" ( token / quoted-string ) ), with a
 * trailing ";" tolerated. type may contain '/'. Inside a quoted-string a
 * backslash escapes the next character only when that is a tspecial (as Go's
 * mime package does), so Windows paths sent unescaped survive. Returns 0 or
 * -1 (malformed, duplicate parameter, too many parameters, out of memory). */
static int parse_mvalue(const char *s, size_t n, char *type, size_t typecap, mparam *ps,
                        size_t *np) {
  size_t i = 0, t = 0;
  *np = 0;
  skip_ows(s, n, &i);
  while (i < n && (is_tchar((unsigned char)s[i]) || s[i] == '/')) {
    if (t + 1 >= typecap) return -1;
    type[t++] = s[i++];
  }
  type[t] = '\0';
  if (t == 0) return -1;
  for (;;) {
    skip_ows(s, n, &i);
    if (i == n) return 0;
    if (s[i] != ';') goto bad;
    i++;
    skip_ows(s, n, &i);
    if (i == n) return 0; /* trailing ';' */
    size_t ns = i;
    while (i < n && is_tchar((unsigned char)s[i])) i++;
    size_t nlen = i - ns;
    if (nlen == 0) goto bad;
    skip_ows(s, n, &i);
    if (i == n || s[i] != '=') goto bad;
    i++;
    skip_ows(s, n, &i);
    asbi_buf v = ASBI_BUF_INIT;
    if (i < n && s[i] == '"') {
      i++;
      for (;;) {
        if (i == n) {
          asbi_buf_free(&v);
          goto bad;
        }
        char c = s[i];
        if (c == '"') {
          i++;
          break;
        }
        if (c == '\\' && i + 1 < n && is_tspecial((unsigned char)s[i + 1])) {
          c = s[i + 1];
          i++;
        }
        if (asbi_buf_putc(&v, c) != 0) {
          asbi_buf_free(&v);
          goto bad;
        }
        i++;
      }
    } else {
      size_t vs = i;
      while (i < n && is_tchar((unsigned char)s[i])) i++;
      if (i == vs || asbi_buf_append(&v, s + vs, i - vs) != 0) {
        asbi_buf_free(&v);
        goto bad;
      }
    }
    /* Parameters with absurdly long names are none we know: skip them. */
    if (nlen >= sizeof ps[0].name) {
      asbi_buf_free(&v);
      continue;
    }
    if (*np == MAX_PARAMS) {
      asbi_buf_free(&v);
      goto bad;
    }
    mparam *p = &ps[*np];
    for (size_t k = 0; k < nlen; k++) {
      char c = s[ns + k];
      p->name[k] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    p->name[nlen] = '\0';
    for (size_t k = 0; k < *np; k++) {
      if (strcmp(ps[k].name, p->name) == 0) {
        asbi_buf_free(&v);
        goto bad;
      }
    }
    p->value = asbi_buf_detach(&v, NULL);
    if (!p->value) goto bad;
    (*np)++;
  }
bad:
  free_params(ps, *np);
  *np = 0;
  return -1;
}

static const char *param(const mparam *ps, size_t np, const char *name) {
  for (size_t k = 0; k < np; k++)
    if (strcmp(ps[k].name, name) == 0) return ps[k].value;
  return NULL;
}

static int hexv(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* RFC 5987 ext-value: charset "'" [language] "'" pct-encoded. Returns 0 and
 * a malloc'd UTF-8 string, 1 for an unsupported charset (ignored, as Go
 * does), -1 if malformed. */
static int decode_ext_value(const char *v, char **out) {
  const char *q1 = strchr(v, '\'');
  const char *q2 = q1 ? strchr(q1 + 1, '\'') : NULL;
  if (!q1 || !q2) return -1;
  size_t cl = (size_t)(q1 - v);
  int cs;
  if (cl == 5 && strncasecmp(v, "utf-8", 5) == 0)
    cs = 0;
  else if (cl == 8 && strncasecmp(v, "us-ascii", 8) == 0)
    cs = 1;
  else if (cl == 10 && strncasecmp(v, "iso-8859-1", 10) == 0)
    cs = 2;
  else
    return 1;
  const char *p = q2 + 1;
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_buf_reserve(&b, strlen(p)) != 0) return -1;
  for (; *p; p++) {
    unsigned c = (unsigned char)*p;
    if (c == '%') {
      int h = hexv((unsigned char)p[1]);
      int l = h < 0 ? -1 : hexv((unsigned char)p[2]);
      if (h < 0 || l < 0) goto bad;
      c = (unsigned)(h << 4 | l);
      p += 2;
    } else if (c == '\'') {
      goto bad;
    }
    /* NUL cannot live in a C string; CR and LF could not appear in the
     * plain filename parameter either and must not reach anything that
     * echoes the name into a header. */
    if (c == 0 || c == '\r' || c == '\n' || (cs == 1 && c >= 0x80)) goto bad;
    if (cs == 2 && c >= 0x80) {
      char two[2] = {(char)(0xC0 | c >> 6), (char)(0x80 | (c & 0x3F))};
      if (asbi_buf_append(&b, two, 2) != 0) goto bad;
    } else if (asbi_buf_putc(&b, (char)c) != 0) {
      goto bad;
    }
  }
  if (!asbi_utf8_valid(b.data, b.len)) goto bad;
  *out = asbi_buf_detach(&b, NULL);
  return *out ? 0 : -1;
bad:
  asbi_buf_free(&b);
  return -1;
}

static int set_disposition(asbi_mp_parser *p, const char *v, size_t n) {
  char type[64];
  mparam ps[MAX_PARAMS];
  size_t np;
  if (parse_mvalue(v, n, type, sizeof type, ps, &np) != 0) return -1;
  int rc = 0;
  const char *name = param(ps, np, "name");
  const char *fname = param(ps, np, "filename");
  const char *fext = param(ps, np, "filename*");
  char *decoded = NULL;
  if (fext) {
    int d = decode_ext_value(fext, &decoded);
    if (d < 0) rc = -1;
  }
  if (rc == 0) {
    p->name = asbi_strdup(name ? name : "");
    if (!p->name) rc = -1;
    if (decoded) {
      p->filename = decoded;
      decoded = NULL;
    } else if (fname) {
      p->filename = asbi_strdup(fname);
      if (!p->filename) rc = -1;
    }
  }
  free(decoded);
  free_params(ps, np);
  return rc;
}

static void clear_part(asbi_mp_parser *p) {
  free(p->name);
  free(p->filename);
  free(p->ctype);
  p->name = p->filename = p->ctype = NULL;
  p->in_part = 0;
}

/* Parses the header block held in p->hdr (ends with an empty line). */
static int parse_headers(asbi_mp_parser *p) {
  const char *s = p->hdr.data;
  size_t n = p->hdr.len;
  size_t i = 0;
  int have_cd = 0;
  while (i < n) {
    const char *eol = memchr(s + i, '\r', n - i);
    if (!eol || (size_t)(eol - s) + 1 >= n || eol[1] != '\n') return -1;
    size_t ll = (size_t)(eol - (s + i));
    const char *line = s + i;
    i += ll + 2;
    if (ll == 0) return i == n ? 0 : -1; /* the empty line ends the block */
    /* CR and LF only ever end a line and NUL cannot be carried by a C
     * string; other control bytes are passed through (the writer allows
     * them in names, so a round trip keeps them). */
    if (memchr(line, '\0', ll) || memchr(line, '\n', ll)) return -1;
    if (line[0] == ' ' || line[0] == '\t') return -1; /* obs-fold */
    const char *colon = memchr(line, ':', ll);
    if (!colon || colon == line) return -1;
    size_t nl = (size_t)(colon - line);
    for (size_t k = 0; k < nl; k++)
      if (!is_tchar((unsigned char)line[k])) return -1;
    const char *v = colon + 1;
    size_t vl = ll - nl - 1;
    while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
    if (nl == 19 && strncasecmp(line, "content-disposition", 19) == 0) {
      if (have_cd++) return -1;
      if (set_disposition(p, v, vl) != 0) return -1;
    } else if (nl == 12 && strncasecmp(line, "content-type", 12) == 0) {
      if (p->ctype) return -1;
      p->ctype = asbi_strndup(v, vl);
      if (!p->ctype) return -1;
    }
  }
  return -1;
}

int asbi_mp_parser_new(asbi_mp_parser **out, const char *content_type, const asbi_mp_callbacks *cb,
                       void *ud, unsigned max_parts) {
  if (!content_type) return ASBI_MP_EBOUNDARY;
  char type[128];
  mparam ps[MAX_PARAMS];
  size_t np;
  if (parse_mvalue(content_type, strlen(content_type), type, sizeof type, ps, &np) != 0)
    return ASBI_MP_EBOUNDARY;
  const char *b = param(ps, np, "boundary");
  size_t bl = b ? strlen(b) : 0;
  int ok = strncasecmp(type, "multipart/", 10) == 0 && type[10] && bl >= 1 && bl <= MAX_BOUNDARY &&
           b[bl - 1] != ' ';
  for (size_t k = 0; ok && k < bl; k++)
    if ((unsigned char)b[k] < 0x20 || (unsigned char)b[k] > 0x7E) ok = 0;
  if (!ok) {
    free_params(ps, np);
    return ASBI_MP_EBOUNDARY;
  }
  asbi_mp_parser *p = calloc(1, sizeof *p);
  if (!p) {
    free_params(ps, np);
    return ASBI_MP_ENOMEM;
  }
  memcpy(p->delim, "\r\n--", 4);
  memcpy(p->delim + 4, b, bl);
  p->dlen = 4 + bl;
  free_params(ps, np);
  if (cb) p->cb = *cb;
  p->ud = ud;
  p->max_parts = max_parts ? max_parts : DEFAULT_MAX_PARTS;
  p->state = S_PREAMBLE;
  /* The first delimiter may start the body without its CRLF: pretend the
   * CRLF was already seen. */
  p->match = 2;
  asbi_buf_init(&p->hdr, 0);
  *out = p;
  return ASBI_MP_OK;
}

void asbi_mp_parser_free(asbi_mp_parser *p) {
  if (!p) return;
  clear_part(p);
  asbi_buf_free(&p->hdr);
  free(p);
}

static int fail(asbi_mp_parser *p, int rc) {
  p->failed = rc;
  return rc;
}

static int flush(asbi_mp_parser *p) {
  size_t n = p->nout;
  if (n == 0) return 0;
  p->nout = 0;
  int rc = p->cb.on_part_data(p->ud, p->out, n);
  return rc ? fail(p, rc) : 0;
}

/* Part data, in order: large pieces go straight to the callback, small
 * ones are gathered (flushed before the part ends and before feed
 * returns). */
static int emit(asbi_mp_parser *p, const char *d, size_t n) {
  int rc;
  if (p->state != S_BODY || n == 0 || !p->cb.on_part_data) return 0;
  if (p->nout + n > sizeof p->out && (rc = flush(p)) != 0) return rc;
  if (n >= sizeof p->out / 2) {
    rc = p->cb.on_part_data(p->ud, d, n);
    return rc ? fail(p, rc) : 0;
  }
  memcpy(p->out + p->nout, d, n);
  p->nout += n;
  return 0;
}

/* What looked like a delimiter was data after all: emit it (in a body). */
static int false_delimiter(asbi_mp_parser *p) {
  int rc = emit(p, p->delim, p->match);
  if (!rc && p->tail == T_DASH) rc = emit(p, "-", 1);
  if (!rc && (p->tail == T_PAD || p->tail == T_CR)) rc = emit(p, p->pad, p->npad);
  p->match = 0;
  p->tail = T_NONE;
  p->npad = 0;
  return rc;
}

/* A complete delimiter: close the current part (if any). */
static int delimiter_done(asbi_mp_parser *p, int final) {
  int rc = 0;
  p->match = 0;
  p->tail = T_NONE;
  p->npad = 0;
  if (p->state == S_BODY) {
    if ((rc = flush(p)) != 0) return rc;
    if (p->cb.on_part_end) rc = p->cb.on_part_end(p->ud);
    clear_part(p);
    if (rc) return fail(p, rc);
  }
  p->state = final ? S_EPILOGUE : S_HEADERS;
  asbi_buf_clear(&p->hdr);
  return 0;
}

static int start_part(asbi_mp_parser *p) {
  if (p->parts >= p->max_parts) return fail(p, ASBI_MP_ETOOMANY);
  p->parts++;
  if (parse_headers(p) != 0) return fail(p, ASBI_MP_EHEADER);
  if (!p->name) {
    p->name = asbi_strdup("");
    if (!p->name) return fail(p, ASBI_MP_ENOMEM);
  }
  asbi_buf_clear(&p->hdr);
  if (p->hdr.cap > MAX_PART_HEADERS * 2) asbi_buf_free(&p->hdr);
  p->state = S_BODY;
  p->in_part = 1;
  asbi_mp_part part = {p->name, p->filename, p->ctype};
  int rc = p->cb.on_part_begin ? p->cb.on_part_begin(p->ud, &part) : 0;
  return rc ? fail(p, rc) : 0;
}

int asbi_mp_parser_feed(asbi_mp_parser *p, const char *data, size_t len) {
  size_t i = 0;
  int rc;
  if (p->failed) return p->failed;
  while (i < len) {
    if (p->state == S_EPILOGUE) return ASBI_MP_OK; /* ignored */
    if (p->state == S_HEADERS) {
      const char *nl = memchr(data + i, '\n', len - i);
      size_t take = nl ? (size_t)(nl - (data + i)) + 1 : len - i;
      if (take > MAX_PART_HEADERS - p->hdr.len) return fail(p, ASBI_MP_EHEADER);
      if (asbi_buf_append(&p->hdr, data + i, take) != 0) return fail(p, ASBI_MP_ENOMEM);
      i += take;
      if (!nl) continue;
      const char *h = p->hdr.data;
      size_t hl = p->hdr.len;
      if (hl < 2 || h[hl - 2] != '\r') return fail(p, ASBI_MP_EHEADER);
      if (hl == 2 || (hl >= 4 && memcmp(h + hl - 4, "\r\n\r\n", 4) == 0)) {
        rc = start_part(p);
        if (rc) return rc;
      }
      continue;
    }
    /* S_PREAMBLE or S_BODY: look for the delimiter. */
    if (p->match == 0) {
      const char *cr = memchr(data + i, '\r', len - i);
      size_t run = cr ? (size_t)(cr - (data + i)) : len - i;
      if ((rc = emit(p, data + i, run)) != 0) return rc;
      i += run;
      if (!cr) break;
      p->match = 1;
      i++;
      continue;
    }
    char c = data[i];
    if (p->tail == T_NONE) {
      if (c == p->delim[p->match]) {
        i++;
        if (++p->match == p->dlen) p->tail = T_AFTER;
      } else if ((rc = false_delimiter(p)) != 0) {
        return rc; /* c is examined again from the start state */
      }
      continue;
    }
    switch (p->tail) {
      case T_AFTER:
        if (c == '-') {
          p->tail = T_DASH;
          i++;
          continue;
        }
        if (c == ' ' || c == '\t') {
          p->pad[p->npad++] = c;
          p->tail = T_PAD;
          i++;
          continue;
        }
        if (c == '\r') {
          p->tail = T_CR;
          i++;
          continue;
        }
        break;
      case T_DASH:
        if (c == '-') {
          i++;
          if ((rc = delimiter_done(p, 1)) != 0) return rc;
          continue;
        }
        break;
      case T_PAD:
        if ((c == ' ' || c == '\t') && p->npad < MAX_PADDING) {
          p->pad[p->npad++] = c;
          i++;
          continue;
        }
        if (c == '\r') {
          p->tail = T_CR;
          i++;
          continue;
        }
        break;
      case T_CR:
        if (c == '\n') {
          i++;
          if ((rc = delimiter_done(p, 0)) != 0) return rc;
          continue;
        }
        /* The CR we took may begin a real delimiter: data is the delimiter
         * and padding only, and matching restarts after that CR. */
        if ((rc = false_delimiter(p)) != 0) return rc;
        p->match = 1;
        continue;
    }
    if ((rc = false_delimiter(p)) != 0) return rc;
  }
  return flush(p);
}

int asbi_mp_parser_finish(asbi_mp_parser *p) {
  if (p->failed) return p->failed;
  if (p->state != S_EPILOGUE) return fail(p, ASBI_MP_ETRUNCATED);
  return ASBI_MP_OK;
}
