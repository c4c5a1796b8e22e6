// ESM entry of agent-sandbox/server: the CommonJS module's exports.
// SPDX-License-Identifier: Apache-2.0
import m from './server.js'

export const { Server, ServerError, command, start, defaultServer } = m
export default m
