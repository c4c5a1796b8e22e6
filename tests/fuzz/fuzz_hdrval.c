/* Fuzz the header values envd's GET /files reads from clients
 * (core/envd/hdrval.c): Range and Accept-Encoding, and the Content-Type and
 * Content-Disposition it derives from a path. The input's first line is the
 * header value, the rest the path. Invariants: a Range answer lies inside
 * the file, and nothing is written unless it is partial; the encoding is
 * one of three answers; the MIME type is never NULL; the disposition is
 * one line of printable ASCII in one of its two forms.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "hdrval.h"

static void check_range(const char *h, uint64_t size) {
  uint64_t off = 12345, len = 67890;
  int rc = envd_hdrval_range(h, size, &off, &len);
  FUZZ_CHECK(rc >= -1 && rc <= 1);
  if (rc == 1) {
    FUZZ_CHECK(len >= 1 && off < size && len <= size - off);
  } else {
    FUZZ_CHECK(off == 12345 && len == 67890);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  char *nl = strchr(s, '\n');
  const char *path = nl ? nl + 1 : s;
  if (nl) *nl = '\0';
  /* Range against sizes around what the value names */
  const uint64_t sizes[] = {0, 1, 2, 10, 4096, (uint64_t)1 << 40, UINT64_MAX};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_range(s, sizes[i]);
  int enc = envd_hdrval_encoding(s);
  FUZZ_CHECK(enc >= -1 && enc <= 1);
  const char *mime = envd_hdrval_mime(path);
  FUZZ_CHECK(mime && *mime);
  asbi_buf b = ASBI_BUF_INIT;
  envd_hdrval_disposition(path, &b);
  FUZZ_CHECK(b.data != NULL);
  int rfc5987 = strncmp(b.data, "inline; filename*=utf-8''", 25) == 0;
  FUZZ_CHECK(rfc5987 || strncmp(b.data, "inline; filename=", 17) == 0);
  for (const char *c = b.data; *c; c++) {
    FUZZ_CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c <= 0x7e);
    if (rfc5987 && c >= b.data + 25)
      FUZZ_CHECK(strchr("%-._~", *c) || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
                 (*c >= 'A' && *c <= 'Z'));
  }
  asbi_buf_free(&b);
  free(s);
  return 0;
}
