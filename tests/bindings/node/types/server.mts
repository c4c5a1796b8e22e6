// A template's commands (type-checked only).
// SPDX-License-Identifier: Apache-2.0
import { command, start, Server } from 'agent-sandbox/server'

command('hello', { args: { name: { type: 'string', default: 'world' } } }, ({ name }) => `Hello, ${String(name)}!`)
command('add', { args: { a: 'integer', b: 'integer' } }, async ({ a, b }) => Number(a) + Number(b))
// @ts-expect-error: not an argument type
command('bad', { args: { x: 'number' } }, () => null)
const s = new Server({ token: '' })
s.command('ping', () => 'pong')
const started: Server = await s.start(0)
const port: number = started.port
await start(9000, { handleSignals: false })
void port
