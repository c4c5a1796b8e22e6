/* mcp-gateway's --config: E2B's `mcp` create option, as JSON, read into
 * the servers the gateway starts. An object whose keys name servers:
 *
 *   "github/<owner>/<repo>": {"runCmd": "...", "installCmd"?: "...",
 *                             "envs"?: {"K": "v"}}
 *       a stdio MCP server started from runCmd (after installCmd), here;
 *   any other key (E2B's catalog: "browserbase", "exa", ...): refused
 *       with a message saying why (E2B runs them from Docker images,
 *       which a sandbox here has neither an image store nor the
 *       internet for).
 *
 * Each server's tools are offered as "<prefix>.<tool>"; the prefix is the
 * repo part of the key (letters, digits, '_' and '-'), unique in one
 * config. Pure (no I/O), so tests/fuzz/fuzz_mcp_gwconf.c drives it.
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_MCP_GWCONF_H
#define ASB_MCP_GWCONF_H

#include <stddef.h>

#define GW_MAX_SERVERS 32
#define GW_MAX_ENVS 64

typedef struct gw_server_conf {
  char *key;         /* as in the config: github/<owner>/<repo> */
  char *prefix;      /* <repo>: the tools' name prefix */
  char *run_cmd;     /* sh -c */
  char *install_cmd; /* or NULL */
  char **envs;       /* "K=V", NULL-ended */
} gw_server_conf;

typedef struct gw_conf {
  gw_server_conf *servers;
  size_t n;
} gw_conf;

/* 0, or -1 with a message naming the problem in err (n bytes). *out is
 * empty on failure; free it with gw_conf_free either way. */
int gw_conf_parse(const char *json, size_t len, gw_conf *out, char *err, size_t n);
void gw_conf_free(gw_conf *c);

#endif
