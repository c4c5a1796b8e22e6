-- Named commands of the lua-hello example template (port 9000).
--
-- Each server.command is a command: its args are the command's typed
-- keyword arguments, the handler gets them as a table and returns the
-- result the client gets from sb:run(...). An error is an error reply (the
-- client gets ASB_ECOMMANDFAILED with its type and message).
-- SPDX-License-Identifier: Apache-2.0
local server = require "agent_sandbox.server"

server.command("hello", {
  description = "Greets someone.",
  args = { { name = "name", type = "string", default = "world", description = "who to greet" } },
}, function(args)
  return ("%s, %s!"):format(os.getenv("HELLO_GREETING") or "Hello", args.name)
end)

server.command("add", {
  description = "Adds two numbers (a is an integer, b a float).",
  args = { { "a", "integer", required = true }, { "b", "float", default = 0.5 } },
}, function(args)
  return args.a + args.b
end)

server.command("stats", {
  description = "Count, sum and mean of a list of numbers.",
  args = { { "values", "json", required = true }, { "label", "string" } },
}, function(args)
  local values = args.values
  if type(values) ~= "table" or #values == 0 then
    error({ type = "ValueError", message = "values must be a non-empty list" })
  end
  local sum = 0
  for _, v in ipairs(values) do sum = sum + v end
  return { label = args.label, count = #values, sum = sum, mean = sum / #values }
end)

server.command("whoami", { description = "Where the command server runs." }, function(_, call)
  local p = io.popen("id -un; id -u; pwd")
  local user, uid, cwd = p:read("l"), p:read("l"), p:read("l")
  p:close()
  return { user = user, uid = math.tointeger(tonumber(uid)), cwd = cwd, command = call.command,
           lua = _VERSION }
end)

server.command("secret", { hidden = true, description = "Callable, but not listed." }, function()
  return "hidden but callable"
end)

assert(server.start(9000))
