// ESM types of agent-sandbox/compat/code-interpreter (default export: the
// object of its named exports, as in @e2b/code-interpreter's ESM build).
// SPDX-License-Identifier: Apache-2.0
import * as m from './compat-code-interpreter.js'
export * from './compat-code-interpreter.js'
declare const _default: Omit<typeof m, 'default'>
export default _default
