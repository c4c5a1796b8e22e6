/*
 * agent-sandbox — the Lua half of bindings/agentsandbox.i: C shims.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * What SWIG alone cannot do right:
 *   - bind(cb) on the options structs that carry callbacks: points their
 *     callback members at the trampolines (asb_lua.i) and their userdata at
 *     cb, armed for the Lua thread making the call;
 *   - the callbacks userdata itself (asblua_callbacks, asblua_arm,
 *     asblua_take_error);
 *   - bulk converters that turn a whole result into Lua tables in one call
 *     (an entry list, a process list, a sandbox info, an execution, ...)
 *     instead of one SWIG call per field;
 *   - the objects agent_sandbox hands out: full userdata with two user
 *     values (the public fields, the private state) and a class metatable
 *     whose __index looks up the methods, then the fields (asblua_object,
 *     asblua_class, asblua_private). Lua cannot make a userdata by itself,
 *     and tables would let a program reach into (or replace) a handle.
 * Everything here is per lua_State: the registry holds the metatable and
 * the weak map of the callbacks; nothing is kept in C globals.
 */

%extend asb_command_options {
  void bind(asblua_cb *cb) {
    $self->on_stdout = cb ? asblua_tramp_stdout : NULL;
    $self->on_stderr = cb ? asblua_tramp_stderr : NULL;
    $self->userdata = cb;
  }
}
%extend asb_agents_options {
  void bind(asblua_cb *cb) {
    $self->on_event = cb ? asblua_tramp_agent_event : NULL;
    $self->userdata = cb;
  }
}
%extend asb_pty_options {
  void bind(asblua_cb *cb) {
    $self->on_data = cb ? asblua_tramp_stdout : NULL;
    $self->userdata = cb;
  }
}
%extend asb_watch_options {
  void bind(asblua_cb *cb) {
    $self->on_event = cb ? asblua_tramp_event : NULL;
    $self->userdata = cb;
  }
}
%extend asb_code_options {
  void bind(asblua_cb *cb) {
    $self->on_stdout = cb ? asblua_tramp_stdout : NULL;
    $self->on_stderr = cb ? asblua_tramp_stderr : NULL;
    $self->on_result = cb ? asblua_tramp_result : NULL;
    $self->on_error = cb ? asblua_tramp_error : NULL;
    $self->userdata = cb;
  }
}

%{
/* ---- small helpers ---------------------------------------------------------- */
static void asblua_setstr(lua_State *L, const char *key, const char *value) {
  if (value) {
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
  }
}

static void asblua_setint(lua_State *L, const char *key, lua_Integer value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, key);
}

static void asblua_setbool(lua_State *L, const char *key, int value) {
  lua_pushboolean(L, value);
  lua_setfield(L, -2, key);
}

/* The pointer of a SWIG userdata of type ty at idx; raises otherwise. */
static void *asblua_ptr(lua_State *L, int idx, swig_type_info *ty) {
  void *p = NULL;
  if (!SWIG_IsOK(SWIG_ConvertPtr(L, idx, &p, ty, 0)) || !p) {
    luaL_error(L, "argument %d: expected %s", idx, ty->str);
  }
  return p;
}

/* ---- converters ------------------------------------------------------------- */
static const char *asblua_file_type(asb_file_type t) {
  switch (t) {
  case ASB_FILE_TYPE_FILE: return "file";
  case ASB_FILE_TYPE_DIR: return "dir";
  case ASB_FILE_TYPE_SYMLINK: return "symlink";
  default: return "unknown";
  }
}

/* An entry: {name, path, type, size, mode, permissions, owner, group,
 * modified_at, modified_nanos, symlink_target, metadata}; metadata (a
 * table of the file's user metadata) only when it has some. */
static void asblua_push_entry(lua_State *L, const asb_entry *e) {
  lua_createtable(L, 0, 12);
  asblua_setstr(L, "name", asb_entry_name(e));
  asblua_setstr(L, "path", asb_entry_path(e));
  asblua_setstr(L, "type", asblua_file_type(asb_entry_type(e)));
  asblua_setint(L, "size", (lua_Integer)asb_entry_size(e));
  asblua_setint(L, "mode", (lua_Integer)asb_entry_mode(e));
  asblua_setstr(L, "permissions", asb_entry_permissions(e));
  asblua_setstr(L, "owner", asb_entry_owner(e));
  asblua_setstr(L, "group", asb_entry_group(e));
  asblua_setint(L, "modified_at", (lua_Integer)asb_entry_modified_at(e));
  asblua_setint(L, "modified_nanos", (lua_Integer)asb_entry_modified_nanos(e));
  asblua_setstr(L, "symlink_target", asb_entry_symlink_target(e));
  size_t nm = asb_entry_metadata_count(e);
  if (nm) {
    lua_createtable(L, 0, (int)nm);
    for (size_t i = 0; i < nm; i++)
      asblua_setstr(L, asb_entry_metadata_key(e, i), asb_entry_metadata_value(e, i));
    lua_setfield(L, -2, "metadata");
  }
}

/* A rich code result: every format by name ("text", "png", an extra MIME
 * type ...), formats = their names in order, is_main. */
static void asblua_push_code_result(lua_State *L, const asb_code_result *r) {
  size_t n = asb_code_result_format_count(r);
  lua_createtable(L, 0, (int)n + 2);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const char *name = asb_code_result_format_name(r, i);
    if (!name) continue;
    lua_pushstring(L, name);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "formats");
  for (size_t i = 0; i < n; i++) {
    const char *name = asb_code_result_format_name(r, i);
    if (name) asblua_setstr(L, name, asb_code_result_value(r, name));
  }
  asblua_setbool(L, "is_main", asb_code_result_is_main(r));
}

static int asblua_entry(lua_State *L) {
  asblua_push_entry(L, (const asb_entry *)asblua_ptr(L, 1, SWIGTYPE_p_asb_entry));
  return 1;
}

static int asblua_entry_list(lua_State *L) {
  const asb_entry_list *l = (const asb_entry_list *)asblua_ptr(L, 1, SWIGTYPE_p_asb_entry_list);
  size_t n = asb_entry_list_count(l);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    asblua_push_entry(L, asb_entry_list_get(l, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* {exit_code, stdout, stderr, error}. */
static int asblua_command_result(lua_State *L) {
  const asb_command_result *r =
      (const asb_command_result *)asblua_ptr(L, 1, SWIGTYPE_p_asb_command_result);
  size_t n = 0;
  const char *s;
  lua_createtable(L, 0, 4);
  asblua_setint(L, "exit_code", asb_command_result_exit_code(r));
  s = asb_command_result_stdout(r, &n);
  lua_pushlstring(L, s ? s : "", s ? n : 0);
  lua_setfield(L, -2, "stdout");
  s = asb_command_result_stderr(r, &n);
  lua_pushlstring(L, s ? s : "", s ? n : 0);
  lua_setfield(L, -2, "stderr");
  asblua_setstr(L, "error", asb_command_result_error(r));
  return 1;
}

/* Every process as {pid, tag, cmd, args = {...}, envs = {KEY = value}, cwd}. */
static int asblua_process_list(lua_State *L) {
  const asb_process_list *l =
      (const asb_process_list *)asblua_ptr(L, 1, SWIGTYPE_p_asb_process_list);
  size_t n = asb_process_list_count(l);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const asb_process_info *p = asb_process_list_get(l, i);
    lua_createtable(L, 0, 6);
    asblua_setint(L, "pid", (lua_Integer)asb_process_info_pid(p));
    asblua_setstr(L, "tag", asb_process_info_tag(p));
    asblua_setstr(L, "cmd", asb_process_info_cmd(p));
    asblua_push_strv(L, asb_process_info_args(p));
    lua_setfield(L, -2, "args");
    lua_newtable(L);
    const char *const *envs = asb_process_info_envs(p);
    for (size_t k = 0; envs && envs[k]; k++) {
      const char *eq = strchr(envs[k], '=');
      if (!eq) continue;
      lua_pushlstring(L, envs[k], (size_t)(eq - envs[k]));
      lua_pushstring(L, eq + 1);
      lua_rawset(L, -3);
    }
    lua_setfield(L, -2, "envs");
    asblua_setstr(L, "cwd", asb_process_info_cwd(p));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static void asblua_push_sandbox_info(lua_State *L, const asb_sandbox_info *info) {
  lua_createtable(L, 0, 18);
  asblua_setstr(L, "sandbox_id", asb_sandbox_info_id(info));
  asblua_setstr(L, "template_id", asb_sandbox_info_template_id(info));
  asblua_setstr(L, "name", asb_sandbox_info_name(info));
  asblua_setstr(L, "state", asb_sandbox_info_state(info));
  if (asb_sandbox_info_pause_mode(info))
    asblua_setstr(L, "pause_mode", asb_sandbox_info_pause_mode(info));
  if (asb_sandbox_info_fork_mode(info))
    asblua_setstr(L, "fork_mode", asb_sandbox_info_fork_mode(info));
  /* ours (--pause-swap): swap = { swapped_bytes, resident_bytes,
   * resident_before_bytes (nil: not known) }, or nil */
  if (asb_sandbox_info_swapped_bytes(info) >= 0) {
    lua_createtable(L, 0, 3);
    asblua_setint(L, "swapped_bytes", (lua_Integer)asb_sandbox_info_swapped_bytes(info));
    asblua_setint(L, "resident_bytes", (lua_Integer)asb_sandbox_info_resident_bytes(info));
    if (asb_sandbox_info_resident_before_bytes(info) >= 0) /* not known: adopted paused */
      asblua_setint(L, "resident_before_bytes",
                    (lua_Integer)asb_sandbox_info_resident_before_bytes(info));
    lua_setfield(L, -2, "swap");
  }
  if (asb_sandbox_info_auto_resume(info) >= 0)
    asblua_setbool(L, "auto_resume", asb_sandbox_info_auto_resume(info));
  if (asb_sandbox_info_on_timeout(info))
    asblua_setstr(L, "on_timeout", asb_sandbox_info_on_timeout(info));
  /* E2B's volume_mounts: { { name =, path = }, ... } */
  size_t nvm = asb_sandbox_info_volume_mount_count(info);
  lua_createtable(L, (int)nvm, 0);
  for (size_t i = 0; i < nvm; i++) {
    lua_createtable(L, 0, 2);
    asblua_setstr(L, "name", asb_sandbox_info_volume_mount_name(info, i));
    asblua_setstr(L, "path", asb_sandbox_info_volume_mount_path(info, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "volume_mounts");
  asblua_setint(L, "started_at", (lua_Integer)asb_sandbox_info_started_at(info));
  asblua_setint(L, "end_at", (lua_Integer)asb_sandbox_info_end_at(info));
  asblua_setint(L, "cpu_count", asb_sandbox_info_cpu_count(info));
  asblua_setint(L, "memory_mb", asb_sandbox_info_memory_mb(info));
  asblua_setint(L, "disk_mb", asb_sandbox_info_disk_mb(info));
  asblua_setstr(L, "envd_version", asb_sandbox_info_envd_version(info));
  size_t n = asb_sandbox_info_metadata_count(info);
  lua_createtable(L, 0, (int)n);
  for (size_t i = 0; i < n; i++) {
    const char *k = asb_sandbox_info_metadata_key(info, i);
    const char *v = asb_sandbox_info_metadata_value(info, i);
    if (k) asblua_setstr(L, k, v ? v : "");
  }
  lua_setfield(L, -2, "metadata");
  int iae = asb_sandbox_info_allow_internet_access(info);
  if (iae >= 0) {
    lua_pushboolean(L, iae);
    lua_setfield(L, -2, "allow_internet_access");
  }
  /* decoded in Lua (dkjson), as the rest of the binding's JSON */
  asblua_setstr(L, "network_json", asb_sandbox_info_network_json(info));
}

static int asblua_sandbox_info(lua_State *L) {
  asblua_push_sandbox_info(
      L, (const asb_sandbox_info *)asblua_ptr(L, 1, SWIGTYPE_p_asb_sandbox_info));
  return 1;
}

/* The page's sandboxes (infos) and its next token (nil on the last page). */
static int asblua_sandbox_page(lua_State *L) {
  const asb_sandbox_page *p =
      (const asb_sandbox_page *)asblua_ptr(L, 1, SWIGTYPE_p_asb_sandbox_page);
  size_t n = asb_sandbox_page_count(p);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    asblua_push_sandbox_info(L, asb_sandbox_page_get(p, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  const char *next = asb_sandbox_page_next_token(p);
  if (next && *next) {
    lua_pushstring(L, next);
  } else {
    lua_pushnil(L);
  }
  return 2;
}

/* Every sample as {sampled_at, cpu_used_pct, cpu_count, mem_used, mem_total,
 * disk_used, disk_total}. */
static int asblua_metrics(lua_State *L) {
  const asb_metrics *m = (const asb_metrics *)asblua_ptr(L, 1, SWIGTYPE_p_asb_metrics);
  size_t n = asb_metrics_count(m);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 7);
    asblua_setint(L, "sampled_at", (lua_Integer)asb_metrics_sampled_at(m, i));
    lua_pushnumber(L, asb_metrics_cpu_used_pct(m, i));
    lua_setfield(L, -2, "cpu_used_pct");
    asblua_setint(L, "cpu_count", asb_metrics_cpu_count(m, i));
    asblua_setint(L, "mem_used", (lua_Integer)asb_metrics_mem_used(m, i));
    asblua_setint(L, "mem_total", (lua_Integer)asb_metrics_mem_total(m, i));
    asblua_setint(L, "disk_used", (lua_Integer)asb_metrics_disk_used(m, i));
    asblua_setint(L, "disk_total", (lua_Integer)asb_metrics_disk_total(m, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* An execution: {results = {...}, logs = {stdout = {...}, stderr = {...}},
 * error = {name, value, traceback} or nil, execution_count, text}. */
static int asblua_execution(lua_State *L) {
  const asb_execution *e = (const asb_execution *)asblua_ptr(L, 1, SWIGTYPE_p_asb_execution);
  size_t n = asb_execution_result_count(e);
  lua_createtable(L, 0, 5);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    asblua_push_code_result(L, asb_execution_result_get(e, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "results");
  lua_createtable(L, 0, 2);
  n = asb_execution_stdout_count(e);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, asb_execution_stdout_get(e, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "stdout");
  n = asb_execution_stderr_count(e);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, asb_execution_stderr_get(e, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "stderr");
  lua_setfield(L, -2, "logs");
  if (asb_execution_error_name(e)) {
    lua_createtable(L, 0, 3);
    asblua_setstr(L, "name", asb_execution_error_name(e));
    asblua_setstr(L, "value", asb_execution_error_value(e));
    asblua_setstr(L, "traceback", asb_execution_error_traceback(e));
    lua_setfield(L, -2, "error");
  }
  asblua_setint(L, "execution_count", asb_execution_count(e));
  asblua_setstr(L, "text", asb_execution_text(e));
  return 1;
}

static void asblua_push_context(lua_State *L, const asb_code_context *c) {
  lua_createtable(L, 0, 3);
  asblua_setstr(L, "id", asb_code_context_id(c));
  asblua_setstr(L, "language", asb_code_context_language(c));
  asblua_setstr(L, "cwd", asb_code_context_cwd(c));
}

static int asblua_code_context(lua_State *L) {
  asblua_push_context(L, (const asb_code_context *)asblua_ptr(L, 1, SWIGTYPE_p_asb_code_context));
  return 1;
}

static int asblua_code_context_list(lua_State *L) {
  const asb_code_context_list *l =
      (const asb_code_context_list *)asblua_ptr(L, 1, SWIGTYPE_p_asb_code_context_list);
  size_t n = asb_code_context_list_count(l);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    asblua_push_context(L, asb_code_context_list_get(l, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* Every named command as {name, description, args = {{name, type, required,
 * default, description}, ...}}. */
static int asblua_named_command_list(lua_State *L) {
  const asb_named_command_list *l =
      (const asb_named_command_list *)asblua_ptr(L, 1, SWIGTYPE_p_asb_named_command_list);
  size_t n = asb_named_command_list_count(l);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const asb_named_command *c = asb_named_command_list_get(l, i);
    size_t na = asb_named_command_arg_count(c);
    lua_createtable(L, 0, 3);
    asblua_setstr(L, "name", asb_named_command_name(c));
    asblua_setstr(L, "description", asb_named_command_description(c));
    lua_createtable(L, (int)na, 0);
    for (size_t k = 0; k < na; k++) {
      lua_createtable(L, 0, 5);
      asblua_setstr(L, "name", asb_named_command_arg_name(c, k));
      asblua_setstr(L, "type", asb_named_command_arg_type(c, k));
      asblua_setbool(L, "required", asb_named_command_arg_required(c, k));
      asblua_setstr(L, "default", asb_named_command_arg_default(c, k));
      asblua_setstr(L, "description", asb_named_command_arg_description(c, k));
      lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    lua_setfield(L, -2, "args");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* A session record's fields (metadata is read by key: asb_session_metadata). */
static int asblua_session(lua_State *L) {
  const asb_session *s = (const asb_session *)asblua_ptr(L, 1, SWIGTYPE_p_asb_session);
  lua_createtable(L, 0, 5);
  asblua_setstr(L, "name", asb_session_name(s));
  asblua_setstr(L, "sandbox_id", asb_session_sandbox_id(s));
  asblua_setstr(L, "template_id", asb_session_template_id(s));
  asblua_setstr(L, "api_url", asb_session_api_url(s));
  asblua_setint(L, "created_at", (lua_Integer)asb_session_created_at(s));
  return 1;
}

/* The names of a session list. */
static int asblua_session_names(lua_State *L) {
  const asb_session_list *l =
      (const asb_session_list *)asblua_ptr(L, 1, SWIGTYPE_p_asb_session_list);
  size_t n = asb_session_list_count(l);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushstring(L, asb_session_name(asb_session_list_get(l, i)));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static void asblua_push_template(lua_State *L, const asb_template *t) {
  lua_createtable(L, 0, 11);
  asblua_setstr(L, "id", asb_template_id(t));
  asblua_setstr(L, "name", asb_template_name(t));
  asblua_setstr(L, "build_id", asb_template_build_id(t));
  asblua_setstr(L, "description", asb_template_description(t));
  asblua_setint(L, "cpu_count", asb_template_cpu_count(t));
  asblua_setint(L, "memory_mb", asb_template_memory_mb(t));
  asblua_setint(L, "disk_mb", asb_template_disk_mb(t));
  asblua_setint(L, "created_at", (lua_Integer)asb_template_created_at(t));
  int cached = asb_template_cached(t);
  if (cached >= 0) asblua_setbool(L, "cached", cached);
  asblua_setstr(L, "build_log", asb_template_build_log(t));
  asblua_setstr(L, "json", asb_template_json(t));
}

static int asblua_template(lua_State *L) {
  asblua_push_template(L, (const asb_template *)asblua_ptr(L, 1, SWIGTYPE_p_asb_template));
  return 1;
}

static int asblua_template_list(lua_State *L) {
  const asb_template_list *l =
      (const asb_template_list *)asblua_ptr(L, 1, SWIGTYPE_p_asb_template_list);
  size_t n = asb_template_list_count(l);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    asblua_push_template(L, asb_template_list_get(l, i));
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The calling thread's last error: {code = "ASB_E...", status, http_status,
 * message, remote_code, retry_after, reason}. */
static int asblua_error_last(lua_State *L) {
  const asb_error *e = asb_error_last();
  lua_createtable(L, 0, 7);
  asblua_setstr(L, "code", asb_status_name(e->code));
  asblua_setint(L, "status", e->code);
  asblua_setint(L, "http_status", e->http_status);
  asblua_setstr(L, "message", e->message ? e->message : "");
  asblua_setstr(L, "remote_code", e->remote_code ? e->remote_code : "");
  asblua_setint(L, "retry_after", e->retry_after);
  asblua_setstr(L, "reason", e->reason ? e->reason : "");
  return 1;
}

/* ---- callbacks userdata ------------------------------------------------------- */

/* asblua_callbacks(functions): a callbacks userdata whose functions are
 * the table's on_stdout, on_stderr, on_result, on_error, on_event and
 * reader (a fresh copy: later changes to the table do not count). */
static int asblua_callbacks(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  asblua_cb *cb = (asblua_cb *)lua_newuserdatauv(L, sizeof *cb, 1);
  memset(cb, 0, sizeof *cb);
  lua_createtable(L, 0, 7);
  for (size_t i = 0; i < sizeof asblua_fn_names / sizeof asblua_fn_names[0]; i++) {
    int t = lua_getfield(L, 1, asblua_fn_names[i]);
    if (t != LUA_TNIL && t != LUA_TFUNCTION && !luaL_getmetafield(L, -1, "__call")) {
      return luaL_error(L, "%s must be a function (got %s)", asblua_fn_names[i],
                        luaL_typename(L, -1));
    }
    if (t != LUA_TNIL && t != LUA_TFUNCTION) lua_pop(L, 1); /* the __call */
    lua_setfield(L, -2, asblua_fn_names[i]);
  }
  lua_setiuservalue(L, -2, 1);
  luaL_setmetatable(L, ASBLUA_CALLBACKS_MT);
  lua_getfield(L, LUA_REGISTRYINDEX, ASBLUA_CALLBACKS_MAP);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, -2, cb);
  lua_pop(L, 1);
  return 1;
}

/* asblua_arm(cb): the next C call that runs cb's functions is made by this
 * Lua thread (for waits, whose callbacks were bound when the handle was
 * opened). */
static int asblua_arm(lua_State *L) {
  if (!asblua_cb_arm(L, 1)) return luaL_typeerror(L, 1, "agent_sandbox callbacks");
  return 0;
}

/* asblua_take_error(cb): the error one of cb's functions raised during the
 * last call (and forget it), or nil. */
static int asblua_take_error(lua_State *L) {
  asblua_cb *cb = (asblua_cb *)luaL_checkudata(L, 1, ASBLUA_CALLBACKS_MT);
  cb->L = NULL;
  lua_getiuservalue(L, 1, 1);
  lua_getfield(L, -1, "error");
  lua_pushnil(L);
  lua_setfield(L, -3, "error");
  if (lua_isnil(L, -1) && cb->lost) {
    lua_pushstring(L, "agent_sandbox: a callback raised an error that could not be kept "
                      "(out of memory)");
  }
  cb->failed = cb->lost = 0;
  return 1;
}

/* ---- the objects agent_sandbox hands out ---------------------------------------- */

/* __index of a class: the method of that name, else the public field. */
static int asblua_index(lua_State *L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  if (lua_getiuservalue(L, 1, 1) != LUA_TTABLE) return 0;
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int asblua_newindex(lua_State *L) {
  const char *cls = luaL_getmetafield(L, 1, "__name") == LUA_TSTRING ? lua_tostring(L, -1)
                                                                       : "object";
  return luaL_error(L, "%s: field '%s' is read-only", cls, luaL_tolstring(L, 2, NULL));
}

/* asblua_class(mt, methods): mt becomes a class metatable (its __index finds
 * methods, then fields; its fields cannot be assigned). */
static int asblua_class(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, asblua_index, 1);
  lua_setfield(L, 1, "__index");
  lua_pushcfunction(L, asblua_newindex);
  lua_setfield(L, 1, "__newindex");
  lua_pushboolean(L, 1);
  lua_setfield(L, 1, "__asb_class");
  return 0;
}

/* asblua_object(mt, fields, private): a new object of class mt. */
static int asblua_object(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_getfield(L, 1, "__asb_class");
  luaL_argcheck(L, lua_toboolean(L, -1), 1, "not a class made by asblua_class");
  lua_pop(L, 1);
  lua_newuserdatauv(L, 0, 2);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 3);
  lua_setiuservalue(L, -2, 2);
  lua_pushvalue(L, 1);
  lua_setmetatable(L, -2);
  return 1;
}

/* asblua_private(obj): its private state table; asblua_fields(obj): its
 * public fields. Both raise for anything but an agent_sandbox object. */
static int asblua_uv(lua_State *L, int n) {
  if (lua_type(L, 1) != LUA_TUSERDATA || luaL_getmetafield(L, 1, "__asb_class") == LUA_TNIL) {
    return luaL_typeerror(L, 1, "agent_sandbox object");
  }
  lua_getiuservalue(L, 1, n);
  return 1;
}
static int asblua_private(lua_State *L) { return asblua_uv(L, 2); }
static int asblua_fields(lua_State *L) { return asblua_uv(L, 1); }

/* asblua_is_object(v[, mt]): true for an agent_sandbox object (of class mt). */
static int asblua_is_object(lua_State *L) {
  int ok = lua_type(L, 1) == LUA_TUSERDATA && lua_getmetatable(L, 1);
  if (ok) {
    lua_getfield(L, -1, "__asb_class");
    ok = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (ok && !lua_isnoneornil(L, 2)) ok = lua_rawequal(L, -1, 2);
  }
  lua_pushboolean(L, ok);
  return 1;
}
%}

/* ---- agent_sandbox.mcp: replace this process with agent-sandbox-mcp -------------- */
%{
#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* The path of the libagentsandbox this module loaded (docs/mcp.md: a
 * launcher looks for agent-sandbox-mcp next to it), or nil. */
static int asblua_library_path(lua_State *L) {
  Dl_info info;
  if (dladdr((void *)asb_version, &info) && info.dli_fname && *info.dli_fname) {
    lua_pushstring(L, info.dli_fname);
  } else {
    lua_pushnil(L);
  }
  return 1;
}

/* asblua_is_executable(path): a regular file this process may execute. */
static int asblua_is_executable(lua_State *L) {
  struct stat st;
  const char *path = luaL_checkstring(L, 1);
  lua_pushboolean(L, stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0);
  return 1;
}

/* asblua_exec(path, {argv...}): execv, so the program gets this process's
 * stdin, stdout, signals and environment as they are (Lua's os.execute
 * would put a shell and a wait in between). Returns only on failure: nil,
 * message. */
static int asblua_exec(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  const char **argv = (const char **)lua_newuserdatauv(L, sizeof *argv * ((size_t)n + 1), 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, 2, i + 1);
    argv[i] = luaL_checkstring(L, -1); /* kept alive by the table */
    lua_pop(L, 1);
  }
  argv[n] = NULL;
  fflush(NULL);
  execv(path, (char *const *)argv);
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", path, strerror(errno));
  return 2;
}
%}
%native(asblua_library_path) int asblua_library_path(lua_State *L);
%native(asblua_is_executable) int asblua_is_executable(lua_State *L);
%native(asblua_exec) int asblua_exec(lua_State *L);

%native(asblua_entry) int asblua_entry(lua_State *L);
%native(asblua_entry_list) int asblua_entry_list(lua_State *L);
%native(asblua_command_result) int asblua_command_result(lua_State *L);
%native(asblua_process_list) int asblua_process_list(lua_State *L);
%native(asblua_sandbox_info) int asblua_sandbox_info(lua_State *L);
%native(asblua_sandbox_page) int asblua_sandbox_page(lua_State *L);
%native(asblua_metrics) int asblua_metrics(lua_State *L);
%native(asblua_execution) int asblua_execution(lua_State *L);
%native(asblua_code_context) int asblua_code_context(lua_State *L);
%native(asblua_code_context_list) int asblua_code_context_list(lua_State *L);
%native(asblua_named_command_list) int asblua_named_command_list(lua_State *L);
%native(asblua_session) int asblua_session(lua_State *L);
%native(asblua_session_names) int asblua_session_names(lua_State *L);
%native(asblua_template) int asblua_template(lua_State *L);
%native(asblua_template_list) int asblua_template_list(lua_State *L);
%native(asblua_error_last) int asblua_error_last(lua_State *L);
%native(asblua_callbacks) int asblua_callbacks(lua_State *L);
%native(asblua_arm) int asblua_arm(lua_State *L);
%native(asblua_take_error) int asblua_take_error(lua_State *L);
%native(asblua_class) int asblua_class(lua_State *L);
%native(asblua_object) int asblua_object(lua_State *L);
%native(asblua_private) int asblua_private(lua_State *L);
%native(asblua_fields) int asblua_fields(lua_State *L);
%native(asblua_is_object) int asblua_is_object(lua_State *L);

%init %{
  /* The callbacks' metatable and their weak map, in this state's registry. */
  if (luaL_newmetatable(L, ASBLUA_CALLBACKS_MT)) {
    lua_pushliteral(L, "private");
    lua_setfield(L, -2, "__metatable");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, ASBLUA_CALLBACKS_MAP) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, ASBLUA_CALLBACKS_MAP);
  } else {
    lua_pop(L, 1);
  }
%}

/* require "agent_sandbox.core" finds luaopen_agent_sandbox_core. SWIG's own
 * entry point (the module is built with -module agent_sandbox_swig) also
 * sets two globals, swig_type and swig_equals; a module for embedders sets
 * none (OpenResty warns about every global a module writes), so they are
 * put back as they were. */
%wrapper %{
SWIGEXPORT int SWIG_init(lua_State *L);
SWIGEXPORT int luaopen_agent_sandbox_core(lua_State *L);
SWIGEXPORT int luaopen_agent_sandbox_core(lua_State *L) {
  static const char *const globals[] = {"swig_type", "swig_equals"};
  int base = lua_gettop(L);
  for (int i = 0; i < 2; i++) lua_getglobal(L, globals[i]);
  lua_pushcfunction(L, SWIG_init);
  lua_call(L, 0, 1);
  for (int i = 0; i < 2; i++) {
    lua_pushvalue(L, base + 1 + i);
    lua_setglobal(L, globals[i]);
  }
  return 1;
}
%}
