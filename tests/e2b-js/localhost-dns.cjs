// Loaded into E2B's test processes by run.sh (NODE_OPTIONS=--require): Node
// resolves names with glibc, which on a stock Debian (no nss-myhostname,
// no systemd-resolved) does not know RFC 6761's *.localhost, so E2B's
// tests that fetch https://<port>-<id>.localhost:<engine port> — the URL
// getHost gives — would fail with ENOTFOUND before reaching the engine.
// This answers 127.0.0.1 for those names, as systemd-resolved and
// nss-myhostname do, and leaves every other name to Node. (Users on such a
// host use loopback URLs instead: docs/engine.md.)
// SPDX-License-Identifier: Apache-2.0
'use strict'
const dns = require('node:dns')
const lookup = dns.lookup
const isLocalhost = (h) => typeof h === 'string' && /(^|\.)localhost\.?$/i.test(h)
dns.lookup = function (host, options, callback) {
  if (typeof options === 'function') {
    callback = options
    options = {}
  }
  if (!isLocalhost(host)) return lookup.call(this, host, options, callback)
  const o = typeof options === 'number' ? { family: options } : options || {}
  if (o.all) process.nextTick(callback, null, [{ address: '127.0.0.1', family: 4 }])
  else process.nextTick(callback, null, '127.0.0.1', 4)
  return {}
}
