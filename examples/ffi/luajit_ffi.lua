-- libagentsandbox from LuaJIT's ffi (Debian's `luajit`): no binding, no
-- header, only ffi.cdef of the declarations used (docs/ffi.md). Creates a
-- sandbox, runs a command whose output streams to a Lua callback, writes a
-- file and reads it back, shows a failing call's error, kills the sandbox.
--
--   luajit luajit_ffi.lua
--   ASB_LIBRARY="$(pkg-config --variable=libdir agentsandbox)/libagentsandbox.so.1" \
--     luajit luajit_ffi.lua
--
-- LuaJIT declares C structs as easily as functions, so this one fills
-- asb_command_options as a struct (the layout of version 1, guarded by its
-- version field and initialised by asb_command_options_init) where the C
-- and ctypes examples use asb_options_new; both are the same struct.
-- SPDX-License-Identifier: Apache-2.0
local ffi = require("ffi")

ffi.cdef [[
typedef struct asb_client asb_client;
typedef struct asb_sandbox asb_sandbox;
typedef struct asb_command_result asb_command_result;
typedef struct asb_cancel asb_cancel;
typedef int (*asb_data_fn)(const char *data, size_t len, void *userdata);

typedef struct asb_command_options {
  unsigned int version;
  const char *const *envs;
  const char *cwd;
  const char *user;
  long timeout_ms;
  long request_timeout_ms;
  int stdin_enabled;
  const char *tag;
  asb_data_fn on_stdout;
  asb_data_fn on_stderr;
  void *userdata;
  int discard_output;
  asb_cancel *cancel;
} asb_command_options;

const char *asb_version(int *major, int *minor, int *patch);
const char *asb_error_message(const void *e);
const char *asb_status_name(int code);
int asb_client_new(asb_client **out, const void *opts);
void asb_client_free(asb_client *client);
int asb_sandbox_create(asb_sandbox **out, asb_client *client, const void *opts);
const char *asb_sandbox_id(const asb_sandbox *sandbox);
int asb_sandbox_kill(asb_sandbox *sandbox, const void *call);
void asb_sandbox_free(asb_sandbox *sandbox);
int asb_command_options_init(asb_command_options *opts, unsigned int version);
int asb_commands_run(asb_command_result **out, asb_sandbox *sandbox, const char *cmd,
                     const asb_command_options *opts);
int asb_command_result_exit_code(const asb_command_result *r);
const char *asb_command_result_stdout(const asb_command_result *r, size_t *len);
void asb_command_result_free(asb_command_result *r);
int asb_files_write(void **out, asb_sandbox *sandbox, const char *path, const void *data,
                    size_t len, const void *opts);
int asb_files_read(char **data, size_t *len, asb_sandbox *sandbox, const char *path,
                   const void *opts);
void asb_free(void *ptr);
]]

local ASB_OK, ASB_ECOMMANDEXIT = 0, -8

-- ffi.load resolves with dlsym: the default version of each symbol, which
-- in libagentsandbox.so.1 is ASB_1.0.
local asb = ffi.load(os.getenv("ASB_LIBRARY") or "libagentsandbox.so.1")

local function check(rc, what, ok)
  if rc ~= (ok or ASB_OK) then
    error(string.format("%s: %s: %s", what, ffi.string(asb.asb_status_name(rc)),
                        ffi.string(asb.asb_error_message(nil))), 0)
  end
  return rc
end

local function main()
  print("libagentsandbox " .. ffi.string(asb.asb_version(nil, nil, nil)))
  local client, sandbox = ffi.new("asb_client *[1]"), ffi.new("asb_sandbox *[1]")
  check(asb.asb_client_new(client, nil), "client")
  check(asb.asb_sandbox_create(sandbox, client[0], nil), "create")
  local sb = sandbox[0]
  print("sandbox " .. ffi.string(asb.asb_sandbox_id(sb)))

  -- A Lua function as asb_data_fn. It runs on this thread during
  -- asb_commands_run; LuaJIT callbacks are a limited resource: free it.
  local streamed = {}
  local on_stdout = ffi.cast("asb_data_fn", function(data, len, userdata)
    local chunk = ffi.string(data, len)
    streamed[#streamed + 1] = chunk
    io.write("streamed: " .. chunk)
    return 0
  end)

  local opts = ffi.new("asb_command_options")
  check(asb.asb_command_options_init(opts, 1), "options")
  -- A NULL-ended array (ffi.new zero-fills). Lua strings handed to C must
  -- stay referenced while C uses them: these are constants of this chunk.
  -- (Not ffi.new("const char *[2]", {"WHO=luajit"}): a one-element table
  -- initialises every element, the NULL end too.)
  local envs = ffi.new("const char *[2]")
  envs[0] = "WHO=luajit"
  opts.envs = envs
  opts.cwd = "/tmp"
  opts.on_stdout = on_stdout
  local result = ffi.new("asb_command_result *[1]")
  check(asb.asb_commands_run(result, sb, "echo hello from $WHO; echo in $(pwd)", opts), "run")
  on_stdout:free()
  local len = ffi.new("size_t[1]")
  local out = ffi.string(asb.asb_command_result_stdout(result[0], len), len[0])
  print(string.format("exit code %d, %d bytes streamed, %d kept",
                      asb.asb_command_result_exit_code(result[0]), #table.concat(streamed),
                      #out))
  asb.asb_command_result_free(result[0])
  assert(table.concat(streamed) == out, "streamed output differs from the result's")

  -- A failing command: ASB_ECOMMANDEXIT, and the result is still set.
  local rc = check(asb.asb_commands_run(result, sb, "exit 3", nil), "exit 3", ASB_ECOMMANDEXIT)
  print(string.format("exit 3: %s, exit code %d (%s)", ffi.string(asb.asb_status_name(rc)),
                      asb.asb_command_result_exit_code(result[0]),
                      ffi.string(asb.asb_error_message(nil))))
  asb.asb_command_result_free(result[0])

  local text = "written through luajit\n"
  check(asb.asb_files_write(nil, sb, "/tmp/ffi/hello.txt", text, #text, nil), "write")
  local data = ffi.new("char *[1]")
  check(asb.asb_files_read(data, len, sb, "/tmp/ffi/hello.txt", nil), "read")
  local back = ffi.string(data[0], len[0])
  asb.asb_free(data[0]) -- the library's buffer goes back to the library
  print("file round trip " .. (back == text and "ok" or "FAILED"))

  check(asb.asb_sandbox_kill(sb, nil), "kill")
  print("killed")
  asb.asb_sandbox_free(sb)
  asb.asb_client_free(client[0])
  return back == text
end

-- A C function that calls back into Lua must not be called from a trace
-- the JIT compiled (LuaJIT: "bad callback"); keep main interpreted.
jit.off(main)
local ok, err = pcall(main)
if not ok then
  io.stderr:write(tostring(err) .. "\n")
  os.exit(1)
end
os.exit(err and 0 or 1)
