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
int ci_out_stream(asbi_buf *b, int is_stderr, const char *text, size_t n,
                  const char *ts);
/* {"type":"result",…} from a Jupyter MIME bundle, mapped as E2B maps it:
 * text/plain→text (one pair of enclosing quotes removed), text/html→html,
 * text/markdown→markdown, image/svg+xml→svg, image/png→png,
 * image/jpeg→jpeg, application/pdf→pdf, text/latex→latex,
 * application/json→json, application/javascript→javascript,
 * e2b/data→data, e2b/chart→chart, any other type under extra; nulls
 * dropped. */
int ci_out_result(asbi_buf *b, const cJSON *bundle, int is_main);
int ci_out_error(asbi_buf *b, const char *name, const char *value,
                 const char *traceback);
int ci_out_count(asbi_buf *b, int execution_count);
/* {"type":"<type>"}: keepalive, end_of_execution. */
int ci_out_type(asbi_buf *b, const char *type);

#endif
