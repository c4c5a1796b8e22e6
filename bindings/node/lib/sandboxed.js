'use strict'
// sandboxed(fn, options): run a JS function in a sandbox. Its source and
// its JSON-serialisable arguments are shipped (the program goes to the
// sandbox's node on stdin), the result comes back from a file the program
// writes, and a throw in the sandbox rejects with a RemoteError carrying
// the remote stack.
// SPDX-License-Identifier: Apache-2.0
const crypto = require('node:crypto')
const vm = require('node:vm')
const { RemoteError } = require('./errors.js')

function compiles(expr) {
  try {
    new vm.Script(`(${expr})`) // compiled only, never run here
    return true
  } catch (_) {
    return false
  }
}

function sourceOf(fn) {
  if (typeof fn !== 'function') throw new TypeError('sandboxed() takes a function')
  const src = Function.prototype.toString.call(fn)
  if (/\{\s*\[native code\]\s*\}\s*$/.test(src)) throw new TypeError('sandboxed(): a native or bound function has no source to ship')
  if (/^class\b/.test(src)) throw new TypeError('sandboxed(): a class is not a function to call')
  if (compiles(src)) return src
  // A method shorthand ("name(a) {...}", "async name(a) {...}") is not an
  // expression on its own; as a function expression it is.
  const m = /^(async\s+)?(\*?\s*[A-Za-z_$][\w$]*\s*\()/.exec(src)
  if (m) {
    const f = `${m[1] || ''}function ${src.slice((m[1] || '').length)}`
    if (compiles(f)) return f
  }
  throw new TypeError('sandboxed(): cannot ship this function (its source is not a function expression)')
}

function program(src, argsJson, out) {
  return `import { writeFileSync } from 'node:fs'
const __out = ${JSON.stringify(out)}
const __fn = (${src})
let __r
try {
  const v = await __fn(...JSON.parse(${JSON.stringify(argsJson)}))
  __r = JSON.stringify({ ok: true, undef: v === undefined, value: v === undefined ? null : v })
} catch (e) {
  const err = e instanceof Error ? e : new Error(String(e))
  __r = JSON.stringify({ ok: false, name: err.name || 'Error', message: err.message || '', stack: err.stack || '' })
}
writeFileSync(__out, __r, { mode: 0o600 })
`
}

/**
 * Wrap fn so that calling it runs it in a sandbox: (…args) => Promise.
 * options: template ('base'), timeoutMs (the sandbox's life), envs,
 * keepAlive (one sandbox for every call, killed by close()), sandbox (run in
 * this Sandbox; never killed), node (the interpreter, 'node'), streamOutput
 * (forward what the function prints, default true), callTimeoutMs (one
 * call's limit; 0 = none), connection options.
 */
function sandboxed(fn, options = {}) {
  const src = sourceOf(fn)
  const { Sandbox } = require('./sandbox.js')
  const S = options.sandboxClass || Sandbox
  let kept = options.sandbox || null
  let making = null

  async function acquire() {
    if (kept) return { sbx: kept, temporary: false }
    if (options.keepAlive) {
      if (!making) making = S.create(Object.assign({}, options, { template: options.template || 'base' }))
      kept = await making
      return { sbx: kept, temporary: false }
    }
    return { sbx: await S.create(Object.assign({}, options, { template: options.template || 'base' })), temporary: true }
  }

  async function call(...args) {
    let argsJson
    try {
      argsJson = JSON.stringify(args)
    } catch (e) {
      throw new TypeError(`sandboxed(): the arguments are not JSON-serialisable: ${e.message}`)
    }
    if (argsJson === undefined) throw new TypeError('sandboxed(): the arguments are not JSON-serialisable')
    const { sbx, temporary } = await acquire()
    const out = `/tmp/.asb-fn-${crypto.randomBytes(8).toString('hex')}.json`
    try {
      const stream = options.streamOutput !== false
      const r = await sbx.commands.run(`${options.node || 'node'} --input-type=module -`, {
        stdin: program(src, argsJson, out),
        envs: options.envs,
        timeoutMs: options.callTimeoutMs === undefined ? 0 : options.callTimeoutMs,
        onStdout: stream ? (t) => { process.stdout.write(t) } : undefined,
        onStderr: stream ? (t) => { process.stderr.write(t) } : undefined,
        signal: options.signal
      })
      let text
      try {
        text = await sbx.files.read(out)
      } catch (e) {
        throw new RemoteError('Error', `the function's process ended without a result (exit code ${r.exitCode}): ${r.stderr.trim()}`, r.stderr)
      }
      sbx.files.remove(out).catch(() => {})
      const res = JSON.parse(text)
      if (!res.ok) throw new RemoteError(res.name, res.message, res.stack)
      return res.undef ? undefined : res.value
    } finally {
      if (temporary) await sbx.kill().catch(() => {}).finally(() => sbx.close())
    }
  }

  call.currentSandbox = () => kept
  call.close = async () => {
    if (kept && !options.sandbox) {
      const s = kept
      kept = null
      making = null
      await s.kill().catch(() => {})
      s.close()
    }
  }
  return call
}

module.exports = { sandboxed }
