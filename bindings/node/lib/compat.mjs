// ESM entry of agent-sandbox/compat: the CommonJS module's exports.
// SPDX-License-Identifier: Apache-2.0
import m from './compat.js'

export const {
  Sandbox, SandboxPaginator, E2B, CommandHandle, WatchHandle, FileType, FilesystemEventType, SandboxError, TimeoutError, InvalidArgumentError, NotEnoughSpaceError, NotFoundError, FileNotFoundError, SandboxNotFoundError, AuthenticationError, TemplateError, RateLimitError, BuildError, FileUploadError, ServiceBusyError, CommandExitError
} = m
export default m.default
