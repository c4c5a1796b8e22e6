'use strict'
// Templates: build one from a directory with a template.yaml, get, list,
// delete (asb_templates_*).
// SPDX-License-Identifier: Apache-2.0
const { N, EV, EVENTS, invoke, ms, client, connOf, callOpts } = require('./native.js')

function info(t) {
  let raw
  try {
    raw = t.json ? JSON.parse(t.json) : undefined
  } catch (_) {
    raw = undefined
  }
  return {
    templateId: t.templateId,
    name: t.name,
    buildId: t.buildId,
    description: t.description,
    cpuCount: t.cpuCount,
    memoryMB: t.memoryMB,
    diskMB: t.diskMB,
    createdAt: t.createdAt ? new Date(t.createdAt * 1000) : undefined,
    cached: t.cached < 0 ? undefined : t.cached === 1,
    buildLog: t.buildLog,
    raw
  }
}

/** The options of the COPY file calls (filesHash, filesUpload). */
function filesOpts(opts) {
  return {
    contextDir: opts.contextDir,
    ignorePatterns: opts.ignorePatterns && opts.ignorePatterns.length ? opts.ignorePatterns : undefined,
    resolveSymlinks: !!opts.resolveSymlinks,
    timeoutMs: ms(opts.timeoutMs)
  }
}

class Template {
  /** Build the template of dir (returns once ready; cached by the hash of
   * its inputs unless force). opts: force, timeoutMs (whole build; 0 =
   * none), signal, connection options. */
  static async build(dir, opts = {}) {
    const c = await client(connOf(opts))
    return info(await invoke(N.templateOp, [c.handle, 1, dir, { force: !!opts.force, timeoutMs: ms(opts.timeoutMs) }], { signal: opts.signal }))
  }

  static async get(templateId, opts = {}) {
    const c = await client(connOf(opts))
    return info(await invoke(N.templateOp, [c.handle, 2, templateId, callOpts(opts)], { signal: opts.signal }))
  }

  static async list(opts = {}) {
    const c = await client(connOf(opts))
    return (await invoke(N.templateOp, [c.handle, 3, undefined, callOpts(opts)], { signal: opts.signal })).map(info)
  }

  /** Build name ("app" or "app:tag") from E2B's builder JSON spec (an object
   * or its text); COPY sources come from opts.contextDir, uploaded by hash.
   * opts: contextDir, tags, ignorePatterns (.dockerignore patterns applied
   * before the context's own .dockerignore), cpuCount, memoryMB, skipCache,
   * background, timeoutMs, onLog({timestampMs, level, message}) for each log line as it
   * arrives (the library's progress, then the engine's), signal,
   * connection options. A failed build rejects with a BuildError (the
   * engine's reason) whose `build` is the build's state (errorStep: 0 the
   * base, i + 1 for steps[i]; logs). */
  static async buildSteps(name, spec, opts = {}) {
    const c = await client(connOf(opts))
    const text = typeof spec === 'string' ? spec : JSON.stringify(spec)
    const o = {
      contextDir: opts.contextDir,
      tags: opts.tags,
      ignorePatterns: opts.ignorePatterns && opts.ignorePatterns.length ? opts.ignorePatterns : undefined,
      skipCache: !!opts.skipCache,
      background: !!opts.background,
      cpuCount: opts.cpuCount || 0,
      memoryMB: opts.memoryMB || 0,
      timeoutMs: ms(opts.timeoutMs)
    }
    const onLog = opts.onLog
    return invoke(N.templateBuilderOp, [c.handle, 1, name, text, o, onLog ? EVENTS : undefined], {
      signal: opts.signal,
      handlers: onLog ? { [EV.TEMPLATE_LOG]: (line) => onLog(line) } : undefined,
      attach: (err, build) => Object.assign(err, { build })
    })
  }

  /** buildSteps one call at a time (as E2B's SDKs drive a build): ask for
   * a build of name ({templateId, buildId, status: 'waiting', tags}). */
  static async requestBuild(name, opts = {}) {
    const c = await client(connOf(opts))
    const o = { tags: opts.tags, cpuCount: opts.cpuCount || 0, memoryMB: opts.memoryMB || 0, timeoutMs: ms(opts.timeoutMs) }
    return invoke(N.templateBuilderOp, [c.handle, 7, name, undefined, o, undefined], { signal: opts.signal })
  }

  /** The filesHash of a COPY of src (a path or glob relative to
   * opts.contextDir): the hash of the tar buildSteps packs of it. */
  static async filesHash(src, opts = {}) {
    const c = await client(connOf(opts))
    return invoke(N.templateBuilderOp, [c.handle, 8, src, undefined, filesOpts(opts), undefined], { signal: opts.signal })
  }

  /** Whether the engine has the files of filesHash: {present, url}. */
  static async filesLink(templateId, filesHash, opts = {}) {
    const c = await client(connOf(opts))
    return invoke(N.templateBuilderOp, [c.handle, 9, templateId, filesHash, callOpts(opts), undefined], { signal: opts.signal })
  }

  /** Pack src's files (as filesHash) and upload them to url (from
   * filesLink); resolves to their hash. */
  static async filesUpload(url, src, opts = {}) {
    const c = await client(connOf(opts))
    return invoke(N.templateBuilderOp, [c.handle, 10, url, src, filesOpts(opts), undefined], { signal: opts.signal })
  }

  /** Start a requested build with the builder JSON (each COPY step with its
   * filesHash); follow it with buildStatus. */
  static async triggerBuild(templateId, buildId, spec, opts = {}) {
    const c = await client(connOf(opts))
    const build = typeof spec === 'string' ? spec : JSON.stringify(spec)
    await invoke(N.templateBuilderOp, [c.handle, 11, templateId, buildId, { ...callOpts(opts), build }, undefined], { signal: opts.signal })
  }

  /** The state of a build and up to 100 log lines from opts.logsOffset. */
  static async buildStatus(templateId, buildId, opts = {}) {
    const c = await client(connOf(opts))
    const o = { ...callOpts(opts), logsOffset: opts.logsOffset || 0 }
    return invoke(N.templateBuilderOp, [c.handle, 2, templateId, buildId, o, undefined], { signal: opts.signal })
  }

  /** Whether a template of that name exists. */
  static async exists(name, opts = {}) {
    const c = await client(connOf(opts))
    return invoke(N.templateBuilderOp, [c.handle, 3, name, undefined, callOpts(opts), undefined], { signal: opts.signal })
  }

  /** Make tags (a string or strings) name the build target ("app:v1"; "app":
   * its latest) names. */
  static async assignTags(target, tags, opts = {}) {
    const c = await client(connOf(opts))
    const o = { ...callOpts(opts), tags: Array.isArray(tags) ? tags : [tags] }
    await invoke(N.templateBuilderOp, [c.handle, 4, target, undefined, o, undefined], { signal: opts.signal })
  }

  /** Remove tags from template name. */
  static async removeTags(name, tags, opts = {}) {
    const c = await client(connOf(opts))
    const o = { ...callOpts(opts), tags: Array.isArray(tags) ? tags : [tags] }
    await invoke(N.templateBuilderOp, [c.handle, 5, name, undefined, o, undefined], { signal: opts.signal })
  }

  /** The tags of a template: [{tag, buildId, createdAt: Date}]. */
  static async getTags(templateId, opts = {}) {
    const c = await client(connOf(opts))
    const text = await invoke(N.templateBuilderOp, [c.handle, 6, templateId, undefined, callOpts(opts), undefined], { signal: opts.signal })
    return JSON.parse(text || '[]').map((t) => ({ tag: t.tag, buildId: t.buildID, createdAt: new Date(t.createdAt) }))
  }

  static async delete(templateId, opts = {}) {
    const c = await client(connOf(opts))
    await invoke(N.templateOp, [c.handle, 4, templateId, callOpts(opts)], { signal: opts.signal })
  }
}

module.exports = { Template }
