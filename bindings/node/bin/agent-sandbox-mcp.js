#!/usr/bin/env node
'use strict'
// npx agent-sandbox-mcp: runs agent-sandbox-mcp, the MCP server of this
// project (a C program on libagentsandbox, docs/mcp.md), with this
// process's configuration (ASB_* / E2B_* variables pass through) and its
// arguments, stdin and stdout; its exit status and signals are ours. No
// second implementation: this only finds the program, by the rule of
// docs/mcp.md: ASB_MCP_BIN; next to the libagentsandbox the binding loads
// (a build tree's core/mcp/, then its install prefix's bin/); then (for a
// package whose addon is not built yet) pkg-config's prefix, ASB_BUILD_DIR
// and the build/ of the checkout this package is in; then PATH.
// `--which` prints the program it would run. Node cannot exec(2) itself
// away, so the program runs as a child with our stdio, signals forwarded.
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

/** Where the libagentsandbox this binding loads lives (the addon links it):
 * read from /proc/self/maps once the addon is loaded; null without one. */
function loadedLibraryDir() {
  try {
    require('../lib/native.js').load()
    const maps = fs.readFileSync('/proc/self/maps', 'utf8')
    const m = /\s(\/\S*\/libagentsandbox\.so[.\d]*)$/m.exec(maps)
    return m ? path.dirname(m[1]) : null
  } catch (_) {
    return null
  }
}

function candidates() {
  const c = []
  if (process.env.ASB_MCP_BIN) c.push(process.env.ASB_MCP_BIN)
  // next to the library the binding loaded: a build tree (core/client ->
  // core/mcp), then its install prefix (<prefix>/lib[/<multiarch>] -> bin)
  const lib = loadedLibraryDir()
  if (lib) {
    c.push(path.join(lib, '..', 'mcp', NAME))
    const m = /^(.*)\/lib(?:64)?(?:\/[^/]+-linux-gnu[^/]*)?$/.exec(lib)
    if (m) c.push(path.join(m[1] || '/', 'bin', NAME))
  }
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
  if (process.argv[2] === '--which') {
    console.log(bin)
    process.exit(0)
  }
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
