// Named commands of the node-hello example template (port 9000). Each is a
// JS function; its arguments are typed by the schema (a bare type is
// required, one with a default is optional) and checked and coerced by the
// library before the function runs; its return value (or Promise) is the
// result the client gets from sandbox.run(...); what it throws is an error
// reply (the client's CommandFailedError, with the error's name as type).
// SPDX-License-Identifier: Apache-2.0
import { command, start } from 'agent-sandbox/server'

command('hello', {
  description: 'Greets someone.',
  args: { name: { type: 'string', default: 'world', description: 'who to greet' } }
}, ({ name }) => `${process.env.HELLO_GREETING || 'Hello'}, ${name}!`)

command('add', {
  description: 'Adds two numbers (a is an integer, b a float).',
  args: { a: 'integer', b: { type: 'float', default: 0.5 } }
}, ({ a, b }) => a + b)

command('stats', {
  description: 'Count, sum and mean of a list of numbers.',
  args: { values: 'json', label: { type: 'string', required: false } }
}, async ({ values, label }) => {
  if (!Array.isArray(values) || values.length === 0) throw new RangeError('values must be a non-empty array')
  const sum = values.reduce((s, v) => s + v, 0)
  return { label: label ?? null, count: values.length, sum, mean: sum / values.length }
})

command('slow', {
  description: 'Waits ms milliseconds on the event loop, then answers.',
  args: { ms: { type: 'integer', default: 200 } }
}, ({ ms }) => new Promise((resolve) => setTimeout(() => resolve(ms), ms)))

command('secret', { description: 'Not listed.', hidden: true }, () => 'hidden but callable')

await start(9000)
