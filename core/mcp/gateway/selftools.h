/* mcp-gateway's own tools on the sandbox it runs in ("sandbox.<tool>",
 * selftools.c). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_MCP_SELFTOOLS_H
#define ASB_MCP_SELFTOOLS_H

#include <cjson/cJSON.h>

#define GW_SELF_PREFIX "sandbox"

/* The tools' definitions (a new array; the caller deletes it). */
cJSON *gw_self_tools(void);
/* tools/call of tool (the name after "sandbox."): a CallToolResult, or
 * NULL for a tool that does not exist. */
cJSON *gw_self_call(const char *tool, const cJSON *args);

#endif
