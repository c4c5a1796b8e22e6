// ESM entry of agent-sandbox/compat: the CommonJS module's exports.
// SPDX-License-Identifier: Apache-2.0
import m from './compat.js'

export const {
  ALL_TRAFFIC, Sandbox, SandboxPaginator, SnapshotPaginator, E2B, Volume, VolumeFileType, VolumeError, VolumeNotFoundError, VolumePathNotFoundError, CommandHandle, WatchHandle, FileType, FilesystemEventType, SandboxError, TimeoutError, InvalidArgumentError, NotEnoughSpaceError, NotFoundError, FileNotFoundError, SandboxNotFoundError, AuthenticationError, GitAuthError, GitUpstreamError, TemplateError, RateLimitError, BuildError, FileUploadError, ServiceBusyError, CommandExitError,
  Template, TemplateBase, ReadyCmd, waitForPort, waitForURL, waitForProcess, waitForFile, waitForTimeout, LogEntry, LogEntryStart, LogEntryEnd, defaultBuildLogger
} = m
// As in e2b's (and @e2b/code-interpreter's) ESM build, the default export
// is an object of the named exports (require() gives Sandbox, also as in
// theirs).
const { default: _cjsDefault, ...named } = m
export default Object.freeze(named)
