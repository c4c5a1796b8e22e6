// ESM types of agent-sandbox/server.
// SPDX-License-Identifier: Apache-2.0
import m from './server.js'
export * from './server.js'
export default m
