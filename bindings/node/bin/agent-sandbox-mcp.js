#!/usr/bin/env node
'use strict'
// npx agent-sandbox-mcp: runs agent-sandbox-mcp, the MCP server of this
// project (a C program on libagentsandbox, docs/mcp.md), with this
// process's configuration (ASB_* / E2B_* variables pass through) and its
// arguments, stdin and stdout; its exit status and signals are ours. No
// second implementation: this only finds the program, at ASB_MCP_BIN, then
// the bin dir of libagentsandbox's install prefix (pkg-config), the
// repository's build tree (ASB_BUILD_DIR, or the build/ of the checkout this
// package is in), then PATH.
// SPDX-License-Identifier: Apache-2.0
const fs = require('node:fs')
const path = require('node:path')
const { spawn, execFileSync } = require('node:child_process')

const NAME = 'agent-sandbox-mcp'

function executable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return fs.statSync(p).isFile()
  } catch (_) {
    return false
  }
}

function candidates() {
  const c = []
  if (process.env.ASB_MCP_BIN) c.push(process.env.ASB_MCP_BIN)
  try {
    const prefix = execFileSync('pkg-config', ['--variable=prefix', 'agentsandbox'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    if (prefix) c.push(path.join(prefix, 'bin', NAME))
  } catch (_) {}
  if (process.env.ASB_BUILD_DIR) c.push(path.join(process.env.ASB_BUILD_DIR, 'core', 'mcp', NAME))
  c.push(path.resolve(__dirname, '..', '..', '..', 'build', 'core', 'mcp', NAME))
  for (const d of (process.env.PATH || '').split(path.delimiter)) if (d) c.push(path.join(d, NAME))
  return c
}

function find() {
  const tried = candidates()
  for (const p of tried) if (executable(p)) return p
  console.error(`${NAME}: not found (build it: cmake --build build --target ${NAME}, or set ASB_MCP_BIN); looked at:\n  ${tried.join('\n  ')}`)
  process.exit(127)
}

if (require.main === module) {
  const bin = find()
  const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' })
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => child.kill(s))
  child.on('error', (e) => {
    console.error(`${NAME}: ${e.message}`)
    process.exit(127)
  })
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
    } else {
      process.exit(code === null ? 1 : code)
    }
  })
}

module.exports = { find, candidates }
