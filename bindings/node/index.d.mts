// ESM types of agent-sandbox: lib/index.mjs.
// SPDX-License-Identifier: Apache-2.0
import { Sandbox } from './index.js'
export * from './index.js'
export default Sandbox
