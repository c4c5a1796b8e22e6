// Shared by the node.* tests: a real agent-sandboxd per test file (its own
// state dir, free loopback port and cgroup name, --kill-on-exit), pointed
// at the way users point programs at it (E2B_API_URL, E2B_SANDBOX_URL,
// E2B_API_KEY; tests/support/engine.mjs), sessions in its state dir.
// SPDX-License-Identifier: Apache-2.0
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEngine } from '../../support/engine.mjs'

export const here = path.dirname(fileURLToPath(import.meta.url))
export const repo = path.resolve(here, '..', '..', '..')
export const pkgDir = path.join(repo, 'bindings', 'node')
export const buildDir = process.env.ASB_BUILD_DIR || path.join(repo, 'build')

export async function engine(tag, extra = []) {
  const e = await startEngine(`nd-${tag}`, extra)
  process.env.ASB_SESSION_DIR = path.join(e.state, 'sessions')
  return e
}

/** Poll fn until it returns a truthy value; the deadline only stops a test
 * that would otherwise hang. */
export async function eventually(fn, timeoutMs = 30_000, intervalMs = 50) {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v || Date.now() > end) return v
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
