/* The tools: each one maps its arguments (already checked against its
 * inputSchema in tools.json) onto libagentsandbox calls and shapes the
 * result to its outputSchema. Failures are results with isError and the
 * library's message; cancellation reaches every blocking call through the
 * call's asb_cancel. Also resources/list and resources/read (sandbox
 * files as sandbox://<id>/<path>).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp.h"
#include "proto/url.h"
#include "util/base64.h"
#include "util/util.h"

/* ---- results ----------------------------------------------------------------- */

void mcp_result_text(mcp_result *r, const char *text) {
  cJSON *item = cJSON_CreateObject();
  cJSON_AddStringToObject(item, "type", "text");
  cJSON *t = mcp_json_str(text, strlen(text));
  cJSON_AddItemToObject(item, "text", t ? t : cJSON_CreateString(""));
  cJSON_AddItemToArray(r->content, item);
}

void mcp_result_fail(mcp_result *r, const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  r->is_error = 1;
  mcp_result_text(r, buf);
}

void mcp_result_lib_error(mcp_result *r, int rc, const char *what) {
  const asb_error *e = asb_error_last();
  const char *msg = e->code == rc && e->message[0] ? e->message : asb_strerror(rc);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "%s: %s (%s)", what, msg, asb_status_name(rc));
  r->is_error = 1;
  mcp_result_text(r, b.data ? b.data : what);
  asbi_buf_free(&b);
}

static void structured(mcp_result *r, cJSON *obj) {
  cJSON_Delete(r->structured);
  r->structured = obj;
}

static void add_image(mcp_result *r, const char *b64, const char *mime) {
  cJSON *item = cJSON_CreateObject();
  cJSON_AddStringToObject(item, "type", "image");
  cJSON_AddStringToObject(item, "data", b64);
  cJSON_AddStringToObject(item, "mimeType", mime);
  cJSON_AddItemToArray(r->content, item);
}

/* ---- arguments ----------------------------------------------------------------- */

/* The value given, else the default in the tool's inputSchema, else NULL:
 * the schema is the one place defaults are written. */
static const cJSON *arg(mcp_call *c, const cJSON *args, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
  if (v && !cJSON_IsNull(v)) return v;
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(c->tool, "inputSchema"), "properties");
  return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(props, name), "default");
}

static const char *arg_str(mcp_call *c, const cJSON *args, const char *name) {
  const cJSON *v = arg(c, args, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long arg_long(mcp_call *c, const cJSON *args, const char *name, long dflt) {
  const cJSON *v = arg(c, args, name);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

static int arg_bool(mcp_call *c, const cJSON *args, const char *name) {
  return cJSON_IsTrue(arg(c, args, name));
}

/* {"K":"V",...} as a NULL-ended "K=V" vector (free with free_kv). */
static char **arg_kv(const cJSON *args, const char *name) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(args, name);
  if (!cJSON_IsObject(o)) return NULL;
  int n = cJSON_GetArraySize(o);
  char **v = calloc((size_t)n + 1, sizeof *v);
  if (!v) return NULL;
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    if (!cJSON_IsString(it)) continue;
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_printf(&b, "%s=%s", it->string, it->valuestring);
    v[i++] = asbi_buf_detach(&b, NULL);
  }
  return v;
}

static void free_kv(char **v) {
  for (char **p = v; p && *p; p++) free(*p);
  free(v);
}

static asb_call_options call_opts(mcp_call *c) {
  asb_call_options co = ASB_CALL_OPTIONS_INIT;
  co.cancel = c->cancel;
  return co;
}

static asb_files_options files_opts(mcp_call *c, const cJSON *args) {
  asb_files_options fo = ASB_FILES_OPTIONS_INIT;
  fo.user = arg_str(c, args, "user");
  fo.cancel = c->cancel;
  return fo;
}

static void rfc3339(asb_int64 t, char out[32]) {
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void add_time(cJSON *o, const char *name, asb_int64 t) {
  if (t <= 0) return;
  char buf[32];
  rfc3339(t, buf);
  cJSON_AddStringToObject(o, name, buf);
}

static void add_str(cJSON *o, const char *name, const char *v) {
  if (v) cJSON_AddItemToObject(o, name, mcp_json_str(v, strlen(v)));
}

static void add_bytes(cJSON *o, const char *name, const char *p, size_t n) {
  cJSON_AddItemToObject(o, name, mcp_json_str(p, n));
}

/* The result's "sandbox_id" first, so every sandbox tool names its sandbox. */
static cJSON *sandbox_obj(const sbx_ref *ref) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "sandbox_id", ref->id);
  return o;
}

/* A failure of a call on ref: the library's message, and if the sandbox
 * turned out gone, it is forgotten (the default one is made anew next). */
static void sbx_fail(mcp_call *c, mcp_result *r, sbx_ref *ref, int is_default, int rc,
                     const char *what) {
  mcp_result_lib_error(r, rc, what);
  mcp_sandbox_check_gone(c, ref, rc, is_default, r);
}

/* Keeps the last max bytes written to it. */
typedef struct tail {
  asbi_buf b;
  size_t max, dropped;
} tail;

static void tail_init(tail *t, size_t max) {
  asbi_buf_init(&t->b, 0);
  t->max = max;
  t->dropped = 0;
}

static void tail_add(tail *t, const char *p, size_t n) {
  if (n >= t->max) {
    t->dropped += t->b.len + (n - t->max);
    asbi_buf_clear(&t->b);
    asbi_buf_append(&t->b, p + (n - t->max), t->max);
    return;
  }
  if (t->b.len + n > t->max) {
    size_t cut = t->b.len + n - t->max;
    t->dropped += cut;
    asbi_buf_consume(&t->b, cut);
  }
  asbi_buf_append(&t->b, p, n);
}

/* ---- sandboxes --------------------------------------------------------------------- */

static int t_create_sandbox(mcp_call *c, const cJSON *args, mcp_result *r) {
  mcp_server *srv = c->s->srv;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  const char *tmpl = arg_str(c, args, "template");
  if (!tmpl) tmpl = srv->cfg.template_id ? srv->cfg.template_id : "base";
  long timeout_s = arg_long(c, args, "timeout_s", 300);
  char **envs = arg_kv(args, "envs"), **md = arg_kv(args, "metadata");
  o.template_id = tmpl;
  o.timeout_ms = timeout_s * 1000;
  o.envs = (const char *const *)envs;
  o.metadata = (const char *const *)md;
  o.auto_pause = arg_bool(c, args, "auto_pause");
  o.cancel = c->cancel;
  asb_sandbox *h = NULL;
  int rc = asb_sandbox_create(&h, srv->client, &o);
  free_kv(envs);
  free_kv(md);
  if (rc != ASB_OK) {
    mcp_result_lib_error(r, rc, "create_sandbox");
    return 0;
  }
  sbx_ref *ref = mcp_sandbox_adopt(srv, h);
  if (!ref) {
    mcp_result_fail(r, "out of memory");
    return 0;
  }
  mcp_sandbox_note(c->s, ref->id);
  cJSON *out = sandbox_obj(ref);
  add_str(out, "template", tmpl);
  cJSON_AddNumberToObject(out, "timeout_s", (double)timeout_s);
  add_str(out, "envd_version", asb_sandbox_envd_version(ref->h));
  structured(r, out);
  mcp_sandbox_put(srv, ref);
  return 0;
}

static int t_kill_sandbox(mcp_call *c, const cJSON *args, mcp_result *r) {
  int is_default;
  char *id = mcp_sandbox_id_for(c, args, &is_default);
  if (!id) {
    mcp_result_fail(r, "kill_sandbox: no sandbox_id given and there is no default sandbox yet");
    return 0;
  }
  asb_call_options co = call_opts(c);
  int rc = asb_sandbox_kill_id(c->s->srv->client, id, &co);
  if (rc == ASB_OK || rc == ASB_ESANDBOXNOTFOUND || rc == ASB_ESANDBOXGONE) {
    mcp_sandbox_forget(c->s, id);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "sandbox_id", id);
    cJSON_AddBoolToObject(out, "killed", rc == ASB_OK);
    structured(r, out);
  } else {
    char what[160];
    snprintf(what, sizeof what, "kill_sandbox %.100s", id);
    mcp_result_lib_error(r, rc, what);
  }
  free(id);
  return 0;
}

static cJSON *info_json(const asb_sandbox_info *info, const char *default_id, int full) {
  cJSON *o = cJSON_CreateObject();
  const char *id = asb_sandbox_info_id(info);
  add_str(o, "sandbox_id", id);
  add_str(o, "template_id", asb_sandbox_info_template_id(info));
  add_str(o, "template_name", asb_sandbox_info_name(info));
  add_str(o, "state", asb_sandbox_info_state(info) ? asb_sandbox_info_state(info) : "running");
  add_time(o, "started_at", asb_sandbox_info_started_at(info));
  add_time(o, "end_at", asb_sandbox_info_end_at(info));
  cJSON_AddNumberToObject(o, "cpu_count", asb_sandbox_info_cpu_count(info));
  cJSON_AddNumberToObject(o, "memory_mb", asb_sandbox_info_memory_mb(info));
  if (full) {
    cJSON_AddNumberToObject(o, "disk_mb", asb_sandbox_info_disk_mb(info));
    add_str(o, "envd_version", asb_sandbox_info_envd_version(info));
  }
  cJSON *md = cJSON_AddObjectToObject(o, "metadata");
  for (size_t i = 0; i < asb_sandbox_info_metadata_count(info); i++) {
    const char *k = asb_sandbox_info_metadata_key(info, i);
    const char *v = asb_sandbox_info_metadata_value(info, i);
    if (k && v) cJSON_AddItemToObject(md, k, mcp_json_str(v, strlen(v)));
  }
  cJSON_AddBoolToObject(o, "is_default", default_id && id && !strcmp(default_id, id));
  return o;
}

static int t_list_sandboxes(mcp_call *c, const cJSON *args, mcp_result *r) {
  asb_sandbox_list_options o = ASB_SANDBOX_LIST_OPTIONS_INIT;
  const char *state = arg_str(c, args, "state");
  o.running = state && !strcmp(state, "running");
  o.paused = state && !strcmp(state, "paused");
  char **md = arg_kv(args, "metadata");
  o.metadata = (const char *const *)md;
  o.template_id = arg_str(c, args, "template");
  o.limit = (int)arg_long(c, args, "limit", 100);
  o.next_token = arg_str(c, args, "next_token");
  o.cancel = c->cancel;
  asb_sandbox_page *page = NULL;
  int rc = asb_sandbox_list(&page, c->s->srv->client, &o);
  free_kv(md);
  if (rc != ASB_OK) {
    mcp_result_lib_error(r, rc, "list_sandboxes");
    return 0;
  }
  int dflt;
  char *default_id = mcp_sandbox_id_for(c, NULL, &dflt);
  cJSON *out = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(out, "sandboxes");
  for (size_t i = 0; i < asb_sandbox_page_count(page); i++)
    cJSON_AddItemToArray(arr, info_json(asb_sandbox_page_get(page, i), default_id, 0));
  add_str(out, "next_token", asb_sandbox_page_next_token(page));
  free(default_id);
  asb_sandbox_page_free(page);
  structured(r, out);
  return 0;
}

static int t_sandbox_info(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 0, r, &dflt);
  if (!ref) return 0;
  asb_call_options co = call_opts(c);
  asb_sandbox_info *info = NULL;
  int rc = asb_sandbox_get_info(&info, ref->h, &co);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "sandbox_info");
  } else {
    structured(r, info_json(info, dflt ? ref->id : NULL, 1));
    asb_sandbox_info_free(info);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_set_timeout(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 0, r, &dflt);
  if (!ref) return 0;
  long t = arg_long(c, args, "timeout_s", 300);
  asb_call_options co = call_opts(c);
  int rc = asb_sandbox_set_timeout(ref->h, t * 1000, &co);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "set_timeout");
  } else {
    mcp_sandbox_lifetime(c->s, ref->id, asbi_now_ms() + (uint64_t)t * 1000u);
    cJSON *out = sandbox_obj(ref);
    cJSON_AddNumberToObject(out, "timeout_s", (double)t);
    add_time(out, "end_at", (asb_int64)time(NULL) + t);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_pause_sandbox(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 0, r, &dflt);
  if (!ref) return 0;
  asb_call_options co = call_opts(c);
  int rc = asb_sandbox_pause(ref->h, &co);
  if (rc < 0) {
    sbx_fail(c, r, ref, dflt, rc, "pause_sandbox");
  } else {
    /* The next call into it connects again, which resumes it. */
    mcp_sandbox_disconnected(c->s->srv, ref->id);
    mcp_sandbox_lifetime(c->s, ref->id, UINT64_MAX);
    cJSON *out = sandbox_obj(ref);
    cJSON_AddBoolToObject(out, "paused", rc == 1);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_resume_sandbox(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 0, r, &dflt);
  if (!ref) return 0;
  long t = arg_long(c, args, "timeout_s", 300);
  asb_call_options co = call_opts(c);
  int rc = asb_sandbox_resume(ref->h, t * 1000, &co);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "resume_sandbox");
  } else {
    mcp_sandbox_lifetime(c->s, ref->id, asbi_now_ms() + (uint64_t)t * 1000u);
    cJSON *out = sandbox_obj(ref);
    cJSON_AddStringToObject(out, "state", "running");
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

/* ---- commands ---------------------------------------------------------------------- */

/* A call's output: kept (the tail of each stream, for the result) and streamed
 * to the client as it comes. Foreground commands and code cells share it. */
typedef struct call_out {
  mcp_call *c;
  tail out, err;
} call_out;

static int call_out_stdout(const char *d, size_t n, void *ud) {
  call_out *f = ud;
  tail_add(&f->out, d, n);
  mcp_call_output(f->c, 0, d, n);
  return 0;
}

static int call_out_stderr(const char *d, size_t n, void *ud) {
  call_out *f = ud;
  tail_add(&f->err, d, n);
  mcp_call_output(f->c, 1, d, n);
  return 0;
}

/* A background command this session started (or attached to): a thread
 * waits for it and keeps its unread output (bounded). */
struct bg_cmd {
  bg_cmd *next;
  mcp_session *s;
  sbx_ref *ref;
  asb_process *p;
  unsigned pid;
  asb_cancel *cancel;
  pthread_t th;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tail out, err;
  size_t reported_drop;
  int done, rc, exit_code;
  char *error;
};

#define BG_MAX 64
#define BG_KEEP (1u << 20)

static int bg_stdout(const char *d, size_t n, void *ud) {
  bg_cmd *b = ud;
  pthread_mutex_lock(&b->mu);
  tail_add(&b->out, d, n);
  pthread_mutex_unlock(&b->mu);
  return 0;
}

static int bg_stderr(const char *d, size_t n, void *ud) {
  bg_cmd *b = ud;
  pthread_mutex_lock(&b->mu);
  tail_add(&b->err, d, n);
  pthread_mutex_unlock(&b->mu);
  return 0;
}

static void *bg_main(void *arg) {
  bg_cmd *b = arg;
  asb_call_options co = ASB_CALL_OPTIONS_INIT;
  co.timeout_ms = -1;
  co.cancel = b->cancel;
  asb_command_result *res = NULL;
  int rc = asb_process_wait(&res, b->p, &co);
  pthread_mutex_lock(&b->mu);
  b->done = 1;
  b->rc = rc;
  b->exit_code = res ? asb_command_result_exit_code(res) : -1;
  const char *err = res ? asb_command_result_error(res) : NULL;
  if (!res && rc != ASB_OK && rc != ASB_ECANCELED) err = asb_error_last()->message;
  b->error = err ? asbi_strdup(err) : NULL;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  asb_command_result_free(res);
  if (rc != ASB_ECANCELED) {
    char note[200];
    if (res)
      snprintf(note, sizeof note, "background command %u in sandbox %s exited with %d", b->pid,
               b->ref->id, b->exit_code);
    else
      snprintf(note, sizeof note, "background command %u in sandbox %s ended: %s", b->pid,
               b->ref->id, asb_strerror(rc));
    mcp_session_log(b->s, MCP_LOG_INFO, "run_command", cJSON_CreateString(note));
  }
  return NULL;
}

static void bg_free(mcp_server *srv, bg_cmd *b) {
  if (b->started) {
    asb_cancel_request(b->cancel);
    pthread_join(b->th, NULL);
  }
  asb_process_free(b->p);
  asb_cancel_free(b->cancel);
  mcp_sandbox_put(srv, b->ref);
  asbi_buf_free(&b->out.b);
  asbi_buf_free(&b->err.b);
  free(b->error);
  pthread_mutex_destroy(&b->mu);
  pthread_cond_destroy(&b->cv);
  free(b);
}

void mcp_bg_close_all(mcp_session *s) {
  pthread_mutex_lock(&s->mu);
  bg_cmd *b = s->bg;
  s->bg = NULL;
  pthread_mutex_unlock(&s->mu);
  while (b) {
    bg_cmd *n = b->next;
    bg_free(s->srv, b);
    b = n;
  }
}

static bg_cmd *bg_new(mcp_session *s, sbx_ref *ref) {
  bg_cmd *b = calloc(1, sizeof *b);
  if (!b || asb_cancel_new(&b->cancel) != ASB_OK) {
    free(b);
    return NULL;
  }
  b->s = s;
  b->ref = ref;
  pthread_mutex_lock(&s->srv->mu);
  ref->refs++;
  pthread_mutex_unlock(&s->srv->mu);
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  tail_init(&b->out, BG_KEEP);
  tail_init(&b->err, BG_KEEP);
  return b;
}

/* Starts b's thread and lists it in the session; frees it on failure. */
static int bg_register(mcp_session *s, bg_cmd *b) {
  if (pthread_create(&b->th, NULL, bg_main, b) != 0) {
    bg_free(s->srv, b);
    return -1;
  }
  b->started = 1;
  bg_cmd *drop = NULL;
  pthread_mutex_lock(&s->mu);
  int n = 0;
  bg_cmd **last_done = NULL;
  for (bg_cmd **p = &s->bg; *p; p = &(*p)->next) {
    n++;
    pthread_mutex_lock(&(*p)->mu);
    if ((*p)->done) last_done = p;
    pthread_mutex_unlock(&(*p)->mu);
  }
  if (n >= BG_MAX && last_done) { /* forget the oldest finished one */
    drop = *last_done;
    *last_done = drop->next;
  }
  b->next = s->bg;
  s->bg = b;
  pthread_mutex_unlock(&s->mu);
  if (drop) bg_free(s->srv, drop);
  return 0;
}

static bg_cmd *bg_find(mcp_session *s, const char *sbx, unsigned pid) {
  pthread_mutex_lock(&s->mu);
  bg_cmd *b = s->bg;
  while (b && !(b->pid == pid && !strcmp(b->ref->id, sbx))) b = b->next;
  pthread_mutex_unlock(&s->mu);
  return b;
}

static int t_run_command(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  mcp_server *srv = c->s->srv;
  const char *cmd = arg_str(c, args, "command");
  const char *in = arg_str(c, args, "stdin");
  int background = arg_bool(c, args, "background");
  long timeout_s = arg_long(c, args, "timeout_s", 60);
  char **envs = arg_kv(args, "envs");
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.envs = (const char *const *)envs;
  o.cwd = arg_str(c, args, "cwd");
  o.user = arg_str(c, args, "user");
  o.timeout_ms = timeout_s * 1000;
  o.stdin_data = in; /* written once it runs, then stdin is closed */
  o.stdin_len = in ? strlen(in) : 0;
  o.discard_output = 1; /* kept here, bounded */
  o.cancel = c->cancel;
  /* A cancelled call kills its command: the library also covers a cancel
   * that lands while the start is in flight (the pid is not known yet). */
  o.kill_on_cancel = arg_bool(c, args, "kill_on_cancel");
  int rc;
  if (background) {
    bg_cmd *b = bg_new(c->s, ref);
    if (!b) {
      mcp_result_fail(r, "out of memory");
      goto out;
    }
    o.on_stdout = bg_stdout;
    o.on_stderr = bg_stderr;
    o.userdata = b;
    rc = asb_commands_start(&b->p, ref->h, cmd, &o);
    if (rc != ASB_OK) {
      bg_free(srv, b);
      sbx_fail(c, r, ref, dflt, rc, "run_command");
      goto out;
    }
    b->pid = asb_process_pid(b->p);
    unsigned pid = b->pid;
    if (bg_register(c->s, b)) {
      mcp_result_fail(r, "run_command: cannot start a thread for the background command");
      goto out;
    }
    cJSON *res = sandbox_obj(ref);
    cJSON_AddNumberToObject(res, "pid", pid);
    cJSON_AddBoolToObject(res, "background", 1);
    structured(r, res);
    goto out;
  }
  call_out f = {c, {ASBI_BUF_INIT, 0, 0}, {ASBI_BUF_INIT, 0, 0}};
  tail_init(&f.out, srv->cfg.max_output);
  tail_init(&f.err, srv->cfg.max_output);
  o.on_stdout = call_out_stdout;
  o.on_stderr = call_out_stderr;
  o.userdata = &f;
  asb_command_result *res = NULL;
  rc = asb_commands_run(&res, ref->h, cmd, &o);
  mcp_call_output_end(c);
  if (rc == ASB_ECANCELED || mcp_call_cancelled(c)) {
    mcp_result_fail(r, "run_command: cancelled");
  } else if (rc == ASB_OK || rc == ASB_ECOMMANDEXIT || rc == ASB_ETIMEOUT) {
    cJSON *out = sandbox_obj(ref);
    if (res) cJSON_AddNumberToObject(out, "exit_code", asb_command_result_exit_code(res));
    add_bytes(out, "stdout", f.out.b.data ? f.out.b.data : "", f.out.b.len);
    add_bytes(out, "stderr", f.err.b.data ? f.err.b.data : "", f.err.b.len);
    const char *err = res ? asb_command_result_error(res) : NULL;
    if (rc == ASB_ETIMEOUT) {
      char msg[128];
      snprintf(msg, sizeof msg, "timed out after %ld s and was killed", timeout_s);
      add_str(out, "error", msg);
      r->is_error = 1;
    } else if (err && !asbi_startswith(err, "exit status")) {
      add_str(out, "error", err); /* e.g. "signal: killed"; a plain exit is exit_code */
    }
    if (f.out.dropped || f.err.dropped) cJSON_AddBoolToObject(out, "truncated", 1);
    structured(r, out);
  } else {
    sbx_fail(c, r, ref, dflt, rc, "run_command");
  }
  asb_command_result_free(res);
  asbi_buf_free(&f.out.b);
  asbi_buf_free(&f.err.b);
out:
  free_kv(envs);
  mcp_sandbox_put(srv, ref);
  return 0;
}

static int t_command_output(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  unsigned pid = (unsigned)arg_long(c, args, "pid", 0);
  long wait_s = arg_long(c, args, "wait_s", 0);
  bg_cmd *b = bg_find(c->s, ref->id, pid);
  if (!b) {
    /* Not ours: attach to it, output from now on. */
    b = bg_new(c->s, ref);
    if (!b) {
      mcp_result_fail(r, "out of memory");
      goto out;
    }
    asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
    o.on_stdout = bg_stdout;
    o.on_stderr = bg_stderr;
    o.userdata = b;
    o.discard_output = 1;
    o.cancel = b->cancel;
    int rc = asb_commands_connect(&b->p, ref->h, pid, &o);
    if (rc != ASB_OK) {
      bg_free(c->s->srv, b);
      char what[64];
      snprintf(what, sizeof what, "command_output: pid %u", pid);
      sbx_fail(c, r, ref, dflt, rc, what);
      goto out;
    }
    b->pid = pid;
    if (bg_register(c->s, b)) {
      mcp_result_fail(r, "command_output: cannot start a thread");
      goto out;
    }
  }
  uint64_t deadline = asbi_now_ms() + (uint64_t)wait_s * 1000u;
  pthread_mutex_lock(&b->mu);
  /* Woken by the command's end; the 200 ms slices only notice a
   * cancellation of this call. */
  while (!b->done && !mcp_call_cancelled(c) && asbi_now_ms() < deadline) {
    uint64_t left = deadline - asbi_now_ms();
    struct timespec ts = asbi_deadline(CLOCK_REALTIME, (int64_t)(left < 200 ? left : 200));
    pthread_cond_timedwait(&b->cv, &b->mu, &ts);
  }
  cJSON *out = sandbox_obj(ref);
  cJSON_AddNumberToObject(out, "pid", pid);
  cJSON_AddBoolToObject(out, "running", !b->done);
  if (b->done && b->rc != ASB_ECANCELED) cJSON_AddNumberToObject(out, "exit_code", b->exit_code);
  add_bytes(out, "stdout", b->out.b.data ? b->out.b.data : "", b->out.b.len);
  add_bytes(out, "stderr", b->err.b.data ? b->err.b.data : "", b->err.b.len);
  asbi_buf_clear(&b->out.b);
  asbi_buf_clear(&b->err.b);
  if (b->done && b->error) add_str(out, "error", b->error);
  size_t dropped = b->out.dropped + b->err.dropped - b->reported_drop;
  if (dropped) cJSON_AddNumberToObject(out, "dropped_bytes", (double)dropped);
  b->reported_drop += dropped;
  pthread_mutex_unlock(&b->mu);
  structured(r, out);
out:
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_kill_command(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  unsigned pid = (unsigned)arg_long(c, args, "pid", 0);
  const char *sig = arg_str(c, args, "signal");
  asb_call_options co = call_opts(c);
  int rc = sig && !strcmp(sig, "TERM") ? asb_commands_signal(ref->h, pid, ASB_SIGNAL_TERM, &co)
                                       : asb_commands_kill(ref->h, pid, &co);
  if (rc == ASB_OK || rc == ASB_ENOTFOUND) {
    cJSON *out = sandbox_obj(ref);
    cJSON_AddNumberToObject(out, "pid", pid);
    cJSON_AddBoolToObject(out, "killed", rc == ASB_OK);
    structured(r, out);
  } else {
    sbx_fail(c, r, ref, dflt, rc, "kill_command");
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_list_commands(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  asb_call_options co = call_opts(c);
  asb_process_list *l = NULL;
  int rc = asb_commands_list(&l, ref->h, &co);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "list_commands");
  } else {
    cJSON *out = sandbox_obj(ref);
    cJSON *arr = cJSON_AddArrayToObject(out, "commands");
    for (size_t i = 0; i < asb_process_list_count(l); i++) {
      const asb_process_info *pi = asb_process_list_get(l, i);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "pid", asb_process_info_pid(pi));
      add_str(o, "command", asb_process_info_cmd(pi) ? asb_process_info_cmd(pi) : "");
      cJSON *a = cJSON_AddArrayToObject(o, "args");
      for (const char *const *v = asb_process_info_args(pi); v && *v; v++)
        cJSON_AddItemToArray(a, mcp_json_str(*v, strlen(*v)));
      add_str(o, "cwd", asb_process_info_cwd(pi));
      add_str(o, "tag", asb_process_info_tag(pi));
      cJSON_AddItemToArray(arr, o);
    }
    asb_process_list_free(l);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

/* ---- code --------------------------------------------------------------------------- */

static int t_run_code(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  mcp_server *srv = c->s->srv;
  call_out k = {c, {ASBI_BUF_INIT, 0, 0}, {ASBI_BUF_INIT, 0, 0}};
  tail_init(&k.out, srv->cfg.max_output);
  tail_init(&k.err, srv->cfg.max_output);
  char **envs = arg_kv(args, "envs");
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = arg_str(c, args, "context_id");
  /* language has a default in the schema; with a context it is not given. */
  o.language = cJSON_GetObjectItemCaseSensitive(args, "language") || !o.context_id
                   ? arg_str(c, args, "language")
                   : NULL;
  o.envs = (const char *const *)envs;
  o.timeout_ms = arg_long(c, args, "timeout_s", 300) * 1000;
  o.on_stdout = call_out_stdout;
  o.on_stderr = call_out_stderr;
  o.userdata = &k;
  o.cancel = c->cancel;
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, ref->h, arg_str(c, args, "code"), &o);
  mcp_call_output_end(c);
  free_kv(envs);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "run_code");
    goto out;
  }
  cJSON *res = sandbox_obj(ref);
  add_str(res, "text", asb_execution_text(e));
  add_bytes(res, "stdout", k.out.b.data ? k.out.b.data : "", k.out.b.len);
  add_bytes(res, "stderr", k.err.b.data ? k.err.b.data : "", k.err.b.len);
  cJSON *arr = cJSON_AddArrayToObject(res, "results");
  for (size_t i = 0; i < asb_execution_result_count(e); i++) {
    const asb_code_result *cr = asb_execution_result_get(e, i);
    cJSON *o2 = cJSON_CreateObject();
    cJSON *f = cJSON_AddArrayToObject(o2, "formats");
    for (size_t j = 0; j < asb_code_result_format_count(cr); j++)
      cJSON_AddItemToArray(f, cJSON_CreateString(asb_code_result_format_name(cr, j)));
    add_str(o2, "text", asb_code_result_value(cr, "text"));
    cJSON_AddBoolToObject(o2, "is_main", asb_code_result_is_main(cr));
    cJSON_AddItemToArray(arr, o2);
    /* Pictures as MCP images: png and jpeg come base64 already; svg is
     * text, sent as image/svg+xml. */
    const char *png = asb_code_result_value(cr, "png");
    const char *jpeg = asb_code_result_value(cr, "jpeg");
    const char *svg = asb_code_result_value(cr, "svg");
    if (png) {
      add_image(r, png, "image/png");
    } else if (jpeg) {
      add_image(r, jpeg, "image/jpeg");
    } else if (svg) {
      size_t n = strlen(svg);
      char *b64 = malloc(asbi_b64_encoded_len(n) + 1);
      if (b64) {
        asbi_b64_encode(svg, n, b64, 0, 1);
        add_image(r, b64, "image/svg+xml");
        free(b64);
      }
    }
  }
  if (asb_execution_error_name(e)) {
    cJSON *er = cJSON_AddObjectToObject(res, "error");
    add_str(er, "name", asb_execution_error_name(e));
    add_str(er, "value", asb_execution_error_value(e) ? asb_execution_error_value(e) : "");
    add_str(er, "traceback",
            asb_execution_error_traceback(e) ? asb_execution_error_traceback(e) : "");
    r->is_error = 1;
  }
  if (asb_execution_count(e) >= 0)
    cJSON_AddNumberToObject(res, "execution_count", asb_execution_count(e));
  structured(r, res);
  asb_execution_free(e);
out:
  asbi_buf_free(&k.out.b);
  asbi_buf_free(&k.err.b);
  mcp_sandbox_put(srv, ref);
  return 0;
}

/* ---- files --------------------------------------------------------------------------- */

typedef struct capped {
  asbi_buf b;
  int over;
} capped;

static int capped_add(const char *d, size_t n, void *ud) {
  capped *k = ud;
  if (asbi_buf_append(&k->b, d, n)) {
    k->over = 1;
    return 1;
  }
  return 0;
}

/* Reads at most max bytes of path. ASB_OK; ASB_ENOSPACE (over max: *size
 * then holds the file's size, or -1); or the library's error. */
static int read_capped(mcp_call *c, asb_sandbox *sb, const char *path, const char *user, size_t max,
                       asbi_buf *out, asb_int64 *size) {
  capped k;
  asbi_buf_init(&k.b, max);
  k.over = 0;
  asb_files_options fo = ASB_FILES_OPTIONS_INIT;
  fo.user = user;
  fo.cancel = c->cancel;
  int rc = asb_files_read_stream(sb, path, &fo, capped_add, &k);
  if (k.over) {
    asbi_buf_free(&k.b);
    asb_entry *e = NULL;
    *size = asb_files_stat(&e, sb, path, &fo) == ASB_OK ? asb_entry_size(e) : -1;
    asb_entry_free(e);
    return ASB_ENOSPACE;
  }
  if (rc != ASB_OK) {
    asbi_buf_free(&k.b);
    return rc;
  }
  *out = k.b;
  return ASB_OK;
}

static const char *image_type(const unsigned char *p, size_t n) {
  if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8)) return "image/png";
  if (n >= 3 && !memcmp(p, "\xff\xd8\xff", 3)) return "image/jpeg";
  if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6))) return "image/gif";
  if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) return "image/webp";
  return NULL;
}

static int is_text(const char *p, size_t n) {
  return memchr(p, 0, n) == NULL && asbi_utf8_valid(p, n);
}

static char *b64(const char *p, size_t n) {
  char *out = malloc(asbi_b64_encoded_len(n) + 1);
  if (out) asbi_b64_encode(p, n, out, 0, 1);
  return out;
}

/* "sandbox://<id>/<path without its leading slash>", path %-escaped. */
static char *resource_uri(const char *id, const char *path) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "sandbox://%s/", id);
  while (*path == '/') path++;
  asbi_url_escape(&b, path, 1);
  return asbi_buf_detach(&b, NULL);
}

static size_t read_limit(mcp_call *c, const cJSON *args) {
  size_t max = c->s->srv->cfg.max_read;
  long want = arg_long(c, args, "max_bytes", 0);
  if (want > 0 && (size_t)want < max) max = (size_t)want;
  return max;
}

static int t_read_file(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  const char *path = arg_str(c, args, "path");
  size_t max = read_limit(c, args);
  asbi_buf data = ASBI_BUF_INIT;
  asb_int64 size = -1;
  int rc = read_capped(c, ref->h, path, arg_str(c, args, "user"), max, &data, &size);
  if (rc == ASB_ENOSPACE) {
    char sz[48] = "more than that";
    if (size >= 0) snprintf(sz, sizeof sz, "%lld bytes", (long long)size);
    mcp_result_fail(r,
                    "read_file: %s is %s, over the limit of %zu bytes read_file returns. Read "
                    "a part of it with run_command (head -c, tail -c, sed -n '1,100p'), or "
                    "fetch the whole file through download_url.",
                    path, sz, max);
  } else if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "read_file");
  } else {
    const char *img = image_type((const unsigned char *)data.data, data.len);
    if (img) {
      char *d = b64(data.data ? data.data : "", data.len);
      if (d) add_image(r, d, img);
      free(d);
    } else if (is_text(data.data ? data.data : "", data.len)) {
      mcp_result_text(r, data.data ? data.data : "");
    } else {
      char note[200];
      snprintf(note, sizeof note, "%s: binary file, %zu bytes (base64 in the embedded resource)",
               path, data.len);
      mcp_result_text(r, note);
      char *uri = resource_uri(ref->id, path);
      char *d = b64(data.data, data.len);
      cJSON *item = cJSON_CreateObject();
      cJSON_AddStringToObject(item, "type", "resource");
      cJSON *res = cJSON_AddObjectToObject(item, "resource");
      add_str(res, "uri", uri);
      cJSON_AddStringToObject(res, "mimeType", "application/octet-stream");
      cJSON_AddStringToObject(res, "blob", d ? d : "");
      cJSON_AddItemToArray(r->content, item);
      free(uri);
      free(d);
    }
  }
  asbi_buf_free(&data);
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_write_file(mcp_call *c, const cJSON *args, mcp_result *r) {
  const char *content = arg_str(c, args, "content");
  const char *enc = arg_str(c, args, "encoding");
  char *raw = NULL;
  size_t len = strlen(content);
  if (enc && !strcmp(enc, "base64")) {
    raw = malloc(asbi_b64_decoded_max(len) + 1);
    size_t got = 0;
    if (!raw || asbi_b64_decode(content, len, raw, &got) != 0) {
      free(raw);
      mcp_result_fail(r, "write_file: content is not valid base64");
      return 0;
    }
    len = got;
  }
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) {
    free(raw);
    return 0;
  }
  asb_files_options fo = files_opts(c, args);
  asb_entry *e = NULL;
  int rc = asb_files_write(&e, ref->h, arg_str(c, args, "path"), raw ? raw : content, len, &fo);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "write_file");
  } else {
    cJSON *out = sandbox_obj(ref);
    add_str(out, "path", e && asb_entry_path(e) ? asb_entry_path(e) : arg_str(c, args, "path"));
    cJSON_AddNumberToObject(out, "size", (double)len);
    structured(r, out);
  }
  asb_entry_free(e);
  free(raw);
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static const char *type_name(asb_file_type t) {
  switch (t) {
    case ASB_FILE_TYPE_FILE:
      return "file";
    case ASB_FILE_TYPE_DIR:
      return "dir";
    case ASB_FILE_TYPE_SYMLINK:
      return "symlink";
    default:
      return "unknown";
  }
}

#define LIST_MAX 1000

static int t_list_files(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  asb_files_options fo = files_opts(c, args);
  asb_entry_list *l = NULL;
  int rc =
      asb_files_list(&l, ref->h, arg_str(c, args, "path"), (int)arg_long(c, args, "depth", 1), &fo);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "list_files");
  } else {
    cJSON *out = sandbox_obj(ref);
    cJSON *arr = cJSON_AddArrayToObject(out, "entries");
    size_t n = asb_entry_list_count(l);
    for (size_t i = 0; i < n && i < LIST_MAX; i++) {
      const asb_entry *e = asb_entry_list_get(l, i);
      cJSON *o = cJSON_CreateObject();
      add_str(o, "name", asb_entry_name(e));
      add_str(o, "path", asb_entry_path(e));
      cJSON_AddStringToObject(o, "type", type_name(asb_entry_type(e)));
      cJSON_AddNumberToObject(o, "size", (double)asb_entry_size(e));
      add_str(o, "permissions", asb_entry_permissions(e));
      add_str(o, "owner", asb_entry_owner(e));
      add_time(o, "modified_at", asb_entry_modified_at(e));
      add_str(o, "symlink_target", asb_entry_symlink_target(e));
      cJSON_AddItemToArray(arr, o);
    }
    if (n > LIST_MAX) cJSON_AddBoolToObject(out, "truncated", 1);
    asb_entry_list_free(l);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_make_dir(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  asb_files_options fo = files_opts(c, args);
  const char *path = arg_str(c, args, "path");
  int rc = asb_files_make_dir(ref->h, path, &fo);
  if (rc < 0) {
    sbx_fail(c, r, ref, dflt, rc, "make_dir");
  } else {
    cJSON *out = sandbox_obj(ref);
    add_str(out, "path", path);
    cJSON_AddBoolToObject(out, "created", rc == 1);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_remove(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  asb_files_options fo = files_opts(c, args);
  const char *path = arg_str(c, args, "path");
  int rc = asb_files_remove(ref->h, path, &fo);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "remove");
  } else {
    cJSON *out = sandbox_obj(ref);
    add_str(out, "path", path);
    cJSON_AddBoolToObject(out, "removed", 1);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_rename(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  asb_files_options fo = files_opts(c, args);
  asb_entry *e = NULL;
  int rc = asb_files_rename(&e, ref->h, arg_str(c, args, "from"), arg_str(c, args, "to"), &fo);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "rename");
  } else {
    cJSON *out = sandbox_obj(ref);
    add_str(out, "path", e && asb_entry_path(e) ? asb_entry_path(e) : arg_str(c, args, "to"));
    structured(r, out);
  }
  asb_entry_free(e);
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int signed_url(mcp_call *c, const cJSON *args, mcp_result *r, int upload) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  const char *path = arg_str(c, args, "path");
  long exp = arg_long(c, args, "expires_in_s", 3600);
  char *url = NULL;
  int rc = upload ? asb_files_upload_url(&url, ref->h, path, arg_str(c, args, "user"), exp)
                  : asb_files_download_url(&url, ref->h, path, arg_str(c, args, "user"), exp);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, upload ? "upload_url" : "download_url");
  } else {
    cJSON *out = sandbox_obj(ref);
    add_str(out, "path", path);
    add_str(out, "url", url);
    cJSON_AddNumberToObject(out, "expires_in_s", (double)exp);
    structured(r, out);
  }
  asb_free(url);
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_upload_url(mcp_call *c, const cJSON *args, mcp_result *r) {
  return signed_url(c, args, r, 1);
}

static int t_download_url(mcp_call *c, const cJSON *args, mcp_result *r) {
  return signed_url(c, args, r, 0);
}

static int t_get_url(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  int port = (int)arg_long(c, args, "port", 0);
  char url[512], host[512];
  int rc = asb_sandbox_get_url(url, sizeof url, ref->h, port);
  if (rc == ASB_OK) rc = asb_sandbox_get_host(host, sizeof host, ref->h, port);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "get_url");
  } else {
    cJSON *out = sandbox_obj(ref);
    cJSON_AddNumberToObject(out, "port", port);
    add_str(out, "url", url);
    add_str(out, "host", host);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

/* ---- named commands ------------------------------------------------------------------ */

static int t_list_named_commands(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  o.port = (int)arg_long(c, args, "port", 9000);
  o.cancel = c->cancel;
  asb_named_command_list *l = NULL;
  int rc = asb_sandbox_commands_list(&l, ref->h, &o);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "list_named_commands");
  } else {
    cJSON *out = sandbox_obj(ref);
    cJSON *arr = cJSON_AddArrayToObject(out, "commands");
    for (size_t i = 0; i < asb_named_command_list_count(l); i++) {
      const asb_named_command *nc = asb_named_command_list_get(l, i);
      cJSON *o2 = cJSON_CreateObject();
      add_str(o2, "name", asb_named_command_name(nc));
      add_str(o2, "description", asb_named_command_description(nc));
      cJSON *as = cJSON_AddArrayToObject(o2, "args");
      for (size_t j = 0; j < asb_named_command_arg_count(nc); j++) {
        cJSON *a = cJSON_CreateObject();
        add_str(a, "name", asb_named_command_arg_name(nc, j));
        add_str(a, "type", asb_named_command_arg_type(nc, j));
        cJSON_AddBoolToObject(a, "required", asb_named_command_arg_required(nc, j));
        add_str(a, "default", asb_named_command_arg_default(nc, j));
        add_str(a, "description", asb_named_command_arg_description(nc, j));
        cJSON_AddItemToArray(as, a);
      }
      cJSON_AddItemToArray(arr, o2);
    }
    asb_named_command_list_free(l);
    structured(r, out);
  }
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

static int t_run_named_command(mcp_call *c, const cJSON *args, mcp_result *r) {
  int dflt;
  sbx_ref *ref = mcp_sandbox_for(c, args, 1, r, &dflt);
  if (!ref) return 0;
  const char *name = arg_str(c, args, "name");
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(args, "args");
  char *aj = a ? cJSON_PrintUnformatted(a) : NULL;
  asb_named_command_options o = ASB_NAMED_COMMAND_OPTIONS_INIT;
  o.port = (int)arg_long(c, args, "port", 9000);
  o.timeout_ms = arg_long(c, args, "timeout_s", 60) * 1000;
  o.cancel = c->cancel;
  char *res = NULL;
  int rc = asb_sandbox_run_command(&res, ref->h, name, aj, &o);
  free(aj);
  if (rc != ASB_OK) {
    sbx_fail(c, r, ref, dflt, rc, "run_named_command");
  } else {
    cJSON *out = sandbox_obj(ref);
    add_str(out, "name", name);
    cJSON *v = cJSON_Parse(res);
    cJSON_AddItemToObject(out, "result", v ? v : cJSON_CreateNull());
    structured(r, out);
  }
  asb_free(res);
  mcp_sandbox_put(c->s->srv, ref);
  return 0;
}

/* ---- templates --------------------------------------------------------------------- */

static cJSON *template_json(const asb_template *t) {
  cJSON *o = cJSON_CreateObject();
  add_str(o, "template_id", asb_template_id(t));
  add_str(o, "name", asb_template_name(t) ? asb_template_name(t) : asb_template_id(t));
  add_str(o, "build_id", asb_template_build_id(t));
  return o;
}

static int t_build_template(mcp_call *c, const cJSON *args, mcp_result *r) {
  asb_template_build_options o = ASB_TEMPLATE_BUILD_OPTIONS_INIT;
  o.force = arg_bool(c, args, "force");
  o.cancel = c->cancel;
  asb_template *t = NULL;
  int rc = asb_templates_build(&t, c->s->srv->client, arg_str(c, args, "dir"), &o);
  if (rc != ASB_OK) {
    mcp_result_lib_error(r, rc, "build_template");
    return 0;
  }
  cJSON *out = template_json(t);
  cJSON_AddBoolToObject(out, "cached", asb_template_cached(t) == 1);
  add_str(out, "log", asb_template_build_log(t));
  structured(r, out);
  asb_template_free(t);
  return 0;
}

static int t_list_templates(mcp_call *c, const cJSON *args, mcp_result *r) {
  (void)args;
  asb_call_options co = call_opts(c);
  asb_template_list *l = NULL;
  int rc = asb_templates_list(&l, c->s->srv->client, &co);
  if (rc != ASB_OK) {
    mcp_result_lib_error(r, rc, "list_templates");
    return 0;
  }
  cJSON *out = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(out, "templates");
  for (size_t i = 0; i < asb_template_list_count(l); i++) {
    const asb_template *t = asb_template_list_get(l, i);
    cJSON *o = template_json(t);
    add_str(o, "description", asb_template_description(t));
    cJSON_AddNumberToObject(o, "cpu_count", asb_template_cpu_count(t));
    cJSON_AddNumberToObject(o, "memory_mb", asb_template_memory_mb(t));
    cJSON_AddNumberToObject(o, "disk_mb", asb_template_disk_mb(t));
    add_time(o, "created_at", asb_template_created_at(t));
    cJSON_AddItemToArray(arr, o);
  }
  asb_template_list_free(l);
  structured(r, out);
  return 0;
}

/* ---- the table ----------------------------------------------------------------------- */

static const struct {
  const char *name;
  mcp_tool_fn fn;
} TOOLS[] = {
    {"create_sandbox", t_create_sandbox},
    {"kill_sandbox", t_kill_sandbox},
    {"list_sandboxes", t_list_sandboxes},
    {"sandbox_info", t_sandbox_info},
    {"set_timeout", t_set_timeout},
    {"pause_sandbox", t_pause_sandbox},
    {"resume_sandbox", t_resume_sandbox},
    {"run_command", t_run_command},
    {"command_output", t_command_output},
    {"kill_command", t_kill_command},
    {"list_commands", t_list_commands},
    {"run_code", t_run_code},
    {"read_file", t_read_file},
    {"write_file", t_write_file},
    {"list_files", t_list_files},
    {"make_dir", t_make_dir},
    {"remove", t_remove},
    {"rename", t_rename},
    {"upload_url", t_upload_url},
    {"download_url", t_download_url},
    {"get_url", t_get_url},
    {"list_named_commands", t_list_named_commands},
    {"run_named_command", t_run_named_command},
    {"build_template", t_build_template},
    {"list_templates", t_list_templates},
};

mcp_tool_fn mcp_tool_impl(const char *name) {
  for (size_t i = 0; i < sizeof TOOLS / sizeof TOOLS[0]; i++)
    if (!strcmp(TOOLS[i].name, name)) return TOOLS[i].fn;
  return NULL;
}

/* ---- resources ------------------------------------------------------------------------ */

#define RES_PAGE 100

static const char *mime_of(const char *path) {
  static const struct {
    const char *ext, *mime;
  } M[] = {{".txt", "text/plain"},
           {".md", "text/markdown"},
           {".py", "text/x-python"},
           {".json", "application/json"},
           {".c", "text/x-c"},
           {".h", "text/x-c"},
           {".js", "text/javascript"},
           {".html", "text/html"},
           {".csv", "text/csv"},
           {".sh", "text/x-shellscript"},
           {".yaml", "application/yaml"},
           {".png", "image/png"},
           {".jpg", "image/jpeg"},
           {".jpeg", "image/jpeg"},
           {".svg", "image/svg+xml"},
           {".gif", "image/gif"}};
  const char *dot = strrchr(path, '.');
  const char *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash)) return NULL;
  for (size_t i = 0; i < sizeof M / sizeof M[0]; i++)
    if (asbi_strcaseeq(dot, M[i].ext)) return M[i].mime;
  return NULL;
}

cJSON *mcp_resources_list(mcp_call *c, const char *cursor, int *code, char **msg) {
  mcp_session *s = c->s;
  size_t start = 0;
  if (cursor) {
    int64_t v;
    if (asbi_parse_i64(cursor, strlen(cursor), &v) != 0 || v < 0) {
      *code = MCP_INVALID_PARAMS;
      *msg = asbi_strdup("Invalid params: unknown cursor");
      return NULL;
    }
    start = (size_t)v;
  }
  /* The sandboxes this session has used, their home directories. */
  pthread_mutex_lock(&s->mu);
  size_t n = s->nknown;
  char **ids = calloc(n ? n : 1, sizeof *ids);
  for (size_t i = 0; ids && i < n; i++) ids[i] = asbi_strdup(s->known[i]);
  pthread_mutex_unlock(&s->mu);
  cJSON *all = cJSON_CreateArray();
  for (size_t i = 0; ids && i < n && !mcp_call_cancelled(c); i++) {
    int rc;
    sbx_ref *ref = ids[i] ? mcp_sandbox_get(s->srv, ids[i], 1, c->cancel, &rc, NULL) : NULL;
    if (!ref) continue; /* gone: nothing to list */
    asb_files_options fo = ASB_FILES_OPTIONS_INIT;
    fo.cancel = c->cancel;
    asb_entry_list *l = NULL;
    if (asb_files_list(&l, ref->h, ".", 1, &fo) == ASB_OK) {
      for (size_t j = 0; j < asb_entry_list_count(l) && j < 200; j++) {
        const asb_entry *e = asb_entry_list_get(l, j);
        const char *p = asb_entry_path(e);
        if (!p) continue;
        cJSON *res = cJSON_CreateObject();
        char *uri = resource_uri(ref->id, p);
        add_str(res, "uri", uri);
        free(uri);
        add_str(res, "name", asb_entry_name(e));
        char desc[256];
        int dir = asb_entry_type(e) == ASB_FILE_TYPE_DIR;
        snprintf(desc, sizeof desc, "%s %s in sandbox %s", dir ? "directory" : "file", p, ref->id);
        add_str(res, "description", desc);
        const char *mime = dir ? "inode/directory" : mime_of(p);
        if (mime) cJSON_AddStringToObject(res, "mimeType", mime);
        cJSON_AddItemToArray(all, res);
      }
      asb_entry_list_free(l);
    }
    mcp_sandbox_put(s->srv, ref);
  }
  for (size_t i = 0; ids && i < n; i++) free(ids[i]);
  free(ids);
  cJSON *out = cJSON_CreateObject();
  cJSON *page = cJSON_AddArrayToObject(out, "resources");
  size_t total = (size_t)cJSON_GetArraySize(all);
  for (size_t i = start; i < total && i < start + RES_PAGE; i++)
    cJSON_AddItemToArray(page, cJSON_Duplicate(cJSON_GetArrayItem(all, (int)i), 1));
  if (start + RES_PAGE < total) {
    char next[32];
    snprintf(next, sizeof next, "%zu", start + RES_PAGE);
    cJSON_AddStringToObject(out, "nextCursor", next);
  }
  cJSON_Delete(all);
  return out;
}

cJSON *mcp_resources_read(mcp_call *c, const char *uri, int *code, char **msg) {
  static const char scheme[] = "sandbox://";
  const char *p = uri + strlen(scheme);
  const char *slash = asbi_startswith(uri, scheme) ? strchr(p, '/') : NULL;
  if (!slash || slash == p) {
    *code = MCP_INVALID_PARAMS;
    *msg = asbi_strdup("Invalid params: resource URIs look like sandbox://<sandbox_id>/<path>");
    return NULL;
  }
  char *id = asbi_strndup(p, (size_t)(slash - p));
  char *rel = NULL;
  if (asbi_url_unescape(slash + 1, strlen(slash + 1), 0, &rel) != 0) {
    free(id);
    *code = MCP_INVALID_PARAMS;
    *msg = asbi_strdup("Invalid params: malformed %-escape in the resource URI");
    return NULL;
  }
  asbi_buf path = ASBI_BUF_INIT;
  asbi_buf_printf(&path, "/%s", rel);
  free(rel);
  int rc;
  cJSON *out = NULL;
  mcp_server *srv = c->s->srv;
  sbx_ref *ref = mcp_sandbox_get(srv, id, 1, c->cancel, &rc, NULL);
  if (!ref) {
    *code = rc == ASB_ESANDBOXNOTFOUND || rc == ASB_ESANDBOXGONE ? MCP_RESOURCE_NOT_FOUND
                                                                 : MCP_INTERNAL_ERROR;
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_printf(&b, "Resource not found: sandbox %s: %s", id, asb_error_last()->message);
    *msg = asbi_buf_detach(&b, NULL);
    goto done;
  }
  asb_files_options fo = ASB_FILES_OPTIONS_INIT;
  fo.cancel = c->cancel;
  asb_entry *st = NULL;
  rc = asb_files_stat(&st, ref->h, path.data, &fo);
  if (rc != ASB_OK) {
    *code = rc == ASB_ENOTFOUND ? MCP_RESOURCE_NOT_FOUND : MCP_INTERNAL_ERROR;
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_printf(&b, "%s%s: %s", rc == ASB_ENOTFOUND ? "Resource not found: " : "", uri,
                    asb_error_last()->message);
    *msg = asbi_buf_detach(&b, NULL);
    goto done;
  }
  out = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(out, "contents");
  cJSON *item = cJSON_CreateObject();
  add_str(item, "uri", uri);
  cJSON_AddItemToArray(arr, item);
  if (asb_entry_type(st) == ASB_FILE_TYPE_DIR) {
    asb_entry_list *l = NULL;
    asbi_buf t = ASBI_BUF_INIT;
    if (asb_files_list(&l, ref->h, path.data, 1, &fo) == ASB_OK) {
      for (size_t i = 0; i < asb_entry_list_count(l); i++) {
        const asb_entry *e = asb_entry_list_get(l, i);
        asbi_buf_printf(&t, "%s%s\n", asb_entry_name(e),
                        asb_entry_type(e) == ASB_FILE_TYPE_DIR ? "/" : "");
      }
      asb_entry_list_free(l);
    }
    cJSON_AddStringToObject(item, "mimeType", "text/plain");
    add_bytes(item, "text", t.data ? t.data : "", t.len);
    asbi_buf_free(&t);
  } else {
    asbi_buf data = ASBI_BUF_INIT;
    asb_int64 size = -1;
    rc = read_capped(c, ref->h, path.data, NULL, srv->cfg.max_read, &data, &size);
    if (rc != ASB_OK) {
      cJSON_Delete(out);
      out = NULL;
      asbi_buf b = ASBI_BUF_INIT;
      if (rc == ASB_ENOSPACE) {
        *code = MCP_INVALID_PARAMS;
        asbi_buf_printf(&b, "%s is %lld bytes, over the limit of %zu bytes", uri, (long long)size,
                        srv->cfg.max_read);
      } else {
        *code = rc == ASB_ENOTFOUND ? MCP_RESOURCE_NOT_FOUND : MCP_INTERNAL_ERROR;
        asbi_buf_printf(&b, "%s: %s", uri, asb_error_last()->message);
      }
      *msg = asbi_buf_detach(&b, NULL);
    } else {
      const char *mime = mime_of(path.data);
      const char *img = image_type((const unsigned char *)data.data, data.len);
      if (!img && is_text(data.data ? data.data : "", data.len)) {
        cJSON_AddStringToObject(item, "mimeType", mime ? mime : "text/plain");
        add_bytes(item, "text", data.data ? data.data : "", data.len);
      } else {
        cJSON_AddStringToObject(item, "mimeType",
                                img    ? img
                                : mime ? mime
                                       : "application/octet-stream");
        char *d = b64(data.data ? data.data : "", data.len);
        cJSON_AddStringToObject(item, "blob", d ? d : "");
        free(d);
      }
    }
    asbi_buf_free(&data);
  }
  asb_entry_free(st);
done:
  mcp_sandbox_put(srv, ref);
  free(id);
  asbi_buf_free(&path);
  return out;
}
