// ESM entry of agent-sandbox: the CommonJS module's exports (one set of
// classes whichever way the package is loaded).
// SPDX-License-Identifier: Apache-2.0
import m from './index.js'

export const {
  Sandbox, CommandHandle, WatchHandle, PollingWatchHandle, Result, Execution, ExecutionError, OutputMessage, Agents, AgentSession, Git, Session,
  SessionInfo, Template, Volume, VolumeFileType, Secrets, sandboxed, libraryVersion, FileType, FilesystemEventType, SandboxError,
  TimeoutError, InvalidArgumentError, NotEnoughSpaceError, NotFoundError, FileNotFoundError,
  SandboxNotFoundError, SandboxGoneError, TemplateError, RateLimitError, PermissionDeniedError,
  CommandNotFoundError, CommandFailedError, OperationCancelledError, AuthenticationError, GitAuthError, GitUpstreamError, BuildError,
  CommandExitError, RemoteError, AgentTurnError
} = m
export default m.Sandbox
