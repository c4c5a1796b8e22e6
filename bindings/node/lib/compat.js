'use strict'
// agent-sandbox/compat: the public surface of the npm `e2b` SDK (2.x) on
// agent-sandbox — the same class, method and option names, result shapes
// and error classes — so an E2B program runs by changing only its import
// specifier. What differs and what is missing: docs/node-compat.md.
// SPDX-License-Identifier: Apache-2.0
const base = require('./sandbox.js')
const errors = require('./errors.js')
const { ALL_TRAFFIC } = require('./network.js')
const vol = require('./volume.js')
const tpl = require('./compat-template.js')
const { randomUUID } = require('node:crypto')

// E2B's `mcp` option (docs/mcp.md, "The gateway"): the template whose
// mcp-gateway serves the configured MCP servers on MCP_PORT at /mcp.
const MCP_TEMPLATE = 'mcp-gateway'
const MCP_PORT = 50005
const MCP_TOKEN_PATH = '/etc/mcp-gateway/.token'

function shellQuote(s) {
  return `'${String(s).replace(/'/g, `'\\''`)}'`
}

class SandboxPaginator {
  constructor(cls, opts = {}) {
    this._cls = cls
    this._opts = opts
    this._hasNext = true
    this._nextToken = opts.nextToken
  }

  get hasNext() {
    return this._hasNext
  }

  get nextToken() {
    return this._nextToken
  }

  /** The next page (E2B's Paginator.nextItems). */
  async nextItems(opts) {
    if (!this._hasNext) throw new Error('No more items to fetch')
    const page = await this._cls.listPage(Object.assign({}, this._opts, opts || {}, { nextToken: this._nextToken }))
    this._nextToken = page.nextToken
    this._hasNext = !!page.nextToken
    return page.items
  }
}

/** E2B's snapshot paginator. The library follows every page itself, so the
 * first nextItems() holds them all. */
class SnapshotPaginator {
  constructor(opts = {}) {
    this._opts = opts
    this._hasNext = true
  }

  get hasNext() {
    return this._hasNext
  }

  get nextToken() {
    return undefined
  }

  async nextItems(opts) {
    if (!this._hasNext) throw new Error('No more items to fetch')
    const ids = await base.Sandbox.listSnapshots(Object.assign({}, this._opts, opts || {}))
    this._hasNext = false
    return ids.map((id) => ({ snapshotId: id, names: [id] }))
  }
}

/** E2B's Sandbox: commands.run and handle.wait() reject with
 * CommandExitError on a non-zero exit code; list() is a paginator. */
class Sandbox extends base.Sandbox {
  /** E2B's create; with `mcp`, as E2B's SDK does it: a sandbox of the
   * mcp-gateway template (unless another is named), then `mcp-gateway
   * --config <json>` as root with a fresh GATEWAY_ACCESS_TOKEN; if that
   * fails the sandbox is killed and the error is E2B's. */
  static async create(template, opts) {
    if (template && typeof template === 'object') {
      opts = template
      template = undefined
    }
    opts = opts || {}
    if (!opts.mcp) return super.create(template, opts)
    // (mcp left out: this layer starts the gateway with E2B's errors)
    const sbx = await super.create(template || opts.template || MCP_TEMPLATE, Object.assign({}, opts, { mcp: undefined }))
    const token = randomUUID()
    try {
      await sbx.commands.run(`mcp-gateway --config ${shellQuote(JSON.stringify(opts.mcp))}`, {
        user: 'root',
        envs: { GATEWAY_ACCESS_TOKEN: token }
      })
    } catch (e) {
      await sbx.kill().catch(() => {})
      if (e instanceof errors.CommandExitError) {
        throw new errors.SandboxError(`Failed to start MCP gateway: ${e.stderr}`)
      }
      throw e
    }
    sbx._mcpToken = token
    return sbx
  }

  /** The MCP gateway's endpoint, in E2B's form (https on the port's host). */
  getMcpUrl() {
    return `https://${this.getHost(MCP_PORT)}/mcp`
  }

  /** The gateway's bearer token: the one made at create, else its token
   * file (read as root, as E2B's SDK does). */
  async getMcpToken() {
    if (!this._mcpToken) this._mcpToken = await this.files.read(MCP_TOKEN_PATH, { user: 'root' })
    return this._mcpToken
  }

  static list(opts) {
    return new SandboxPaginator(this, opts)
  }

  /** Reconnect to this sandbox (resumed if paused). */
  async connect(opts = {}) {
    return this.constructor.connect(this.sandboxId, opts)
  }

  async betaPause(opts) {
    return this.pause(opts)
  }

  static async betaPause(sandboxId, opts) {
    return this.pause(sandboxId, opts)
  }

  static async getFullInfo(sandboxId, opts) {
    return this.getInfo(sandboxId, opts)
  }

  async getMetrics(opts) {
    return (await super.getMetrics(opts)).map((m) => Object.assign({ memCache: undefined }, m))
  }

  // snapshots and fork (docs/snapshots.md): files, not processes
  async createSnapshot(opts = {}) {
    const id = await super.createSnapshot(opts)
    return { snapshotId: id, names: [id] }
  }

  static async createSnapshot(sandboxId, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      return await s.createSnapshot(opts)
    } finally {
      s.close()
    }
  }

  /** E2B's fork: one entry per fork, a sandbox or the Error that kept it
   * from starting (one call: one snapshot, then count sandboxes from it).
   * keepProcesses (ours): false boots them fresh on the files on a
   * --pause-criu engine (docs/snapshots.md). */
  async fork(opts = {}) {
    return this.forkMany(opts.count === undefined ? 1 : opts.count, opts)
  }

  static async fork(sandboxId, opts = {}) {
    const s = await this._attach(sandboxId, opts)
    try {
      return await s.fork(opts)
    } finally {
      s.close()
    }
  }

  listSnapshots(opts = {}) {
    return new SnapshotPaginator(Object.assign({}, opts, { sandboxId: this.sandboxId }))
  }

  static listSnapshots(opts = {}) {
    return new SnapshotPaginator(opts)
  }
}
Sandbox._throwOnExit = true
Sandbox._defaultTemplate = 'base'

// E2B's volume errors: not SandboxErrors (as in E2B); each also has the
// C library's code, status, remoteCode, ... (errors.js).
class VolumeError extends Error {
  constructor(message, detail) {
    super(message)
    this.name = new.target.name
    for (const k of ['code', 'status', 'statusCode', 'remoteCode', 'retryAfter', 'reason']) {
      if (detail && detail[k] !== undefined) this[k] = detail[k]
    }
  }
}
class VolumeNotFoundError extends VolumeError {}
class VolumePathNotFoundError extends VolumeError {}

// Errors E2B's Volume passes on as they are: a credentials or rate-limit
// reply, a cancelled or timed-out request.
const VOLUME_KEEP = ['ASB_EAUTH', 'ASB_ERATELIMIT', 'ASB_ECANCELED', 'ASB_ETIMEOUT']

/** E2B's Volume: the Node API's with E2B's errors: an unknown volume is
 * VolumeNotFoundError ("Volume <id> not found"), a missing path
 * VolumePathNotFoundError ("Path <path> not found"), any other failure
 * VolumeError ("<status>: <message>", as E2B's). */
class Volume extends vol.Volume {
  static _error(e, what, ref) {
    if (!e || typeof e.code !== 'string' || VOLUME_KEEP.includes(e.code) || e instanceof VolumeError) return e
    if (e.code === 'ASB_ENOTFOUND' && what === 'volume') return new VolumeNotFoundError(`Volume ${ref} not found`, e)
    if (e.code === 'ASB_ENOTFOUND' && what === 'path') return new VolumePathNotFoundError(`Path ${ref} not found`, e)
    if (e.code === 'ASB_ENOTFOUND' && what === 'destroy') return e // destroy resolves false
    return new VolumeError(e.status ? `${e.status}: ${e.message}` : e.message, e)
  }
}

/** An E2B client: its options are the defaults of its Sandbox's and
 * Volume's calls. */
class E2B {
  constructor(opts = {}) {
    this.Sandbox = class extends this.constructor._sandboxClass() {}
    this.Sandbox._boundOpts = Object.assign({}, opts)
    this.Volume = class extends Volume {}
    this.Volume._boundOpts = Object.assign({}, opts)
    // E2B's client.Template: the builder and its statics with these options
    this.Template = tpl.callableTemplate(class extends tpl.TemplateBase {})
    this.Template._boundOpts = Object.assign({}, opts)
  }

  static _sandboxClass() {
    return Sandbox
  }
}

class ServiceBusyError extends Error {
  constructor(message) {
    super(message)
    this.name = 'ServiceBusyError'
    this.statusCode = 503
  }
}

const FileType = Object.freeze({ FILE: 'file', DIR: 'dir', SYMLINK: 'symlink' })
const FilesystemEventType = Object.freeze({ CHMOD: 'chmod', CREATE: 'create', REMOVE: 'remove', RENAME: 'rename', WRITE: 'write' })

module.exports = {
  ALL_TRAFFIC,
  Sandbox,
  SandboxPaginator,
  SnapshotPaginator,
  E2B,
  Volume,
  VolumeFileType: vol.VolumeFileType,
  VolumeError,
  VolumeNotFoundError,
  VolumePathNotFoundError,
  CommandHandle: base.CommandHandle,
  WatchHandle: base.WatchHandle,
  FileType,
  FilesystemEventType,
  SandboxError: errors.SandboxError,
  TimeoutError: errors.TimeoutError,
  InvalidArgumentError: errors.InvalidArgumentError,
  NotEnoughSpaceError: errors.NotEnoughSpaceError,
  NotFoundError: errors.NotFoundError,
  FileNotFoundError: errors.FileNotFoundError,
  SandboxNotFoundError: errors.SandboxNotFoundError,
  AuthenticationError: errors.AuthenticationError,
  GitAuthError: errors.GitAuthError,
  GitUpstreamError: errors.GitUpstreamError,
  TemplateError: errors.TemplateError,
  RateLimitError: errors.RateLimitError,
  BuildError: errors.BuildError,
  FileUploadError: tpl.FileUploadError,
  Template: tpl.Template,
  TemplateBase: tpl.TemplateBase,
  ReadyCmd: tpl.ReadyCmd,
  waitForPort: tpl.waitForPort,
  waitForURL: tpl.waitForURL,
  waitForProcess: tpl.waitForProcess,
  waitForFile: tpl.waitForFile,
  waitForTimeout: tpl.waitForTimeout,
  LogEntry: tpl.LogEntry,
  LogEntryStart: tpl.LogEntryStart,
  LogEntryEnd: tpl.LogEntryEnd,
  defaultBuildLogger: tpl.defaultBuildLogger,
  ServiceBusyError,
  CommandExitError: errors.CommandExitError
}
module.exports.default = Sandbox
