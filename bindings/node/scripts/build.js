'use strict'
// Builds the addons at install time (`npm install`), offline: the system C
// compiler against the installed Node headers (the ones next to this node,
// or /usr/include/node: no header download, no node-gyp) and
// libagentsandbox, found, first match wins, at
//   ASB_INCLUDE_DIR + ASB_LIB_DIR,
//   ASB_BUILD_DIR (a CMake build tree of the repository),
//   pkg-config agentsandbox (an installed library),
//   the repository's build/ when the package is bindings/node of a checkout.
// A library outside the linker's default paths is recorded as the addon's
// run path. build/agentsandbox.node is the client; build/
// agentsandbox_server.node (libagentsandbox-server only) is built when that
// library is found too.
// Environment: CC (default cc), ASB_NODE_HEADERS (a dir with node_api.h).
// SPDX-License-Identifier: Apache-2.0
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const pkg = path.resolve(__dirname, '..')
const out = path.join(pkg, 'build')

function fail(msg) {
  console.error(`agent-sandbox: ${msg}`)
  process.exit(1)
}

function nodeHeaders() {
  const c = [process.env.ASB_NODE_HEADERS, path.resolve(process.execPath, '..', '..', 'include', 'node'),
    '/usr/include/node', '/usr/local/include/node'].filter(Boolean)
  for (const d of c) if (fs.existsSync(path.join(d, 'node_api.h'))) return d
  fail(`no Node headers (node_api.h) in ${c.join(', ')}; install them (Debian: nodejs / libnode-dev) or set ASB_NODE_HEADERS`)
}

function cmakeSource(buildDir) {
  try {
    const m = /CMAKE_HOME_DIRECTORY:INTERNAL=(.*)/.exec(fs.readFileSync(path.join(buildDir, 'CMakeCache.txt'), 'utf8'))
    return m ? m[1].trim() : null
  } catch (_) {
    return null
  }
}

function pkgConfig(name) {
  try {
    const cflags = execFileSync('pkg-config', ['--cflags', name], { encoding: 'utf8' }).trim()
    const libs = execFileSync('pkg-config', ['--libs', name], { encoding: 'utf8' }).trim()
    const libdir = execFileSync('pkg-config', ['--variable=libdir', name], { encoding: 'utf8' }).trim()
    return { cflags: cflags ? cflags.split(/\s+/) : [], libs: libs.split(/\s+/), libdir }
  } catch (_) {
    return null
  }
}

function fromTree(buildDir) {
  const src = cmakeSource(buildDir)
  if (!src) return null
  const client = path.join(buildDir, 'core', 'client')
  const server = path.join(buildDir, 'core', 'server')
  if (!fs.existsSync(path.join(client, 'libagentsandbox.so'))) return null
  return {
    client: { cflags: [`-I${path.join(src, 'include')}`], libs: [`-L${client}`, '-lagentsandbox'], libdir: client },
    server: fs.existsSync(path.join(server, 'libagentsandbox-server.so'))
      ? { cflags: [`-I${path.join(src, 'include')}`], libs: [`-L${server}`, '-lagentsandbox-server'], libdir: server }
      : null,
    gen: path.join(src, 'bindings', 'gen')
  }
}

function findLibrary() {
  const e = process.env
  if (e.ASB_INCLUDE_DIR && e.ASB_LIB_DIR) {
    const l = { cflags: [`-I${e.ASB_INCLUDE_DIR}`], libdir: e.ASB_LIB_DIR }
    return {
      client: Object.assign({ libs: [`-L${e.ASB_LIB_DIR}`, '-lagentsandbox'] }, l),
      server: fs.existsSync(path.join(e.ASB_LIB_DIR, 'libagentsandbox-server.so'))
        ? Object.assign({ libs: [`-L${e.ASB_LIB_DIR}`, '-lagentsandbox-server'] }, l) : null
    }
  }
  if (e.ASB_BUILD_DIR) {
    const t = fromTree(path.resolve(e.ASB_BUILD_DIR))
    if (!t) fail(`ASB_BUILD_DIR=${e.ASB_BUILD_DIR} is not a built tree of agent-sandbox`)
    return t
  }
  const pc = pkgConfig('agentsandbox')
  if (pc) return { client: pc, server: pkgConfig('agentsandbox-server') }
  const t = fromTree(path.resolve(pkg, '..', '..', 'build'))
  if (t) return t
  fail('libagentsandbox not found: build or install it (cmake --install), or set ASB_BUILD_DIR or ASB_INCLUDE_DIR + ASB_LIB_DIR')
}

function apiTableDir(lib) {
  const c = [path.join(pkg, 'src', 'gen'), path.join(pkg, '..', 'gen'), lib.gen].filter(Boolean)
  for (const d of c) if (fs.existsSync(path.join(d, 'api_table.h'))) return d
  fail(`bindings/gen/api_table.h not found in ${c.join(', ')}`)
}

const SYSTEM_LIBDIRS = ['/usr/lib', '/usr/lib64', '/lib', '/usr/lib/x86_64-linux-gnu', '/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu']

function compile(sources, lib, extraInc, name) {
  const cc = process.env.CC || 'cc'
  const args = ['-std=gnu11', '-O2', '-g', '-fPIC', '-shared', '-fvisibility=hidden', '-Wall', '-Wextra',
    '-Wno-unused-parameter', `-I${nodeHeaders()}`, ...extraInc.map((d) => `-I${d}`), ...lib.cflags,
    ...sources, '-o', path.join(out, name), ...lib.libs, '-lpthread']
  if (lib.libdir && !SYSTEM_LIBDIRS.includes(path.resolve(lib.libdir))) args.push(`-Wl,-rpath,${lib.libdir}`)
  execFileSync(cc, args, { stdio: 'inherit' })
}

const lib = findLibrary()
fs.mkdirSync(out, { recursive: true })
const srcDir = path.join(pkg, 'src')
const clientSources = fs.readdirSync(srcDir).filter((f) => f.endsWith('.c') && f !== 'server.c').map((f) => path.join(srcDir, f))
compile(clientSources, lib.client, [apiTableDir(lib)], 'agentsandbox.node')
if (lib.server && fs.existsSync(path.join(srcDir, 'server.c'))) compile([path.join(srcDir, 'server.c')], lib.server, [], 'agentsandbox_server.node')
console.log(`agent-sandbox: built ${out}`)
