/* JSON-RPC 2.0 for the MCP server: the stdio framer (newline-delimited
 * messages with a size bound that resynchronises after an over-long line),
 * the message reader (one message or a batch, classified and checked
 * against JSON-RPC's and MCP's rules), and the builders of what the server
 * sends. Independent of libagentsandbox, so the fuzz harness links it alone.
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_MCP_JSONRPC_H
#define ASB_MCP_JSONRPC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "util/buf.h"

/* JSON-RPC's error codes, and MCP's "resource not found". */
enum {
  MCP_PARSE_ERROR = -32700,
  MCP_INVALID_REQUEST = -32600,
  MCP_METHOD_NOT_FOUND = -32601,
  MCP_INVALID_PARAMS = -32602,
  MCP_INTERNAL_ERROR = -32603,
  MCP_SERVER_ERROR = -32000, /* implementation-defined: overload, shutdown */
  MCP_RESOURCE_NOT_FOUND = -32002
};

/* ---- the stdio framer ---------------------------------------------------- */

/* Called for each non-blank line (without its "\n" or "\r\n"; NUL-ended),
 * or, with line NULL, once for a line that grew over the bound: len is then
 * how many bytes of it had arrived. The rest of that line is discarded and
 * framing resumes after its newline. Return non-zero to stop feeding. */
typedef int (*mcp_frame_fn)(void *ud, const char *line, size_t len);

typedef struct mcp_framer {
  asbi_buf line;
  size_t max;   /* bound of a line without its newline */
  int skipping; /* inside an over-long line: drop until "\n" */
} mcp_framer;

void mcp_framer_init(mcp_framer *f, size_t max);
void mcp_framer_free(mcp_framer *f);
/* Bytes split anywhere. Returns 0, -1 out of memory, or the callback's
 * non-zero value; *used (may be NULL) is then how many of the n bytes were
 * taken (up to and including the newline of the line that stopped it):
 * feed the rest again to go on. */
int mcp_framer_feed(mcp_framer *f, const void *p, size_t n, mcp_frame_fn fn, void *ud,
                    size_t *used);
/* At end of input: a last line without its newline. */
int mcp_framer_finish(mcp_framer *f, mcp_frame_fn fn, void *ud);

/* ---- reading messages --------------------------------------------------- */

typedef enum mcp_msg_kind {
  MCP_MSG_REQUEST = 1,
  MCP_MSG_NOTIFICATION,
  MCP_MSG_RESPONSE, /* a result or error answering one of ours */
  MCP_MSG_INVALID   /* not a valid message: answer err_code/err_msg */
} mcp_msg_kind;

typedef struct mcp_msg {
  mcp_msg_kind kind;
  /* The id as JSON text, exactly as sent ("7", "\"a\""), for requests,
   * responses, and invalid messages whose id could be read; else NULL. */
  char *id;
  const char *method;  /* requests and notifications; owned by json */
  cJSON *params;       /* an object, or NULL when absent; owned by json */
  cJSON *json;         /* the message */
  int err_code;        /* MCP_MSG_INVALID */
  const char *err_msg; /* static */
} mcp_msg;

typedef struct mcp_parsed {
  int batch;    /* the text was a JSON array */
  size_t count; /* messages (0 with an error) */
  mcp_msg *msgs;
  cJSON *root;
  int err_code; /* 0, MCP_PARSE_ERROR or MCP_INVALID_REQUEST (empty batch) */
  char err_msg[160];
} mcp_parsed;

/* Parse text (exactly len bytes) as one message or a batch. Returns 0 and
 * fills out (free it with mcp_parsed_free, also on error), or
 * MCP_PARSE_ERROR / MCP_INVALID_REQUEST with out->err_msg; -1 out of
 * memory. Strict JSON (asbi_pj_parse): invalid UTF-8, trailing garbage and
 * nesting deeper than 64 are parse errors. */
int mcp_rpc_parse(mcp_parsed *out, const char *text, size_t len);
void mcp_parsed_free(mcp_parsed *p);
/* How many responses a server owes for it: one per request and per
 * invalid message. */
size_t mcp_parsed_replies(const mcp_parsed *p);

/* ---- building messages (malloc'd compact JSON text; NULL out of memory) -- */

/* {"jsonrpc":"2.0","id":<id>,"result":<result_json>} */
char *mcp_rpc_result(const char *id, const char *result_json);
/* An error. id NULL: the id is left out (id_null 0) or written as null
 * (id_null 1). message is made valid UTF-8; data (may be NULL) is copied. */
char *mcp_rpc_error(const char *id, int id_null, int code, const char *message, const cJSON *data);
/* {"jsonrpc":"2.0","method":<method>,"params":<params>} (params is
 * consumed; NULL = none). */
char *mcp_rpc_notification(const char *method, cJSON *params);

/* Valid UTF-8 copy of n bytes: invalid sequences and NULs become U+FFFD. */
char *mcp_utf8_clean(const char *p, size_t n);
/* cJSON string node from n bytes, cleaned as above. */
cJSON *mcp_json_str(const char *p, size_t n);

#endif
