/* The lines of E2B's /execute NDJSON stream, each ended by "\n". Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_NDOUT_H
#define ASB_CODEINTERP_NDOUT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "util/buf.h"

/* Longest text one stdout/stderr line carries; longer output is split into
 * several lines at character boundaries (clients keep a list of chunks). */
#define CI_OUT_MAX_TEXT (1u << 20)

/* A JSON string literal of n bytes: escapes what JSON needs, and writes each
 * byte that is not part of well-formed UTF-8 as U+FFFD. 0 or -1. */
int ci_out_json_str(asbi_buf *b, const char *s, size_t n);

/* {"type":"stdout"|"stderr","text":…,"timestamp":…}; one line per
 * CI_OUT_MAX_TEXT bytes of text. ts NULL = now. */
int ci_out_stream(asbi_buf *b, int is_stderr, const char *text, size_t n, const char *ts);
/* One such line for at most CI_OUT_MAX_TEXT bytes from the start of text,
 * cut where no character (or, with escaped, no JSON escape or surrogate
 * pair) is split. escaped: text is the body of a JSON string literal, as
 * it appeared between the quotes (checked by ci_json_body_valid), copied
 * as it is. Returns the bytes of text used (> 0 unless n is 0), or 0 on
 * allocation failure. */
size_t ci_out_stream_line(asbi_buf *b, int is_stderr, const char *text, size_t n, const char *ts,
                          int escaped);
/* 1 if s[0..n) is a valid body of a JSON string literal: escapes well
 * formed, surrogate escapes paired, no control characters, UTF-8. */
int ci_json_body_valid(const char *s, size_t n);
/* {"type":"result",…} from a Jupyter MIME bundle, mapped as E2B maps it:
 * text/plain→text (one pair of enclosing quotes removed), text/html→html,
 * text/markdown→markdown, image/svg+xml→svg, image/png→png,
 * image/jpeg→jpeg, application/pdf→pdf, text/latex→latex,
 * application/json→json, application/javascript→javascript,
 * e2b/data→data, e2b/chart→chart, any other type under extra; nulls
 * dropped. */
int ci_out_result(asbi_buf *b, const cJSON *bundle, int is_main);
int ci_out_error(asbi_buf *b, const char *name, const char *value, const char *traceback);
int ci_out_count(asbi_buf *b, int execution_count);
/* {"type":"<type>"}: keepalive, end_of_execution. */
int ci_out_type(asbi_buf *b, const char *type);

#endif
