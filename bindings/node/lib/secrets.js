'use strict'
// Secrets: named values the control plane keeps for the egress proxy
// (secret.h, docs/reference/secret.md). A value goes in (create, update)
// and never comes out: every result is {id, name, version, createdAt,
// updatedAt, metadata}, without it. A sandbox's network.rules reference a
// secret as `${e2b.secrets.<name>}` (Secrets.fill(name)) in a header value.
// SPDX-License-Identifier: Apache-2.0
const { N, invoke, pairs, client, connOf, allPages } = require('./native.js')
const E = require('./errors.js')

const OP = { create: 1, update: 2, get: 3, delete: 4, list: 5 }

function secretInfo(s) {
  return {
    id: s.id,
    name: s.name,
    version: s.version,
    createdAt: new Date(s.createdAt * 1000),
    updatedAt: new Date(s.updatedAt * 1000),
    metadata: s.metadata
  }
}

class Secrets {
  static async _op(op, args, opts) {
    const o = opts || {}
    const c = await client(connOf(o))
    const a = Object.assign({ requestTimeoutMs: o.requestTimeoutMs === undefined ? 0 : Math.round(o.requestTimeoutMs) }, args)
    return invoke(N.secretsOp, [c.handle, op, a], { signal: o.signal })
  }

  /** A new secret: name 1..128 of [A-Za-z0-9_-] (kept lower case), the
   * value, opts.metadata ({key: value}). An InvalidArgumentError for a
   * bad name, value or metadata; an error of code ASB_EEXISTS if the name
   * is taken. */
  static async create(name, value, opts = {}) {
    if (typeof value !== 'string') throw new E.InvalidArgumentError('the value must be a string', { code: 'ASB_EINVAL' })
    return secretInfo(await this._op(OP.create, { secret: name, value, metadata: pairs(opts.metadata, '=') }, opts))
  }

  /** A new value (and version) for the secret of this id or name;
   * opts.metadata replaces the stored metadata, left out it is kept.
   * NotFoundError if none. */
  static async update(secret, value, opts = {}) {
    if (typeof value !== 'string') throw new E.InvalidArgumentError('the value must be a string', { code: 'ASB_EINVAL' })
    const md = opts.metadata === undefined ? undefined : pairs(opts.metadata, '=')
    return secretInfo(await this._op(OP.update, { secret, value, metadata: md }, opts))
  }

  /** The secret of this id or name (never its value); NotFoundError if none. */
  static async get(secret, opts = {}) {
    return secretInfo(await this._op(OP.get, { secret }, opts))
  }

  /** true, or false if there was no secret of this id or name. */
  static async delete(secret, opts = {}) {
    try {
      await this._op(OP.delete, { secret }, opts)
      return true
    } catch (e) {
      if (e instanceof E.NotFoundError) return false
      throw e
    }
  }

  /** One page, oldest first: {items, nextToken?}; opts.limit 1..100. */
  static async listPage(opts = {}) {
    const r = await this._op(OP.list, { limit: opts.limit || 0, nextToken: opts.nextToken || undefined }, opts)
    return { items: r.items.map(secretInfo), nextToken: r.nextToken || undefined }
  }

  /** Every secret (all pages), oldest first. */
  static async list(opts = {}) {
    return allPages((o) => this.listPage(o), opts)
  }

  /** The placeholder a header value in network.rules uses for it (no call). */
  static fill(name) {
    return '${e2b.secrets.' + name + '}'
  }
}

module.exports = { Secrets }
