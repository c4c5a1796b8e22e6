// node.mcp: `npx agent-sandbox-mcp` (bin/agent-sandbox-mcp.js) runs the
// project's MCP server program with this process's arguments, environment
// and stdio, and exits with its status. With agent-sandbox-mcp built in
// this tree it is that program; the search order and the pass-through are
// shown with ASB_MCP_BIN.
// SPDX-License-Identifier: Apache-2.0
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync, chmodSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pkgDir, buildDir } from './helpers.mjs'

const bin = path.join(pkgDir, 'bin', 'agent-sandbox-mcp.js')
const built = path.join(buildDir, 'core', 'mcp', 'agent-sandbox-mcp')

test('ASB_MCP_BIN: arguments, environment, stdin and exit status pass through', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'asb-node-mcp-'))
  try {
    const prog = path.join(dir, 'prog')
    writeFileSync(prog, '#!/bin/sh\necho "args:$*"\necho "key:$ASB_API_KEY"\ncat\nexit 7\n')
    chmodSync(prog, 0o755)
    const r = spawnSync(process.execPath, [bin, '--http', '--listen', '127.0.0.1:0'], {
      env: Object.assign({}, process.env, { ASB_MCP_BIN: prog, ASB_API_KEY: 'k123' }), input: 'from stdin\n', encoding: 'utf8'
    })
    assert.equal(r.status, 7)
    assert.equal(r.stdout, 'args:--http --listen 127.0.0.1:0\nkey:k123\nfrom stdin\n')
    const missing = spawnSync(process.execPath, [bin], { env: Object.assign({}, process.env, { ASB_MCP_BIN: path.join(dir, 'none'), PATH: dir, ASB_BUILD_DIR: dir }), encoding: 'utf8' })
    assert.equal(missing.status, 127)
    assert.match(missing.stderr, /not found/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the built agent-sandbox-mcp is found in the build tree', { skip: !existsSync(built) && 'agent-sandbox-mcp is not built in this tree' }, () => {
  const env = Object.assign({}, process.env, { ASB_BUILD_DIR: buildDir })
  delete env.ASB_MCP_BIN
  const r = spawnSync(process.execPath, [bin, '--version'], { env, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout + r.stderr, /agent-sandbox-mcp/)
})
