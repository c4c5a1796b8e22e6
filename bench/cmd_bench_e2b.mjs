// cmd_bench's helper (bench/cmd_bench.c): the stock E2B JS SDK (npm e2b,
// tests/npm) runs commands.run('true') in a sandbox of cmd_bench's engine,
// in the rounds cmd_bench asks for, so that its latencies sit side by side
// with the C client's in one run. Configured as a user of E2B is: E2B_API_URL,
// E2B_SANDBOX_URL, E2B_API_KEY (set by cmd_bench).
// Protocol: cmd_bench writes "N THINK_US\n" on stdin; the helper runs N
// commands, each after THINK_US of think time, and answers one line of N
// latencies in µs ("ready" once connected; "error: ..." on a failure).
// usage: node bench/cmd_bench_e2b.mjs SANDBOX_ID   (started by cmd_bench)
// SPDX-License-Identifier: Apache-2.0
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const { Sandbox } = await import(path.join(repo, 'tests/npm/node_modules/e2b/dist/index.mjs'))
const now = () => Number(process.hrtime.bigint()) / 1000 // µs
const sleepUs = (us) => new Promise((resolve) => setTimeout(resolve, us / 1000))

try {
  const sb = await Sandbox.connect(process.argv[2])
  for (let i = 0; i < 20; i++) await sb.commands.run('true') // warm: connections, shells
  console.log('ready')
  for await (const line of createInterface({ input: process.stdin })) {
    const [n, think] = line.trim().split(/\s+/).map(Number)
    if (!n) break
    const v = []
    for (let i = 0; i < n; i++) {
      await sleepUs(think)
      const t = now()
      const r = await sb.commands.run('true')
      const d = now() - t
      if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`)
      v.push(d.toFixed(1))
    }
    console.log(v.join(' '))
  }
} catch (e) {
  console.log(`error: ${e.message}`)
  process.exitCode = 1
}
process.exit() // kept-alive connections would hold the event loop open
