'use strict'
// agent-sandbox/server: serve JS functions as named commands from inside a
// template, on libagentsandbox-server (GET /health, GET /commands, POST
// /commands/<name>; see docs/node.md). Loads only the server SDK's addon
// (agentsandbox_server.node, linked to libagentsandbox-server alone), never
// the client. Handlers run on the event loop (the library's pull mode,
// src/server.c), may be async, and several run at once when calls arrive
// together.
// SPDX-License-Identifier: Apache-2.0
const fs = require('node:fs')
const path = require('node:path')

const pkgDir = path.resolve(__dirname, '..')

let addon = null
function load() {
  if (addon) return addon
  const c = []
  if (process.env.ASB_NODE_SERVER_ADDON) c.push(path.resolve(process.env.ASB_NODE_SERVER_ADDON))
  if (process.env.ASB_BUILD_DIR) c.push(path.join(process.env.ASB_BUILD_DIR, 'bindings', 'node', 'agentsandbox_server.node'))
  c.push(path.join(pkgDir, 'build', 'agentsandbox_server.node'))
  c.push(path.join(pkgDir, '..', '..', 'build', 'bindings', 'node', 'agentsandbox_server.node'))
  for (const p of c) {
    if (fs.existsSync(p)) {
      addon = require(p)
      return addon
    }
  }
  throw new ServerError('agent-sandbox/server: the server addon is not built (needs libagentsandbox-server); looked for\n  ' + c.join('\n  '))
}

class ServerError extends Error {
  constructor(message) {
    super(message)
    this.name = 'ServerError'
  }
}

const TYPES = ['string', 'integer', 'float', 'boolean', 'json']

/** {name: 'integer' | {type, required, default, description}} -> the
 * arguments as the library declares them. A bare type is required; an
 * argument with a default (or required: false) is optional. */
function argSpecs(args) {
  const out = []
  for (const [name, spec0] of Object.entries(args || {})) {
    const spec = typeof spec0 === 'string' ? { type: spec0 } : Object.assign({}, spec0)
    const type = spec.type || 'json'
    if (!TYPES.includes(type)) throw new ServerError(`argument ${name}: unknown type '${type}' (one of ${TYPES.join(', ')})`)
    let dflt
    if (spec.default !== undefined) dflt = type === 'string' ? String(spec.default) : JSON.stringify(spec.default)
    const required = spec.required !== undefined ? !!spec.required : dflt === undefined
    out.push({ name, type: load().argTypes[type], required, default: dflt, description: spec.description })
  }
  return out
}

/** A set of commands and the server that serves them. */
class Server {
  constructor(options = {}) {
    this._opts = options
    this._commands = new Map()
    this._h = null
  }

  /**
   * Register fn as command name: command(name, fn) or command(name,
   * {description, args, hidden}, fn). fn(args) returns the result (any
   * JSON value) or a Promise of it; what it throws is the call's error
   * (HTTP 500 {"error": message, "type": error.name}).
   */
  command(name, spec, fn) {
    if (typeof spec === 'function') {
      fn = spec
      spec = {}
    }
    if (typeof fn !== 'function') throw new TypeError('command(name, [spec], fn): fn must be a function')
    if (this._h) throw new ServerError('register commands before the server starts')
    if (this._commands.has(name)) throw new ServerError(`command '${name}' is already registered`)
    this._commands.set(name, { fn, spec: spec || {} })
    return this
  }

  /** The commands as GET /commands describes them. */
  describe() {
    return [...this._commands].map(([name, { spec }]) => ({ name, description: spec.description || '', args: spec.args || {} }))
  }

  /** Call a command in-process (tests): its result. */
  async call(name, args = {}) {
    const c = this._commands.get(name)
    if (!c) throw new ServerError(`Unknown command '${name}'`)
    return c.fn(args)
  }

  /**
   * Serve on port (0: a free one; default 9000); resolves once it listens.
   * options: host ('0.0.0.0'), token ($ASB_SERVER_TOKEN, '' = none),
   * maxBodyBytes, maxConnections, shutdownGraceMs.
   */
  async start(port = 9000, options = {}) {
    if (this._h) throw new ServerError('the server is already running')
    const A = load()
    const o = Object.assign({}, this._opts, options)
    const h = A.serverNew({ host: o.host, token: o.token, maxBodyBytes: o.maxBodyBytes, maxConnections: o.maxConnections, shutdownGraceMs: o.shutdownGraceMs })
    try {
      for (const [name, { spec }] of this._commands) A.serverRegister(h, name, spec.description || '', !!spec.hidden, argSpecs(spec.args))
      this.port = A.serverStart(h, port, (call, name, argsJson) => this._dispatch(A, call, name, argsJson))
    } catch (e) {
      throw new ServerError(e.message)
    }
    this._h = h
    this._stopped = new Promise((resolve) => { this._resolveStopped = resolve })
    return this
  }

  _dispatch(A, call, name, argsJson) {
    const c = this._commands.get(name)
    const failWith = (e) => {
      const err = e instanceof Error ? e : new Error(String(e))
      A.serverFail(call, err.name || 'Error', err.message)
    }
    let r
    try {
      r = c.fn(JSON.parse(argsJson || '{}'))
    } catch (e) {
      failWith(e)
      return
    }
    Promise.resolve(r).then((v) => {
      let json
      try {
        json = JSON.stringify(v === undefined ? null : v)
      } catch (e) {
        failWith(new TypeError(`the result of '${name}' cannot be sent as JSON: ${e.message}`))
        return
      }
      A.serverReply(call, json)
    }, failWith)
  }

  /** Stop: no new calls, those in progress finish (up to shutdownGraceMs). */
  async stop() {
    if (!this._h) return
    const h = this._h
    if (!this._stopping) {
      this._stopping = new Promise((resolve) => load().serverStop(h, resolve)).then(() => {
        this._h = null
        this.port = 0
        this._resolveStopped()
      })
    }
    await this._stopping
  }

  /** Resolves when the server has stopped. */
  wait() {
    return this._stopped || Promise.resolve()
  }
}

const defaultServer = new Server()

/** Register on the default server (what start() serves). */
function command(name, spec, fn) {
  defaultServer.command(name, spec, fn)
  return typeof spec === 'function' ? spec : fn
}

/**
 * Serve the commands registered with command() on port (default 9000) —
 * the template's start command. Unless options.handleSignals is false,
 * SIGTERM and SIGINT stop it gracefully and end the process.
 */
async function start(port = 9000, options = {}) {
  await defaultServer.start(port, options)
  if (options.handleSignals !== false) {
    const onSignal = () => {
      defaultServer.stop().then(() => process.exit(0))
    }
    process.once('SIGTERM', onSignal)
    process.once('SIGINT', onSignal)
  }
  return defaultServer
}

module.exports = { Server, ServerError, command, start, defaultServer }
