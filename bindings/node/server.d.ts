// Type declarations of agent-sandbox/server (docs/node.md).
// SPDX-License-Identifier: Apache-2.0

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
export type ArgType = 'string' | 'integer' | 'float' | 'boolean' | 'json'

/** A bare type is required; with a default (or required: false) optional. */
export type ArgSpec = ArgType | { type?: ArgType; required?: boolean; default?: JsonValue; description?: string }

export interface CommandSpec {
  description?: string
  args?: Record<string, ArgSpec>
  /** Not listed by GET /commands (still callable). */
  hidden?: boolean
}

export type Handler = (args: Record<string, JsonValue>) => JsonValue | void | Promise<JsonValue | void>

export interface ServeOpts {
  /** Default 0.0.0.0. */
  host?: string
  /** X-Access-Token required (default $ASB_SERVER_TOKEN; '' = none). */
  token?: string
  maxBodyBytes?: number
  maxConnections?: number
  /** How long stopping waits for calls in progress (default 10 000). */
  shutdownGraceMs?: number
}

export declare class ServerError extends Error {}

export declare class Server {
  constructor(options?: ServeOpts)
  /** The port it listens on (0 when stopped). */
  port: number
  command(name: string, fn: Handler): this
  command(name: string, spec: CommandSpec, fn: Handler): this
  describe(): Array<{ name: string; description: string; args: Record<string, ArgSpec> }>
  call(name: string, args?: Record<string, JsonValue>): Promise<JsonValue | void>
  start(port?: number, options?: ServeOpts): Promise<this>
  stop(): Promise<void>
  wait(): Promise<void>
}

export declare const defaultServer: Server
export declare function command<H extends Handler>(name: string, fn: H): H
export declare function command<H extends Handler>(name: string, spec: CommandSpec, fn: H): H
/** Serve the registered commands (SIGTERM/SIGINT stop it and end the
 * process unless handleSignals is false). */
export declare function start(port?: number, options?: ServeOpts & { handleSignals?: boolean }): Promise<Server>

declare const _default: {
  Server: typeof Server
  ServerError: typeof ServerError
  command: typeof command
  start: typeof start
  defaultServer: Server
}
export default _default
