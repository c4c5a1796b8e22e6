/* envd: the values of the HTTP headers GET /files negotiates (hdrval.c).
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_HDRVAL_H
#define ASB_ENVD_HDRVAL_H

#include <stdint.h>

#include "util/buf.h"

/* A Range header against a file of size bytes: one "bytes=a-b", "bytes=a-"
 * or "bytes=-n" range (b past the end is cut to it). 1: serve *len bytes
 * from *off (206); 0: serve the whole file (no Range, several ranges or
 * one that does not parse); -1: unsatisfiable (416; *off and *len untouched). */
int envd_hdrval_range(const char *range, uint64_t size, uint64_t *off, uint64_t *len);
/* Accept-Encoding negotiation as E2B's envd does it: gzip or identity;
 * 0 identity, 1 gzip, -1 nothing acceptable (406). NULL or "" is 0. */
int envd_hdrval_encoding(const char *h);
/* Content-Type of a file by its extension (case-insensitive), else
 * application/octet-stream. */
const char *envd_hdrval_mime(const char *path);
/* Appends the Content-Disposition value for path's base name: "inline;
 * filename=<name>" for plain printable ASCII, else RFC 5987's
 * "inline; filename*=utf-8''<percent-encoded>". */
void envd_hdrval_disposition(const char *path, asbi_buf *out);

#endif
