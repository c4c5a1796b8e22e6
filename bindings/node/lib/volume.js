'use strict'
// Volume: persistent filesystems sandboxes mount at create
// (Sandbox.create({ volumeMounts: { '/mnt/data': vol } })), made, listed
// and deleted with the API key, and their files read and written without a
// sandbox with the volume's own token (the C library's asb_volume*,
// docs/volumes.md). The names, options and result shapes are those of
// E2B's JS SDK Volume class; agent-sandbox/compat's Volume is this class
// with E2B's error classes (VolumeError, VolumeNotFoundError,
// VolumePathNotFoundError).
// SPDX-License-Identifier: Apache-2.0
const { N, invoke, client, connOf, callOpts } = require('./native.js')

const OP = { create: 1, get: 2, list: 3, delete: 4 }
const F = { read: 1, write: 2, makeDir: 3, getInfo: 4, exists: 5, updateMetadata: 6, remove: 7, list: 8 }

/** E2B's VolumeFileType. */
const VolumeFileType = Object.freeze({ UNKNOWN: 'unknown', FILE: 'file', DIRECTORY: 'directory', SYMLINK: 'symlink' })

function entryStat(e) {
  const out = {
    name: e.name,
    type: e.type,
    path: e.path,
    size: e.size,
    mode: e.mode,
    uid: e.uid,
    gid: e.gid,
    atime: new Date(e.atime * 1000),
    mtime: new Date(e.mtime * 1000),
    ctime: new Date(e.ctime * 1000)
  }
  if (e.target !== undefined) out.target = e.target
  return out
}

function isBlob(d) {
  return typeof Blob !== 'undefined' && d instanceof Blob
}

// What writeFile takes, as bytes for the C call (which sends at most 256
// MiB in one request): a string, ArrayBuffer, typed array, Blob or a web
// ReadableStream (read whole first).
async function bytesOf(data) {
  if (typeof data === 'string' || data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return data
  if (isBlob(data)) return new Uint8Array(await data.arrayBuffer())
  if (data && typeof data.getReader === 'function') {
    const parts = []
    const r = data.getReader()
    for (;;) {
      const { done, value } = await r.read()
      if (done) break
      parts.push(typeof value === 'string' ? Buffer.from(value) : Buffer.from(value.buffer, value.byteOffset, value.byteLength))
    }
    return Buffer.concat(parts)
  }
  throw new TypeError('data must be a string, an ArrayBuffer, a TypedArray, a Blob or a ReadableStream')
}

function reqOpts(opts, more) {
  return Object.assign(callOpts(opts), more)
}

class Volume {
  /**
   * E2B's `new Volume(volumeId, name, token, domain?)`: a volume from its
   * content token, with no API call (the native handle is made at the
   * first file call; a wrong token or id rejects there). The 4th argument
   * is E2B's domain or this package's connection options. Volume.create()
   * and Volume.connect() make the others.
   */
  constructor(made, clientObj, token, conn) {
    if (typeof made === 'string') {
      if (typeof token !== 'string' || !token) throw new TypeError('new Volume(volumeId, name, token): the volume\'s token is needed (Volume.connect(volumeId) fetches it)')
      if (clientObj !== undefined && clientObj !== null && typeof clientObj !== 'string') throw new TypeError('new Volume(volumeId, name, token): name must be a string')
      const opts = typeof conn === 'string' ? { domain: conn } : Object.assign({}, conn)
      made = { volumeId: made, name: clientObj == null ? '' : clientObj, token, sizeMB: 0, handle: null }
      clientObj = null
      this._lazy = opts
    } else if (!made || !made.handle) {
      throw new TypeError('a Volume is made with Volume.create(), Volume.connect() or new Volume(volumeId, name, token)')
    }
    this._h = made.handle
    this._client = clientObj
    /** The volume's id. */
    this.volumeId = made.volumeId
    this.name = made.name
    /** The token of its content API. */
    this.token = made.token
    /** Its quota in MiB (ours; E2B's volumes have none). */
    this.sizeMB = made.sizeMB
    /** E2B's custom content API domain: only what new Volume() was given
     * (the engine serves the content API). */
    this.domain = this._lazy && typeof this._lazy.domain === 'string' ? this._lazy.domain : undefined
  }

  static async _client(opts) {
    return client(connOf(this._boundOpts ? Object.assign({}, this._boundOpts, opts) : opts))
  }

  /** The error of a failed call (compat maps them to E2B's classes);
   * what: 'volume' or 'path', ref: the id or path. */
  static _error(e) {
    return e
  }

  static async _op(op, id, sizeMB, opts, what) {
    const c = await this._client(opts)
    try {
      return await invoke(N.volumeOp, [c.handle, op, id, sizeMB, callOpts(opts)], { signal: opts.signal })
    } catch (e) {
      throw this._error(e, what, id)
    }
  }

  /**
   * Make a volume named name (1..63 of [A-Za-z0-9_-]); opts.sizeMB is its
   * quota (default 1024 MiB). A taken name rejects (409).
   */
  static async create(name, opts = {}) {
    const sizeMB = opts.sizeMB === undefined || opts.sizeMB === null ? 0 : Math.trunc(opts.sizeMB)
    const made = await this._op(OP.create, name, sizeMB, opts, 'create')
    return new this(made, await this._client(opts))
  }

  /** The volume of this id or name, with its token. */
  static async connect(volumeId, opts = {}) {
    const made = await this._op(OP.get, volumeId, 0, opts, 'volume')
    return new this(made, await this._client(opts))
  }

  /** {volumeId, name, token, sizeMB} of a volume by id or name. */
  static async getInfo(volumeId, opts = {}) {
    const made = await this._op(OP.get, volumeId, 0, opts, 'volume')
    N.close(made.handle, N.kinds.volume)
    return { volumeId: made.volumeId, name: made.name, token: made.token, sizeMB: made.sizeMB, domain: undefined }
  }

  /** Every volume: [{volumeId, name, sizeMB}]. */
  static async list(opts = {}) {
    return this._op(OP.list, undefined, 0, opts, 'list')
  }

  /** Delete a volume by id or name, with its files: true, or false if there
   * was none. Refused (409, naming them) while sandboxes mount it. */
  static async destroy(volumeId, opts = {}) {
    try {
      await this._op(OP.delete, volumeId, 0, opts, 'destroy')
      return true
    } catch (e) {
      if (e.code === 'ASB_ENOTFOUND') return false
      throw e
    }
  }

  // o: the C call's options (reqOpts), opts: the caller's (its signal)
  // The native handle of a volume from its token, made once (no API call).
  _handle() {
    if (this._h) return this._h
    if (!this._hp) {
      this._hp = (async () => {
        const c = await this.constructor._client(this._lazy)
        const made = await invoke(N.volumeFromToken, [c.handle, this.volumeId, this.name, this.token])
        if (this._closed) N.close(made.handle, N.kinds.volume)
        else this._h = made.handle
        return made.handle
      })()
      this._hp.catch(() => { this._hp = undefined })
    }
    return this._hp
  }

  async _file(op, path, o, data, opts) {
    try {
      if (this._closed && !this._h) throw new Error('the Volume was closed')
      const h = await this._handle()
      return await invoke(N.volumeFile, [h, op, path, o, data], { signal: opts.signal })
    } catch (e) {
      throw this.constructor._error(e, 'path', path)
    }
  }

  /** The entries of the directory at path, opts.depth levels down (default 1). */
  async list(path, opts = {}) {
    const l = await this._file(F.list, path, reqOpts(opts, { depth: opts.depth || 0 }), undefined, opts)
    return l.map(entryStat)
  }

  /** Make a directory (uid, gid, mode default 0o755; force: make parents, accept an existing one). */
  async makeDir(path, opts = {}) {
    return entryStat(await this._file(F.makeDir, path, reqOpts(opts, { uid: opts.uid, gid: opts.gid, mode: opts.mode, force: !!opts.force }), undefined, opts))
  }

  /** What is at path (a symlink is not followed). */
  async getInfo(path, opts = {}) {
    return entryStat(await this._file(F.getInfo, path, reqOpts(opts), undefined, opts))
  }

  /** true if something is at path. */
  async exists(path, opts = {}) {
    return this._file(F.exists, path, reqOpts(opts), undefined, opts)
  }

  /** Change the owner or mode ({uid, gid, mode}; what is left out is kept). */
  async updateMetadata(path, metadata = {}, opts = {}) {
    const m = metadata || {}
    return entryStat(await this._file(F.updateMetadata, path, reqOpts(opts, { uid: m.uid, gid: m.gid, mode: m.mode }), undefined, opts))
  }

  /** The file's content: text (default), or format 'bytes' (Uint8Array), 'blob', 'stream'. */
  async readFile(path, opts = {}) {
    const format = opts.format || 'text'
    if (!['text', 'bytes', 'blob', 'stream'].includes(format)) throw new TypeError(`format must be 'text', 'bytes', 'blob' or 'stream'`)
    const buf = await this._file(F.read, path, reqOpts(opts), undefined, opts)
    if (format === 'text') return buf.toString('utf8')
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)
    if (format === 'bytes') return bytes
    if (format === 'blob') return new Blob([bytes])
    return new ReadableStream({
      start(ctl) {
        if (bytes.byteLength) ctl.enqueue(bytes)
        ctl.close()
      }
    })
  }

  /** Write a file (uid, gid as sandboxes see them, default root; mode
   * default 0o644; an existing file is replaced only with force). */
  async writeFile(path, data, opts = {}) {
    const bytes = await bytesOf(data)
    return entryStat(await this._file(F.write, path, reqOpts(opts, { uid: opts.uid, gid: opts.gid, mode: opts.mode, force: !!opts.force }), bytes, opts))
  }

  /** Remove what is at path, recursively (a symlink is removed, not followed). */
  async remove(path, opts = {}) {
    await this._file(F.remove, path, reqOpts(opts), undefined, opts)
  }

  /** Release the handle (the volume stays); calls in flight end with an AbortError. */
  close() {
    this._closed = true
    if (this._h) N.close(this._h, N.kinds.volume)
  }
}

module.exports = { Volume, VolumeFileType, entryStat }
