--- agent_sandbox.compat: E2B's Python SDK names, for scripts ported from it.
--
--   local e2b = require "agent_sandbox.compat"
--   local sandbox = assert(e2b.Sandbox.create{ template = "base", timeout = 60 })
--   local r, err = sandbox.commands.run("exit 3")
--   if e2b.CommandExitException:is(err) then print(err.exit_code) end
--   print(assert(sandbox.run_code("1 + 1")).text)
--   sandbox.kill()
--
-- The names and keyword arguments are E2B's (Python keyword arguments are a
-- Lua table; methods work called with a dot, as in Python, or a colon);
-- times are seconds (timeout, request_timeout) as in E2B. What differs from
-- agent_sandbox follows E2B: commands.run and CommandHandle.wait fail with
-- CommandExitException for a non-zero exit code, Sandbox.list returns a
-- paginator, a missing file is FileNotFoundException, on_stdout of run_code
-- gets OutputMessage tables. The error convention is agent_sandbox's, the
-- one of the whole binding: an expected failure is nil, err (err.name is
-- E2B's exception class; Class:is(err) tests it, subclasses included), a
-- programming error raises. docs/lua.md lists what is covered.
--
-- SPDX-License-Identifier: Apache-2.0

local asb = require "agent_sandbox"

local M = {}
local core = asb._core
local new_object, class = core.asblua_object, core.asblua_class

-- ---- exceptions -------------------------------------------------------------------------

local classes = {}

local Exception = {}
Exception.__index = Exception
function Exception.__tostring(c) return "agent_sandbox.compat." .. c.name end

--- Class:is(err): err is an error of this class (or of a subclass).
function Exception:is(err)
  if not asb.is_error(err) then return false end
  local c = classes[err.name or "SandboxException"]
  while c do
    if c == self then return true end
    c = c.parent
  end
  return false
end

local function exception(name, parent)
  local c = setmetatable({ name = name, parent = parent }, Exception)
  classes[name] = c
  M[name] = c
  return c
end

local SandboxException = exception("SandboxException")
exception("TimeoutException", SandboxException)
exception("InvalidArgumentException", SandboxException)
exception("NotEnoughSpaceException", SandboxException)
local NotFound = exception("NotFoundException", SandboxException)
exception("FileNotFoundException", NotFound)
exception("SandboxNotFoundException", NotFound)
exception("TemplateException", SandboxException)
exception("RateLimitException", SandboxException)
exception("CommandExitException", SandboxException)
local Auth = exception("AuthenticationException")
exception("BuildException")
exception("GitAuthException", Auth)
exception("GitUpstreamException", SandboxException)
-- E2B's volume exceptions: VolumeException is not a SandboxException, the
-- not-found ones are NotFoundExceptions (as in E2B's Python SDK)
exception("VolumeException")
exception("VolumeNotFoundException", NotFound)
exception("VolumePathNotFoundException", NotFound)

-- E2B's JS SDK has the same classes named *Error (CommandExitError,
-- NotFoundError, ...): those names are the same classes here, so a script
-- ported from either SDK finds its names. err.name stays the Python one.
do
  local js = {}
  for name, c in pairs(classes) do js[(name:gsub("Exception$", "Error"))] = c end
  for name, c in pairs(js) do M[name] = c end
end

local NAMES = {
  ASB_EINVAL = "InvalidArgumentException", ASB_ENOTFOUND = "NotFoundException",
  ASB_ETIMEOUT = "TimeoutException", ASB_EAUTH = "AuthenticationException",
  ASB_ERATELIMIT = "RateLimitException", ASB_ENOSPACE = "NotEnoughSpaceException",
  ASB_ECOMMANDEXIT = "CommandExitException", ASB_ETEMPLATE = "TemplateException",
  ASB_ESANDBOXNOTFOUND = "SandboxNotFoundException",
  ASB_ESANDBOXGONE = "SandboxNotFoundException", ASB_EBUILD = "BuildException",
  ASB_EGITAUTH = "GitAuthException", ASB_EGITUPSTREAM = "GitUpstreamException",
}

-- v, err with err named after E2B's class (not_found: the class for
-- ASB_ENOTFOUND in this call).
local function e2b(v, err, not_found)
  if v == nil and err then
    err.name = (err.code == "ASB_ENOTFOUND" and not_found) or NAMES[err.code]
               or "SandboxException"
    return nil, err
  end
  return v
end

-- ---- arguments ---------------------------------------------------------------------------

local function ms(s, default)
  if s == nil then return default end
  if s == 0 then return -1 end -- E2B: 0 disables the limit
  return math.max(1, math.floor(s * 1000 + 0.5))
end

local CONN = { api_key = "api_key", domain = "domain", debug = "debug",
               api_url = "api_url", sandbox_url = "sandbox_url", headers = "headers" }

-- The connection keys of E2B's ApiParams (request_timeout in seconds).
local function conn(t, into)
  into = into or {}
  for k, v in pairs(t) do
    if CONN[k] then into[CONN[k]] = v end
  end
  if t.api_headers then into.headers = t.api_headers end
  if t.request_timeout then into.request_timeout_ms = ms(t.request_timeout) end
  return into
end

local function known(t, keys, where)
  t = t or {}
  if type(t) ~= "table" then error(where .. ": options must be a table", 3) end
  for k in pairs(t) do
    if not keys[k] and not CONN[k] and k ~= "api_headers" and k ~= "request_timeout" then
      error(("%s: unknown option '%s'"):format(where, tostring(k)), 3)
    end
  end
  return t
end

local function keys(list)
  local s = {}
  for _, k in ipairs(list) do s[k] = true end
  return s
end

-- An object whose methods are closures bound to it: callable as in Python,
-- obj.method(...), and as obj:method(...). methods.__close, if any, is what
-- `<close>` does; fields.__id is what it prints as.
local function bound(name, fields, methods, private)
  local obj
  for k, fn in pairs(methods) do
    if k ~= "__close" then
      fields[k] = function(a, ...)
        if rawequal(a, obj) then return fn(...) end
        return fn(a, ...)
      end
    end
  end
  local id, close = fields.__id, methods.__close
  fields.__id = nil
  local mt = {
    __name = "agent_sandbox.compat." .. name,
    __tostring = function() return ("agent_sandbox.compat.%s(%s)"):format(name, id or "") end,
    __close = close and function() close() end or nil,
  }
  class(mt, {})
  obj = new_object(mt, fields, private or {})
  return obj
end

-- ---- results -------------------------------------------------------------------------------

local function entry(e)
  if e then
    e.modified_time = e.modified_at
  end
  return e
end

local function entries(list)
  if list then for _, e in ipairs(list) do entry(e) end end
  return list
end

local function result(r)
  r.is_main_result = r.is_main
  return r
end

local function execution(ex)
  if not ex then return ex end
  local main
  for _, r in ipairs(ex.results) do
    result(r)
    if r.is_main then main = r end
  end
  ex.text = main and main.text or nil -- E2B: the main result's text only
  return ex
end

-- ---- commands --------------------------------------------------------------------------------

local function command_handle(p)
  local h = {}
  h.pid = p.pid
  h.__id = tostring(p.pid)
  return bound("CommandHandle", h, {
    wait = function(t)
      t = known(t, keys({ "on_stdout", "on_stderr", "on_pty" }), "CommandHandle.wait")
      return e2b(p:wait{ on_stdout = t.on_stdout, on_stderr = t.on_stderr, on_data = t.on_pty,
                         check = true })
    end,
    kill = function() return e2b(p:kill()) end,
    send_stdin = function(data) return e2b(p:send_stdin(data)) end,
    close_stdin = function() return e2b(p:close_stdin()) end,
    disconnect = function() p:disconnect() end,
  }, { p = p })
end

local RUN = keys({ "background", "envs", "user", "cwd", "on_stdout", "on_stderr", "stdin",
                   "timeout" })

local function commands(sb)
  local c = sb.commands
  return bound("Commands", { __id = sb.id }, {
    run = function(cmd, t)
      t = known(t, RUN, "commands.run")
      local o = { envs = t.envs, user = t.user, cwd = t.cwd, on_stdout = t.on_stdout,
                  on_stderr = t.on_stderr, stdin = t.stdin and true or nil,
                  timeout_ms = ms(t.timeout, 60000), request_timeout_ms = ms(t.request_timeout) }
      if t.background then
        local p, err = c:start(cmd, o)
        if not p then return e2b(p, err) end
        return command_handle(p)
      end
      o.check = true
      return e2b(c:run(cmd, o))
    end,
    connect = function(pid, t)
      t = known(t, keys({ "timeout", "on_stdout", "on_stderr" }), "commands.connect")
      local p, err = c:connect(pid, { timeout_ms = ms(t.timeout), on_stdout = t.on_stdout,
                                      on_stderr = t.on_stderr })
      if not p then return e2b(p, err) end
      return command_handle(p)
    end,
    list = function() return e2b(c:list()) end,
    kill = function(pid) return e2b(c:kill(pid)) end,
    send_stdin = function(pid, data) return e2b(c:send_stdin(pid, data)) end,
    close_stdin = function(pid) return e2b(c:close_stdin(pid)) end,
  })
end

local function pty(sb)
  local p = sb.pty
  return bound("Pty", { __id = sb.id }, {
    -- E2B: create(size = {rows, cols}, user, cwd, envs, timeout); the output
    -- reaches on_data of handle.wait(on_pty = ...)
    create = function(size, t)
      t = known(t, keys({ "user", "cwd", "envs", "timeout", "on_data" }), "pty.create")
      size = size or {}
      local h, err = p:create{ cols = size.cols, rows = size.rows, user = t.user, cwd = t.cwd,
                               envs = t.envs, timeout_ms = ms(t.timeout, 60000),
                               on_data = t.on_data }
      if not h then return e2b(h, err) end
      return command_handle(h)
    end,
    connect = function(pid, t)
      t = known(t, keys({ "timeout" }), "pty.connect")
      local h, err = p:connect(pid, { timeout_ms = ms(t.timeout) })
      if not h then return e2b(h, err) end
      return command_handle(h)
    end,
    kill = function(pid) return e2b(p:kill(pid)) end,
    send_stdin = function(pid, data) return e2b(p:send_input(pid, data)) end,
    resize = function(pid, size) return e2b(p:resize(pid, size.cols, size.rows)) end,
  })
end

-- ---- files ---------------------------------------------------------------------------------

local FILE = keys({ "user" })

local function files(sb)
  local f = sb.files
  local F = "FileNotFoundException"
  return bound("Files", { __id = sb.id }, {
    -- format: "text" (default) or "bytes" (both Lua strings), or "stream":
    -- a list of the chunks as they arrived
    read = function(path, t)
      t = known(t, keys({ "format", "user" }), "files.read")
      if t.format == "stream" then
        local chunks = {}
        local ok, err = f:read_stream(path, function(c) chunks[#chunks + 1] = c end, { user = t.user })
        if not ok then return e2b(ok, err, F) end
        return chunks
      end
      local data, err = f:read(path, { user = t.user })
      return e2b(data, err, F)
    end,
    write = function(path, data, t)
      t = known(t, FILE, "files.write")
      local e, err = f:write(path, data, { user = t.user })
      if not e then return e2b(e, err, F) end
      return { name = e.name, path = e.path, type = e.type }
    end,
    write_files = function(list, t)
      t = known(t, FILE, "files.write_files")
      return e2b(f:write_files(list, { user = t.user }))
    end,
    list = function(path, t)
      t = known(t, keys({ "depth", "user" }), "files.list")
      local l, err = f:list(path, { depth = t.depth, user = t.user })
      return e2b(entries(l), err, F)
    end,
    exists = function(path, t) return e2b(f:exists(path, known(t, FILE, "files.exists"))) end,
    get_info = function(path, t)
      local e, err = f:get_info(path, known(t, FILE, "files.get_info"))
      return e2b(entry(e), err, F)
    end,
    remove = function(path, t)
      local ok, err = f:remove(path, known(t, FILE, "files.remove"))
      return e2b(ok, err, F)
    end,
    rename = function(old, new, t)
      local e, err = f:rename(old, new, known(t, FILE, "files.rename"))
      return e2b(entry(e), err, F)
    end,
    make_dir = function(path, t) return e2b(f:make_dir(path, known(t, FILE, "files.make_dir"))) end,
    -- E2B: watch_dir(path, on_event, recursive = false); the handle's
    -- get_new_events() and stop(). Without on_event a polling watch, as
    -- E2B's sync watcher: get_new_events() has every change made before it.
    watch_dir = function(path, on_event, t)
      t = known(t, keys({ "recursive", "user" }), "files.watch_dir")
      local w, err = f:watch_dir(path, { on_event = on_event, recursive = t.recursive,
                                         user = t.user, polling = on_event == nil })
      if not w then return e2b(w, err, F) end
      return bound("WatchHandle", { __id = path }, {
        get_new_events = function() return e2b(w:get_new_events()) end,
        wait = function(timeout) return e2b(w:wait(timeout and ms(timeout) or nil)) end,
        stop = function() w:stop() end,
        __close = function() w:stop() end,
      }, { w = w })
    end,
  })
end

-- ---- sandboxes -------------------------------------------------------------------------------

local Sandbox = {}
M.Sandbox = Sandbox

local CODE = keys({ "language", "context", "on_stdout", "on_stderr", "on_result", "on_error",
                    "envs", "timeout" })

local function message(fn, is_err)
  if not fn then return nil end
  return function(line) fn({ line = line, timestamp = os.time(), error = is_err }) end
end

-- ---- git ------------------------------------------------------------------------------------

-- E2B's sandbox.git with its Python names: the native sb.git with E2B's
-- keyword names (timeout and request_timeout in seconds,
-- dangerously_store_credentials); None is nil.
local GIT_RUN = { "envs", "user", "cwd", "timeout", "request_timeout" }
local function git_keys(extra)
  local l = {}
  for _, k in ipairs(GIT_RUN) do l[#l + 1] = k end
  for _, k in ipairs(extra or {}) do l[#l + 1] = k end
  return keys(l)
end

local function git(sb)
  local g = sb.git
  -- E2B's keywords -> the native options
  local function o(t, keys_, where)
    t = known(t, keys_, where)
    local n = {}
    for k, v in pairs(t) do
      if k == "timeout" then n.timeout_ms = ms(v)
      elseif k == "request_timeout" then n.request_timeout_ms = ms(v)
      elseif k == "dangerously_store_credentials" then n.store_credentials = v
      elseif not CONN[k] and k ~= "api_headers" then n[k] = v end
    end
    return n
  end
  local function none(v, err)
    if v == false then return nil end
    return e2b(v, err)
  end
  local PLAIN = git_keys()
  return bound("Git", { __id = sb.id }, {
    clone = function(url, t)
      return e2b(g:clone(url, o(t, git_keys({ "path", "branch", "depth", "username", "password",
                                               "dangerously_store_credentials" }), "git.clone")))
    end,
    init = function(path, t)
      return e2b(g:init(path, o(t, git_keys({ "bare", "initial_branch" }), "git.init")))
    end,
    remote_add = function(path, name, url, t)
      return e2b(g:remote_add(path, name, url, o(t, git_keys({ "fetch", "overwrite" }), "git.remote_add")))
    end,
    remote_get = function(path, name, t) return none(g:remote_get(path, name, o(t, PLAIN, "git.remote_get"))) end,
    status = function(path, t) return e2b(g:status(path, o(t, PLAIN, "git.status"))) end,
    branches = function(path, t) return e2b(g:branches(path, o(t, PLAIN, "git.branches"))) end,
    create_branch = function(path, b, t) return e2b(g:create_branch(path, b, o(t, PLAIN, "git.create_branch"))) end,
    checkout_branch = function(path, b, t)
      return e2b(g:checkout_branch(path, b, o(t, PLAIN, "git.checkout_branch")))
    end,
    delete_branch = function(path, b, t)
      return e2b(g:delete_branch(path, b, o(t, git_keys({ "force" }), "git.delete_branch")))
    end,
    add = function(path, t) return e2b(g:add(path, o(t, git_keys({ "files", "all" }), "git.add"))) end,
    commit = function(path, message, t)
      return e2b(g:commit(path, message, o(t, git_keys({ "author_name", "author_email", "allow_empty" }),
                                           "git.commit")))
    end,
    reset = function(path, t)
      return e2b(g:reset(path, o(t, git_keys({ "mode", "target", "paths" }), "git.reset")))
    end,
    restore = function(path, paths, t)
      return e2b(g:restore(path, paths, o(t, git_keys({ "staged", "worktree", "source" }), "git.restore")))
    end,
    push = function(path, t)
      return e2b(g:push(path, o(t, git_keys({ "remote", "branch", "set_upstream", "username", "password" }),
                                "git.push")))
    end,
    pull = function(path, t)
      return e2b(g:pull(path, o(t, git_keys({ "remote", "branch", "username", "password" }), "git.pull")))
    end,
    set_config = function(key, value, t)
      return e2b(g:set_config(key, value, o(t, git_keys({ "scope", "path" }), "git.set_config")))
    end,
    get_config = function(key, t) return none(g:get_config(key, o(t, git_keys({ "scope", "path" }), "git.get_config"))) end,
    configure_user = function(name, email, t)
      return e2b(g:configure_user(name, email, o(t, git_keys({ "scope", "path" }), "git.configure_user")))
    end,
    dangerously_authenticate = function(username, password, t)
      return e2b(g:dangerously_authenticate(username, password,
                                            o(t, git_keys({ "host", "protocol" }), "git.dangerously_authenticate")))
    end,
  })
end

-- E2B's keep_memory keyword ({ keep_memory = false }), or a bare boolean.
local function keep_memory(t, where)
  if t == nil then return true end
  if type(t) == "boolean" then return t end
  t = known(t, keys({ "keep_memory" }), where)
  return t.keep_memory ~= false
end

local wrap
-- E2B's mcp option (docs/mcp.md, "The gateway").
local MCP_TEMPLATE, MCP_PORT, MCP_TOKEN_PATH = "mcp-gateway", 50005, "/etc/mcp-gateway/.token"

function wrap(sb, mcp_token)
  local fields = {
    sandbox_id = sb.id, envd_version = sb.envd_version, sandbox_domain = sb.domain,
    traffic_access_token = sb.traffic_access_token, -- E2B's (for allow_public_traffic false)
    fork_mode = sb.fork_mode, -- ours: a fork's "processes" or "files", else nil
    native = sb, __id = sb.id,
  }
  fields.commands = commands(sb)
  fields.pty = pty(sb)
  fields.files = files(sb)
  fields.git = git(sb)
  return bound("Sandbox", fields, {
    kill = function() return e2b(sb:kill()) end,
    set_timeout = function(s) return e2b(sb:set_timeout(ms(s))) end,
    get_info = function() return e2b(sb:get_info()) end,
    -- E2B: update_network(network) with SandboxNetworkUpdate's names
    update_network = function(n) return e2b(sb:update_network(n or {})) end,
    is_running = function() return e2b(sb:is_running()) end,
    -- snapshots and fork (docs/snapshots.md): files, not processes
    create_snapshot = function(t)
      if type(t) == "string" then t = { name = t } end -- E2B's positional name
      t = t or {}
      local id, err = sb:create_snapshot{ name = t.name }
      if not id then return e2b(nil, err) end
      return { snapshot_id = id, names = { id } }
    end,
    -- E2B: a list, a sandbox or the error of each fork (one call: one
    -- snapshot, then count sandboxes); ours: keep_processes = false boots
    -- them fresh on the files on a --pause-criu engine
    fork = function(t)
      t = t or {}
      local got, err = sb:fork_many(t.count or 1, { timeout_ms = ms(t.timeout or 300),
                                                    keep_processes = t.keep_processes })
      if not got then return e2b(nil, err) end
      local out = {}
      for i, f in ipairs(got) do
        if getmetatable(f) == asb.Error then out[i] = select(2, e2b(nil, f)) else out[i] = wrap(f) end
      end
      return out
    end,
    -- E2B: pause(keep_memory = True): pause{ keep_memory = false } (or
    -- pause(false)) keeps only the files
    pause = function(t) return e2b(sb:pause{ keep_memory = keep_memory(t, "pause") }) end,
    beta_pause = function(t) return e2b(sb:pause{ keep_memory = keep_memory(t, "beta_pause") }) end,
    resume = function(t) t = t or {} return e2b(sb:resume{ timeout_ms = ms(t.timeout) }) end,
    get_host = function(port) return e2b(sb:get_host(port)) end,
    -- the MCP gateway of a sandbox made with mcp: E2B's https form, and its
    -- token (the one made at create, else the gateway's file, read as root)
    get_mcp_url = function()
      local host, err = sb:get_host(MCP_PORT)
      if not host then return e2b(nil, err) end
      return "https://" .. host .. "/mcp"
    end,
    get_mcp_token = function()
      if not mcp_token then
        local text, err = sb.files:read(MCP_TOKEN_PATH, { user = "root" })
        if not text then return e2b(nil, err, "FileNotFoundException") end
        mcp_token = text
      end
      return mcp_token
    end,
    get_metrics = function() return e2b(sb:get_metrics()) end,
    download_url = function(path, t) return e2b(sb:download_url(path, t)) end,
    upload_url = function(path, t) return e2b(sb:upload_url(path, t)) end,
    -- the code interpreter (e2b_code_interpreter's Sandbox)
    run_code = function(code, t)
      t = known(t, CODE, "run_code")
      local ex, err = sb:run_code(code, {
        language = t.language, context = t.context, envs = t.envs,
        timeout_ms = ms(t.timeout), on_stdout = message(t.on_stdout, false),
        on_stderr = message(t.on_stderr, true),
        on_result = t.on_result and function(r) t.on_result(result(r)) end,
        on_error = t.on_error and function(name, value, tb)
          t.on_error({ name = name, value = value, traceback = tb })
        end,
      })
      return e2b(execution(ex), err)
    end,
    create_code_context = function(t)
      t = known(t, keys({ "cwd", "language" }), "create_code_context")
      return e2b(sb:create_code_context{ cwd = t.cwd, language = t.language })
    end,
    list_code_contexts = function() return e2b(sb:list_code_contexts()) end,
    restart_code_context = function(ctx) return e2b(sb:restart_code_context(ctx)) end,
    remove_code_context = function(ctx) return e2b(sb:remove_code_context(ctx)) end,
    __close = function() sb:kill() end,
  }, { sb = sb })
end

local CREATE = keys({ "template", "timeout", "metadata", "envs", "auto_pause",
                      "allow_internet_access", "network", "volume_mounts", "lifecycle",
                      "mcp" })

-- A fresh random UUID (the kernel's) for the gateway's token.
local function uuid()
  local f = assert(io.open("/proc/sys/kernel/random/uuid"))
  local u = f:read("l")
  f:close()
  return u
end

-- As E2B's SDKs do it: `mcp-gateway --config <json>` as root with a fresh
-- GATEWAY_ACCESS_TOKEN; on failure the sandbox is killed and the error is
-- E2B's "Failed to start MCP gateway: <stderr>".
local function start_mcp(sb, mcp)
  local json = require "dkjson"
  local token = uuid()
  local cfg = json.encode(mcp)
  local r, err = e2b(sb.commands:run("mcp-gateway --config '" .. cfg:gsub("'", "'\\''") .. "'",
                                     { user = "root", envs = { GATEWAY_ACCESS_TOKEN = token },
                                       timeout_ms = 60000, check = true }))
  if r then return token end
  sb:kill()
  if M.CommandExitException:is(err) then
    err.message = "Failed to start MCP gateway: " .. (err.stderr or "")
    err.name = "SandboxException"
    err.op = "Sandbox.create"
  end
  return nil, err
end

-- E2B's volume_mounts: a mount path -> a volume's name, or a Volume.
local function mounts(m)
  if m == nil then return nil end
  if type(m) ~= "table" then error("Sandbox.create: volume_mounts must be a table", 3) end
  local out = {}
  for path, v in pairs(m) do
    if type(v) == "string" then out[path] = v
    elseif type(v) == "table" or type(v) == "userdata" then out[path] = v.name
    else error(("Sandbox.create: volume_mounts[%q]: a volume name (or a Volume) is needed"):format(tostring(path)), 3) end
  end
  return out
end

-- E2B's lifecycle: { on_timeout = "kill" | "pause" | { action, keep_memory },
-- auto_resume } -> the native auto_pause, keep_memory, auto_resume.
local function lifecycle(lc, o)
  if lc == nil then return end
  if type(lc) ~= "table" then error("Sandbox.create: lifecycle must be a table", 3) end
  local on = lc.on_timeout
  if type(on) == "string" then on = { action = on } end
  on = on or {}
  if on.action ~= nil and on.action ~= "pause" and on.action ~= "kill" then
    error("Sandbox.create: lifecycle.on_timeout must be \"kill\" or \"pause\"", 3)
  end
  if on.action == "pause" then
    o.auto_pause = true
    if on.keep_memory == false then o.keep_memory = false end
  end
  if lc.auto_resume ~= nil then o.auto_resume = lc.auto_resume and true or false end
end

--- Sandbox.create{ template, timeout (s), metadata, envs, volume_mounts,
--- lifecycle, api_key, domain, debug, request_timeout, ... } (or
--- Sandbox.create("template", {...})).
function Sandbox.create(template, t)
  if type(template) == "table" then template, t = template.template, template end
  t = known(t, CREATE, "Sandbox.create")
  if template == nil and t.mcp ~= nil then template = MCP_TEMPLATE end
  local o = conn(t, { template = template or "base", metadata = t.metadata, envs = t.envs,
                      auto_pause = t.auto_pause, timeout_ms = ms(t.timeout, 300000),
                      allow_internet_access = t.allow_internet_access, network = t.network,
                      volume_mounts = mounts(t.volume_mounts) })
  lifecycle(t.lifecycle, o)
  local sb, err = asb.Sandbox.create(o)
  if not sb then return e2b(sb, err) end
  if t.mcp == nil then return wrap(sb) end
  local token, merr = start_mcp(sb, t.mcp)
  if not token then return nil, merr end
  return wrap(sb, token)
end

--- Sandbox.connect(sandbox_id, { timeout, ... }).
function Sandbox.connect(id, t)
  t = known(t, keys({ "timeout" }), "Sandbox.connect")
  local sb, err = asb.Sandbox.connect(id, conn(t, { timeout_ms = ms(t.timeout) }))
  if not sb then return e2b(sb, err) end
  return wrap(sb)
end

-- A control-plane method of a sandbox called on the class with its id
-- (Sandbox.get_info(id)): without connecting, so a paused sandbox stays
-- paused, as in E2B.
local function by_id(name)
  return function(id, t)
    if type(id) ~= "string" then return id[name](t) end
    t = known(t, {}, "Sandbox." .. name)
    local sb, err = asb.Sandbox.attach(id, conn(t))
    if not sb then return e2b(sb, err) end
    local v, verr = sb[name](sb)
    sb:close()
    return e2b(v, verr)
  end
end

--- Sandbox.kill(sandbox_id, {...}): true if killed, false if not found.
function Sandbox.kill(id, t)
  if type(id) ~= "string" then return id.kill() end
  t = known(t, {}, "Sandbox.kill")
  return e2b(asb.Sandbox.kill(id, conn(t)))
end
Sandbox.set_timeout = function(id, s, t)
  if type(id) ~= "string" then return id.set_timeout(s) end
  t = known(t, {}, "Sandbox.set_timeout")
  local sb, err = asb.Sandbox.attach(id, conn(t))
  if not sb then return e2b(sb, err) end
  local ok, serr = sb:set_timeout(ms(s))
  sb:close()
  return e2b(ok, serr)
end
Sandbox.get_info = by_id("get_info")

--- Sandbox.update_network(sandbox_id, network, {...}): by id, without
--- connecting (a paused sandbox stays paused).
function Sandbox.update_network(id, n, t)
  if type(id) ~= "string" then return id.update_network(n) end
  t = known(t, {}, "Sandbox.update_network")
  local sb, err = asb.Sandbox.attach(id, conn(t))
  if not sb then return e2b(sb, err) end
  local ok, uerr = sb:update_network(n or {})
  sb:close()
  return e2b(ok, uerr)
end
--- Sandbox.pause(sandbox_id, { keep_memory, ... }): by id, without
--- connecting (E2B's; beta_pause is the same): true, false if it already was.
function Sandbox.pause(id, t)
  if type(id) ~= "string" then return id.pause(t) end
  t = known(t, keys({ "keep_memory" }), "Sandbox.pause")
  local sb, err = asb.Sandbox.attach(id, conn(t))
  if not sb then return e2b(sb, err) end
  local ok, perr = sb:pause{ keep_memory = t.keep_memory ~= false,
                             request_timeout_ms = t.request_timeout and ms(t.request_timeout) or nil }
  sb:close()
  return e2b(ok, perr)
end
Sandbox.beta_pause = Sandbox.pause
Sandbox.get_metrics = by_id("get_metrics")

-- E2B's class forms of a sandbox's control-plane method by id, on a
-- handle attached without I/O: Sandbox.fork(sandbox_id, { count, timeout }),
-- Sandbox.create_snapshot(sandbox_id, { name }) (or a compat sandbox).
local function attached(name, allowed)
  return function(id, t)
    if type(id) ~= "string" then return id[name](t) end
    if type(t) == "string" then t = { name = t } end
    t = known(t, keys(allowed), "Sandbox." .. name)
    local sb, err = asb.Sandbox.attach(id, conn(t))
    if not sb then return e2b(sb, err) end
    local a, b = wrap(sb)[name](t)
    sb:close()
    return a, b
  end
end
Sandbox.fork = attached("fork", { "count", "timeout", "keep_processes" })
Sandbox.create_snapshot = attached("create_snapshot", { "name" })

--- Sandbox.list_snapshots{ sandbox_id, name, ... }: E2B's paginator; the
--- first next_items() holds every snapshot ({snapshot_id, names}).
function Sandbox.list_snapshots(t)
  t = known(t, keys({ "sandbox_id", "name", "limit", "next_token" }), "Sandbox.list_snapshots")
  local p = { has_next = true }
  function p.next_items()
    if not p.has_next then return {} end
    local ids, err = asb.Sandbox.list_snapshots(conn(t, { sandbox_id = t.sandbox_id, name = t.name }))
    if not ids then return e2b(nil, err) end
    p.has_next = false
    local out = {}
    for i, id in ipairs(ids) do out[i] = { snapshot_id = id, names = { id } } end
    return out
  end
  return p
end

--- Sandbox.delete_snapshot(snapshot_id, {...}): true, or false if none.
function Sandbox.delete_snapshot(id, t)
  t = known(t, {}, "Sandbox.delete_snapshot")
  return e2b(asb.Sandbox.delete_snapshot(id, conn(t)))
end

--- Sandbox.list{ query = {metadata, state}, limit, next_token, ... }: E2B's
--- paginator: while p.has_next do local items = p.next_items() end.
function Sandbox.list(t)
  t = known(t, keys({ "query", "limit", "next_token" }), "Sandbox.list")
  local q = t.query or {}
  local p = { has_next = true, next_token = t.next_token }
  local c = conn(t)
  function p.next_items()
    if not p.has_next then
      return nil, setmetatable({ code = "ASB_ERROR", status = core.ASB_ERROR, http_status = 0,
                                 message = "No more items to fetch", remote_code = "",
                                 retry_after = -1, reason = "", op = "Sandbox.list",
                                 name = "SandboxException" }, asb.Error)
    end
    local client, err = asb._client_of(c, "Sandbox.list")
    if not client then return e2b(nil, err) end
    local o = core.asb_sandbox_list_options()
    if q.metadata then o.metadata = q.metadata end
    if q.state then
      local want = {}
      for _, s in ipairs(type(q.state) == "table" and q.state or { q.state }) do want[s] = true end
      o.running, o.paused = want.running and 1 or 0, want.paused and 1 or 0
    end
    if t.limit then o.limit = t.limit end
    if p.next_token then o.next_token = p.next_token end
    local rc, page = core.asb_sandbox_list(asb._private(client).h, o)
    if rc < 0 then return e2b(asb._fail(rc, "Sandbox.list")) end
    local items, token = core.asblua_sandbox_page(page)
    for _, it in ipairs(items) do asb._info_fix(it) end
    p.next_token = token
    p.has_next = token ~= nil
    return items
  end
  return p
end

-- ---- volumes -------------------------------------------------------------------------------

-- E2B's Volume with its Python names, on asb.volumes / asb.Volume. Errors:
-- an unknown volume is VolumeNotFoundException ("Volume <id> not found"),
-- a missing path VolumePathNotFoundException ("Path <path> not found"),
-- any other failure VolumeException ("<status>: <message>", as E2B's),
-- except credentials, rate-limit, timeout and cancel errors, which keep
-- their classes.
local VOLUME_KEEP = { ASB_EAUTH = true, ASB_ERATELIMIT = true, ASB_ETIMEOUT = true,
                      ASB_ECANCELED = true }

-- v, err with err named after E2B's volume classes (what: "volume" or
-- "path" for a not-found of that kind, ref its id or path).
local function vol_e2b(v, err, what, ref)
  if v ~= nil or not err then return v end
  if VOLUME_KEEP[err.code] then return e2b(nil, err) end
  if err.code == "ASB_ENOTFOUND" and what then
    err.name = what == "volume" and "VolumeNotFoundException" or "VolumePathNotFoundException"
    err.message = (what == "volume" and "Volume %s not found" or "Path %s not found"):format(ref)
    return nil, err
  end
  err.name = "VolumeException"
  if (err.http_status or 0) > 0 then err.message = ("%d: %s"):format(err.http_status, err.message) end
  return nil, err
end

local Volume = {}
M.Volume = Volume

-- E2B's keywords of a volume file call -> the native options.
local function vopts(t, extra, where)
  t = known(t, keys(extra), where)
  local o = {}
  for _, k in ipairs(extra) do o[k] = t[k] end
  if t.request_timeout then o.request_timeout_ms = ms(t.request_timeout) end
  return o
end

local WRITE = { "uid", "gid", "mode", "force" }

local function volume(v)
  local function call(what, path, fn, ...)
    local r, err = fn(v, path, ...)
    return vol_e2b(r, err, what, path)
  end
  return bound("Volume", {
    volume_id = v.volume_id, name = v.name, token = v.token, size_mb = v.size_mb,
    native = v, __id = v.name,
  }, {
    -- format: "text" (default) or "bytes" (both Lua strings), or "stream":
    -- a list of the chunks (one: the file is read whole)
    read_file = function(path, t)
      t = t or {}
      local fmt = t.format or "text"
      if fmt ~= "text" and fmt ~= "bytes" and fmt ~= "stream" then
        error('Volume.read_file: format must be "text", "bytes" or "stream"', 2)
      end
      local o = vopts(t, { "format" }, "Volume.read_file")
      o.format = nil
      local data, err = call("path", path, v.read_file, o)
      if data == nil then return nil, err end
      if fmt == "stream" then return { data } end
      return data
    end,
    write_file = function(path, data, t)
      local o = vopts(t, WRITE, "Volume.write_file")
      local r, err = v:write_file(path, data, o)
      return vol_e2b(r, err, "path", path)
    end,
    make_dir = function(path, t) return call("path", path, v.make_dir, vopts(t, WRITE, "Volume.make_dir")) end,
    get_info = function(path, t) return call("path", path, v.get_info, vopts(t, {}, "Volume.get_info")) end,
    exists = function(path, t) return call("path", path, v.exists, vopts(t, {}, "Volume.exists")) end,
    update_metadata = function(path, t)
      return call("path", path, v.update_metadata, vopts(t, { "uid", "gid", "mode" }, "Volume.update_metadata"))
    end,
    remove = function(path, t) return call("path", path, v.remove, vopts(t, {}, "Volume.remove")) end,
    list = function(path, t)
      return call("path", path or "/", v.list, vopts(t, { "depth" }, "Volume.list"))
    end,
  }, { v = v })
end

--- Volume.from_token(volume_id, name, token, { domain, ... }), also
--- Volume(volume_id, name, token): E2B's Volume(volume_id, name, token), a
--- volume from its content token with no API call (its file calls need
--- only the token; a wrong one fails at the first).
function Volume.from_token(id, name, token, t)
  t = known(t, {}, "Volume")
  if type(token) ~= "string" or token == "" then
    error("Volume(volume_id, name, token): the volume's token is needed "
          .. "(Volume.connect(volume_id) fetches it with the API key)", 2)
  end
  local o = conn(t)
  o.request_timeout_ms = nil -- no call is made
  local v, err = asb.volumes.from_token(id, name, token, o)
  if not v then return vol_e2b(nil, err) end
  return volume(v)
end
setmetatable(Volume, { __call = function(_, id, name, token, t) return Volume.from_token(id, name, token, t) end })

--- Volume.create(name, { size_mb, api_key, domain, request_timeout, ... }):
--- a new volume (size_mb, its quota, is ours).
function Volume.create(name, t)
  t = known(t, keys({ "size_mb" }), "Volume.create")
  local v, err = asb.volumes.create(name, conn(t, { size_mb = t.size_mb }))
  if not v then return vol_e2b(nil, err) end
  return volume(v)
end

--- Volume.connect(volume_id, {...}): the volume of this id or name.
function Volume.connect(id, t)
  t = known(t, {}, "Volume.connect")
  local v, err = asb.volumes.get(id, conn(t))
  if not v then return vol_e2b(nil, err, "volume", id) end
  return volume(v)
end

--- Volume.get_info(volume_id, {...}): { volume_id, name, token, size_mb }
--- (E2B's VolumeAndToken).
function Volume.get_info(id, t)
  local v, err = Volume.connect(id, t)
  if not v then return nil, err end
  return { volume_id = v.volume_id, name = v.name, token = v.token, size_mb = v.size_mb }
end

--- Volume.list({...}): { { volume_id, name, size_mb }, ... }.
function Volume.list(t)
  t = known(t, {}, "Volume.list")
  return vol_e2b(asb.volumes.list(conn(t)))
end

--- Volume.destroy(volume_id, {...}): true, false if there was none; a
--- VolumeException (409) while sandboxes mount it.
function Volume.destroy(id, t)
  t = known(t, {}, "Volume.destroy")
  local ok, err = asb.volumes.delete(id, conn(t))
  if not ok and err and err.code == "ASB_ENOTFOUND" then return false end
  return vol_e2b(ok, err)
end

M.ALL_TRAFFIC = asb.ALL_TRAFFIC

return M
