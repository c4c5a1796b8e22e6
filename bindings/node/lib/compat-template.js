'use strict'
// agent-sandbox/compat's Template: E2B's fluent template builder (npm `e2b`
// 2.x: Template(), TemplateBase, the ready-check helpers, LogEntry*,
// defaultBuildLogger) over the native Template.buildSteps, which hands the
// steps to the C library's asb_templates_build_steps: it packs and uploads
// the files of COPY steps from the file context directory by hash, starts
// the build and follows its log. What differs from E2B's: docs/node-compat.md,
// "Template builder".
// SPDX-License-Identifier: Apache-2.0
const fs = require('node:fs')
const path = require('node:path')
const { fileURLToPath } = require('node:url')
const errors = require('./errors.js')
const native = require('./templates.js')

// E2B's default base image: its own Debian base with E2B's tools, which is
// what our `base` template is. Building from it builds on `base`.
const DEFAULT_BASE_IMAGE = 'e2bdev/base'
const LIB_DIR = __dirname

class FileUploadError extends errors.BuildError {}

/** E2B's InstructionType (the `type` of a recorded step). */
const InstructionType = Object.freeze({ COPY: 'COPY', ENV: 'ENV', RUN: 'RUN', WORKDIR: 'WORKDIR', USER: 'USER' })

// As Python's shlex.quote, which E2B's generated commands follow: words of
// safe characters stay as they are (the commands, and so the build cache
// keys, are E2B's own), anything else is single-quoted.
function shellQuote(s) {
  s = String(s)
  if (s === '') return "''"
  if (!/[^\w@%+=:,./-]/.test(s)) return s
  return `'${s.replace(/'/g, `'"'"'`)}'`
}

// ---- call sites --------------------------------------------------------------------

/** The frames of the current stack from the first one outside this package
 * (E2B's getCallerFrame: a failed step's error shows where the step was
 * written). */
function callerFrames() {
  const lines = (new Error().stack || '').split('\n').slice(1)
  const i = lines.findIndex((l) => !l.includes(LIB_DIR + path.sep) && !/\(node:|at node:/.test(l))
  return i < 0 ? [] : lines.slice(i)
}

function getCallerFrame() {
  const f = callerFrames()
  return f.length ? f.join('\n') : undefined
}

/** The directory of the caller's source file (a template's default file
 * context), or undefined (a REPL). */
function getCallerDirectory() {
  const f = callerFrames()[0]
  if (!f) return undefined
  // "    at fn (/dir/file.js:1:2)" or "    at /dir/file.js:1:2" (or file:// URLs)
  const loc = (f.endsWith(')') ? f.slice(f.lastIndexOf('(') + 1, -1) : f.replace(/^\s*at\s+/, '')).replace(/:\d+:\d+$/, '')
  const file = loc.startsWith('file://') ? fileURLToPath(loc) : loc
  return path.isAbsolute(file) ? path.dirname(file) : undefined
}

// As E2B's errors: the stack is the call site's frames alone (its first
// line is the builder call that added the step).
function withStack(err, stack) {
  if (stack) err.stack = stack
  return err
}

// ---- helpers of E2B's template utils ------------------------------------------------

/** A COPY source must be relative and stay inside the context directory
 * (`a/../b` is fine, `../b` is not): TemplateError otherwise. */
function validateRelativePath(src, stackTrace) {
  if (path.isAbsolute(src)) {
    throw withStack(new errors.TemplateError(`Invalid source path "${src}": absolute paths are not allowed. Use a relative path within the context directory.`), stackTrace)
  }
  const n = path.normalize(src)
  if (n === '..' || n.startsWith('..' + path.sep)) {
    throw withStack(new errors.TemplateError(`Invalid source path "${src}": path escapes the context directory. The path must stay within the context directory.`), stackTrace)
  }
}

function normalizeBuildArguments(nameOrOptions, options) {
  let name, buildOptions
  if (typeof nameOrOptions === 'string') {
    name = nameOrOptions
    buildOptions = options || {}
  } else {
    const { alias, ...rest } = nameOrOptions || {}
    name = alias
    buildOptions = rest
  }
  if (!name) throw new errors.TemplateError('Name must be provided')
  return { name, buildOptions }
}

function padOctal(mode) {
  return mode.toString(8).padStart(4, '0')
}

// CSI, OSC, and the other ESC sequences a build's output may hold.
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;:?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][\s\S]*?(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g
function stripAnsi(s) {
  return String(s).replace(ANSI, '')
}

// ---- ready checks (the commands are E2B's, so templates behave the same) ----------

class ReadyCmd {
  constructor(cmd) {
    this._cmd = cmd
  }

  getCmd() {
    return this._cmd
  }
}

const waitForPort = (port) => new ReadyCmd(`[ -n "$(ss -Htuln sport = :${port})" ]`)
const waitForURL = (url, statusCode = 200) => new ReadyCmd(`curl -s -o /dev/null -w "%{http_code}" ${shellQuote(url)} | grep -q "${statusCode}"`)
const waitForProcess = (name) => new ReadyCmd(`pgrep ${shellQuote(name)} > /dev/null`)
const waitForFile = (file) => new ReadyCmd(`[ -f ${shellQuote(file)} ]`)
const waitForTimeout = (ms) => new ReadyCmd(`sleep ${Math.max(1, Math.floor(ms / 1000))}`)

// ---- build logs --------------------------------------------------------------------

class LogEntry {
  constructor(timestamp, level, message) {
    this.timestamp = timestamp
    this.level = level
    this.message = stripAnsi(message)
  }

  toString() {
    return `[${this.timestamp.toISOString()}] [${this.level}] ${this.message}`
  }
}
class LogEntryStart extends LogEntry {
  constructor(timestamp, message) {
    super(timestamp, 'debug', message)
  }
}
class LogEntryEnd extends LogEntry {
  constructor(timestamp, message) {
    super(timestamp, 'debug', message)
  }
}

const LEVELS = { debug: 0, info: 1, warn: 2, error: 3 }

/** An onBuildLogs that prints `<seconds since start> | <time> <LEVEL> <message>`
 * lines of minLevel (default info) and above to stdout (E2B's also draws
 * a live timer on a terminal). */
function defaultBuildLogger(options = {}) {
  const floor = LEVELS[options.minLevel || 'info']
  let start = Date.now()
  return (e) => {
    if (e instanceof LogEntryStart) {
      start = Date.now()
      return
    }
    if (e instanceof LogEntryEnd || LEVELS[e.level] < floor) return
    const t = `${((Date.now() - start) / 1000).toFixed(1)}s`.padEnd(5)
    const at = e.timestamp.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    process.stdout.write(`${t} | ${at} ${e.level.toUpperCase().padEnd(5)} ${e.message}\n`)
  }
}

function entryOf(line) {
  const level = line.level in LEVELS ? line.level : 'info'
  return new LogEntry(line.timestampMs ? new Date(line.timestampMs) : new Date(), level, line.message || '')
}

// ---- Dockerfiles -------------------------------------------------------------------

// Hand-written: the instruction word, line continuations and comments are
// all E2B's reading of a Dockerfile needs (no npm package does just that
// without pulling in a Docker client).
function dockerInstructions(text) {
  const out = []
  let cur = ''
  const push = () => {
    const t = cur.trim()
    cur = ''
    if (!t) return
    const sp = t.search(/\s/)
    out.push(sp < 0 ? [t.toUpperCase(), ''] : [t.slice(0, sp).toUpperCase(), t.slice(sp).trim()])
  }
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, '')
    if (line.trimStart().startsWith('#') || (!cur && !line.trim())) continue
    if (line.endsWith('\\')) {
      cur += line.slice(0, -1) + ' '
      continue
    }
    cur += line
    push()
  }
  push()
  return out
}

// Shell-like words: quotes group, backslash escapes.
function shellWords(s) {
  const out = []
  let cur = null
  let q = null
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]
    if (q) {
      if (ch === q) q = null
      else if (ch === '\\' && q === '"' && i + 1 < s.length) cur += s[++i]
      else cur += ch
    } else if (ch === '"' || ch === "'") {
      q = ch
      cur = cur || ''
    } else if (ch === '\\' && i + 1 < s.length) {
      cur = (cur || '') + s[++i]
    } else if (/\s/.test(ch)) {
      if (cur !== null) out.push(cur)
      cur = null
    } else {
      cur = (cur || '') + ch
    }
  }
  if (cur !== null) out.push(cur)
  return out
}

function jsonOrWords(v) {
  try {
    const a = JSON.parse(v)
    if (Array.isArray(a)) return a.map(String)
  } catch (_) {}
  return shellWords(v)
}

function dockerEnvs(value, arg) {
  const first = value.split(/\s+/, 1)[0]
  if (first.includes('=')) {
    const o = {}
    for (const w of shellWords(value)) {
      const i = w.indexOf('=')
      if (i > 0) o[w.slice(0, i)] = w.slice(i + 1)
      else if (arg) o[w] = ''
    }
    return o
  }
  const m = /^(\S+)\s+([\s\S]*)$/.exec(value)
  if (m) return { [m[1]]: m[2].replace(/^["']|["']$/g, '') }
  return arg && first ? { [first]: '' } : {}
}

/** Adds the Dockerfile's steps to t (as E2B reads one: root in / while the
 * file runs, then user in /home/user unless it says otherwise; CMD /
 * ENTRYPOINT is the start command, ready after 20 s); returns its image. */
function parseDockerfile(contentOrPath, t) {
  let text = contentOrPath
  try {
    if (fs.statSync(contentOrPath).isFile()) text = fs.readFileSync(contentOrPath, 'utf8')
  } catch (_) {}
  const ins = dockerInstructions(text)
  const froms = ins.filter(([k]) => k === 'FROM')
  if (froms.length > 1) throw new Error('Multi-stage Dockerfiles are not supported')
  if (!froms.length) throw new Error('Dockerfile must contain a FROM instruction')
  const image = froms[0][1].split(/\s+as\s+/i)[0].trim()
  let userSet = false
  let workdirSet = false
  t.setUser('root')
  t.setWorkdir('/')
  for (const [word, value] of ins) {
    if (!value || word === 'FROM') continue
    if (word === 'RUN') t.runCmd(value)
    else if (word === 'COPY' || word === 'ADD') {
      const parts = jsonOrWords(value)
      const chown = parts.find((p) => p.startsWith('--chown='))
      const paths = parts.filter((p) => !p.startsWith('--'))
      for (const src of paths.slice(0, -1)) t.copy(src, paths[paths.length - 1], { user: chown ? chown.slice(8) : undefined })
    } else if (word === 'WORKDIR') {
      t.setWorkdir(value)
      workdirSet = true
    } else if (word === 'USER') {
      t.setUser(value)
      userSet = true
    } else if (word === 'ENV' || word === 'ARG') {
      const e = dockerEnvs(value, word === 'ARG')
      if (Object.keys(e).length) t.setEnvs(e)
    } else if (word === 'CMD' || word === 'ENTRYPOINT') {
      let cmd = value
      try {
        const a = JSON.parse(value)
        if (Array.isArray(a)) cmd = a.join(' ')
      } catch (_) {}
      t.setStartCmd(cmd, waitForTimeout(20_000))
    }
  }
  if (!userSet) t.setUser('user')
  if (!workdirSet) t.setWorkdir('/home/user')
  return image
}

// ---- the builder -------------------------------------------------------------------

/** E2B's TemplateBase: the builder (every step method returns it) and the
 * statics that build and manage templates. */
class TemplateBase {
  constructor(options = {}) {
    this.baseImage = DEFAULT_BASE_IMAGE
    this.baseTemplate = undefined
    this.registryConfig = undefined
    this.startCmd = undefined
    this.readyCmd = undefined
    this.force = false
    this.forceNextLayer = false
    this.instructions = []
    this.fileContextPath = options.fileContextPath !== undefined ? String(options.fileContextPath) : (getCallerDirectory() || '.')
    // applied by the library when it packs COPY sources, before the
    // context's own .dockerignore (which the library reads itself)
    this.fileIgnorePatterns = options.fileIgnorePatterns || []
    this.stackTraces = []
  }

  /** The options of a call: the class's bound ones (a client's), then the
   * call's own where set. */
  static resolveOpts(opts) {
    const out = Object.assign({}, this.boundOpts || this._boundOpts || {})
    for (const [k, v] of Object.entries(opts || {})) if (v !== undefined) out[k] = v
    return out
  }

  _trace() {
    this.stackTraces.push(getCallerFrame())
    return this
  }

  _step(type, args, extra) {
    this.instructions.push(Object.assign({ type, args, force: this.forceNextLayer }, extra))
    return this._trace()
  }

  _from(image, template) {
    this.baseImage = image
    this.baseTemplate = template
    if (this.forceNextLayer) this.force = true
    return this._trace()
  }

  // bases

  fromDebianImage(variant = 'stable') { return this.fromImage(`debian:${variant}`) }
  fromUbuntuImage(variant = 'latest') { return this.fromImage(`ubuntu:${variant}`) }
  fromFedoraImage(variant = '44') { return this.fromImage(`fedora:${variant}`) }
  fromAlpineImage(variant = '3.24') { return this.fromImage(`alpine:${variant}`) }
  fromArchImage(variant = 'latest') { return this.fromImage(`archlinux:${variant}`) }
  fromPythonImage(version = '3') { return this.fromImage(`python:${version}`) }
  fromNodeImage(variant = 'lts') { return this.fromImage(`node:${variant}`) }
  fromBunImage(variant = 'latest') { return this.fromImage(`oven/bun:${variant}`) }
  /** E2B's default base image, which here is the `base` template. */
  fromBaseImage() { return this.fromImage(DEFAULT_BASE_IMAGE) }

  /** A container image as the base. This engine pulls from no registry:
   * name a local image, `oci:/dir[:name]` or `docker-archive:/file.tar`
   * (docs/templates.md). */
  fromImage(image, credentials) {
    if (credentials && (!credentials.username || !credentials.password)) {
      throw withStack(new errors.InvalidArgumentError('Both username and password are required when providing registry credentials'), getCallerFrame())
    }
    if (credentials) this.registryConfig = { type: 'registry', username: credentials.username, password: credentials.password }
    return this._from(image, undefined)
  }

  /** Another template as the base (`base`, one built before, ...). */
  fromTemplate(template) {
    return this._from(undefined, template)
  }

  fromAWSRegistry(image, c) {
    this.registryConfig = { type: 'aws', awsAccessKeyId: c.accessKeyId, awsSecretAccessKey: c.secretAccessKey, awsRegion: c.region }
    return this._from(image, undefined)
  }

  fromGCPRegistry(image, c) {
    let sa = c.serviceAccountJSON
    if (typeof sa === 'string' && !sa.trimStart().startsWith('{')) sa = fs.readFileSync(path.join(this.fileContextPath, sa), 'utf8')
    this.registryConfig = { type: 'gcp', serviceAccountJson: typeof sa === 'string' ? sa : JSON.stringify(sa) }
    return this._from(image, undefined)
  }

  /** A Dockerfile (its text or path) read into steps; its FROM is the base. */
  fromDockerfile(contentOrPath) {
    // the base's call site first, as for the other bases (a failed step's
    // number indexes these: 0 the base, i + 1 for step i)
    const at = this.stackTraces.length
    const image = parseDockerfile(contentOrPath, this)
    this._from(image, undefined)
    this.stackTraces.splice(at, 0, this.stackTraces.pop())
    return this
  }

  skipCache() {
    this.forceNextLayer = true
    return this
  }

  // files

  /** Copy files of the file context directory (paths or globs relative to
   * it) to dest, owned by options.user with options.mode. */
  copy(src, dest, options = {}) {
    const stack = getCallerFrame()
    for (const s of Array.isArray(src) ? src : [src]) {
      const srcString = s.toString()
      validateRelativePath(srcString, stack)
      this._step('COPY', [srcString, dest.toString(), options.user || '', options.mode ? padOctal(options.mode) : ''], {
        force: !!(options.forceUpload || this.forceNextLayer),
        forceUpload: options.forceUpload,
        resolveSymlinks: options.resolveSymlinks,
        gzip: options.gzip
      })
    }
    return this
  }

  copyItems(items) {
    const stack = getCallerFrame()
    for (const it of items) {
      try {
        this.copy(it.src, it.dest, { forceUpload: it.forceUpload, user: it.user, mode: it.mode, resolveSymlinks: it.resolveSymlinks, gzip: it.gzip })
      } catch (e) {
        throw withStack(e, stack)
      }
    }
    return this
  }

  remove(p, options = {}) {
    const args = ['rm']
    if (options.recursive) args.push('-r')
    if (options.force) args.push('-f')
    args.push(...(Array.isArray(p) ? p : [p]).map((x) => shellQuote(x.toString())))
    return this.runCmd(args.join(' '), { user: options.user })
  }

  rename(src, dest, options = {}) {
    const args = ['mv', shellQuote(src.toString()), shellQuote(dest.toString())]
    if (options.force) args.push('-f')
    return this.runCmd(args.join(' '), { user: options.user })
  }

  makeDir(p, options = {}) {
    const args = ['mkdir', '-p']
    if (options.mode) args.push(`-m ${padOctal(options.mode)}`)
    args.push(...(Array.isArray(p) ? p : [p]).map((x) => shellQuote(x.toString())))
    return this.runCmd(args.join(' '), { user: options.user })
  }

  makeSymlink(src, dest, options = {}) {
    const args = ['ln', '-s']
    if (options.force) args.push('-f')
    args.push(shellQuote(src.toString()), shellQuote(dest.toString()))
    return this.runCmd(args.join(' '), { user: options.user })
  }

  // commands

  /** A shell command (a list runs joined with &&) as options.user. */
  runCmd(command, options = {}) {
    const cmds = Array.isArray(command) ? command : [command]
    const args = [cmds.join(' && ')]
    if (options.user) args.push(options.user)
    return this._step('RUN', args)
  }

  pipInstall(packages, options = {}) {
    const g = options.g === undefined ? true : options.g
    const args = ['pip', 'install']
    if (g === false) args.push('--user')
    args.push(...(packages ? (Array.isArray(packages) ? packages : [packages]) : ['.']))
    return this.runCmd(args.join(' '), { user: g ? 'root' : undefined })
  }

  npmInstall(packages, options = {}) {
    const args = ['npm', 'install']
    if (options.g) args.push('-g')
    if (options.dev) args.push('--save-dev')
    if (packages) args.push(...(Array.isArray(packages) ? packages : [packages]))
    return this.runCmd(args.join(' '), { user: options.g ? 'root' : undefined })
  }

  bunInstall(packages, options = {}) {
    const args = ['bun', 'install']
    if (options.g) args.push('-g')
    if (options.dev) args.push('--dev')
    if (packages) args.push(...(Array.isArray(packages) ? packages : [packages]))
    return this.runCmd(args.join(' '), { user: options.g ? 'root' : undefined })
  }

  aptInstall(packages, options = {}) {
    const list = Array.isArray(packages) ? packages : [packages]
    const opts = (options.noInstallRecommends ? '--no-install-recommends ' : '') + (options.fixMissing ? '--fix-missing ' : '')
    return this.runCmd(['apt-get update', `DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes apt-get install -y ${opts}${list.join(' ')}`], { user: 'root' })
  }

  gitClone(url, p, options = {}) {
    const args = ['git', 'clone', shellQuote(url)]
    if (options.branch) args.push(`--branch ${shellQuote(options.branch)}`, '--single-branch')
    if (options.depth) args.push(`--depth ${options.depth}`)
    if (p) args.push(shellQuote(p.toString()))
    return this.runCmd(args.join(' '), { user: options.user })
  }

  /** E2B's mcp-gateway template only. */
  addMcpServer(servers) {
    if (this.baseTemplate !== 'mcp-gateway') {
      throw withStack(new errors.BuildError('MCP servers can only be added to mcp-gateway template'), getCallerFrame())
    }
    return this.runCmd(`mcp-gateway pull ${(Array.isArray(servers) ? servers : [servers]).join(' ')}`, { user: 'root' })
  }

  /** E2B's devcontainer template only (this engine has none). */
  betaDevContainerPrebuild(dir) {
    if (this.baseTemplate !== 'devcontainer') {
      throw withStack(new errors.BuildError('Devcontainers can only used in the devcontainer template'), getCallerFrame())
    }
    return this.runCmd(`devcontainer build --workspace-folder ${shellQuote(dir)}`, { user: 'root' })
  }

  betaSetDevContainerStart(dir) {
    if (this.baseTemplate !== 'devcontainer') {
      throw withStack(new errors.BuildError('Devcontainers can only used in the devcontainer template'), getCallerFrame())
    }
    const d = shellQuote(dir)
    return this.setStartCmd(`sudo devcontainer up --workspace-folder ${d} && sudo /prepare-exec.sh ${d} | sudo tee /devcontainer.sh > /dev/null && sudo chmod +x /devcontainer.sh && sudo touch /devcontainer.up`, waitForFile('/devcontainer.up'))
  }

  // settings

  setWorkdir(workdir) {
    return this._step('WORKDIR', [workdir.toString()])
  }

  setUser(user) {
    return this._step('USER', [user])
  }

  setEnvs(envs) {
    if (!Object.keys(envs).length) return this
    return this._step('ENV', Object.entries(envs).flatMap(([k, v]) => [k, v]))
  }

  /** The command sandboxes of the template start with, and the check that
   * says they are ready (a string or a ReadyCmd). */
  setStartCmd(startCommand, readyCommand) {
    this.startCmd = startCommand
    this.readyCmd = readyCommand instanceof ReadyCmd ? readyCommand.getCmd() : readyCommand
    return this._trace()
  }

  setReadyCmd(readyCommand) {
    this.readyCmd = readyCommand instanceof ReadyCmd ? readyCommand.getCmd() : readyCommand
    return this._trace()
  }

  // output

  /** E2B's builder JSON; forBuild: the library's form (the fifth COPY
   * argument is resolveSymlinks, E2B's base image is `base`). */
  _serialize(forBuild) {
    const steps = this.instructions.map((st) => {
      if (!forBuild) return st
      const out = { type: st.type, args: st.args.slice(), force: !!st.force }
      if (st.forceUpload !== undefined) out.forceUpload = st.forceUpload
      if (st.type === 'COPY') {
        while (out.args.length < 4) out.args.push('')
        out.args.push(st.resolveSymlinks ? 'true' : 'false')
      }
      return out
    })
    const data = { startCmd: this.startCmd, readyCmd: this.readyCmd, steps, force: this.force }
    let image = this.baseImage
    let base = this.baseTemplate
    if (forBuild && image === DEFAULT_BASE_IMAGE && base === undefined) {
      image = undefined
      base = 'base'
    }
    if (image !== undefined) data.fromImage = image
    if (base !== undefined) data.fromTemplate = base
    if (this.registryConfig !== undefined) data.fromImageRegistry = this.registryConfig
    return data
  }

  /** The template as E2B's builder JSON (without the files' hashes, which
   * the library computes when it builds). */
  static async toJSON(template, computeHashes = true) {
    void computeHashes
    return JSON.stringify(template._serialize(false), undefined, 2)
  }

  /** The template as a Dockerfile (image bases only). */
  static toDockerfile(template) {
    const t = template
    if (t.baseTemplate !== undefined) {
      throw new Error('Cannot convert template built from another template to Dockerfile. Templates based on other templates can only be built using the E2B API.')
    }
    if (t.baseImage === undefined) throw new Error('No base image specified for template')
    let out = `FROM ${t.baseImage}\n`
    for (const st of t.instructions) {
      if (st.type === 'RUN') out += `RUN ${st.args[0]}\n`
      else if (st.type === 'COPY') out += `COPY ${st.args[0]} ${st.args[1]}\n`
      else if (st.type === 'ENV') {
        const v = []
        for (let i = 0; i < st.args.length; i += 2) v.push(`${st.args[i]}=${st.args[i + 1]}`)
        out += `ENV ${v.join(' ')}\n`
      } else out += `${st.type} ${st.args.join(' ')}\n`
    }
    if (t.startCmd) out += `ENTRYPOINT ${t.startCmd}\n`
    return out
  }

  // building

  /** The library's failure as E2B's: BuildError (its stack at the builder
   * call of the step that failed), FileUploadError for an upload. */
  static _e2bError(e, t) {
    if (!e || typeof e.code !== 'string') return e
    let out
    if (/template upload/.test(e.message)) out = new FileUploadError(e.message, e)
    else if (e.code === 'ASB_EBUILD' || e.code === 'ASB_EINVAL') out = new errors.BuildError(e.message, e)
    else return e
    // the step that failed: the engine's, or the library's "steps[i] (...)" for
    // a step it refused before building (a COPY source that matches nothing)
    const refused = /^steps\[(\d+)\]/.exec(e.message)
    const step = e.build ? e.build.errorStep : refused ? Number(refused[1]) + 1 : -1
    if (step >= 0 && step < t.stackTraces.length) withStack(out, t.stackTraces[step])
    if (e.build) out.build = e.build
    return out
  }

  static async _build(template, name, o, background) {
    const t = template
    if (o.skipCache) t.force = true
    const onLog = o.onBuildLogs
    if (onLog) onLog(new LogEntry(new Date(), 'info', `Requesting build for template: ${name}${o.tags && o.tags.length ? ` with tags ${o.tags.join(', ')}` : ''}`))
    let st
    try {
      st = await native.Template.buildSteps(name, t._serialize(true), Object.assign({}, o, {
        contextDir: t.fileContextPath,
        ignorePatterns: t.fileIgnorePatterns,
        cpuCount: o.cpuCount || 2,
        memoryMB: o.memoryMB || 1024,
        skipCache: !!t.force,
        background,
        onLog: onLog ? (line) => onLog(entryOf(line)) : undefined
      }))
    } catch (e) {
      throw this._e2bError(e, t)
    }
    let tags = []
    try {
      tags = (await native.Template.getTags(st.templateId, o)).filter((x) => x.buildId === st.buildId).map((x) => x.tag)
    } catch (_) {}
    return { alias: name, name, tags: tags.length ? tags : (o.tags || []), templateId: st.templateId, buildId: st.buildId }
  }

  /** Build template as name ("app" or "app:tag"; or the deprecated
   * {alias}) and wait until it is ready. options: tags, cpuCount (2),
   * memoryMB (1024), skipCache, onBuildLogs, signal, connection options. */
  static async build(template, nameOrOptions, options) {
    const { name, buildOptions } = normalizeBuildArguments(nameOrOptions, options)
    const o = this.resolveOpts(buildOptions)
    if (o.onBuildLogs) o.onBuildLogs(new LogEntryStart(new Date(), 'Build started'))
    try {
      return await this._build(template, name, o, false)
    } finally {
      if (o.onBuildLogs) o.onBuildLogs(new LogEntryEnd(new Date(), 'Build finished'))
    }
  }

  /** Upload the files and start the build; resolve without waiting (follow
   * it with getBuildStatus). */
  static async buildInBackground(template, nameOrOptions, options) {
    const { name, buildOptions } = normalizeBuildArguments(nameOrOptions, options)
    return this._build(template, name, this.resolveOpts(buildOptions), true)
  }

  /** The state of a build and its log entries from options.logsOffset. */
  static async getBuildStatus(data, options = {}) {
    const o = this.resolveOpts(options)
    let st
    try {
      st = await native.Template.buildStatus(data.templateId, data.buildId, o)
    } catch (e) {
      if (e instanceof errors.NotFoundError) throw new errors.TemplateError(e.message, e)
      throw e
    }
    const logEntries = st.logs.map(entryOf)
    const out = { buildID: st.buildId, templateID: st.templateId, status: st.status, logEntries, logs: logEntries.map((x) => x.message) }
    if (st.error !== undefined) out.reason = { message: st.error, step: st.errorStep >= 0 ? String(st.errorStep) : undefined, logEntries: [] }
    return out
  }

  static async exists(name, options) {
    return this.aliasExists(name, options)
  }

  static async aliasExists(alias, options) {
    return native.Template.exists(alias, this.resolveOpts(options))
  }

  /** Make tags name the build targetName ("app:v1") names: {buildId, tags}. */
  static async assignTags(targetName, tags, options) {
    const o = this.resolveOpts(options)
    const list = Array.isArray(tags) ? tags : [tags]
    await this._tagCall(() => native.Template.assignTags(targetName, list, o))
    const name = targetName.split(':')[0]
    let buildId = ''
    try {
      const info = await native.Template.get(name, o)
      const mine = (await native.Template.getTags(info.templateId, o)).find((x) => list.includes(x.tag))
      if (mine) buildId = mine.buildId
    } catch (_) {}
    return { buildId, tags: list }
  }

  static async removeTags(name, tags, options) {
    await this._tagCall(() => native.Template.removeTags(name, Array.isArray(tags) ? tags : [tags], this.resolveOpts(options)))
  }

  /** The tags of a template: [{tag, buildId, createdAt: Date}]. */
  static async getTags(templateId, options) {
    return this._tagCall(() => native.Template.getTags(templateId, this.resolveOpts(options)))
  }

  static async _tagCall(fn) {
    try {
      return await fn()
    } catch (e) {
      if (e instanceof errors.NotFoundError) throw new errors.TemplateError(e.message, e)
      throw e
    }
  }
}

/** `Template` is TemplateBase, also callable as a factory (`Template(opts)`
 * is a new builder); its statics stay bound to the class they are read
 * from (a client's bound class keeps its options when a static is taken
 * off it). */
function callable(cls) {
  const cache = new WeakMap()
  return new Proxy(cls, {
    apply(target, _this, args) {
      return new target(...args)
    },
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver)
      if (prop === 'prototype' || typeof v !== 'function') return v
      const self = typeof receiver === 'function' ? receiver : target
      let m = cache.get(self)
      if (!m) cache.set(self, (m = new Map()))
      if (!m.has(prop)) m.set(prop, v.bind(self))
      return m.get(prop)
    }
  })
}

const Template = callable(TemplateBase)

module.exports = {
  Template,
  TemplateBase,
  callableTemplate: callable,
  ReadyCmd,
  waitForPort,
  waitForURL,
  waitForProcess,
  waitForFile,
  waitForTimeout,
  LogEntry,
  LogEntryStart,
  LogEntryEnd,
  defaultBuildLogger,
  FileUploadError,
  InstructionType,
  // E2B's template utils programs use
  validateRelativePath,
  normalizeBuildArguments,
  padOctal,
  stripAnsi,
  getCallerDirectory,
  getCallerFrame,
  parseDockerfile
}
