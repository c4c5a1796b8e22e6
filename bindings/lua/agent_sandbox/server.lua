--- agent_sandbox.server: serve named commands from inside a template.
--
-- A template's commands.lua:
--
--   local server = require "agent_sandbox.server"
--
--   server.command("hello", {
--     description = "Greets someone.",
--     args = { { name = "name", type = "string", default = "world", description = "who" } },
--   }, function(args) return "Hello, " .. args.name .. "!" end)
--
--   server.start(9000)   -- serves until the server is stopped
--
-- and a client calls it with sb:run("hello", { name = "Alice" }) (any
-- binding: Lua, Python, C).
--
-- libagentsandbox-server does the HTTP, the access token, the argument
-- checking and coercion (agent_sandbox.server_core, C); its threads only
-- queue the calls. Handlers run on the Lua thread that serves — in
-- server.start / srv:serve(), or srv:poll() from the host's own event loop
-- when srv:fd() is readable — one at a time, never from another thread.
-- This module needs only libagentsandbox-server (not the client library):
-- a template ships server.lua, server_core.so and the library.
--
-- Arguments: a list of { name, type, required, default, description }
-- (type "string", "integer", "float", "boolean" or "json"; shorthand
-- { "n", "integer", required = true }); the handler gets them as a table
-- (absent optional ones without a default are nil) and the call's info
-- ({ command = name }). Its return value is the result, as JSON (nil is
-- null; an empty table is an object). An error is the error reply (HTTP
-- 500; the client gets ASB_ECOMMANDFAILED): error({ type = "ValueError",
-- message = "n must be >= 0" }) names its type, any other error is type
-- "Error" with its message.
--
-- Errors of this module follow agent_sandbox: nil, err for failures (a port
-- in use, a name taken, err.code "ASB_..."), programming errors raise.
-- SPDX-License-Identifier: Apache-2.0

local core = require "agent_sandbox.server_core"
local json = require "dkjson"

local M = {}
local Server = core.Server -- the C methods of a server; the Lua ones are added below

local Error = { __name = "agent_sandbox.server.Error" }
Error.__index = Error
function Error.__tostring(e)
  return ("%s%s (%s)"):format(e.op and (e.op .. ": ") or "", e.message or "", e.code or "ASB_ERROR")
end
function Error:is(code) return self.code == code or self.code == "ASB_" .. tostring(code) end
M.Error = Error

local function failed(v, err)
  if v == nil and type(err) == "table" then return nil, setmetatable(err, Error) end
  return v, err
end

local TYPES = { string = true, integer = true, float = true, boolean = true, json = true }

-- The C API's text for a default value of a type.
local function default_text(v, t, where)
  if v == nil then return nil end
  if t == "json" then
    local ok, s = pcall(json.encode, v)
    if not ok or not s then error(where .. ": the default is not JSON", 4) end
    return s
  end
  if t == "boolean" then return v and "true" or "false" end
  return tostring(v)
end

local function normalize_args(args, where)
  local out = {}
  for i, a in ipairs(args or {}) do
    if type(a) ~= "table" then error(("%s: argument %d must be a table"):format(where, i), 3) end
    local name = a.name or a[1]
    local t = a.type or a[2] or "json"
    if type(name) ~= "string" then error(("%s: argument %d needs a name"):format(where, i), 3) end
    if not TYPES[t] then
      error(("%s: argument '%s': type '%s' is not string, integer, float, boolean or json")
            :format(where, name, tostring(t)), 3)
    end
    out[i] = { name = name, type = t, required = a.required and true or false,
               default = default_text(a.default, t, where), description = a.description }
  end
  return out
end

-- ---- registries ------------------------------------------------------------------------

local Registry = {}
Registry.__index = Registry
Registry.__name = "agent_sandbox.server.Registry"
M.Registry = Registry

--- server.Registry(): a set of commands to serve (server.command and
--- server.start use a default one).
function M.registry()
  return setmetatable({ list = {}, by_name = {} }, Registry)
end
setmetatable(Registry, { __call = function() return M.registry() end })

--- reg:command(name, { description, args, hidden }, handler).
function Registry:command(name, spec, handler)
  if type(name) ~= "string" then error("server.command: the name must be a string", 2) end
  if type(spec) == "function" and handler == nil then spec, handler = {}, spec end
  spec = spec or {}
  if type(spec) ~= "table" then error("server.command: the spec must be a table", 2) end
  if type(handler) ~= "function" then error("server.command: the handler must be a function", 2) end
  if self.by_name[name] then error(("server.command: '%s' is registered already"):format(name), 2) end
  local c = { name = name, description = spec.description, hidden = spec.hidden and true or false,
              args = normalize_args(spec.args, "server.command(" .. name .. ")"), fn = handler }
  self.by_name[name] = c
  self.list[#self.list + 1] = c
  return self
end

--- reg:listen(port, { host, token, max_body_bytes, max_connections,
--- shutdown_grace_ms }): a started Server (port 0 = a free one; read it with
--- srv:port()), or nil, err.
function Registry:listen(port, opts)
  if math.type(port) ~= "integer" then error("server.listen: the port must be an integer", 2) end
  local srv, err = failed(core.new(opts or {}))
  if not srv then return nil, err end
  for _, c in ipairs(self.list) do
    local ok, e = failed(srv:register(c.name, c.description, c.hidden, c.args))
    if not ok then
      srv:close()
      return nil, e
    end
  end
  srv:state().commands = self.by_name
  local ok, e = failed(srv:start(port))
  if not ok then
    srv:close()
    return nil, e
  end
  return srv
end

-- ---- serving ---------------------------------------------------------------------------

local function handler_error(e)
  if type(e) == "table" then
    return e.type and tostring(e.type) or "Error", tostring(e.message or e[1] or "error")
  end
  return "Error", tostring(e)
end

-- Answers one call: the handler runs here, on this Lua thread.
local function dispatch(srv, call)
  local c = srv:state().commands[call:command()]
  if not c then return call:fail("Error", "no handler for " .. call:command()) end
  local args, _, derr = json.decode(call:args_json(), 1, json.null)
  if derr then return call:fail("Error", "bad arguments: " .. derr) end
  for _, a in ipairs(c.args) do
    local v = args[a.name]
    if v == json.null then
      args[a.name] = nil
    elseif a.type == "float" and math.type(v) == "integer" then
      args[a.name] = v + 0.0 -- JSON has one number type; the argument is a float
    end
  end
  local ok, result = xpcall(c.fn, function(e)
    -- the traceback goes to stderr (the template's log), the reply gets the error
    io.stderr:write(("agent_sandbox.server: %s: %s\n"):format(c.name,
                    debug.traceback(type(e) == "table" and tostring(e.message) or tostring(e), 2)))
    return e
  end, args, { command = c.name })
  if not ok then
    local t, msg = handler_error(result)
    return call:fail(t, msg)
  end
  local text
  if result == nil then
    text = "null"
  elseif type(result) == "table" and next(result) == nil and getmetatable(result) == nil then
    text = "{}"
  else
    local ok2, s, jerr = pcall(json.encode, result) -- dkjson raises on what JSON cannot hold
    if not ok2 or not s then
      return call:fail("TypeError", "the result is not JSON: " .. tostring(ok2 and jerr or s))
    end
    text = s
  end
  return call:reply(text)
end

--- srv:poll(): answer the calls waiting now, without blocking (for a host's
--- event loop: call it when srv:fd() polls readable). Returns how many it
--- answered; nil, err once the server stopped.
function Server:poll()
  local n = 0
  while true do
    local call, err = self:next_call(0)
    if not call then
      if err.code == "ASB_ETIMEOUT" then return n end
      return failed(nil, err)
    end
    dispatch(self, call)
    n = n + 1
  end
end

--- srv:serve(): take and answer calls until the server is stopped
--- (srv:stop(), also from a handler); true then, or nil, err.
function Server:serve()
  while true do
    local call, err = self:next_call(-1)
    if not call then
      if err.code == "ASB_ECANCELED" then return true end
      return failed(nil, err)
    end
    dispatch(self, call)
  end
end

-- ---- the default registry ----------------------------------------------------------------

local default = M.registry()
M.default_registry = default

--- server.command(name, spec, handler): register in the default registry.
function M.command(name, spec, handler)
  if type(spec) == "function" and handler == nil then spec, handler = {}, spec end
  default:command(name, spec, handler)
end

--- server.listen(port, opts): the default registry's commands, served on
--- port (start, not serve: take calls with srv:serve() or srv:poll()).
function M.listen(port, opts)
  return default:listen(port, opts)
end

--- server.start(port = 9000, opts): serve the default registry's commands
--- until the server is stopped; nil, err if it cannot listen.
function M.start(port, opts)
  local srv, err = default:listen(port or 9000, opts)
  if not srv then return nil, err end
  local ok, serr = srv:serve()
  srv:close()
  if not ok then return nil, serr end
  return true
end

return M
