/* The built-in drivers' programs: a node script and the set-up line of an
 * interactive bash. Both take cells on their fd 3 / stdin and report on
 * their fd 4; stdout and stderr are the process's own, read by the server.
 * SPDX-License-Identifier: Apache-2.0 */
#include "drivers.h"

/* Node: one JSON request per line on fd 3 ({seq, silent, code}); events as
 * JSON lines on fd 4: ready, display {data, main}, error {name, value,
 * traceback}, done {seq}. Cells run in the main context, so state persists;
 * a cell whose completion value is a promise is awaited; a cell that uses
 * top-level await is run as an async function (its declarations stay
 * local to it). SIGINT interrupts a running cell. */
const char ci_node_driver[] =
    "'use strict';\n"
    "const vm = require('vm'), util = require('util'), fs = require('fs'),\n"
    "  path = require('path'), Module = require('module');\n"
    "const send = (o) => fs.writeSync(4, JSON.stringify(o) + '\\n');\n"
    "globalThis.require = Module.createRequire(path.join(process.cwd(), '[cell]'));\n"
    "const bundle = (v) => {\n"
    "  if (v && typeof v === 'object' && typeof v._repr_mimebundle_ === 'function')\n"
    "    return v._repr_mimebundle_();\n"
    "  return { 'text/plain': util.inspect(v) };\n"
    "};\n"
    "/* display(value) or display({'text/html': '<b>x</b>'}, {raw: true}) */\n"
    "globalThis.display = (v, opts) => {\n"
    "  send({ t: 'display', main: false,\n"
    "         data: opts && opts.raw ? v : bundle(v) });\n"
    "};\n"
    "/* the stack without the driver's own frames */\n"
    "const userStack = (s) => {\n"
    "  const lines = String(s || '').split('\\n'), out = [];\n"
    "  for (const l of lines) { if (/node:vm|\\[eval\\]/.test(l)) break; out.push(l); }\n"
    "  return out.join('\\n');\n"
    "};\n"
    "const describe = (e) => {\n"
    "  if (e instanceof Error || (e && typeof e === 'object' && 'stack' in e))\n"
    "    return { name: String(e.name || 'Error'), value: String(e.message ?? ''),\n"
    "             traceback: userStack(e.stack) };\n"
    "  return { name: 'Error', value: typeof e === 'string' ? e : util.inspect(e),\n"
    "           traceback: '' };\n"
    "};\n"
    "let onInterrupt = null;\n"
    "process.on('SIGINT', () => { if (onInterrupt) onInterrupt(); });\n"
    "process.on('uncaughtException', (e) => process.stderr.write(\n"
    "  'Uncaught ' + (e && e.stack ? e.stack : String(e)) + '\\n'));\n"
    "process.on('unhandledRejection', (e) => process.stderr.write(\n"
    "  'Unhandled rejection: ' + (e && e.stack ? e.stack : String(e)) + '\\n'));\n"
    "async function run(req) {\n"
    "  const filename = '<cell>';\n"
    "  let value, err = null, failed = false;\n"
    "  try {\n"
    "    let script;\n"
    "    try { script = new vm.Script(req.code, { filename }); }\n"
    "    catch (e) {\n"
    "      if (!(e instanceof SyntaxError) || !/\\bawait\\b/.test(req.code)) throw e;\n"
    "      /* top-level await: an async function that returns the last line's\n"
    "       * value when that line is an expression */\n"
    "      const lines = req.code.replace(/\\s+$/, '').split('\\n');\n"
    "      const last = lines.pop().replace(/;\\s*$/, '');\n"
    "      try {\n"
    "        script = new vm.Script('(async () => {\\n' + lines.join('\\n') +\n"
    "          '\\nreturn (' + last + '\\n)})()', { filename });\n"
    "      } catch (_) {\n"
    "        script = new vm.Script('(async () => {\\n' + req.code + '\\n})()', { filename });\n"
    "      }\n"
    "    }\n"
    "    value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });\n"
    "    if (value && typeof value.then === 'function') {\n"
    "      value = await new Promise((resolve, reject) => {\n"
    "        onInterrupt = () => reject(Object.assign(new Error(\n"
    "          'Script execution was interrupted by `SIGINT`'), { name: 'Error' }));\n"
    "        value.then(resolve, reject);\n"
    "      });\n"
    "    }\n"
    "  } catch (e) { err = e; failed = true; }\n"
    "  onInterrupt = null;\n"
    "  if (failed) send(Object.assign({ t: 'error' }, describe(err)));\n"
    "  else if (value !== undefined && !req.silent)\n"
    "    send({ t: 'display', main: true, data: bundle(value) });\n"
    "  send({ t: 'done', seq: req.seq });\n"
    "}\n"
    "let chain = Promise.resolve(), buf = '';\n"
    "const input = fs.createReadStream(null, { fd: 3, encoding: 'utf8' });\n"
    "input.on('data', (chunk) => {\n"
    "  buf += chunk;\n"
    "  let i;\n"
    "  while ((i = buf.indexOf('\\n')) >= 0) {\n"
    "    const req = JSON.parse(buf.slice(0, i));\n"
    "    buf = buf.slice(i + 1);\n"
    "    chain = chain.then(() => run(req));\n"
    "  }\n"
    "});\n"
    "input.on('end', () => process.exit(0));\n"
    "send({ t: 'ready' });\n";

/* Bash: interactive (so SIGINT abandons the running command line and the
 * shell lives on) without line editing, prompts or history. Each cell is a
 * line that reads the cell's file into a variable and evals it, at the top
 * level so declarations stay global; PROMPT_COMMAND reports
 * "D<seq> <status>" on fd 4 before the next prompt, also after SIGINT. */
const char ci_bash_init[] =
    "PS1=''; PS2=''; PS0=''; PS4='+ '; set +o history +o histexpand +m; "
    "unset HISTFILE; "
    "PROMPT_COMMAND='__asb_s=$?; printf \"D%s %s\\n\" \"${__asb_n:-0}\" \"$__asb_s\" >&4'\n";
