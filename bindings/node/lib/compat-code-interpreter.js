'use strict'
// agent-sandbox/compat/code-interpreter: the public surface of
// `@e2b/code-interpreter` (2.x): e2b's plus Sandbox.runCode and code
// contexts, results, charts' enums; Sandbox.create defaults to the
// code-interpreter-v1 template.
// SPDX-License-Identifier: Apache-2.0
const e2b = require('./compat.js')
const base = require('./sandbox.js')

class Sandbox extends e2b.Sandbox {
  /** E2B's default run timeout is 60 s. */
  async runCode(code, opts = {}) {
    return super.runCode(code, Object.assign({ timeoutMs: 60_000 }, opts))
  }
}
Sandbox._defaultTemplate = 'code-interpreter-v1'

class E2B extends e2b.E2B {
  static _sandboxClass() {
    return Sandbox
  }
}

const ChartType = Object.freeze({ LINE: 'line', SCATTER: 'scatter', BAR: 'bar', PIE: 'pie', BOX_AND_WHISKER: 'box_and_whisker', SUPERCHART: 'superchart', UNKNOWN: 'unknown' })
const ScaleType = Object.freeze({ LINEAR: 'linear', DATETIME: 'datetime', CATEGORICAL: 'categorical', LOG: 'log', SYMLOG: 'symlog', LOGIT: 'logit', FUNCTION: 'function', FUNCTIONLOG: 'functionlog', ASINH: 'asinh' })

module.exports = Object.assign({}, e2b, {
  Sandbox,
  E2B,
  Result: base.Result,
  Execution: base.Execution,
  ExecutionError: base.ExecutionError,
  OutputMessage: base.OutputMessage,
  ChartType,
  ScaleType
})
module.exports.default = Sandbox
