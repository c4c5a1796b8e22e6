'use strict'
// Error classes: E2B's JS SDK hierarchy (SandboxError and its subclasses,
// AuthenticationError and BuildError beside it) plus our own
// (CommandNotFoundError, CommandFailedError, SandboxGoneError, ...). Every
// error from the C library carries `code` (the asb_status name,
// "ASB_ENOTFOUND"), `status` (the HTTP status of the failing reply, 0 if
// none; also as E2B's `statusCode`), `remoteCode`, `retryAfter`, `reason`.
// SPDX-License-Identifier: Apache-2.0

function setDetail(err, detail) {
  const d = detail || {}
  err.code = d.code || 'ASB_ERROR'
  err.status = d.status || 0
  if (d.status) err.statusCode = d.status
  err.remoteCode = d.remoteCode || ''
  err.retryAfter = d.retryAfter === undefined ? -1 : d.retryAfter
  err.reason = d.reason || ''
}

class SandboxError extends Error {
  constructor(message, detail) {
    super(message)
    this.name = new.target.name
    setDetail(this, detail)
  }
}
class TimeoutError extends SandboxError {}
class InvalidArgumentError extends SandboxError {}
class NotEnoughSpaceError extends SandboxError {}
class NotFoundError extends SandboxError {}
class FileNotFoundError extends NotFoundError {}
class SandboxNotFoundError extends NotFoundError {}
/** The sandbox existed and ended; `reason` says why (timeout, killed, oom, ...). */
class SandboxGoneError extends SandboxNotFoundError {}
class TemplateError extends SandboxError {}
class RateLimitError extends SandboxError {}
class PermissionDeniedError extends SandboxError {}
/** A named command does not exist (HTTP 404 from the command server). */
class CommandNotFoundError extends NotFoundError {}
/** A named command raised; `type` is the remote error's type ("ValueError"). */
class CommandFailedError extends SandboxError {
  get type() {
    return this.remoteCode
  }
}
/** Cancelled: an AbortSignal fired, or the handle was closed during the call. */
class OperationCancelledError extends SandboxError {
  constructor(message, detail) {
    super(message, detail)
    this.name = 'AbortError'
  }
}

/** A coding agent's turn that failed (AgentSession.send without
 * check: false); `turn` is its result. */
class AgentTurnError extends SandboxError {
  constructor(message, turn) {
    super(message, { code: 'ASB_ERROR' })
    this.turn = turn
  }
}

// As in E2B: not SandboxErrors.
class AuthenticationError extends Error {
  constructor(message, detail) {
    super(message)
    this.name = new.target.name
    setDetail(this, detail)
  }
}
/** The git remote wanted credentials, or refused them (sandbox.git). */
class GitAuthError extends AuthenticationError {}
/** push/pull without a remote or branch on a branch with no upstream. */
class GitUpstreamError extends SandboxError {}
class BuildError extends Error {
  constructor(message, detail) {
    super(message)
    this.name = new.target.name
    setDetail(this, detail)
  }
}

/** A command exited with a non-zero code. It is also its result. */
class CommandExitError extends SandboxError {
  constructor(result, detail) {
    super(result.error || `Command exited with code ${result.exitCode} and error:\n${result.stderr}`,
      Object.assign({ code: 'ASB_ECOMMANDEXIT' }, detail))
    this.result = result
  }

  get exitCode() {
    return this.result.exitCode
  }

  get error() {
    return this.result.error
  }

  get stdout() {
    return this.result.stdout
  }

  get stderr() {
    return this.result.stderr
  }
}

/** A function run by sandboxed() threw in the sandbox. */
class RemoteError extends Error {
  constructor(name, message, stack) {
    super(message)
    this.name = 'RemoteError'
    this.remoteName = name
    this.remoteStack = stack || ''
    this.stack = `RemoteError: ${name}: ${message}\n--- in the sandbox ---\n${stack || ''}`
  }
}

const byCode = {
  ASB_EINVAL: InvalidArgumentError,
  ASB_ENOTFOUND: NotFoundError,
  ASB_ETIMEOUT: TimeoutError,
  ASB_EAUTH: AuthenticationError,
  ASB_ERATELIMIT: RateLimitError,
  ASB_ENOSPACE: NotEnoughSpaceError,
  ASB_ETEMPLATE: TemplateError,
  ASB_ESANDBOXNOTFOUND: SandboxNotFoundError,
  ASB_ESANDBOXGONE: SandboxGoneError,
  ASB_ECANCELED: OperationCancelledError,
  ASB_EBUILD: BuildError,
  ASB_ECOMMANDNOTFOUND: CommandNotFoundError,
  ASB_ECOMMANDFAILED: CommandFailedError,
  ASB_EPERM: PermissionDeniedError,
  ASB_EGITAUTH: GitAuthError,
  ASB_EGITUPSTREAM: GitUpstreamError
}

/**
 * The error for a failed C call. detail is the addon's
 * [http, message, remoteCode, retryAfter, reason, codeName].
 * notFound: the class for ASB_ENOTFOUND (FileNotFoundError for files).
 */
function fromStatus(rc, detail, notFound) {
  const [status, message, remoteCode, retryAfter, reason, code] = detail
  const d = { code, status, remoteCode, retryAfter, reason }
  let cls = byCode[code] || SandboxError
  if (code === 'ASB_ENOTFOUND' && notFound) cls = notFound
  return new cls(message, d)
}

module.exports = {
  SandboxError,
  TimeoutError,
  InvalidArgumentError,
  NotEnoughSpaceError,
  NotFoundError,
  FileNotFoundError,
  SandboxNotFoundError,
  SandboxGoneError,
  TemplateError,
  RateLimitError,
  PermissionDeniedError,
  CommandNotFoundError,
  CommandFailedError,
  OperationCancelledError,
  AgentTurnError,
  AuthenticationError,
  GitAuthError,
  GitUpstreamError,
  BuildError,
  CommandExitError,
  RemoteError,
  fromStatus
}
