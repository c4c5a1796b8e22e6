/*
 * agent-sandbox — the Python half of bindings/agentsandbox.i: C shims.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * What SWIG alone cannot do right:
 *   - bind(cb) on the options structs that carry callbacks: points their
 *     callback members at the trampolines and their userdata at cb;
 *   - bulk converters that turn a whole list into Python tuples in one call
 *     (an entry list, a process list, a sandbox info) instead of one SWIG
 *     call per field.
 */

%extend asb_command_options {
  void bind(asbpy_callbacks *cb) {
    $self->on_stdout = cb && cb->on_stdout ? asbpy_tramp_stdout : NULL;
    $self->on_stderr = cb && cb->on_stderr ? asbpy_tramp_stderr : NULL;
    $self->userdata = cb;
  }
}
%extend asb_agents_options {
  void bind(asbpy_callbacks *cb) {
    $self->on_event = cb && cb->on_event ? asbpy_tramp_agent_event : NULL;
    $self->userdata = cb;
  }
}
%extend asb_pty_options {
  void bind(asbpy_callbacks *cb) {
    $self->on_data = cb && cb->on_stdout ? asbpy_tramp_stdout : NULL;
    $self->userdata = cb;
  }
}
%extend asb_watch_options {
  void bind(asbpy_callbacks *cb) {
    $self->on_event = cb ? asbpy_tramp_event : NULL;
    $self->userdata = cb;
  }
}
%extend asb_template_steps_options {
  void bind(asbpy_callbacks *cb) {
    $self->on_log = cb && cb->on_event ? asbpy_tramp_template_log : NULL;
    $self->userdata = cb;
  }
}
%extend asb_code_options {
  void bind(asbpy_callbacks *cb) {
    $self->on_stdout = cb && cb->on_stdout ? asbpy_tramp_stdout : NULL;
    $self->on_stderr = cb && cb->on_stderr ? asbpy_tramp_stderr : NULL;
    $self->on_result = cb && cb->on_result ? asbpy_tramp_result : NULL;
    $self->on_error = cb && cb->on_error ? asbpy_tramp_error : NULL;
    $self->userdata = cb;
  }
}

%inline %{
/* Every entry of a list as asbpy_entry_tuple tuples. */
PyObject *asbpy_entry_list_tuples(const asb_entry_list *list) {
  size_t n = asb_entry_list_count(list);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *t = asbpy_entry_tuple(asb_entry_list_get(list, i));
    if (!t) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  return l;
}

PyObject *asbpy_entry_as_tuple(const asb_entry *entry) {
  return asbpy_entry_tuple(entry);
}

static PyObject *asbpy_strv_list(const char *const *v) {
  PyObject *l = PyList_New(0);
  for (; l && v && *v; v++) {
    PyObject *s = asbpy_str(*v);
    if (!s || PyList_Append(l, s) != 0) {
      Py_XDECREF(s);
      Py_CLEAR(l);
      break;
    }
    Py_DECREF(s);
  }
  return l;
}

/* Every process as (pid, tag, cmd, args, envs, cwd). */
PyObject *asbpy_process_list_tuples(const asb_process_list *list) {
  size_t n = asb_process_list_count(list);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    const asb_process_info *p = asb_process_list_get(list, i);
    PyObject *t = Py_BuildValue("(INNNNN)", asb_process_info_pid(p),
                                asbpy_str(asb_process_info_tag(p)),
                                asbpy_str(asb_process_info_cmd(p)),
                                asbpy_strv_list(asb_process_info_args(p)),
                                asbpy_strv_list(asb_process_info_envs(p)),
                                asbpy_str(asb_process_info_cwd(p)));
    if (!t) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  return l;
}

/* A sandbox info as a dict of its fields. */
PyObject *asbpy_sandbox_info_dict(const asb_sandbox_info *info) {
  if (!info) Py_RETURN_NONE;
  PyObject *meta = PyDict_New();
  size_t nmeta = asb_sandbox_info_metadata_count(info);
  for (size_t i = 0; meta && i < nmeta; i++) {
    const char *key = asb_sandbox_info_metadata_key(info, i);
    const char *value = asb_sandbox_info_metadata_value(info, i);
    PyObject *v = asbpy_str(value ? value : "");
    if (!v || PyDict_SetItemString(meta, key, v) != 0) Py_CLEAR(meta);
    Py_XDECREF(v);
  }
  if (!meta) return NULL;
  /* volumeMounts as [{"name", "path"}], E2B's python-sdk shape */
  size_t nvm = asb_sandbox_info_volume_mount_count(info);
  PyObject *mounts = PyList_New((Py_ssize_t)nvm);
  for (size_t i = 0; mounts && i < nvm; i++) {
    PyObject *m = Py_BuildValue("{s:N,s:N}",
                                "name", asbpy_str(asb_sandbox_info_volume_mount_name(info, i)),
                                "path", asbpy_str(asb_sandbox_info_volume_mount_path(info, i)));
    if (!m) {
      Py_CLEAR(mounts);
      break;
    }
    PyList_SET_ITEM(mounts, (Py_ssize_t)i, m);
  }
  if (!mounts) {
    Py_DECREF(meta);
    return NULL;
  }
  return Py_BuildValue("{s:N,s:N,s:N,s:N,s:L,s:L,s:i,s:i,s:i,s:N,s:N,s:i,s:N,s:N,s:N,s:L,s:L,s:L,s:i,s:N,s:N}",
                       "sandbox_id", asbpy_str(asb_sandbox_info_id(info)),
                       "template_id", asbpy_str(asb_sandbox_info_template_id(info)),
                       "name", asbpy_str(asb_sandbox_info_name(info)),
                       "state", asbpy_str(asb_sandbox_info_state(info)),
                       "started_at", (long long)asb_sandbox_info_started_at(info),
                       "end_at", (long long)asb_sandbox_info_end_at(info),
                       "cpu_count", asb_sandbox_info_cpu_count(info),
                       "memory_mb", asb_sandbox_info_memory_mb(info),
                       "disk_mb", asb_sandbox_info_disk_mb(info),
                       "envd_version", asbpy_str(asb_sandbox_info_envd_version(info)),
                       "metadata", meta,
                       "allow_internet_access", asb_sandbox_info_allow_internet_access(info),
                       "network", asbpy_str(asb_sandbox_info_network_json(info)),
                       "pause_mode", asbpy_str(asb_sandbox_info_pause_mode(info)),
                       "fork_mode", asbpy_str(asb_sandbox_info_fork_mode(info)),
                       "swapped_bytes", (long long)asb_sandbox_info_swapped_bytes(info),
                       "resident_bytes", (long long)asb_sandbox_info_resident_bytes(info),
                       "resident_before_bytes",
                       (long long)asb_sandbox_info_resident_before_bytes(info),
                       "auto_resume", asb_sandbox_info_auto_resume(info),
                       "on_timeout", asbpy_str(asb_sandbox_info_on_timeout(info)),
                       "volume_mounts", mounts);
}

/* Every sandbox of a page as asbpy_sandbox_info_dict dicts. */
PyObject *asbpy_sandbox_page_dicts(const asb_sandbox_page *page) {
  size_t n = asb_sandbox_page_count(page);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *d = asbpy_sandbox_info_dict(asb_sandbox_page_get(page, i));
    if (!d) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, d);
  }
  return l;
}

/* Every sample as (timestamp, cpu_used_pct, cpu_count, mem_used, mem_total,
 * disk_used, disk_total). */
PyObject *asbpy_metrics_tuples(const asb_metrics *m) {
  size_t n = asb_metrics_count(m);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *t = Py_BuildValue("(LdiLLLL)", (long long)asb_metrics_sampled_at(m, i),
                                asb_metrics_cpu_used_pct(m, i), asb_metrics_cpu_count(m, i),
                                (long long)asb_metrics_mem_used(m, i),
                                (long long)asb_metrics_mem_total(m, i),
                                (long long)asb_metrics_disk_used(m, i),
                                (long long)asb_metrics_disk_total(m, i));
    if (!t) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  return l;
}

/* An execution as (results, stdout chunks, stderr chunks, error or None,
 * execution count); results are asbpy_code_result_dict dicts and the error
 * a (name, value, traceback) tuple. */
PyObject *asbpy_execution_tuple(const asb_execution *e) {
  size_t n = asb_execution_result_count(e);
  PyObject *results = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; results && i < n; i++) {
    PyObject *d = asbpy_code_result_dict(asb_execution_result_get(e, i));
    if (!d) {
      Py_CLEAR(results);
      break;
    }
    PyList_SET_ITEM(results, (Py_ssize_t)i, d);
  }
  PyObject *out = PyList_New(0), *err = PyList_New(0);
  for (size_t i = 0; out && i < asb_execution_stdout_count(e); i++) {
    PyObject *s = asbpy_str(asb_execution_stdout_get(e, i));
    if (!s || PyList_Append(out, s) != 0) Py_CLEAR(out);
    Py_XDECREF(s);
  }
  for (size_t i = 0; err && i < asb_execution_stderr_count(e); i++) {
    PyObject *s = asbpy_str(asb_execution_stderr_get(e, i));
    if (!s || PyList_Append(err, s) != 0) Py_CLEAR(err);
    Py_XDECREF(s);
  }
  PyObject *error;
  if (asb_execution_error_name(e)) {
    error = Py_BuildValue("(NNN)", asbpy_str(asb_execution_error_name(e)),
                          asbpy_str(asb_execution_error_value(e)),
                          asbpy_str(asb_execution_error_traceback(e)));
  } else {
    error = Py_None;
    Py_INCREF(error);
  }
  if (!results || !out || !err || !error) {
    Py_XDECREF(results);
    Py_XDECREF(out);
    Py_XDECREF(err);
    Py_XDECREF(error);
    return NULL;
  }
  return Py_BuildValue("(NNNNi)", results, out, err, error, asb_execution_count(e));
}

/* The last error of the calling thread as (code, http_status, message,
 * remote_code, retry_after, reason). */
PyObject *asbpy_error_last(void) {
  const asb_error *e = asb_error_last();
  return Py_BuildValue("(iiNNiN)", e->code, e->http_status, asbpy_str(e->message),
                       asbpy_str(e->remote_code), e->retry_after, asbpy_str(e->reason));
}

/* Every event of a list as its JSON text. */
PyObject *asbpy_agent_event_list_json(const asb_agent_event_list *list) {
  size_t n = asb_agent_event_list_count(list);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *s = asbpy_str(asb_agent_event_json(asb_agent_event_list_get(list, i)));
    if (!s) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, s);
  }
  return l;
}

/* The agents of a list: (name, package, installed, version, path). */
PyObject *asbpy_agent_list_tuples(const asb_agent_list *list) {
  size_t n = asb_agent_list_count(list);
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    const asb_agent *a = asb_agent_list_get(list, i);
    PyObject *t = Py_BuildValue("(NNONN)", asbpy_str(asb_agent_name(a)),
                                asbpy_str(asb_agent_package(a)),
                                asb_agent_installed(a) ? Py_True : Py_False,
                                asbpy_str(asb_agent_version(a)), asbpy_str(asb_agent_path(a)));
    if (!t) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, t);
  }
  return l;
}

/* Every command of a list as (name, description, [(arg name, type,
 * required, default or None, description)]): one call for the whole list. */
PyObject *asbpy_named_command_list_tuples(const asb_named_command_list *list) {
  size_t n = asb_named_command_list_count(list);
  PyObject *out = PyList_New((Py_ssize_t)n);
  if (!out) return NULL;
  for (size_t i = 0; i < n; i++) {
    const asb_named_command *c = asb_named_command_list_get(list, i);
    size_t na = asb_named_command_arg_count(c);
    PyObject *args = PyList_New((Py_ssize_t)na);
    for (size_t k = 0; args && k < na; k++) {
      PyObject *a = Py_BuildValue("(NNNNN)", asbpy_str(asb_named_command_arg_name(c, k)),
                                  asbpy_str(asb_named_command_arg_type(c, k)),
                                  PyBool_FromLong(asb_named_command_arg_required(c, k)),
                                  asbpy_str(asb_named_command_arg_default(c, k)),
                                  asbpy_str(asb_named_command_arg_description(c, k)));
      if (!a) Py_CLEAR(args);
      else PyList_SET_ITEM(args, (Py_ssize_t)k, a);
    }
    PyObject *t = args ? Py_BuildValue("(NNN)", asbpy_str(asb_named_command_name(c)),
                                       asbpy_str(asb_named_command_description(c)), args)
                       : NULL;
    if (!t) {
      Py_DECREF(out);
      return NULL;
    }
    PyList_SET_ITEM(out, (Py_ssize_t)i, t);
  }
  return out;
}
%}
