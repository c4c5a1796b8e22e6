/* The coding agents the project knows: name, npm package, command. One
 * table for the agents service (core/server/agents_cli.c) and template.yaml's
 * `agents:` (core/tmpl/tmpl.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_UTIL_AGENTS_TABLE_H
#define ASB_UTIL_AGENTS_TABLE_H

#define ASBI_AGENT_CODEX_PKG "@openai/codex"
#define ASBI_AGENT_QWEN_PKG "@qwen-code/qwen-code"
#define ASBI_AGENT_CLAUDE_PKG "@anthropic-ai/claude-code"
#define ASBI_AGENT_OPENCODE_PKG "opencode-ai"

/* X(name, package, command) */
#define ASBI_AGENTS(X)                         \
  X("codex", ASBI_AGENT_CODEX_PKG, "codex")    \
  X("qwen", ASBI_AGENT_QWEN_PKG, "qwen")       \
  X("claude", ASBI_AGENT_CLAUDE_PKG, "claude") \
  X("opencode", ASBI_AGENT_OPENCODE_PKG, "opencode")

/* Where agents are looked for: the template's own prefix (template.yaml
 * `agents:` installs there), then the host-wide one the base template
 * shows read-only. */
#define ASBI_AGENTS_TEMPLATE_PREFIX "/opt/agent-sandbox/agents"
#define ASBI_AGENTS_HOST_PREFIX "/usr/local/lib/agent-sandbox/agents"

#endif
