// ESM types of agent-sandbox/compat: lib/compat.mjs, whose default export is,
// as in e2b's ESM build, the object of its named exports.
// SPDX-License-Identifier: Apache-2.0
import * as m from './compat.js'
export * from './compat.js'
declare const _default: Omit<typeof m, 'default'>
export default _default
