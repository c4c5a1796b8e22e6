/*
 * agent-sandbox — named commands: call the commands a template serves.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * A template's server (made with libagentsandbox-server, see server.h, or
 * any server speaking the same protocol) serves commands on a port of the
 * sandbox, 9000 by default; the local engine also serves a template's
 * custom_commands (template.yaml) there. These calls reach that port
 * through the same route as every other sandbox traffic (the client's
 * sandbox URL with E2b-Sandbox-Id/-Port headers, or <port>-<id>.<domain>),
 * and send the sandbox's access token as X-Access-Token.
 */
#ifndef AGENTSANDBOX_NAMED_H
#define AGENTSANDBOX_NAMED_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_NAMED_COMMAND_OPTIONS_VERSION 1

typedef struct asb_named_command_options {
  unsigned int version; /* ASB_NAMED_COMMAND_OPTIONS_VERSION */
  int port;             /* the command server's port: 0 = 9000 */
  long timeout_ms;      /* the request: 0 = the client's default,
                           negative = none */
  asb_cancel *cancel;
} asb_named_command_options;

#define ASB_NAMED_COMMAND_OPTIONS_INIT \
  { ASB_NAMED_COMMAND_OPTIONS_VERSION, 0, 0, NULL }

ASB_API(int)
asb_named_command_options_init(asb_named_command_options *opts,
                               unsigned int version);

/* Run the command `name` with keyword arguments args_json (a JSON object;
 * NULL = none) and return its result as JSON text in *result_json (free it
 * with asb_free). Errors:
 *   ASB_ECOMMANDNOTFOUND  no such command (HTTP 404; the message lists the
 *                         available ones)
 *   ASB_EINVAL            bad arguments (HTTP 400: missing, wrong type,
 *                         unexpected), or args_json is not a JSON object
 *   ASB_ECOMMANDFAILED    the command raised (HTTP 500): asb_error_last()
 *                         ->remote_code is the error's type ("ValueError"),
 *                         the message ends with its message
 *   ASB_EAUTH             the server wants another access token (HTTP 401)
 *   ASB_ECONNECTION       nothing listens on the port in the sandbox
 *   ASB_ESANDBOXGONE, ASB_ESANDBOXNOTFOUND, ASB_ETIMEOUT, ASB_ECANCELED,
 *   ASB_EPROTOCOL (a reply without "result"), transport errors. */
ASB_API(int)
asb_sandbox_run_command(char **result_json, asb_sandbox *sandbox,
                        const char *name, const char *args_json,
                        const asb_named_command_options *opts);

/* ---- listing ------------------------------------------------------------- */
/* The commands the server lists (GET /commands; hidden ones are not). */
ASB_API(int)
asb_sandbox_commands_list(asb_named_command_list **out, asb_sandbox *sandbox,
                          const asb_named_command_options *opts);
ASB_API(size_t) asb_named_command_list_count(const asb_named_command_list *l);
/* Owned by the list; NULL past the end. */
ASB_API(const asb_named_command *)
asb_named_command_list_get(const asb_named_command_list *l, size_t i);
/* By name; NULL if not listed. */
ASB_API(const asb_named_command *)
asb_named_command_list_find(const asb_named_command_list *l, const char *name);
ASB_API(void) asb_named_command_list_free(asb_named_command_list *l);

ASB_API(const char *) asb_named_command_name(const asb_named_command *c);
/* "" when it has none. */
ASB_API(const char *) asb_named_command_description(const asb_named_command *c);
ASB_API(size_t) asb_named_command_arg_count(const asb_named_command *c);
/* Argument i: its name; type ("string", "integer", "float", "boolean",
 * "json"); 1 if required; its default as text (NULL if none); its
 * description ("" if none). NULL / 0 past the end. */
ASB_API(const char *)
asb_named_command_arg_name(const asb_named_command *c, size_t i);
ASB_API(const char *)
asb_named_command_arg_type(const asb_named_command *c, size_t i);
ASB_API(int)
asb_named_command_arg_required(const asb_named_command *c, size_t i);
ASB_API(const char *)
asb_named_command_arg_default(const asb_named_command *c, size_t i);
ASB_API(const char *)
asb_named_command_arg_description(const asb_named_command *c, size_t i);

ASB_END_DECL

#endif /* AGENTSANDBOX_NAMED_H */
