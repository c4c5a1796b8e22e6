'use strict'
// Named sessions on the C library's store (asb_session_*): one on-disk
// format for every binding, so a session saved from Python loads here.
// SPDX-License-Identifier: Apache-2.0
const { N, invoke, pairs } = require('./native.js')
const E = require('./errors.js')

/** A session's record. Its metadata is read by key: info.metadata.get(k). */
class SessionInfo {
  constructor(r) {
    this.name = r.name
    this.sandboxId = r.sandboxId
    this.templateId = r.templateId
    this.apiUrl = r.apiUrl
    this.createdAt = new Date(r.createdAt * 1000)
    const h = r.handle
    this.metadata = {
      get: (key) => N.sessionMetadata(h, String(key)),
      has: (key) => N.sessionMetadata(h, String(key)) !== undefined
    }
  }
}

class Session {
  /** Remember sandbox under name (letters, digits, '.', '_', '-'). */
  static async save(name, sandbox, metadata, opts = {}) {
    await invoke(N.sessionSave, [name, sandbox._h, pairs(metadata, '=')], { signal: opts.signal })
  }

  /** Reconnect (a paused sandbox is resumed). NotFoundError without such a
   * session, SandboxNotFoundError when its sandbox is gone (the session is
   * kept). opts: timeoutMs, connection options. */
  static async load(name, opts = {}) {
    const { Sandbox } = require('./sandbox.js')
    const S = opts.sandboxClass || Sandbox
    return S.fromSession(name, opts)
  }

  static async get(name, opts = {}) {
    return new SessionInfo(await invoke(N.sessionOp, [2, name], { signal: opts.signal }))
  }

  static async list(opts = {}) {
    return (await invoke(N.sessionOp, [3, undefined], { signal: opts.signal })).map((r) => new SessionInfo(r))
  }

  /** true, or false if there was none. */
  static async delete(name, opts = {}) {
    try {
      await invoke(N.sessionOp, [4, name], { signal: opts.signal })
      return true
    } catch (e) {
      if (e instanceof E.NotFoundError) return false
      throw e
    }
  }
}

module.exports = { Session, SessionInfo }
