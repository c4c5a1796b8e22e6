/* template.yaml: parse and validate a template spec (docs/templates.md)
 * into a normalised JSON object. Used by the engine (builds) and the CLI
 * (checks before uploading). Internal; libyaml underneath.
 *
 * The normalised spec (every field present, defaults filled):
 *   {"name", "version", "description", "author", "license", "tags": [],
 *    "base", "env": {}, "ports": [], "resources": {"cpu", "memoryMB",
 *    "diskMB"}, "capabilities": [],
 *    "steps": [{"kind": "run", "cmd", "user", "cwd", "env", "timeout",
 *               "line"} |
 *              {"kind": "copy", "src", "dest", "owner", "mode" (or null),
 *               "line"} |
 *              {"kind": "apt"|"pip"|"npm", "packages": [], "line"}],
 *    "start": null | {"cmd", "user", "cwd", "env"},
 *    "ready": null | {"port" | "cmd", "timeout", "interval"},
 *    "commandsPort",
 *    "commands": [{"name", "cmd", "description", "cwd", "user", "timeout",
 *                  "env", "hidden", "args": [{"name", "type", "required",
 *                  "default" (text or null), "description"}]}]}
 * Times: step/command/ready "timeout" in seconds, ready "interval" in ms.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_TMPL_H
#define ASB_TMPL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define ASBI_TMPL_MAX_BYTES (1u << 20)
/* Mappings and lists inside each other, at most (checked on libyaml's
 * event stream before the document is built: deeply nested flow
 * collections cost libyaml's scanner time quadratic in their depth). */
#define ASBI_TMPL_MAX_DEPTH 64

typedef struct asbi_tmpl_error {
  int line, column; /* 1-based; 0 when the error has no position */
  char field[256];  /* "custom_commands.hello.args[0].type", or "" */
  char message[512];
} asbi_tmpl_error;

/* Parses text (len bytes) of the file `file` (used in messages only).
 * Returns the normalised spec (free with cJSON_Delete), or NULL with err
 * filled. */
cJSON *asbi_tmpl_parse(const char *text, size_t len, asbi_tmpl_error *err);

/* "file:line:column: field: message" (parts left out when unknown). */
void asbi_tmpl_format_error(const asbi_tmpl_error *err, const char *file, char *out, size_t outlen);

/* Sizes as template.yaml writes them: "512" (MiB), "512M", "512Mi",
 * "512MB", "2G", "2Gi", "2GB" (powers of 1024). Returns MiB, or -1. */
long asbi_tmpl_parse_mib(const char *s);

#endif
