// ESM entry of agent-sandbox/compat/code-interpreter: the CommonJS module's exports.
// SPDX-License-Identifier: Apache-2.0
import m from './compat-code-interpreter.js'

export const {
  Sandbox, SandboxPaginator, E2B, CommandHandle, WatchHandle, FileType, FilesystemEventType, SandboxError, TimeoutError, InvalidArgumentError, NotEnoughSpaceError, NotFoundError, FileNotFoundError, SandboxNotFoundError, AuthenticationError, TemplateError, RateLimitError, BuildError, FileUploadError, ServiceBusyError, CommandExitError, Result, Execution, ExecutionError, OutputMessage, ChartType, ScaleType
} = m
export default m.default
