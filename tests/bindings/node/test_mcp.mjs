// node.mcp: `npx agent-sandbox-mcp` (bin/agent-sandbox-mcp.js) runs the
// project's MCP server program with this process's arguments, environment
// and stdio, and exits with its status. With agent-sandbox-mcp built in
// this tree it is that program, found next to the libagentsandbox the
// addon loaded (docs/mcp.md's rule); the pass-through is shown with
// ASB_MCP_BIN.
// SPDX-License-Identifier: Apache-2.0
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync, execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync, chmodSync, rmSync, copyFileSync, realpathSync } from 'node:fs'
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
    // a copy of the launcher outside any checkout, with no addon and
    // nothing on PATH, finds nothing
    execFileSync('mkdir', ['-p', path.join(dir, 'pkg', 'bin')])
    copyFileSync(bin, path.join(dir, 'pkg', 'bin', 'agent-sandbox-mcp.js'))
    const missing = spawnSync(process.execPath, [path.join(dir, 'pkg', 'bin', 'agent-sandbox-mcp.js')], {
      env: Object.assign({}, process.env, { ASB_MCP_BIN: path.join(dir, 'none'), PATH: dir, ASB_BUILD_DIR: dir, PKG_CONFIG_PATH: dir, PKG_CONFIG_LIBDIR: dir }), encoding: 'utf8'
    })
    assert.equal(missing.status, 127, missing.stderr)
    assert.match(missing.stderr, /not found/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the built agent-sandbox-mcp is found in the build tree', { skip: !existsSync(built) && 'agent-sandbox-mcp is not built in this tree' }, () => {
  const env = Object.assign({}, process.env, { ASB_BUILD_DIR: buildDir })
  delete env.ASB_MCP_BIN
  // next to the libagentsandbox the addon loaded: build/core/client -> core/mcp
  const which = spawnSync(process.execPath, [bin, '--which'], { env, encoding: 'utf8' })
  assert.equal(which.status, 0, which.stderr)
  assert.equal(realpathSync(which.stdout.trim()), realpathSync(built))
  const r = spawnSync(process.execPath, [bin, '--version'], { env, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout + r.stderr, /agent-sandbox-mcp/)
})
