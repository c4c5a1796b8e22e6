'use strict'
// The Node API: Sandbox and its parts (commands, pty, files, code, named
// commands), each call one C call run off the event loop (lib/native.js).
// SPDX-License-Identifier: Apache-2.0
const { N, EV, EVENTS, invoke, ms, pairs, client, connOf, callOpts, abortError, asyncDispose, isThenable, allPages } = require('./native.js')
const E = require('./errors.js')
const { Agents } = require('./agents.js')
const { Git } = require('./git.js')
const NET = require('./network.js')

const KIND = { client: 1, sandbox: 2, process: 3, watch: 4 }

// ---- results ---------------------------------------------------------------------------

function toBytes(data) {
  if (typeof data === 'string') return data
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return data
  throw new TypeError('data must be a string, an ArrayBuffer or a TypedArray')
}

function entryInfo(e) {
  if (!e) return e
  const out = {
    name: e.name,
    type: e.type,
    path: e.path,
    size: e.size,
    mode: e.mode,
    permissions: e.permissions,
    owner: e.owner,
    group: e.group,
    modifiedTime: e.modifiedMs ? new Date(e.modifiedMs) : undefined
  }
  if (e.symlinkTarget !== undefined) out.symlinkTarget = e.symlinkTarget
  return out
}

function sandboxInfo(i) {
  return {
    sandboxId: i.sandboxId,
    templateId: i.templateId,
    name: i.name,
    metadata: i.metadata,
    startedAt: new Date(i.startedAt * 1000),
    endAt: new Date(i.endAt * 1000),
    state: i.state,
    cpuCount: i.cpuCount,
    memoryMB: i.memoryMB,
    diskMB: i.diskMB,
    envdVersion: i.envdVersion,
    allowInternetAccess: i.allowInternetAccess,
    network: NET.networkInfo(i.networkJson),
    pauseMode: i.pauseMode,
    forkMode: i.forkMode,
    swap: i.swap,
    autoResume: i.autoResume,
    // E2B's SandboxInfo.lifecycle (getInfo; a list's items have none)
    lifecycle: i.onTimeout ? { onTimeout: i.onTimeout, autoResume: i.autoResume === true } : undefined,
    volumeMounts: i.volumeMounts || []
  }
}

function envList(envs) {
  return envs ? pairs(envs, '=') : undefined
}

/** A stream's bytes -> text, split anywhere. */
function textSink(fn) {
  const dec = new TextDecoder('utf-8')
  const feed = (buf) => {
    const t = dec.decode(buf, { stream: true })
    return t && fn ? fn(t) : undefined
  }
  feed.flush = () => {
    const t = dec.decode()
    return t && fn ? fn(t) : undefined
  }
  return feed
}

// ---- commands --------------------------------------------------------------------------

/** p, or a rejection with signal.reason once signal fires (p runs on). */
function untilAborted(p, signal) {
  if (signal.aborted) return Promise.reject(abortError(signal))
  let onAbort
  const aborted = new Promise((resolve, reject) => {
    onAbort = () => reject(abortError(signal))
    signal.addEventListener('abort', onAbort, { once: true })
  })
  return Promise.race([p, aborted]).finally(() => signal.removeEventListener('abort', onAbort))
}

/**
 * A command (or pty) running in the background. Its output is received from
 * the start and handed to the callbacks as it arrives; stdout/stderr hold
 * what arrived so far; `for await (const chunk of handle)` yields
 * {type: 'stdout' | 'stderr' | 'pty', data} from the start.
 */
/** E2B's volumeMounts ({path: name, or {name}}) as the library's
 * "PATH=VOLUME" strings (undefined: none). */
function volumeMounts(m) {
  if (m === undefined || m === null) return undefined
  if (typeof m !== 'object' || Array.isArray(m)) throw new TypeError('volumeMounts maps a mount path to a volume name (or a Volume)')
  return Object.entries(m).map(([p, v]) => {
    const name = typeof v === 'string' ? v : v && v.name
    if (typeof name !== 'string') throw new TypeError(`volumeMounts['${p}']: a volume name (or a Volume) is needed`)
    return `${p}=${name}`
  })
}

class CommandHandle {
  constructor(sandbox, opened, { onStdout, onStderr, onPty, pty = false, waitTimeoutMs, throwOnExit = false } = {}) {
    this._sb = sandbox
    this._h = opened.handle
    this.pid = opened.pid
    this._pty = pty
    this._out = []
    this._err = []
    this._chunks = []
    this._waiters = []
    this._result = undefined
    this._closed = false
    this._throwOnExit = throwOnExit
    const outDec = new TextDecoder('utf-8')
    const errDec = new TextDecoder('utf-8')
    const record = (type, data) => {
      this._chunks.push({ type, data })
      const w = this._waiters
      this._waiters = []
      for (const f of w) f()
    }
    const text = (into, type, dec, fn) => (buf) => {
      const t = dec.decode(buf, { stream: true })
      if (!t) return undefined
      into.push(t)
      record(type, t)
      return fn ? fn(t) : undefined
    }
    const handlers = pty
      ? {
          [EV.STDOUT]: (buf) => {
            const data = new Uint8Array(buf.buffer, buf.byteOffset, buf.length)
            record('pty', data)
            return onPty ? onPty(data) : undefined
          }
        }
      : { [EV.STDOUT]: text(this._out, 'stdout', outDec, onStdout), [EV.STDERR]: text(this._err, 'stderr', errDec, onStderr) }
    const flush = () => {
      const o = outDec.decode()
      if (o) { this._out.push(o); record('stdout', o) }
      const e = errDec.decode()
      if (e) { this._err.push(e); record('stderr', e) }
    }
    this._pump = invoke(N.processWait, [this._h, { requestTimeoutMs: waitTimeoutMs ? ms(waitTimeoutMs) : -1 }, EVENTS],
      { handlers, accept: ['ASB_ECOMMANDEXIT'], onStart: (ctl) => { this._ctl = ctl } })
      .then((r) => {
        flush()
        this._result = r
        return r
      })
      .finally(() => {
        this._ended = true
        const w = this._waiters
        this._waiters = []
        for (const f of w) f()
      })
    this._pump.catch(() => {})
  }

  get stdout() {
    return this._out.join('')
  }

  get stderr() {
    return this._err.join('')
  }

  get exitCode() {
    return this._result ? this._result.exitCode : undefined
  }

  get error() {
    return this._result ? this._result.error : undefined
  }

  /** Wait for the end: the CommandResult (a non-zero exit code rejects with
   * CommandExitError when `check` is set). Ending this wait does not stop
   * the command: a `signal` that fires rejects this wait (with its reason)
   * while the output is still received and the command runs on. */
  async wait({ check, signal } = {}) {
    const r = signal ? await untilAborted(this._pump, signal) : await this._pump
    if ((check === undefined ? this._throwOnExit : check) && r.exitCode !== 0) throw new E.CommandExitError(r)
    return r
  }

  /** SIGKILL; false if it had already ended. */
  async kill(opts = {}) {
    try {
      await invoke(N.processOp, [this._h, 1, undefined, callOpts(opts)], { signal: opts.signal })
    } catch (e) {
      if (e instanceof E.NotFoundError) return false
      throw e
    }
    await this._pump.catch(() => {})
    return true
  }

  async sendStdin(data, opts = {}) {
    await invoke(N.processOp, [this._h, 2, toBytes(data), callOpts(opts)], { signal: opts.signal })
  }

  async closeStdin(opts = {}) {
    await invoke(N.processOp, [this._h, 3, undefined, callOpts(opts)], { signal: opts.signal })
  }

  /** Stop receiving output and release the handle; the command runs on
   * (reattach with commands.connect(pid)). */
  async disconnect() {
    if (this._closed) return
    this._closed = true
    N.close(this._h, KIND.process)
    await this._pump.catch(() => {})
  }

  close() {
    return this.disconnect()
  }

  async [asyncDispose]() {
    await this.disconnect()
  }

  async * [Symbol.asyncIterator]() {
    let i = 0
    for (;;) {
      while (i < this._chunks.length) yield this._chunks[i++]
      if (this._ended) {
        await this._pump
        return
      }
      await new Promise((resolve) => this._waiters.push(resolve))
    }
  }
}

class Commands {
  constructor(sandbox, { throwOnExit = false } = {}) {
    this._sb = sandbox
    this._throwOnExit = throwOnExit
  }

  _opts(opts) {
    const o = {
      envs: envList(opts.envs),
      cwd: opts.cwd,
      user: opts.user,
      tag: opts.tag,
      timeoutMs: ms(opts.timeoutMs),
      requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs)
    }
    if (opts.stdin === true) o.stdin = true
    else if (opts.stdin !== undefined && opts.stdin !== false) o.stdinData = toBytes(opts.stdin)
    return o
  }

  /**
   * Run cmd (`/bin/bash -l -c cmd`): a CommandResult {stdout, stderr,
   * exitCode, error}, or with `background: true` a CommandHandle once it
   * runs. A non-zero exit code is in the result; `check: true` rejects with
   * CommandExitError instead. Cancelling (signal) kills the command.
   */
  async run(cmd, opts = {}) {
    const o = this._opts(opts)
    const check = opts.check === undefined ? this._throwOnExit : opts.check
    if (opts.background) {
      const opened = await invoke(N.commandsStart, [this._sb._h, cmd, o], { signal: opts.signal })
      return new CommandHandle(this._sb, opened, { onStdout: opts.onStdout, onStderr: opts.onStderr, throwOnExit: check })
    }
    const handlers = {}
    let out, err
    if (opts.onStdout) {
      o.onStdout = true
      out = textSink(opts.onStdout)
      handlers[EV.STDOUT] = out
    }
    if (opts.onStderr) {
      o.onStderr = true
      err = textSink(opts.onStderr)
      handlers[EV.STDERR] = err
    }
    const r = await invoke(N.commandsRun, [this._sb._h, cmd, o, out || err ? EVENTS : undefined],
      { signal: opts.signal, handlers, accept: ['ASB_ECOMMANDEXIT'] })
    if (out) await out.flush()
    if (err) await err.flush()
    if (check && r.exitCode !== 0) throw new E.CommandExitError(r)
    return r
  }

  /** Attach to a running command by pid (its output from now on). */
  async connect(pid, opts = {}) {
    const opened = await invoke(N.commandsConnect, [this._sb._h, pid, { timeoutMs: ms(opts.timeoutMs), requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs) }], { signal: opts.signal })
    return new CommandHandle(this._sb, opened, { onStdout: opts.onStdout, onStderr: opts.onStderr, throwOnExit: this._throwOnExit })
  }

  /** The processes running in the sandbox (commands, ptys, the start command). */
  async list(opts = {}) {
    const l = await invoke(N.commandsList, [this._sb._h, callOpts(opts)], { signal: opts.signal })
    return l.map((p) => {
      const envs = {}
      for (const kv of p.envs) {
        const i = kv.indexOf('=')
        if (i > 0) envs[kv.slice(0, i)] = kv.slice(i + 1)
      }
      const info = { pid: p.pid, cmd: p.cmd, args: p.args, envs, cwd: p.cwd }
      if (p.tag) info.tag = p.tag
      return info
    })
  }

  async _op(op, pid, arg, opts) {
    return invoke(N.commandsOp, [this._sb._h, op, pid, arg, callOpts(opts)], { signal: opts.signal })
  }

  /** SIGKILL to the process group: true, or false if there was none. */
  async kill(pid, opts = {}) {
    try {
      await this._op(1, pid, undefined, opts)
      return true
    } catch (e) {
      if (e instanceof E.NotFoundError) return false
      throw e
    }
  }

  /** Send SIGTERM (15) or SIGKILL (9). */
  async signal(pid, signal = 15, opts = {}) {
    await this._op(2, pid, signal, opts)
  }

  async sendStdin(pid, data, opts = {}) {
    await this._op(3, pid, toBytes(data), opts)
  }

  async closeStdin(pid, opts = {}) {
    await this._op(4, pid, undefined, opts)
  }
}

class Pty {
  constructor(sandbox) {
    this._sb = sandbox
  }

  /** Start `bash -i -l` on a pseudo-terminal: a CommandHandle; onData gets
   * Uint8Arrays. */
  async create(opts = {}) {
    const o = {
      cols: opts.cols || 80,
      rows: opts.rows || 24,
      envs: envList(opts.envs),
      cwd: opts.cwd,
      user: opts.user,
      timeoutMs: ms(opts.timeoutMs),
      requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs)
    }
    const opened = await invoke(N.ptyCreate, [this._sb._h, o], { signal: opts.signal })
    return new CommandHandle(this._sb, opened, { pty: true, onPty: opts.onData, throwOnExit: this._sb.constructor._throwOnExit })
  }

  /** Attach to a running pty. */
  async connect(pid, opts = {}) {
    const opened = await invoke(N.commandsConnect, [this._sb._h, pid, { timeoutMs: ms(opts.timeoutMs) }], { signal: opts.signal })
    return new CommandHandle(this._sb, opened, { pty: true, onPty: opts.onData, throwOnExit: this._sb.constructor._throwOnExit })
  }

  async sendInput(pid, data, opts = {}) {
    await invoke(N.commandsOp, [this._sb._h, 5, pid, toBytes(data), callOpts(opts)], { signal: opts.signal })
  }

  async resize(pid, size, opts = {}) {
    await invoke(N.commandsOp, [this._sb._h, 6, pid, { cols: size.cols, rows: size.rows }, callOpts(opts)], { signal: opts.signal })
  }

  async kill(pid, opts = {}) {
    try {
      await invoke(N.commandsOp, [this._sb._h, 7, pid, undefined, callOpts(opts)], { signal: opts.signal })
      return true
    } catch (e) {
      if (e instanceof E.NotFoundError) return false
      throw e
    }
  }
}

// ---- files -----------------------------------------------------------------------------

/** A directory being watched; events go to onEvent and to async iteration
 * until stop(). */
class WatchHandle {
  constructor(handle, onEvent, onExit, timeoutMs) {
    this._h = handle
    this._events = []
    this._waiters = []
    this._stopped = false
    const wake = () => {
      const w = this._waiters
      this._waiters = []
      for (const f of w) f()
    }
    this._pump = invoke(N.watchWait, [handle, timeoutMs === undefined || timeoutMs <= 0 ? -1 : timeoutMs, EVENTS], {
      handlers: {
        [EV.WATCH]: (ev) => {
          const e = { name: ev.name, type: ev.type }
          if (ev.entry) e.entry = entryInfo(ev.entry)
          this._events.push(e)
          wake()
          return onEvent ? onEvent(e) : undefined
        }
      }
    })
    this._ended = this._pump.then(
      async () => {
        if (onExit) await onExit()
      },
      async (err) => {
        if (onExit) await onExit(err)
        else if (!this._stopped) this._error = err
      }
    ).finally(() => {
      this._done = true
      N.close(handle, KIND.watch)
      wake()
    })
    this._ended.catch(() => {})
  }

  /** Stop watching; resolves once no more events will come. */
  async stop() {
    if (!this._stopped) {
      this._stopped = true
      if (!this._done) N.watchStop(this._h)
    }
    await this._ended.catch(() => {})
  }

  async [asyncDispose]() {
    await this.stop()
  }

  async * [Symbol.asyncIterator]() {
    let i = 0
    for (;;) {
      while (i < this._events.length) yield this._events[i++]
      if (this._done) return
      await new Promise((resolve) => this._waiters.push(resolve))
    }
  }
}

/** A polling watch (watchDir(path, {polling: true})): the sandbox keeps
 * the events until getNewEvents() fetches them, and each call has every
 * change made before it (E2B's sync watcher). */
class PollingWatchHandle {
  constructor(handle) {
    this._h = handle
    this._closed = false
  }

  /** The events since the last call, at once. */
  async getNewEvents() {
    if (this._closed) return []
    const got = []
    await invoke(N.watchPoll, [this._h, EVENTS], {
      handlers: {
        [EV.WATCH]: (ev) => {
          const e = { name: ev.name, type: ev.type }
          if (ev.entry) e.entry = entryInfo(ev.entry)
          got.push(e)
        }
      }
    })
    return got
  }

  /** Stop watching (the sandbox drops the watcher). */
  async stop() {
    if (!this._closed) {
      this._closed = true
      N.close(this._h, KIND.watch)
    }
  }

  async [asyncDispose]() {
    await this.stop()
  }
}

function fileOpts(opts) {
  return {
    user: opts.user,
    requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs),
    gzip: !!opts.gzip
  }
}

function isReadable(d) {
  return d && typeof d === 'object' && typeof d.getReader === 'function'
}

function isBlob(d) {
  return typeof Blob !== 'undefined' && d instanceof Blob
}

async function allBytes(stream) {
  const parts = []
  const r = stream.getReader()
  for (;;) {
    const { done, value } = await r.read()
    if (done) break
    parts.push(typeof value === 'string' ? Buffer.from(value) : Buffer.from(value.buffer, value.byteOffset, value.byteLength))
  }
  return Buffer.concat(parts)
}

class Files {
  constructor(sandbox) {
    this._sb = sandbox
  }

  _call(op, path, arg, opts, extra = {}) {
    return invoke(N.files, [this._sb._h, op, path, arg, fileOpts(opts), extra.handlers ? EVENTS : undefined],
      Object.assign({ signal: opts.signal, notFound: E.FileNotFoundError }, extra))
  }

  /**
   * Read a file: text (default), `format: 'bytes'` (Uint8Array), 'blob' or
   * 'stream' (a web ReadableStream of Uint8Array chunks, streamed with
   * back-pressure).
   */
  async read(path, opts = {}) {
    const format = opts.format || 'text'
    if (format === 'stream') return this._stream(path, opts)
    const v = await this._call(1, path, format === 'text', opts)
    if (format === 'text') return v
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.length)
    if (format === 'blob') return new Blob([bytes])
    return bytes
  }

  _stream(path, opts) {
    let controller
    let pendingAck = []
    let ctl = null
    let finished
    const flush = () => {
      while (pendingAck.length && controller.desiredSize > 0) {
        const cost = pendingAck.shift()
        N.ack(ctl.id, cost)
      }
    }
    return new Promise((resolve, reject) => {
      let started = false
      let cancelled = false
      const stream = new ReadableStream({
        start: (c) => {
          controller = c
        },
        pull: () => {
          if (ctl) flush()
        },
        cancel: () => {
          cancelled = true
          if (ctl) N.cancel(ctl.id)
        }
      }, { highWaterMark: 4 })
      const p = invoke(N.files, [this._sb._h, 2, path, undefined, fileOpts(opts), (kind, buf, cost) => {
        if (!started) {
          started = true
          resolve(stream)
        }
        if (cancelled) return false
        controller.enqueue(new Uint8Array(buf.buffer, buf.byteOffset, buf.length))
        if (controller.desiredSize > 0) return false
        pendingAck.push(cost)
        return true
      }], { signal: opts.signal, notFound: E.FileNotFoundError, onStart: (c) => { ctl = c } })
      finished = p.then(
        () => {
          if (!started) resolve(stream)
          if (!cancelled) controller.close()
        },
        (err) => {
          if (!started) reject(err)
          else if (!cancelled) controller.error(err)
        }
      )
      finished.catch(() => {})
    })
  }

  /**
   * Write a file (parents made): data is a string, ArrayBuffer, TypedArray,
   * Blob or ReadableStream (streamed). Or write([{path, data}, ...]) in one
   * request. Resolves to the written entry (entries).
   */
  async write(pathOrFiles, data, opts) {
    if (Array.isArray(pathOrFiles)) return this.writeFiles(pathOrFiles, data || {})
    opts = opts || {}
    const path = pathOrFiles
    if (isBlob(data)) data = data.stream()
    if (isReadable(data)) {
      const reader = data.getReader()
      let e
      try {
        e = await this._call(4, path, typeof opts.size === 'number' ? opts.size : -1, opts, {
          handlers: {
            [EV.NEED]: async (_, ctl) => {
              const { done, value } = await reader.read()
              N.feed(ctl.id, done ? null : typeof value === 'string' ? value : value)
            }
          }
        })
      } catch (err) {
        reader.cancel(err).catch(() => {}) // the source is released
        throw err
      }
      return entryInfo(e)
    }
    return entryInfo(await this._call(3, path, toBytes(data), opts))
  }

  /** Several files in one request. */
  async writeFiles(files, opts = {}) {
    const list = []
    for (const f of files) {
      let d = f.data
      if (isBlob(d)) d = d.stream()
      if (isReadable(d)) d = await allBytes(d)
      list.push({ path: f.path, data: toBytes(d) })
    }
    const r = await this._call(5, undefined, list, opts)
    return r.map(entryInfo)
  }

  async list(path, opts = {}) {
    return (await this._call(6, path, opts.depth || 1, opts)).map(entryInfo)
  }

  async exists(path, opts = {}) {
    return (await this._call(7, path, undefined, opts)) === 1
  }

  async getInfo(path, opts = {}) {
    return entryInfo(await this._call(8, path, undefined, opts))
  }

  async remove(path, opts = {}) {
    await this._call(9, path, undefined, opts)
  }

  async rename(oldPath, newPath, opts = {}) {
    return entryInfo(await this._call(10, oldPath, newPath, opts))
  }

  /** true if made, false if it existed. */
  async makeDir(path, opts = {}) {
    return (await this._call(11, path, undefined, opts)) === 1
  }

  /**
   * Watch a directory: resolves once the watch is in place (every change
   * after it is reported) to a WatchHandle; onEvent({name, type, entry?}).
   */
  async watchDir(path, onEvent, opts = {}) {
    if (typeof onEvent !== 'function' && onEvent && typeof onEvent === 'object') {
      opts = onEvent
      onEvent = undefined
    }
    const h = await invoke(N.watchDir, [this._sb._h, path, {
      user: opts.user,
      recursive: !!opts.recursive,
      includeEntry: !!opts.includeEntry,
      polling: !!opts.polling,
      requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs)
    }], { signal: opts.signal, notFound: E.FileNotFoundError })
    if (opts.polling) return new PollingWatchHandle(h)
    return new WatchHandle(h, onEvent, opts.onExit, opts.timeoutMs)
  }
}

// ---- code ----------------------------------------------------------------------------------

const RESULT_FORMATS = ['text', 'html', 'markdown', 'svg', 'png', 'jpeg', 'pdf', 'latex', 'json', 'javascript']

/** One rich result of a code run (the Jupyter MIME bundle). */
class Result {
  constructor(raw) {
    const f = {}
    for (const [k, v] of raw.formats) f[k] = v
    this.isMainResult = !!raw.isMain
    this.raw = f
    for (const k of RESULT_FORMATS) if (f[k] !== undefined) this[k] = f[k]
    if (f.data !== undefined) this.data = parseJson(f.data)
    if (f.chart !== undefined) this.chart = parseJson(f.chart)
    const extra = {}
    for (const k of Object.keys(f)) if (!RESULT_FORMATS.includes(k) && k !== 'data' && k !== 'chart') extra[k] = f[k]
    if (Object.keys(extra).length) this.extra = extra
  }

  /** The formats present besides text (as E2B's formats()). */
  formats() {
    const out = RESULT_FORMATS.filter((k) => k !== 'text' && this[k] !== undefined)
    if (this.data !== undefined) out.push('data')
    if (this.chart !== undefined) out.push('chart')
    if (this.extra) out.push(...Object.keys(this.extra))
    return out
  }

  toJSON() {
    const o = {}
    for (const k of RESULT_FORMATS) if (this[k] !== undefined) o[k] = this[k]
    if (this.extra) o.extra = this.extra
    return o
  }
}

function parseJson(s) {
  try {
    return JSON.parse(s)
  } catch (_) {
    return s
  }
}

class ExecutionError {
  constructor(name, value, traceback) {
    this.name = name
    this.value = value
    this.traceback = traceback
  }
}

class OutputMessage {
  constructor(line, timestamp, error) {
    this.line = line
    this.timestamp = timestamp
    this.error = error
  }

  toString() {
    return this.line
  }
}

class Execution {
  constructor(results = [], logs = { stdout: [], stderr: [] }, error, executionCount) {
    this.results = results
    this.logs = logs
    this.error = error
    this.executionCount = executionCount
  }

  /** The main result's text, if any. */
  get text() {
    for (const r of this.results) if (r.isMainResult) return r.text
    return undefined
  }

  toJSON() {
    return { results: this.results, logs: this.logs, error: this.error }
  }
}

function contextId(c) {
  return typeof c === 'string' ? c : c && c.id
}

// ---- the sandbox ----------------------------------------------------------------------------

/** sandboxFork's arguments but the last two: the handle, timeoutMs,
 * keepProcesses (-1: the engine's choice), count. */
function forkArgs(h, opts, count) {
  const keep = opts.keepProcesses === undefined || opts.keepProcesses === null ? -1 : opts.keepProcesses ? 1 : 0
  return [h, opts.timeoutMs ? Math.round(opts.timeoutMs) : 0, keep, count, callOpts(opts)]
}

class Sandbox {
  /** Use Sandbox.create / connect. */
  constructor(made, clientObj, conn) {
    this._h = made.handle
    this._client = clientObj
    this._conn = conn || {}
    this.sandboxId = made.sandboxId
    this.sandboxDomain = made.sandboxDomain
    this.envdVersion = made.envdVersion
    /** A fork's 'processes' (it kept its parent's running processes and
     * memory, an engine with --pause-criu) or 'files' (booted fresh on the
     * parent's files); undefined when it is not a fork (docs/snapshots.md). */
    this.forkMode = made.forkMode
    this._envdAccessToken = made.envdAccessToken
    this._trafficAccessToken = made.trafficAccessToken
    this.commands = new Commands(this, { throwOnExit: this.constructor._throwOnExit })
    this.files = new Files(this)
    this.pty = new Pty(this)
    this.agents = new Agents(this)
    this.git = new Git(this)
  }

  get id() {
    return this.sandboxId
  }

  static async _client(opts) {
    const conn = connOf(this._boundOpts ? Object.assign({}, this._boundOpts, opts) : opts)
    return { conn, client: await client(conn) }
  }

  /**
   * A new sandbox: create(template?, {template, timeoutMs, envs, metadata,
   * autoPause, autoPauseFilesOnly, autoResume, allowInternetAccess,
   * network, requestTimeoutMs, signal, ...connection options}).
   * autoPauseFilesOnly: that pause keeps only the files (E2B's keepMemory
   * false); autoResume: traffic to its ports resumes it (E2B's). allowInternetAccess (default true) and
   * network ({allowOut, denyOut, rules, egressProxy, allowPublicTraffic,
   * maskRequestHost}) are E2B's, and so is volumeMounts ({'/mnt/data':
   * 'my-volume'}: mount path to a volume's name, or to an object with a
   * name such as E2B's Volume; docs/volumes.md). mcp is E2B's: MCP
   * servers ({'<server>': {...}}) for the sandbox's mcp-gateway (template
   * "mcp-gateway" unless one is named); a gateway that does not start
   * kills the sandbox and rejects with SandboxError "Failed to start MCP
   * gateway: ..."; then getMcpUrl() and getMcpToken() (docs/mcp.md).
   */
  static async create(template, opts) {
    if (template && typeof template === 'object') {
      opts = template
      template = undefined
    }
    opts = opts || {}
    // E2B's lifecycle: {onTimeout: 'pause' | {action, keepMemory}, autoResume}
    const lc = opts.lifecycle || {}
    const onTimeout = typeof lc.onTimeout === 'string' ? { action: lc.onTimeout } : (lc.onTimeout || {})
    const lcPause = onTimeout.action === 'pause'
    const { conn, client: c } = await this._client(opts)
    const made = await invoke(N.sandboxCreate, [c.handle, {
      // (with mcp and no template named, the C library picks mcp-gateway)
      template: template || opts.template || (opts.mcp ? undefined : this._defaultTemplate),
      timeoutMs: opts.timeoutMs === undefined ? 0 : Math.max(1, Math.round(opts.timeoutMs)),
      metadata: pairs(opts.metadata, '='),
      envs: envList(opts.envs),
      autoPause: !!opts.autoPause || lcPause,
      requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs),
      allowInternetAccess: NET.internet(opts.allowInternetAccess),
      networkJson: NET.networkJson(opts.network, false),
      autoPauseFilesOnly: opts.autoPauseFilesOnly === true || (lcPause && onTimeout.keepMemory === false),
      autoResume: opts.autoResume === true || lc.autoResume === true,
      volumeMounts: volumeMounts(opts.volumeMounts),
      mcpJson: opts.mcp ? JSON.stringify(opts.mcp) : undefined
    }], { signal: opts.signal })
    return new this(made, c, conn)
  }

  /** A running or paused (then resumed) sandbox by id; timeoutMs extends
   * its life to at least that long from now. */
  static async connect(sandboxId, opts = {}) {
    const { conn, client: c } = await this._client(opts)
    const made = await invoke(N.sandboxConnect, [c.handle, sandboxId, opts.timeoutMs ? Math.round(opts.timeoutMs) : 0, callOpts(opts)], { signal: opts.signal })
    return new this(made, c, conn)
  }

  /** One page: {items: SandboxInfo[], nextToken?}. */
  static async listPage(opts = {}) {
    const { client: c } = await this._client(opts)
    const q = opts.query || opts
    const state = q.state ? [].concat(q.state) : []
    const r = await invoke(N.sandboxList, [c.handle, {
      metadata: pairs(q.metadata, '='),
      running: state.includes('running'),
      paused: state.includes('paused'),
      template: q.template,
      limit: opts.limit || 0,
      nextToken: opts.nextToken,
      requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs)
    }], { signal: opts.signal })
    return { items: r.items.map(sandboxInfo), nextToken: r.nextToken || undefined }
  }

  /** Every sandbox (all pages), newest first: {metadata, state, template}. */
  static async list(opts = {}) {
    return allPages((o) => this.listPage(o), opts)
  }

  /** Kill by id: true, or false if there was no such sandbox. */
  static async kill(sandboxId, opts = {}) {
    const { client: c } = await this._client(opts)
    try {
      await invoke(N.sandboxKillId, [c.handle, sandboxId, callOpts(opts)], { signal: opts.signal })
      return true
    } catch (e) {
      if (e instanceof E.SandboxNotFoundError) return false
      throw e
    }
  }

  /** The ids of the snapshots (every page): {sandboxId, name} filter them
   * (docs/snapshots.md). */
  static async listSnapshots(opts = {}) {
    const { client: c } = await this._client(opts)
    return invoke(N.snapshotsList, [c.handle, opts.sandboxId || null, opts.name || null, callOpts(opts)], { signal: opts.signal })
  }

  /** Delete a snapshot: true, or false if there is none of that id;
   * sandboxes running on it keep their files. */
  static async deleteSnapshot(snapshotId, opts = {}) {
    const { client: c } = await this._client(opts)
    try {
      await invoke(N.templateOp, [c.handle, 4, snapshotId, callOpts(opts)], { signal: opts.signal })
      return true
    } catch (e) {
      if (e instanceof E.NotFoundError) return false
      throw e
    }
  }

  /** A handle to a sandbox by id without a call (no resume). */
  static async _attach(sandboxId, opts) {
    const { conn, client: c } = await this._client(opts)
    return new this(N.sandboxAttach(c.handle, sandboxId), c, conn)
  }

  static async getInfo(sandboxId, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      return await s.getInfo(opts)
    } finally {
      s.close()
    }
  }

  static async setTimeout(sandboxId, timeoutMs, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      await s.setTimeout(timeoutMs, opts)
    } finally {
      s.close()
    }
  }

  /** updateNetwork of a sandbox by id, without connecting (no resume). */
  static async updateNetwork(sandboxId, network, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      await s.updateNetwork(network, opts)
    } finally {
      s.close()
    }
  }

  static async getMetrics(sandboxId, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      return await s.getMetrics(opts)
    } finally {
      s.close()
    }
  }

  static async pause(sandboxId, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      return await s.pause(opts)
    } finally {
      s.close()
    }
  }

  /** From a named session (saved by any binding). */
  static async fromSession(name, opts = {}) {
    const { conn, client: c } = await this._client(opts)
    const made = await invoke(N.sessionLoad, [c.handle, name, opts.timeoutMs ? Math.round(opts.timeoutMs) : 0, callOpts(opts)], { signal: opts.signal })
    return new this(made, c, conn)
  }

  async saveSession(name, metadata, opts = {}) {
    await invoke(N.sessionSave, [name, this._h, pairs(metadata, '=')], { signal: opts.signal })
  }

  _op(op, n, opts) {
    return invoke(N.sandboxOp, [this._h, op, n, callOpts(opts)], { signal: opts.signal })
  }

  /** true, or false if it was already gone. */
  async kill(opts = {}) {
    try {
      await this._op(1, 0, opts)
      return true
    } catch (e) {
      if (e instanceof E.SandboxNotFoundError) return false
      throw e
    }
  }

  /** Live timeoutMs from now (shorter or longer). */
  async setTimeout(timeoutMs, opts = {}) {
    await this._op(2, Math.max(1, Math.round(timeoutMs)), opts)
  }

  /** "http://127.0.0.1:<n>" for the port (local engine only): no *.localhost
   * name to resolve, so Node's fetch opens it on any host; closed when the
   * sandbox ends. */
  async loopbackUrl(port, opts = {}) {
    return invoke(N.sandboxLoopbackUrl, [this._h, port, callOpts(opts)], { signal: opts.signal })
  }

  async isRunning(opts = {}) {
    return (await this._op(3, 0, opts)) === 1
  }

  /**
   * Pause: true, or false if it already was paused. Every process is
   * frozen; with {keepMemory: false} (E2B's) they are stopped instead and
   * only the files kept: resume/connect boots the sandbox again.
   */
  async pause(opts = {}) {
    return (await this._op(4, opts.keepMemory === false ? 1 : 0, opts)) === 1
  }

  /** Snapshot the sandbox's files now (it runs on): the snapshot's id,
   * "<name>:default", a template for Sandbox.create. Sandboxes from it boot
   * fresh: files, not processes (docs/snapshots.md). */
  async createSnapshot(opts = {}) {
    return invoke(N.sandboxSnapshot, [this._h, opts.name || null, callOpts(opts)], { signal: opts.signal })
  }

  /** A new sandbox with this one's files now, its metadata, env vars and
   * network policy (timeoutMs: its lifetime, 15 s by default as E2B's). On
   * an engine with --pause-criu the fork of a running sandbox keeps its
   * processes too, unless keepProcesses is false (boot fresh on the files);
   * the new one's forkMode says which it got. */
  async fork(opts = {}) {
    const made = await invoke(N.sandboxFork, forkArgs(this._h, opts, 1), { signal: opts.signal })
    return new this.constructor(made, this._client, this._conn)
  }

  /** count forks (1..100) in one call (E2B's fork with count: one
   * snapshot, then count sandboxes from it): one entry per fork, a sandbox
   * or the Error that kept that fork from starting. Options as fork. */
  async forkMany(count, opts = {}) {
    if (!Number.isInteger(count) || count < 1 || count > 100) {
      throw new E.InvalidArgumentError(`count must be a whole number in 1..100, not ${count}`)
    }
    const got = await invoke(N.sandboxForkMany, forkArgs(this._h, opts, count), { signal: opts.signal })
    return got.map((f) => (f.error ? E.fromStatus(f.error[0], f.error[1]) : new this.constructor(f, this._client, this._conn)))
  }

  async resume(opts = {}) {
    await this._op(5, opts.timeoutMs ? Math.round(opts.timeoutMs) : 0, opts)
    return this
  }

  /**
   * Replace the egress rules, live (E2B's updateNetwork): {allowOut,
   * denyOut, rules, egressProxy, allowInternetAccess}; what is left out is
   * cleared.
   */
  async updateNetwork(network, opts = {}) {
    const n = network || {}
    await invoke(N.sandboxUpdateNetwork, [this._h, NET.internet(n.allowInternetAccess), NET.networkJson(n, true) || null, callOpts(opts)], { signal: opts.signal })
  }

  async getInfo(opts = {}) {
    return sandboxInfo(await invoke(N.sandboxGetInfo, [this._h, callOpts(opts)], { signal: opts.signal }))
  }

  /** Samples of CPU, memory and disk between start and end (Dates). */
  async getMetrics(opts = {}) {
    const s = opts.start ? Math.floor(+opts.start / 1000) : 0
    const e = opts.end ? Math.floor(+opts.end / 1000) : 0
    const l = await invoke(N.sandboxGetMetrics, [this._h, s, e, callOpts(opts)], { signal: opts.signal })
    return l.map((m) => Object.assign({}, m, { timestamp: new Date(m.timestamp * 1000) }))
  }

  /** Where a port is reachable ("<port>-<id>.<domain>"); no I/O. */
  getHost(port) {
    return N.sandboxHost(this._h, port, false)
  }

  /** Its URL ("https://…", "http://…" for the local engine). */
  getUrl(port) {
    return N.sandboxHost(this._h, port, true)
  }

  /** The token requests to its ports must carry (header
   * e2b-traffic-access-token) when it was made with network
   * {allowPublicTraffic: false}, else undefined; no I/O. */
  get trafficAccessToken() {
    return this._trafficAccessToken
  }

  /** The MCP gateway's URL (port 50005, "/mcp"; E2B's getMcpUrl); no I/O. */
  getMcpUrl() {
    return N.sandboxMcpUrl(this._h)
  }

  /** The gateway's bearer token: the one made at create with `mcp`, else
   * read as root from /etc/mcp-gateway/.token (NotFoundError: the sandbox
   * runs no gateway). */
  async getMcpToken(opts = {}) {
    return invoke(N.sandboxMcpToken, [this._h, callOpts(opts)], { signal: opts.signal })
  }

  /** A signed URL to download path (no other credentials). */
  async downloadUrl(path, opts = {}) {
    return invoke(N.files, [this._h, 12, path, Math.round((opts.useSignatureExpiration || 0) / 1000), { user: opts.user }, undefined], { signal: opts.signal })
  }

  async uploadUrl(path, opts = {}) {
    return invoke(N.files, [this._h, 13, path || '', Math.round((opts.useSignatureExpiration || 0) / 1000), { user: opts.user }, undefined], { signal: opts.signal })
  }

  // ---- code ----

  /**
   * Run code in a kernel (python by default): an Execution. opts: language
   * or context, envs, timeoutMs, onStdout/onStderr (OutputMessage),
   * onResult (Result), onError (ExecutionError), signal (interrupts the
   * cell; the context stays usable).
   */
  async runCode(code, opts = {}) {
    const handlers = {}
    const o = {
      language: opts.context ? undefined : opts.language,
      context: contextId(opts.context),
      envs: envList(opts.envs),
      timeoutMs: ms(opts.timeoutMs),
      requestTimeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs)
    }
    const msg = (fn, error) => (buf) => fn(new OutputMessage(buf.toString('utf8'), Date.now() * 1e6, error))
    if (opts.onStdout) { o.onStdout = true; handlers[EV.STDOUT] = msg(opts.onStdout, false) }
    if (opts.onStderr) { o.onStderr = true; handlers[EV.STDERR] = msg(opts.onStderr, true) }
    if (opts.onResult) { o.onResult = true; handlers[EV.RESULT] = (r) => opts.onResult(new Result(r)) }
    if (opts.onError) { o.onError = true; handlers[EV.CODE_ERROR] = (e) => opts.onError(new ExecutionError(e.name, e.value, e.traceback)) }
    const any = Object.keys(handlers).length > 0
    const x = await invoke(N.runCode, [this._h, code, o, any ? EVENTS : undefined], { signal: opts.signal, handlers })
    const e = new Execution(x.results.map((r) => new Result(r)), { stdout: x.stdout, stderr: x.stderr },
      x.error ? new ExecutionError(x.error.name, x.error.value, x.error.traceback) : undefined, x.executionCount)
    return e
  }

  async createCodeContext(opts = {}) {
    return invoke(N.codeContext, [this._h, 1, opts.language, opts.cwd, callOpts(opts)], { signal: opts.signal })
  }

  async listCodeContexts(opts = {}) {
    return invoke(N.codeContext, [this._h, 2, undefined, undefined, callOpts(opts)], { signal: opts.signal })
  }

  async restartCodeContext(context, opts = {}) {
    await invoke(N.codeContext, [this._h, 3, contextId(context), undefined, callOpts(opts)], { signal: opts.signal })
  }

  async removeCodeContext(context, opts = {}) {
    await invoke(N.codeContext, [this._h, 4, contextId(context), undefined, callOpts(opts)], { signal: opts.signal })
  }

  // ---- named commands ----

  /** Call a named command the template serves: its JSON result, decoded. */
  async run(name, args = {}, opts = {}) {
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new E.InvalidArgumentError('the arguments must be an object', { code: 'ASB_EINVAL' })
    const json = await invoke(N.named, [this._h, 1, name, JSON.stringify(args), { port: opts.port || 0, timeoutMs: opts.timeoutMs === undefined ? 0 : ms(opts.timeoutMs) }], { signal: opts.signal })
    return JSON.parse(json)
  }

  /** The commands the template serves: [{name, description, args}]. */
  async listCommands(opts = {}) {
    return invoke(N.named, [this._h, 2, undefined, undefined, { port: opts.port || 0, timeoutMs: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs) }], { signal: opts.signal })
  }

  // ---- the handle ----

  /** Release this handle (the sandbox keeps running); calls in flight on it
   * end with an AbortError. */
  close() {
    N.close(this._h, KIND.sandbox)
  }

  /** `await using sandbox = await Sandbox.create()`: killed at the end. */
  async [asyncDispose]() {
    try {
      await this.kill()
    } finally {
      this.close()
    }
  }
}
Sandbox._defaultTemplate = 'base'
Sandbox._throwOnExit = false

module.exports = {
  Sandbox,
  Commands,
  CommandHandle,
  Pty,
  Files,
  WatchHandle,
  PollingWatchHandle,
  Result,
  Execution,
  ExecutionError,
  OutputMessage,
  KIND,
  entryInfo,
  sandboxInfo,
  isThenable
}
