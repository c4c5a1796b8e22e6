/* agent-sandbox Node binding: the kinds of events a call posts to its JS
 * onEvent(kind, value, cost) (lib/native.js has the same numbers).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ANODE_EVENTS_H
#define ANODE_EVENTS_H

enum {
  EV_STDOUT = 1,      /* Buffer: command stdout, or pty output */
  EV_STDERR = 2,      /* Buffer */
  EV_DATA = 3,        /* Buffer: a chunk of a file being read */
  EV_WATCH = 4,       /* {type, name, entry?} */
  EV_RESULT = 5,      /* a code result: {formats: [[name, value]...], isMain} */
  EV_CODE_ERROR = 6,  /* {name, value, traceback} */
  EV_NEED = 7,        /* a file upload wants its next chunk: feed(id, chunk | null) */
  EV_AGENT = 8,       /* Buffer: an agent event's JSON text (agents.c) */
  EV_TEMPLATE_LOG = 9 /* {timestampMs, level, message}: a build's log line (client.c) */
};

napi_value anode_command_result(napi_env env, const asb_command_result *r);

#endif
