// Type declarations of agent-sandbox (docs/node.md).
// SPDX-License-Identifier: Apache-2.0
import { SandboxBase, SandboxInfo, SandboxListOpts, ConnectionOpts, CallOpts } from './types'

export {
  ConnectionOpts, CallOpts, SandboxState, SandboxOpts, SandboxConnectOpts, SandboxListOpts, SandboxInfo,
  SandboxNetworkOpts, SandboxNetworkUpdate, SandboxNetworkInfo, SandboxNetworkSelector, SandboxNetworkRule,
  SandboxNetworkRules, SandboxNetworkTransform, SandboxEgressProxyOpts,
  SandboxPage, SandboxSwapInfo, SandboxMetrics, CommandResult, OutputHandler, CommandStartOpts, CommandConnectOpts,
  ProcessInfo, OutputChunk, CommandHandle, Commands, PtyCreateOpts, Pty, FileType, FilesystemEventType,
  WriteInfo, EntryInfo, FilesystemEvent, FilesystemRequestOpts, FilesystemReadOpts, FilesystemWriteOpts,
  WriteData, WriteEntry, WatchOpts, WatchHandle, PollingWatchHandle, Files, JsonValue, Result, ExecutionError, OutputMessage,
  Logs, Execution, Context, RunCodeOpts, NamedCommandArg, NamedCommand, RunCommandOpts, SessionInfo,
  Session, TemplateInfo, Template, Volume, VolumeFileType, VolumeInfo, VolumeAndToken, VolumeEntryStat,
  VolumeApiOpts, VolumeMetadataOpts, VolumeWriteOpts, VolumeReadOpts, Secrets, SecretInfo, SecretsListOpts, SandboxedOpts, SandboxedFunction, sandboxed, libraryVersion,
  ErrorDetail, SandboxError, TimeoutError, InvalidArgumentError, NotEnoughSpaceError, NotFoundError,
  FileNotFoundError, SandboxNotFoundError, SandboxGoneError, TemplateError, RateLimitError,
  PermissionDeniedError, CommandNotFoundError, CommandFailedError, OperationCancelledError,
  AuthenticationError, BuildError, CommandExitError, RemoteError, AgentInfo, AgentEvent,
  AgentEventHandler, AgentTurn, AgentCallOpts, AgentSessionOpts, AgentSendOpts, AgentEventsOpts,
  AgentInstallOpts, AgentSession, Agents, AgentTurnError,
  Git, GitRequestOpts, GitCloneOpts, GitInitOpts, GitRemoteAddOpts, GitCommitOpts, GitAddOpts,
  GitResetMode, GitResetOpts, GitRestoreOpts, GitDeleteBranchOpts, GitPushOpts, GitPullOpts, GitConfigScope,
  GitConfigOpts, GitDangerouslyAuthenticateOpts, GitFileStatus, GitStatus, GitBranches, GitAuthError,
  GitUpstreamError
} from './types'

/** What a fork got of its parent: its running processes and memory, or its files only. */
export type ForkMode = 'processes' | 'files'
/** The fork options (docs/snapshots.md). */
export interface ForkOpts {
  /** Each fork's lifetime (default 15 s, E2B's). */
  timeoutMs?: number
  /** Undefined: the engine's choice (a --pause-criu engine keeps them); false: boot fresh on the files. */
  keepProcesses?: boolean
}

/** A sandbox: create, connect, list, and its parts (commands, files, pty,
 * code, named commands). */
export declare class Sandbox extends SandboxBase {
  /** Every sandbox (all pages), newest first. */
  static list(opts?: SandboxListOpts): Promise<SandboxInfo[]>
  /** The snapshots' ids (every page), of sandboxId, matching name (docs/snapshots.md). */
  static listSnapshots(opts?: ConnectionOpts & CallOpts & { sandboxId?: string; name?: string }): Promise<string[]>
  /** The sandbox's files now as a snapshot: its id, "<name>:default" (files, not processes). */
  createSnapshot(opts?: CallOpts & { name?: string }): Promise<string>
  /** A new sandbox with this one's files now (timeoutMs: its lifetime, default 15 s); on a
   * --pause-criu engine its processes too unless keepProcesses is false (docs/snapshots.md). */
  fork(opts?: CallOpts & ForkOpts): Promise<this>
  /** count (1..100) forks in one call: a sandbox or the Error that kept each from starting. */
  forkMany(count: number, opts?: CallOpts & ForkOpts): Promise<Array<this | Error>>
  /** A fork's 'processes' or 'files' (what it got of its parent); undefined when not a fork. */
  readonly forkMode: ForkMode | undefined
  /** The token its ports want (e2b-traffic-access-token) with network allowPublicTraffic false. */
  readonly trafficAccessToken: string | undefined
  /** The MCP gateway's URL (port 50005, "/mcp"); no I/O. */
  getMcpUrl(): string
  /** The gateway's bearer token (NotFoundError: it runs no gateway). */
  getMcpToken(opts?: CallOpts): Promise<string>
}
export default Sandbox
