'use strict'
// A sandbox's network config (E2B's allowInternetAccess and network) between
// JS and the C library's JSON (asb_sandbox_options.network_json): E2B's
// names are the wire's, so this only resolves what E2B's SDK resolves on the
// client — allowOut/denyOut callbacks given {allTraffic, rules}, rules as an
// object or a Map, a rule's transform callback given {iam: {tokens}} — and
// the library checks the shape (an InvalidArgumentError naming the member).
// SPDX-License-Identifier: Apache-2.0
const E = require('./errors.js')

/** E2B's "all traffic": denyOut [ALL_TRAFFIC] is internet off. */
const ALL_TRAFFIC = '0.0.0.0/0'

function isPlain(v) {
  if (typeof v !== 'object' || v === null) return false
  const p = Object.getPrototypeOf(v)
  return p === Object.prototype || p === null
}

// Any token name gives E2B's placeholder, which the egress proxy replaces.
const tokens = new Proxy({}, {
  get(_, name) {
    if (typeof name !== 'string') return undefined
    if (!name || /[{}\u0000-\u001f]/.test(name)) {
      throw new E.InvalidArgumentError(`iam token name ${JSON.stringify(name)} is not usable`)
    }
    return '${e2b.identity.tokens.' + name + '}'
  }
})

function selector(v, rules, name) {
  if (typeof v === 'function') v = v({ allTraffic: ALL_TRAFFIC, rules })
  if (!Array.isArray(v)) throw new E.InvalidArgumentError(`network ${name} must be a list of strings`)
  return v.slice()
}

function rulesBody(rules) {
  const out = {}
  for (const [host, list] of rules) {
    if (!Array.isArray(list)) throw new E.InvalidArgumentError(`network rules for '${host}' must be a list`)
    out[host] = list.map((r) => {
      let t = r && r.transform
      if (t == null) return {}
      if (typeof t === 'function') {
        t = t({ iam: { tokens } })
        if (!isPlain(t)) {
          throw new E.InvalidArgumentError(`network transform callback for '${host}' must return a transform object`)
        }
      }
      return { transform: t }
    })
  }
  return out
}

function proxyBody(p) {
  if (!isPlain(p) || typeof p.address !== 'string') {
    throw new E.InvalidArgumentError("network egressProxy must be an object with a string 'address' (host:port)")
  }
  const out = { address: p.address }
  if (p.username != null) out.username = p.username
  if (p.password != null) out.password = p.password
  return out
}

/** E2B's network option as the library's network_json (undefined: none).
 * Unknown members go on to the library, which names them in its error. */
function networkJson(network, update) {
  if (network == null) return undefined
  if (typeof network !== 'object') throw new E.InvalidArgumentError('network must be an object')
  const rules = network.rules instanceof Map ? network.rules : new Map(Object.entries(network.rules || {}))
  const body = {}
  for (const key of Object.keys(network)) {
    const v = network[key]
    if (v === undefined || v === null) continue
    if (update && key === 'allowInternetAccess') continue // its own parameter
    if (key === 'allowOut' || key === 'denyOut') body[key] = selector(v, rules, key)
    else if (key === 'rules') body.rules = rulesBody(rules)
    else if (key === 'egressProxy') body.egressProxy = proxyBody(v)
    else body[key] = v
  }
  return JSON.stringify(body)
}

/** The library's tri-state: undefined the default (allowed), true 1, false -1. */
function internet(allow) {
  return allow === undefined || allow === null ? 0 : allow ? 1 : -1
}

/** The engine's network (JSON) as E2B's SandboxNetworkInfo, or undefined. */
function networkInfo(json) {
  if (!json) return undefined
  let n
  try {
    n = JSON.parse(json)
  } catch {
    return undefined
  }
  if (!isPlain(n)) return undefined
  if (isPlain(n.egressProxy)) {
    const p = { address: n.egressProxy.address }
    if (n.egressProxy.username !== undefined) p.username = n.egressProxy.username
    n.egressProxy = p
  } else delete n.egressProxy
  return n
}

module.exports = { ALL_TRAFFIC, networkJson, internet, networkInfo }
