/* Named-command arguments (L2 of the /commands protocol, DESIGN §8): typed
 * argument specs, validation and coercion of a request's keyword arguments,
 * and E2B-style "{placeholder}" filling with shell quoting. Shared by the
 * server SDK (libagentsandbox-server) and the engine, which serves a
 * template's custom_commands. Internal.
 *
 * Coercion rules (the reference server's, docs/reference/server.md):
 *   string   a JSON string; a number (its source text) or a boolean
 *            ("true"/"false") is turned into its text
 *   integer  an integral JSON number in int64 range (3.0 is 3), or a string
 *            of decimal digits with an optional sign ("42", "-7")
 *   float    a finite JSON number, or a string that is one ("2.5", "1e3")
 *   boolean  true/false, the numbers 1/0, or the strings true/false/yes/no/
 *            on/off/1/0 (any case)
 *   json     any JSON value, kept as is
 * null counts as "not given". Arguments that are not declared are refused.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_CMDARGS_H
#define ASB_PROTO_CMDARGS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Values match the public asb_server_arg_type. */
enum {
  ASBI_ARG_STRING = 1,
  ASBI_ARG_INTEGER = 2,
  ASBI_ARG_FLOAT = 3,
  ASBI_ARG_BOOLEAN = 4,
  ASBI_ARG_JSON = 5
};

/* "string", "integer", "float", "boolean", "json"; NULL if unknown. */
const char *asbi_argtype_name(int type);
/* The type named `name` (also "str", "int", "number", "bool", "object",
 * "array", "any"); 0 if unknown. */
int asbi_argtype_parse(const char *name);

typedef struct asbi_argspec {
  const char *name;
  int type;
  int required;
  const cJSON *dflt; /* already coerced to type, or NULL (no default) */
} asbi_argspec;

/* A new item holding v coerced to type, or NULL with *why set to a static
 * reason ("expected an integer"). */
cJSON *asbi_arg_coerce(int type, const cJSON *v, const char **why);
/* The same for a value written as text (a default in a spec): the text is
 * read as the type's literal ("42", "yes", "2.5"); for json it must be a
 * JSON document, for string it is taken verbatim. */
cJSON *asbi_arg_from_text(int type, const char *text, const char **why);

/* Binds keyword arguments (a JSON object) to the specs: returns a new
 * object holding, in spec order, every argument given (coerced) or
 * defaulted; arguments neither given nor defaulted are absent. On failure
 * returns NULL and writes the reason to err ("missing required argument
 * 'name'", "argument 'n': expected an integer", "unexpected argument
 * 'x'"); err has room for errlen bytes (>= 1). */
cJSON *asbi_args_bind(const cJSON *kwargs, const asbi_argspec *specs, size_t n, char *err,
                      size_t errlen);
/* Parses a request body (strict JSON; empty body = {}) and binds it. */
cJSON *asbi_args_parse(const char *body, size_t len, const asbi_argspec *specs, size_t n, char *err,
                       size_t errlen);

/* An integer item that keeps its exact decimal text (see pjson.h). */
cJSON *asbi_json_int(int64_t v);
/* Exact int64 of a number item (source text honoured), -1 if it is none. */
int asbi_json_get_i64(const cJSON *v, int64_t *out);
/* Compact JSON of v onto out; numbers keep their source text when they
 * have one (so int64 values beyond 2^53 survive). 0 or -1 (memory). */
int asbi_json_print(const cJSON *v, asbi_buf *out);

/* The text an argument takes in a command line: strings verbatim, numbers
 * by their text, booleans "true"/"false", null "", anything else compact
 * JSON. malloc'd; NULL on allocation failure. */
char *asbi_arg_text(const cJSON *v);

/* Appends s quoted for a POSIX shell, as Python's shlex.quote does: as is
 * when it has only [A-Za-z0-9_@%+=:,./-] and is not empty, else in single
 * quotes with each ' written as '"'"'. 0 or -1. */
int asbi_shell_quote(asbi_buf *out, const char *s);

/* Placeholders: "{name}" with name = [A-Za-z_][A-Za-z0-9_]*. "{{" and "}}"
 * are literal braces, and "${" starts a shell expansion that is left alone
 * (so "${HOME}" stays). Any other brace is literal.
 * Calls fn for each placeholder name (not NUL-terminated); a non-zero
 * return stops the walk and is returned. */
int asbi_args_placeholders(const char *tmpl, int (*fn)(void *ud, const char *name, size_t len),
                           void *ud);
/* Fills the placeholders of tmpl from args (as bound by asbi_args_bind),
 * each value shell-quoted (asbi_shell_quote of asbi_arg_text); an argument
 * absent from args becomes ''. Single pass: filled values are not scanned
 * again. 0, or -1 with err set (memory). */
int asbi_args_fill(const char *tmpl, const cJSON *args, asbi_buf *out, char *err, size_t errlen);

#endif
