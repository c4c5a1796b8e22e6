// Starts a real agent-sandboxd for the npm SDK tests (tests/npm,
// tests/npm-codei) on a free loopback port with its own state dir and
// cgroup name, and points the stock E2B SDKs at it the way a user would:
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY only. stop() kills the engine
// (and with --kill-on-exit every sandbox) and removes the state dir.
// SPDX-License-Identifier: Apache-2.0
import { spawn } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))

// extra: more engine options (e.g. ['--pool-template', 'base=20']);
// opts.state: this state dir (a restarted engine's: stop({ keepState: true })
// before it).
export async function startEngine(tag, extra = [], opts = {}) {
  const bin = process.env.ENGINE_BIN || path.join(here, '../../build/core/engine/agent-sandboxd')
  const state = opts.state || `/tmp/asb-${tag}-${process.pid}`
  const proc = spawn(bin, ['--state-dir', state, '--listen', '127.0.0.1:0',
    '--cgroup-name', `asbt-${tag}-${process.pid}`, '--pool', '2', '--kill-on-exit', ...extra],
  { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise((resolve, reject) => {
    let buf = ''
    proc.stdout.on('data', (d) => {
      buf += d.toString()
      const m = buf.match(/listening on 127\.0\.0\.1:(\d+)/)
      if (m) resolve(parseInt(m[1], 10))
    })
    proc.on('error', reject)
    proc.on('exit', (code) => reject(new Error(`engine exited with ${code}`)))
  })
  process.env.E2B_API_URL = `http://127.0.0.1:${port}`
  process.env.E2B_SANDBOX_URL = `http://127.0.0.1:${port}`
  process.env.E2B_API_KEY = readFileSync(`${state}/api_key`, 'utf8').trim()
  delete process.env.E2B_DEBUG
  return {
    proc,
    port,
    state,
    stopped: false,
    // signal 'SIGKILL': a crash (its sandboxes live on, for the next
    // engine on this state dir to adopt)
    async stop({ keepState = false, signal = 'SIGTERM' } = {}) {
      if (this.stopped) {
        if (!keepState) rmSync(state, { recursive: true, force: true })
        return
      }
      this.stopped = true
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      proc.kill(signal)
      await exited
      if (!keepState) rmSync(state, { recursive: true, force: true })
    }
  }
}
