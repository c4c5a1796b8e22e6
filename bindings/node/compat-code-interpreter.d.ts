// Type declarations of agent-sandbox/compat/code-interpreter: the surface of
// npm `@e2b/code-interpreter` 2.x (docs/node-compat.md).
// SPDX-License-Identifier: Apache-2.0
import * as e2b from './compat'
import { ConnectionOpts } from './types'

export * from './compat'
export { Result, Execution, ExecutionError, OutputMessage, Logs, Context, RunCodeOpts } from './types'

/** E2B's code interpreter sandbox (default template code-interpreter-v1). */
export declare class Sandbox extends e2b.Sandbox {}

export declare class E2B {
  constructor(opts?: ConnectionOpts)
  readonly Sandbox: typeof Sandbox
}

export declare const ChartType: {
  readonly LINE: 'line'
  readonly SCATTER: 'scatter'
  readonly BAR: 'bar'
  readonly PIE: 'pie'
  readonly BOX_AND_WHISKER: 'box_and_whisker'
  readonly SUPERCHART: 'superchart'
  readonly UNKNOWN: 'unknown'
}
export type ChartType = (typeof ChartType)[keyof typeof ChartType]
export declare const ScaleType: {
  readonly LINEAR: 'linear'
  readonly DATETIME: 'datetime'
  readonly CATEGORICAL: 'categorical'
  readonly LOG: 'log'
  readonly SYMLOG: 'symlog'
  readonly LOGIT: 'logit'
  readonly FUNCTION: 'function'
  readonly FUNCTIONLOG: 'functionlog'
  readonly ASINH: 'asinh'
}
export type ScaleType = (typeof ScaleType)[keyof typeof ScaleType]

/** require(): the default export is Sandbox (as in e2b's CommonJS build). */
export default Sandbox
