-- Secrets: a named value the control plane keeps for the egress proxy,
-- which puts it into requests whose network.rules header values name it
-- (asb.secrets.fill(name), "${e2b.secrets.<name>}"). The value goes in
-- and never comes out: every result is its id, name, version, times and
-- metadata (docs/reference/secret.md, docs/egress.md).
-- SPDX-License-Identifier: Apache-2.0
local asb = require "agent_sandbox"
local secrets = asb.secrets

local name = "lua-example-key-" .. tostring(os.time())
local s = assert(secrets.create(name, "sk-not-a-real-key", { metadata = { env = "example" } }))
print("created", s.name == name, "version", s.version, s.id:match("^sec_") ~= nil)
local u = assert(secrets.update(name, "sk-rotated"))
print("updated version", u.version, u.metadata.env)
local listed = false
for _, x in ipairs(assert(secrets.list())) do listed = listed or x.id == s.id end
print("listed", listed)
print("header value", "Bearer " .. secrets.fill(name))
print("deleted", assert(secrets.delete(s.id)))
