/* envd: the values of the HTTP headers GET /files negotiates, as E2B's envd
 * (Go's net/http) reads and writes them: Range, Accept-Encoding,
 * Content-Type by file extension and Content-Disposition. Pure functions.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hdrval.h"
#include "util/util.h"

int envd_hdrval_range(const char *range, uint64_t size, uint64_t *off, uint64_t *len) {
  if (!range || strncmp(range, "bytes=", 6) != 0 || strchr(range, ',')) return 0;
  const char *s = range + 6;
  char *end;
  unsigned long long a = 0, b = 0;
  if (*s == '-') {
    unsigned long long sfx = strtoull(s + 1, &end, 10);
    if (*end || sfx == 0) return 0;
    if (sfx > size) sfx = size;
    a = size - sfx;
    b = size ? size - 1 : 0;
  } else {
    a = strtoull(s, &end, 10);
    if (*end != '-') return 0;
    if (end[1] == '\0') {
      b = size ? size - 1 : 0;
    } else {
      b = strtoull(end + 1, &end, 10);
      if (*end) return 0;
    }
    if (b >= size) b = size ? size - 1 : 0;
  }
  if (a >= size || a > b) return -1;
  *off = a;
  *len = b - a + 1;
  return 1;
}

/* Accept-Encoding negotiation as E2B's envd does it: gzip or identity;
 * 0 identity, 1 gzip, -1 nothing acceptable. */
int envd_hdrval_encoding(const char *h) {
  if (asbi_empty(h)) return 0;
  struct {
    char enc[32];
    double q;
  } list[16];
  int n = 0;
  const char *p = h;
  while (*p && n < 16) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    char item[128];
    snprintf(item, sizeof item, "%.*s", (int)(l < 127 ? l : 127), p);
    char *semi = strchr(item, ';');
    double q = 1.0;
    if (semi) {
      *semi = '\0';
      char *qp = strstr(semi + 1, "q=");
      if (qp) q = atof(qp + 2);
    }
    char *s = item;
    while (*s == ' ') s++;
    size_t sl = strlen(s);
    while (sl && s[sl - 1] == ' ') s[--sl] = '\0';
    for (char *c = s; *c; c++)
      if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    snprintf(list[n].enc, sizeof list[n].enc, "%s", s);
    list[n].q = q;
    n++;
    p = e ? e + 1 : p + l;
  }
  int id_rej = 0, id_acc = 0, wc_rej = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(list[i].enc, "identity") == 0) {
      if (list[i].q == 0)
        id_rej = 1;
      else
        id_acc = 1;
    } else if (strcmp(list[i].enc, "*") == 0 && list[i].q == 0) {
      wc_rej = 1;
    }
  }
  if (wc_rej && !id_acc) id_rej = 1;
  /* stable sort by q, descending */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && list[j].q > list[j - 1].q; j--) {
      __typeof__(list[0]) t = list[j];
      list[j] = list[j - 1];
      list[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    if (list[i].q == 0) continue;
    if (strcmp(list[i].enc, "identity") == 0) return 0;
    if (strcmp(list[i].enc, "*") == 0) return id_rej ? 1 : 0;
    if (strcmp(list[i].enc, "gzip") == 0) return 1;
  }
  return id_rej ? -1 : 0;
}

const char *envd_hdrval_mime(const char *path) {
  const char *dot = strrchr(path, '.');
  const char *sl = strrchr(path, '/');
  if (!dot || (sl && dot < sl)) return "application/octet-stream";
  static const char *const map[][2] = {
      {".txt", "text/plain; charset=utf-8"},
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".json", "application/json"},
      {".xml", "text/xml; charset=utf-8"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".svg", "image/svg+xml"},
      {".webp", "image/webp"},
      {".pdf", "application/pdf"},
      {".wasm", "application/wasm"},
      {".csv", "text/csv; charset=utf-8"},
      {".md", "text/markdown; charset=utf-8"},
      {".zip", "application/zip"},
      {".gz", "application/gzip"},
  };
  for (size_t i = 0; i < ASBI_ARRAY_LEN(map); i++)
    if (strcasecmp(dot, map[i][0]) == 0) return map[i][1];
  return "application/octet-stream";
}

void envd_hdrval_disposition(const char *path, asbi_buf *out) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  int plain = 1;
  for (const char *c = b; *c; c++)
    if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e || *c == '"' || *c == '\\' ||
        *c == ';')
      plain = 0;
  if (plain) {
    asbi_buf_printf(out, "inline; filename=%s", b);
  } else {
    asbi_buf_puts(out, "inline; filename*=utf-8''");
    for (const unsigned char *c = (const unsigned char *)b; *c; c++) {
      if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          strchr("-._~", *c))
        asbi_buf_putc(out, (char)*c);
      else
        asbi_buf_printf(out, "%%%02X", *c);
    }
  }
}
