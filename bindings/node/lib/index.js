'use strict'
// agent-sandbox: disposable Linux sandboxes for AI agents, on
// libagentsandbox (docs/node.md). CommonJS entry; index.mjs re-exports it
// for ESM, so both share one set of classes.
// SPDX-License-Identifier: Apache-2.0
const native = require('./native.js')
const errors = require('./errors.js')
const sb = require('./sandbox.js')
const { Session, SessionInfo } = require('./sessions.js')
const { Template } = require('./templates.js')
const { sandboxed } = require('./sandboxed.js')
const { Agents, AgentSession } = require('./agents.js')
const { Git } = require('./git.js')
const { Volume, VolumeFileType } = require('./volume.js')
const { Secrets } = require('./secrets.js')

function libraryVersion() {
  return native.N.version()
}

module.exports = {
  Sandbox: sb.Sandbox,
  CommandHandle: sb.CommandHandle,
  WatchHandle: sb.WatchHandle,
  PollingWatchHandle: sb.PollingWatchHandle,
  Result: sb.Result,
  Execution: sb.Execution,
  ExecutionError: sb.ExecutionError,
  OutputMessage: sb.OutputMessage,
  Agents,
  AgentSession,
  Git,
  Session,
  SessionInfo,
  Template,
  Volume,
  VolumeFileType,
  Secrets,
  sandboxed,
  libraryVersion,
  FileType: Object.freeze({ FILE: 'file', DIR: 'dir', SYMLINK: 'symlink' }),
  FilesystemEventType: Object.freeze({ CHMOD: 'chmod', CREATE: 'create', REMOVE: 'remove', RENAME: 'rename', WRITE: 'write' }),
  ...Object.fromEntries(Object.entries(errors).filter(([k]) => k !== 'fromStatus'))
}
module.exports.default = module.exports.Sandbox
