// E2B's code interpreter docs (JS): run code, stream output, errors,
// state across runs, contexts, charts and display data.
import { Sandbox } from '@e2b/code-interpreter'

const sandbox = await Sandbox.create()
const execution = await sandbox.runCode('x = 1; x += 1; x')
console.log(execution.text) // outputs 2
const out = []
const printed = await sandbox.runCode('print("streamed")', { onStdout: (m) => out.push(m.line) })
console.log(printed.text, JSON.stringify(printed.logs.stdout), JSON.stringify(out))
const failed = await sandbox.runCode('undefined_name')
console.log(failed.error.name)
console.log((await sandbox.runCode('x * 5')).text)
const ctx = await sandbox.createCodeContext({ language: 'python', cwd: '/tmp' })
console.log(ctx.language, ctx.cwd)
console.log((await sandbox.runCode('import os; os.getcwd()', { context: ctx })).text)
const contexts = await sandbox.listCodeContexts()
console.log(contexts.some((c) => c.id === ctx.id))
await sandbox.removeCodeContext(ctx)
const shown = await sandbox.runCode("from IPython.display import display, HTML\ndisplay(HTML('<i>hi</i>'))")
console.log(shown.results.length, shown.results[0].html, shown.results[0].isMainResult)
await sandbox.kill()
