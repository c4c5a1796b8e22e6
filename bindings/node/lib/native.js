'use strict'
// The addon (agentsandbox.node) and the glue every part of the package
// uses: invoke() turns one C call into a Promise (AbortSignal -> the call's
// asb_cancel, events -> the handlers in order, a handler that throws ->
// the call aborted and the Promise rejected with that error), clients are
// made once per configuration, units are converted.
// SPDX-License-Identifier: Apache-2.0
const fs = require('node:fs')
const path = require('node:path')
const errors = require('./errors.js')

const pkgDir = path.resolve(__dirname, '..')

/** Where the addon may be, first match wins. */
function addonCandidates() {
  const c = []
  if (process.env.ASB_NODE_ADDON) c.push(path.resolve(process.env.ASB_NODE_ADDON))
  if (process.env.ASB_BUILD_DIR) c.push(path.join(process.env.ASB_BUILD_DIR, 'bindings', 'node', 'agentsandbox.node'))
  c.push(path.join(pkgDir, 'build', 'agentsandbox.node'))
  c.push(path.join(pkgDir, '..', '..', 'build', 'bindings', 'node', 'agentsandbox.node'))
  return c
}

let addon = null
function load() {
  if (addon) return addon
  const tried = addonCandidates()
  for (const p of tried) {
    if (fs.existsSync(p)) {
      addon = require(p)
      return addon
    }
  }
  throw new Error('agent-sandbox: the native addon is not built; looked for\n  ' + tried.join('\n  ') +
    '\nbuild it with `npm install` in the package (needs libagentsandbox: pkg-config or ASB_BUILD_DIR), ' +
    'or `cmake --build build --target node-binding` in the repository')
}

const N = new Proxy({}, { get: (_, k) => load()[k] })

/** Event kinds (src/events.h). */
const EV = { STDOUT: 1, STDERR: 2, DATA: 3, WATCH: 4, RESULT: 5, CODE_ERROR: 6, NEED: 7, AGENT: 8, TEMPLATE_LOG: 9 }
/** Stands for the event function in invoke()'s argument list. */
const EVENTS = Symbol('events')

function abortError(signal) {
  if (signal && signal.reason !== undefined) return signal.reason
  return new errors.OperationCancelledError('This operation was aborted', { code: 'ASB_ECANCELED' })
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function'
}

function fail(ctl, e) {
  if (ctl.error !== undefined) return
  ctl.error = e === undefined ? new Error('a callback threw undefined') : e
  if (ctl.id) N.abort(ctl.id)
}

// One event: run its handler now, or after the ones still pending (an
// async handler holds the next ones back, so they run in order). Returns
// true when the addon is to be told later (ack) that it was handled.
function dispatch(ctl, handlers, kind, value, cost) {
  const h = handlers[kind]
  if (!h || ctl.error !== undefined) return false
  const settle = () => {
    N.ack(ctl.id, cost)
    if (--ctl.queued === 0) ctl.chain = null
  }
  if (ctl.queued === 0) {
    let r
    try {
      r = h(value, ctl)
    } catch (e) {
      fail(ctl, e)
      return false
    }
    if (!isThenable(r)) return false
    ctl.queued = 1
    ctl.chain = Promise.resolve(r).then(settle, (e) => {
      fail(ctl, e)
      settle()
    })
    return true
  }
  ctl.queued++
  ctl.chain = ctl.chain.then(async () => {
    if (ctl.error === undefined) {
      try {
        await h(value, ctl)
      } catch (e) {
        fail(ctl, e)
      }
    }
    settle()
  })
  return true
}

/**
 * Run fn(...args, done) and return a Promise of its value.
 * o.signal: an AbortSignal (cancels the call); o.handlers: {kind: fn(value,
 * ctl)} for its events (EVENTS in args marks where the event function goes);
 * o.accept: status names that still resolve (ASB_ECOMMANDEXIT); o.notFound:
 * the class for ASB_ENOTFOUND; o.attach(err, value): the error for a failed
 * call that still gave a value; o.onStart(ctl): the call's id is known.
 */
function invoke(fn, args, o = {}) {
  return new Promise((resolve, reject) => {
    const signal = o.signal
    if (signal && signal.aborted) {
      reject(abortError(signal))
      return
    }
    const ctl = { id: 0, error: undefined, chain: null, queued: 0, aborted: false }
    let onAbort = null
    const done = (rc, value, detail) => {
      if (onAbort) signal.removeEventListener('abort', onAbort)
      const finish = () => {
        if (ctl.error !== undefined) return reject(ctl.error)
        if (rc < 0 && ctl.aborted) return reject(abortError(signal))
        if (rc >= 0) return resolve(value)
        if (o.accept && o.accept.includes(detail[5]) && value !== undefined) return resolve(value)
        if (o.attach && value !== undefined) return reject(o.attach(errors.fromStatus(rc, detail, o.notFound), value))
        reject(errors.fromStatus(rc, detail, o.notFound))
      }
      // A cancelled call (its signal, close(), a callback that threw) does
      // not wait for its callbacks: one may never settle (an upload's
      // source that stalls), and what they would report is moot.
      const cancelled = rc < 0 && (ctl.aborted || (detail && detail[5] === 'ASB_ECANCELED'))
      if (ctl.chain && !cancelled) ctl.chain.then(finish, finish)
      else finish()
    }
    const full = args.map((a) => (a === EVENTS ? (o.handlers ? (k, v, c) => dispatch(ctl, o.handlers, k, v, c) : undefined) : a))
    full.push(done)
    try {
      ctl.id = fn(...full)
    } catch (e) {
      reject(e)
      return
    }
    if (o.onStart) o.onStart(ctl)
    if (signal) {
      onAbort = () => {
        ctl.aborted = true
        N.cancel(ctl.id)
      }
      signal.addEventListener('abort', onAbort, { once: true })
    }
  })
}

// ---- units -------------------------------------------------------------------------

/** JS milliseconds (undefined: the default, 0: no limit) -> the C value
 * (0: the default, negative: none). */
function ms(v) {
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || Number.isNaN(v)) throw new TypeError('a timeout must be a number of milliseconds')
  if (v <= 0) return -1
  return Math.max(1, Math.round(v))
}

function pairs(obj, sep) {
  if (!obj) return undefined
  return Object.entries(obj).map(([k, v]) => `${k}${sep}${v}`)
}

// ---- clients -------------------------------------------------------------------------

const CONN_KEYS = ['apiKey', 'apiUrl', 'domain', 'sandboxUrl', 'debug', 'requestTimeoutMs', 'headers',
  'apiHeaders', 'retries', 'maxRetries', 'userAgent']

const clients = new Map()

/** The connection options of opts (E2B's names). */
function connOf(opts) {
  const c = {}
  if (!opts) return c
  for (const k of CONN_KEYS) if (opts[k] !== undefined) c[k] = opts[k]
  return c
}

/** A client for this configuration (one per distinct configuration, shared:
 * it is thread-safe and holds the connection pool); unset options come from
 * the environment (ASB_*, then E2B_*). */
function client(conn = {}) {
  const key = JSON.stringify(CONN_KEYS.map((k) => conn[k]))
  let p = clients.get(key)
  if (p) return p
  const headers = Object.assign({}, conn.headers || {}, conn.apiHeaders || {})
  const retries = conn.retries !== undefined ? conn.retries : conn.maxRetries
  const o = {
    apiKey: conn.apiKey,
    apiUrl: conn.apiUrl,
    domain: conn.domain,
    sandboxUrl: conn.sandboxUrl,
    userAgent: conn.userAgent,
    requestTimeoutMs: conn.requestTimeoutMs === undefined ? undefined : ms(conn.requestTimeoutMs),
    debug: conn.debug === undefined ? 0 : conn.debug ? 1 : -1,
    maxRetries: retries === undefined ? 0 : retries > 0 ? retries : -1,
    headers: Object.keys(headers).length ? pairs(headers, ': ') : undefined
  }
  p = invoke(N.clientNew, [o])
  p.catch(() => clients.delete(key))
  clients.set(key, p)
  return p
}

/** The call options of opts: the request timeout. */
function callOpts(opts) {
  return { requestTimeoutMs: opts && opts.requestTimeoutMs !== undefined ? ms(opts.requestTimeoutMs) : 0 }
}

const asyncDispose = Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')

/** Every item of a paginated listing: calls listPage(opts with nextToken)
 * until a page has no nextToken. */
async function allPages(listPage, opts) {
  const out = []
  let nextToken
  do {
    const page = await listPage(Object.assign({}, opts, { nextToken }))
    out.push(...page.items)
    nextToken = page.nextToken
  } while (nextToken)
  return out
}

module.exports = { N, EV, EVENTS, invoke, ms, pairs, client, connOf, callOpts, load, abortError, asyncDispose, isThenable, allPages }
