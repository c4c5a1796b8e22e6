'use strict'
// sandbox.git: E2B's git helpers (its JS SDK's names, options and return
// shapes) on the C library's asb_git_* (git.h): each call runs the
// sandbox's own git as a command. Credentials reach git on its stdin, never
// on a command line; a git that fails rejects with CommandExitError,
// GitAuthError or GitUpstreamError carrying git's result.
// SPDX-License-Identifier: Apache-2.0
const { N, invoke, ms, pairs } = require('./native.js')
const E = require('./errors.js')

const OP = {
  clone: 1, init: 2, remoteAdd: 3, remoteGet: 4, status: 5, branches: 6, createBranch: 7,
  checkoutBranch: 8, deleteBranch: 9, add: 10, commit: 11, reset: 12, restore: 13, push: 14,
  pull: 15, setConfig: 16, getConfig: 17, configureUser: 18, dangerouslyAuthenticate: 19
}

const tri = (v) => (v === undefined || v === null ? 0 : v ? 1 : -1)
const flag = (v) => (v ? 1 : 0)

// E2B's GitRequestOpts (envs, user, cwd, timeoutMs, requestTimeoutMs) and
// the call's own options, under asb_git_options' names.
function cOpts(opts, more) {
  const o = {
    envs: pairs(opts.envs, '='),
    user: opts.user,
    cwd: opts.cwd,
    timeout_ms: ms(opts.timeoutMs),
    request_timeout_ms: opts.requestTimeoutMs === undefined ? 0 : ms(opts.requestTimeoutMs)
  }
  return Object.assign(o, more)
}

function status(s) {
  const files = s.fileStatus
  const count = (f) => files.filter(f).length
  const conflict = (f) => f.status === 'conflict'
  return Object.assign(s, {
    isClean: files.length === 0,
    hasChanges: files.length > 0,
    hasStaged: files.some((f) => f.staged),
    hasUntracked: files.some((f) => f.status === 'untracked'),
    hasConflicts: files.some(conflict),
    totalCount: files.length,
    stagedCount: count((f) => f.staged),
    unstagedCount: count((f) => !f.staged && f.status !== 'untracked'),
    untrackedCount: count((f) => f.status === 'untracked'),
    conflictCount: count(conflict)
  })
}

class Git {
  constructor(sandbox) {
    this._sb = sandbox
  }

  _call(op, args, o, signal) {
    return invoke(N.git, [this._sb._h, op, args, o], {
      signal,
      attach: (err, result) => {
        if (err.code === 'ASB_ECOMMANDEXIT') return new E.CommandExitError(result, err)
        err.result = result
        return err
      }
    })
  }

  /** git clone url [opts.path] (branch, depth, username, password, dangerouslyStoreCredentials). */
  clone(url, opts = {}) {
    return this._call(OP.clone, [url, opts.path], cOpts(opts, {
      branch: opts.branch, depth: opts.depth ? Math.trunc(opts.depth) : 0, username: opts.username,
      password: opts.password, store_credentials: flag(opts.dangerouslyStoreCredentials)
    }), opts.signal)
  }

  /** git init path (bare, initialBranch). */
  init(path, opts = {}) {
    return this._call(OP.init, [path], cOpts(opts, { bare: flag(opts.bare), initial_branch: opts.initialBranch }), opts.signal)
  }

  /** git remote add name url (fetch, overwrite: set the URL of an existing remote). */
  remoteAdd(path, name, url, opts = {}) {
    return this._call(OP.remoteAdd, [path, name, url], cOpts(opts, { fetch: flag(opts.fetch), overwrite: flag(opts.overwrite) }), opts.signal)
  }

  /** The URL of remote name, or undefined. */
  remoteGet(path, name, opts = {}) {
    return this._call(OP.remoteGet, [path, name], cOpts(opts), opts.signal)
  }

  /** The work tree's state (GitStatus). */
  async status(path, opts = {}) {
    return status(await this._call(OP.status, [path], cOpts(opts), opts.signal))
  }

  /** {branches, currentBranch}. */
  branches(path, opts = {}) {
    return this._call(OP.branches, [path], cOpts(opts), opts.signal)
  }

  /** git checkout -b branch. */
  createBranch(path, branch, opts = {}) {
    return this._call(OP.createBranch, [path, branch], cOpts(opts), opts.signal)
  }

  /** git checkout branch. */
  checkoutBranch(path, branch, opts = {}) {
    return this._call(OP.checkoutBranch, [path, branch], cOpts(opts), opts.signal)
  }

  /** git branch -d branch (force: -D). */
  deleteBranch(path, branch, opts = {}) {
    return this._call(OP.deleteBranch, [path, branch], cOpts(opts, { force: flag(opts.force) }), opts.signal)
  }

  /** Stage opts.files, or everything (all, the default) or the directory's changes (all: false). */
  add(path, opts = {}) {
    const files = opts.files && opts.files.length ? opts.files : undefined
    return this._call(OP.add, [path], cOpts(opts, { paths: files, all: tri(opts.all) }), opts.signal)
  }

  /** git commit -m message (authorName, authorEmail, allowEmpty). */
  commit(path, message, opts = {}) {
    return this._call(OP.commit, [path, message], cOpts(opts, {
      author_name: opts.authorName, author_email: opts.authorEmail, allow_empty: flag(opts.allowEmpty)
    }), opts.signal)
  }

  /** git reset [--mode] [target] [-- paths]. */
  reset(path, opts = {}) {
    return this._call(OP.reset, [path], cOpts(opts, { mode: opts.mode, target: opts.target, paths: opts.paths }), opts.signal)
  }

  /** git restore opts.paths (staged, worktree, source). */
  restore(path, opts = {}) {
    return this._call(OP.restore, [path], cOpts(opts, {
      paths: opts.paths || [], staged: tri(opts.staged), worktree: tri(opts.worktree), source: opts.source
    }), opts.signal)
  }

  /** git push [--set-upstream] [remote] [branch] (username, password). */
  push(path, opts = {}) {
    return this._call(OP.push, [path], cOpts(opts, {
      remote: opts.remote, branch: opts.branch, set_upstream: tri(opts.setUpstream),
      username: opts.username, password: opts.password
    }), opts.signal)
  }

  /** git pull [remote] [branch] (username, password). */
  pull(path, opts = {}) {
    return this._call(OP.pull, [path], cOpts(opts, {
      remote: opts.remote, branch: opts.branch, username: opts.username, password: opts.password
    }), opts.signal)
  }

  /** git config --scope key value (scope: global (default), local (needs path), system). */
  setConfig(key, value, opts = {}) {
    return this._call(OP.setConfig, [opts.path, key, value], cOpts(opts, { scope: opts.scope }), opts.signal)
  }

  /** The value of key in the scope, or undefined. */
  getConfig(key, opts = {}) {
    return this._call(OP.getConfig, [opts.path, key], cOpts(opts, { scope: opts.scope }), opts.signal)
  }

  /** user.name and user.email in the scope. */
  configureUser(name, email, opts = {}) {
    return this._call(OP.configureUser, [opts.path, name, email], cOpts(opts, { scope: opts.scope }), opts.signal)
  }

  /** Store credentials in the user's ~/.git-credentials (plain text, readable
   * by anything running as that user). Prefer per-call credentials. */
  dangerouslyAuthenticate(opts) {
    if (!opts) throw new E.InvalidArgumentError('username and password are required', { code: 'ASB_EINVAL' })
    return this._call(OP.dangerouslyAuthenticate, [opts.username, opts.password], cOpts(opts, {
      host: opts.host, protocol: opts.protocol
    }), opts.signal)
  }
}

module.exports = { Git }
