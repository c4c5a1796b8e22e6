'use strict'
// sandbox.agents: coding-agent sessions (Codex, Qwen Code, Claude Code,
// OpenCode) run by the sandbox's server (docs/agents.md), each call one C
// call of agents.h. Events arrive as their JSON text (src/agents.c) and are
// handed to JS as plain objects, in order; an async onEvent holds the next
// ones back.
// SPDX-License-Identifier: Apache-2.0
const { N, EV, EVENTS, invoke, ms, pairs, asyncDispose } = require('./native.js')
const E = require('./errors.js')

const KIND_AGENT = 5
const OP = { LIST: 1, INSTALL: 2, CONNECT: 4, SEND: 5, EVENTS: 6, CANCEL: 7, INFO: 8, CLOSE: 9 }

function parse(buf) {
  return JSON.parse(typeof buf === 'string' ? buf : buf.toString('utf8'))
}

/** The turn's result, from its turn.completed event. */
function turnOf(ev) {
  return {
    status: ev.status || '',
    turn: Number(ev.turn) || 0,
    finalMessage: ev.final_message === undefined ? null : ev.final_message,
    error: ev.error === undefined ? null : ev.error,
    filesChanged: Array.isArray(ev.files_changed) ? ev.files_changed : [],
    commands: Array.isArray(ev.commands)
      ? ev.commands.map((c) => ({ command: c.command, exitCode: c.exit_code === undefined ? null : c.exit_code }))
      : [],
    usage: {
      inputTokens: (ev.usage && ev.usage.input_tokens) || 0,
      outputTokens: (ev.usage && ev.usage.output_tokens) || 0,
      cachedInputTokens: (ev.usage && ev.usage.cached_input_tokens) || 0,
      totalTokens: (ev.usage && ev.usage.total_tokens) || 0
    },
    exitCode: ev.exit_code === undefined ? null : ev.exit_code,
    lastSeq: Number(ev.seq) || 0,
    event: ev
  }
}

function callOpts(port, opts, more) {
  const o = { port: port || 0, timeoutMs: opts && opts.timeoutMs !== undefined ? ms(opts.timeoutMs) : 0 }
  return Object.assign(o, more)
}

function requestOpts(port, opts) {
  return { port: port || 0, timeoutMs: opts && opts.requestTimeoutMs !== undefined ? ms(opts.requestTimeoutMs) : 0 }
}

function handlersOf(onEvent) {
  if (!onEvent) return undefined
  if (typeof onEvent !== 'function') throw new TypeError('onEvent must be a function')
  return { [EV.AGENT]: (buf) => onEvent(parse(buf)) }
}

/**
 * Events pushed by a call (its onEvent) as an async iterator: each event
 * once, in order, then the call's value; the call's error is thrown. Leaving
 * the loop early stops the call (the turn goes on in the sandbox).
 */
function pump(start) {
  const queue = []
  let wake = null
  let finished = false
  let failure
  let value
  const ac = new AbortController()
  const notify = () => {
    if (wake) {
      const w = wake
      wake = null
      w()
    }
  }
  const p = start((ev) => {
    queue.push(ev)
    notify()
  }, ac.signal).then((v) => {
    value = v
  }, (e) => {
    failure = e
  }).finally(() => {
    finished = true
    notify()
  })
  const it = {
    async next() {
      for (;;) {
        if (queue.length) return { value: queue.shift(), done: false }
        if (finished) {
          if (failure !== undefined) {
            const f = failure
            failure = undefined
            throw f
          }
          return { value, done: true }
        }
        await new Promise((resolve) => { wake = resolve })
      }
    },
    async return() {
      if (!finished) {
        ac.abort()
        await p
      }
      queue.length = 0
      return { value: undefined, done: true }
    },
    [Symbol.asyncIterator]() {
      return it
    }
  }
  return it
}

class AgentSession {
  /** Use sandbox.agents.session / connect. */
  constructor(made, port) {
    this._h = made.handle
    this._port = port
    this.id = made.id
    this.agent = made.agent
  }

  _call(op, arg, opts, more, onEvent) {
    const handlers = handlersOf(onEvent)
    return invoke(N.agentSession, [this._h, op, arg, callOpts(this._port, opts, Object.assign({ events: !!handlers }, more)),
      handlers ? EVENTS : undefined], { signal: opts && opts.signal, handlers })
  }

  /**
   * One turn: send the prompt, hand each event to onEvent as it arrives,
   * and resolve with the turn's result once it ends. A failed turn rejects
   * with AgentTurnError unless check is false; a cancelled one resolves.
   * signal / timeoutMs stop waiting (the turn goes on: cancel() stops it).
   */
  async send(prompt, opts = {}) {
    const json = await this._call(OP.SEND, String(prompt), opts, {}, opts.onEvent)
    const turn = turnOf(parse(json))
    if (opts.check !== false && turn.status === 'failed') {
      throw new E.AgentTurnError(`agent ${this.agent}: turn ${turn.turn} failed: ${turn.error}`, turn)
    }
    return turn
  }

  /** One turn as an async iterator of its events, ending with its
   * turn.completed (a failed turn too: look at its status). */
  stream(prompt, opts = {}) {
    return pump((onEvent, signal) => this._call(OP.SEND, String(prompt), Object.assign({}, opts, { signal: anySignal(signal, opts.signal) }), {}, onEvent))
  }

  /** The events after seq `after` (0: all), in order; with follow, also
   * those of the turn in progress until it ends. */
  async events(opts = {}) {
    const list = await this._call(OP.EVENTS, Number(opts.after || 0), opts, { follow: !!opts.follow }, opts.onEvent)
    return list.map(parse)
  }

  /** The events after `after` and those of the turn in progress, until it
   * ends, as an async iterator (catching up after a disconnect). */
  follow(opts = {}) {
    return pump((onEvent, signal) => this._call(OP.EVENTS, Number(opts.after || 0), Object.assign({}, opts, { signal: anySignal(signal, opts.signal) }), { follow: true }, onEvent))
  }

  /** `for await (const ev of session)`: follow the turn in progress (and
   * everything before it) until it ends. */
  [Symbol.asyncIterator]() {
    return this.follow()
  }

  /** Stop the turn in progress (the agent and every process it started);
   * its send() resolves with status "cancelled". */
  async cancel(opts = {}) {
    await invoke(N.agentSession, [this._h, OP.CANCEL, undefined, requestOpts(this._port, opts), undefined], { signal: opts.signal })
  }

  /** Status (idle, running, closed) and the transcript: {id, agent,
   * status, native_session_id, turns: [...], last_seq, ...}. */
  async info(opts = {}) {
    return JSON.parse(await invoke(N.agentSession, [this._h, OP.INFO, undefined, requestOpts(this._port, opts), undefined], { signal: opts.signal }))
  }

  /** End the session in the sandbox (cancelling a turn in progress) and
   * release this handle. */
  async close(opts = {}) {
    try {
      await invoke(N.agentSession, [this._h, OP.CLOSE, undefined, requestOpts(this._port, opts), undefined], { signal: opts.signal })
    } finally {
      N.close(this._h, KIND_AGENT)
    }
  }

  /** `await using s = await sandbox.agents.session(...)`: closed at the
   * end (a session already gone is fine). */
  async [asyncDispose]() {
    try {
      await this.close()
    } catch (e) {
      if (!(e instanceof E.NotFoundError) && !(e && e.code === 'ERR_AGENT_SANDBOX_CLOSED')) throw e
    }
  }
}

/** A signal that fires when either does (AbortSignal.any is Node >= 20.3;
 * the package runs on 18). */
function anySignal(a, b) {
  if (!b) return a
  if (!a) return b
  const ac = new AbortController()
  const fire = (s) => () => ac.abort(s.reason)
  for (const s of [a, b]) {
    if (s.aborted) ac.abort(s.reason)
    else s.addEventListener('abort', fire(s), { once: true })
  }
  return ac.signal
}

class Agents {
  constructor(sandbox) {
    this._sb = sandbox
  }

  /** Every agent the sandbox's server knows, installed or not: [{name,
   * package, installed, version, path}]. */
  async list(opts = {}) {
    return invoke(N.agents, [this._sb._h, OP.LIST, undefined, requestOpts(opts.port, opts), undefined], { signal: opts.signal })
  }

  /** Install the agent's CLI in the sandbox (npm install -g into the
   * server's prefix), from opts.registry or opts.source; install.* events
   * go to onEvent. Resolves with the installed version (null: unknown);
   * rejects with CommandFailedError naming the package and why. */
  async install(agent, opts = {}) {
    const handlers = handlersOf(opts.onEvent)
    const v = await invoke(N.agents, [this._sb._h, OP.INSTALL, String(agent), callOpts(opts.port, opts, {
      version: opts.version, registry: opts.registry, source: opts.source, events: !!handlers
    }), handlers ? EVENTS : undefined], { signal: opts.signal, handlers })
    return v === undefined ? null : v
  }

  /** A new session with agent ("codex", "qwen", "claude", "opencode"). */
  async session(agent, opts = {}) {
    const made = await invoke(N.agentSessionNew, [this._sb._h, String(agent), {
      port: opts.port || 0,
      timeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs),
      cwd: opts.cwd,
      model: opts.model,
      baseUrl: opts.baseUrl,
      apiKeyEnv: opts.apiKeyEnv,
      wireApi: opts.wireApi,
      approval: opts.approval,
      sandbox: opts.sandbox,
      args: opts.args ? opts.args.map(String) : undefined,
      env: opts.env ? pairs(opts.env, '=') : undefined,
      install: opts.install === undefined || opts.install === null ? 0 : opts.install ? 1 : -1
    }], { signal: opts.signal })
    return new AgentSession(made, opts.port)
  }

  /** Attach to an existing session by its id. */
  async connect(sessionId, opts = {}) {
    const made = await invoke(N.agents, [this._sb._h, OP.CONNECT, String(sessionId), requestOpts(opts.port, opts), undefined], { signal: opts.signal })
    return new AgentSession(made, opts.port)
  }
}

module.exports = { Agents, AgentSession }
