/* A template's custom_commands (template.yaml), served by the engine on the
 * sandbox's commands port (9000 unless the template says otherwise) with the
 * server SDK's protocol, so clients cannot tell them from commands of a
 * server in the sandbox:
 *
 *   GET  /commands          the custom commands (hidden ones left out),
 *                            followed by those of the server listening on
 *                            the port in the sandbox, if any
 *   POST /commands/<name>   a custom command: arguments bound and coerced,
 *                            {placeholders} filled shell-quoted, run as its
 *                            user with bash -l -c (sh -c without bash) →
 *                            {"result": {"stdout", "stderr", "exit_code",
 *                            "execution_time", "success"}}; another name is
 *                            forwarded to the server in the sandbox (404
 *                            "Unknown command" when there is none)
 *
 * Calls need X-Access-Token = the sandbox's envd access token (401
 * AuthError), like commands.run does.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "httpd/httpd.h"
#include "proto/cmdargs.h"
#include "proto/pjson.h"
#include "registry.h"
#include "sbxexec.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"

#define UPSTREAM_TIMEOUT_MS 60000
#define OUTPUT_MAX (4u << 20)

static char *error_body(const char *msg, const char *type) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "error", msg);
  cJSON_AddStringToObject(j, "type", type);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_json_print(j, &b);
  cJSON_Delete(j);
  return asbi_buf_detach(&b, NULL);
}

static const cJSON *find_cmd(const sbx *s, const char *name) {
  const cJSON *c;
  cJSON_ArrayForEach(c, s->commands) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
    if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return c;
  }
  return NULL;
}

int cmds_wants(engine *e, const char *id, int port, const char *url) {
  if (strcmp(url, "/commands") != 0 && strcmp(url, "/commands/") != 0 &&
      !asbi_startswith(url, "/commands/"))
    return 0;
  sbx *s = reg_get(e, id);
  if (!s) return 0;
  pthread_mutex_lock(&s->mu);
  int yes =
      s->state == SBX_RUNNING && cJSON_GetArraySize(s->commands) > 0 && port == s->commands_port;
  pthread_mutex_unlock(&s->mu);
  reg_put(e, s);
  return yes;
}

/* The custom commands in the SDK's listing format. */
static void list_own(const sbx *s, cJSON *arr) {
  const cJSON *c;
  cJSON_ArrayForEach(c, s->commands) {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "hidden"))) continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    cJSON_AddItemToObject(o, "name",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c, "name"), 1));
    cJSON_AddItemToObject(o, "description",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c, "description"), 1));
    cJSON_AddItemToObject(o, "args",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c, "args"), 1));
  }
}

static char *listing(engine *e, sbx *s, int port, const char *token, int *status) {
  (void)e;
  cJSON *root = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(root, "commands");
  list_own(s, arr);
  /* and the server in the sandbox, if one listens there */
  char hdr[128];
  snprintf(hdr, sizeof hdr, "X-Access-Token: %s", token ? token : "");
  const char *hs[] = {hdr, NULL};
  char *reply = NULL;
  int st = sbx_http(s->iso, port, "GET", "/commands", hs, NULL, 0, &reply, UPSTREAM_TIMEOUT_MS);
  if (st == 200 && reply) {
    cJSON *up = asbi_pj_parse(reply, strlen(reply), NULL);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(up, "commands")) {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "name");
      if (cJSON_IsString(n) && !find_cmd(s, n->valuestring))
        cJSON_AddItemToArray(arr, cJSON_Duplicate(c, 1));
    }
    cJSON_Delete(up);
  }
  free(reply);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_json_print(root, &b);
  cJSON_Delete(root);
  *status = 200;
  return asbi_buf_detach(&b, NULL);
}

static char *run_custom(sbx *s, const cJSON *cmd, const char *body, size_t len, int *status) {
  const char *name = cJSON_GetObjectItemCaseSensitive(cmd, "name")->valuestring;
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(cmd, "args"), *a;
  size_t n = (size_t)cJSON_GetArraySize(args), k = 0;
  asbi_argspec *specs = calloc(n ? n : 1, sizeof *specs);
  cJSON **dflts = calloc(n ? n : 1, sizeof *dflts);
  char err[512], msg[700];
  char *out = NULL;
  if (!specs || !dflts) {
    *status = 500;
    out = error_body("out of memory", "MemoryError");
    goto done;
  }
  cJSON_ArrayForEach(a, args) {
    specs[k].name = cJSON_GetObjectItemCaseSensitive(a, "name")->valuestring;
    specs[k].type = asbi_argtype_parse(cJSON_GetObjectItemCaseSensitive(a, "type")->valuestring);
    specs[k].required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "required"));
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(a, "default");
    const char *why = NULL;
    if (cJSON_IsString(d)) dflts[k] = asbi_arg_from_text(specs[k].type, d->valuestring, &why);
    specs[k].dflt = dflts[k];
    k++;
  }
  cJSON *bound = asbi_args_parse(body ? body : "", len, specs, n, err, sizeof err);
  if (!bound) {
    snprintf(msg, sizeof msg, "command '%s': %s", name, err);
    *status = 400;
    out = error_body(msg, "ValidationError");
    goto done;
  }
  asbi_buf line = ASBI_BUF_INIT;
  if (asbi_args_fill(cJSON_GetObjectItemCaseSensitive(cmd, "cmd")->valuestring, bound, &line, err,
                     sizeof err)) {
    cJSON_Delete(bound);
    *status = 500;
    out = error_body(err, "MemoryError");
    goto done;
  }
  cJSON_Delete(bound);
  int uid = !strcmp(cJSON_GetObjectItemCaseSensitive(cmd, "user")->valuestring, "root") ? 0 : 1000;
  const char *cwd = cJSON_GetObjectItemCaseSensitive(cmd, "cwd")->valuestring;
  int timeout_s = cJSON_GetObjectItemCaseSensitive(cmd, "timeout")->valueint;
  char sid[64];
  snprintf(sid, sizeof sid, "ASB_SANDBOX_ID=%s", s->id);
  const char *extra[] = {sid, NULL};
  char **envp =
      sbx_env(uid, s->tmpl_env, s->env_vars, cJSON_GetObjectItemCaseSensitive(cmd, "env"), extra);
  sbx_run_result r;
  int rc = -ENOENT;
  static const char *const shells[][2] = {{"/bin/bash", "-lc"}, {"/bin/sh", "-c"}};
  for (int i = 0; i < 2 && rc == -ENOENT; i++) {
    const char *argv[] = {shells[i][0], shells[i][1], line.data, NULL};
    sbx_run_opts o = {argv, (const char *const *)envp, uid,        cwd, NULL,
                      0,    timeout_s * 1000,          OUTPUT_MAX, 0,   0};
    rc = envp ? sbx_run(s->iso, &o, &r) : -ENOMEM;
  }
  sbx_env_free(envp);
  asbi_buf_free(&line);
  if (rc) {
    snprintf(msg, sizeof msg, "command '%s' could not start as %s in %s: %s", name,
             uid ? "user" : "root", cwd, asbe_errmsg());
    *status = 500;
    out = error_body(msg, "ExecError");
    goto done;
  }
  if (r.timed_out) {
    snprintf(msg, sizeof msg, "command '%s' timed out after %d s and was killed", name, timeout_s);
    *status = 500;
    out = error_body(msg, "TimeoutError");
    sbx_run_result_free(&r);
    goto done;
  }
  cJSON *res = cJSON_CreateObject(), *v = cJSON_AddObjectToObject(res, "result");
  asbi_pj_add_str(v, "stdout", r.out.data);
  if (!cJSON_GetObjectItem(v, "stdout")) cJSON_AddStringToObject(v, "stdout", "");
  asbi_pj_add_str(v, "stderr", r.err.data);
  if (!cJSON_GetObjectItem(v, "stderr")) cJSON_AddStringToObject(v, "stderr", "");
  cJSON_AddNumberToObject(v, "exit_code", r.exit_code);
  cJSON_AddNumberToObject(v, "execution_time", (double)r.ms / 1000.0);
  cJSON_AddBoolToObject(v, "success", r.exit_code == 0);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_json_print(res, &b);
  cJSON_Delete(res);
  sbx_run_result_free(&r);
  *status = 200;
  out = asbi_buf_detach(&b, NULL);
done:
  for (size_t i = 0; dflts && i < n; i++) cJSON_Delete(dflts[i]);
  free(dflts);
  free(specs);
  return out;
}

char *cmds_serve(engine *e, const char *id, int port, const char *method, const char *url,
                 const char *token, const char *body, size_t len, int *status) {
  sbx *s = reg_get(e, id);
  if (!s) {
    *status = 502;
    return error_body("sandbox not found", "SandboxNotFound");
  }
  char *out = NULL;
  if (!asbi_httpd_token_eq(token, s->token)) {
    *status = 401;
    out = error_body("unauthorized", "AuthError");
    goto done;
  }
  int is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
  if (!strcmp(url, "/commands") || !strcmp(url, "/commands/")) {
    if (!is_get) {
      *status = 405;
      out = error_body("use GET /commands", "MethodNotAllowed");
    } else {
      out = listing(e, s, port, token, status);
    }
    goto done;
  }
  const char *name = url + strlen("/commands/");
  const cJSON *cmd = find_cmd(s, name);
  if (cmd) {
    if (strcmp(method, "POST") != 0) {
      *status = 405;
      out = error_body("call a command with POST", "MethodNotAllowed");
    } else {
      out = run_custom(s, cmd, body, len, status);
      asbi_log("sandbox %s: custom command %s: HTTP %d", s->id, name, *status);
    }
    goto done;
  }
  /* Not ours: the server in the sandbox, if there is one. */
  char hdr[128];
  snprintf(hdr, sizeof hdr, "X-Access-Token: %s", token);
  const char *hs[] = {hdr, "Content-Type: application/json", NULL};
  char path[1200];
  snprintf(path, sizeof path, "/commands/%.1000s", name);
  /* re-escape the name: the router got it decoded */
  asbi_buf p = ASBI_BUF_INIT;
  asbi_buf_puts(&p, "/commands/");
  for (const char *c = name; *c; c++) {
    unsigned char ch = (unsigned char)*c;
    if (ch > 0x20 && ch < 0x7f && !strchr("%?#/ ", ch))
      asbi_buf_putc(&p, (char)ch);
    else
      asbi_buf_printf(&p, "%%%02X", ch);
  }
  int st = sbx_http(s->iso, port, method, p.data ? p.data : path, hs, body ? body : "", len, &out,
                    UPSTREAM_TIMEOUT_MS);
  asbi_buf_free(&p);
  if (st > 0) {
    *status = st;
  } else {
    free(out);
    asbi_buf m = ASBI_BUF_INIT;
    asbi_buf_printf(&m, "Unknown command '%.128s'; available: ", name);
    int any = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, s->commands) {
      if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "hidden"))) continue;
      asbi_buf_printf(&m, "%s%s", any ? ", " : "",
                      cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring);
      any = 1;
    }
    if (!any) asbi_buf_puts(&m, "(none)");
    *status = 404;
    out = error_body(m.data ? m.data : "Unknown command", "CommandNotFoundError");
    asbi_buf_free(&m);
  }
done:
  reg_put(e, s);
  if (!out) {
    *status = 500;
    out = error_body("out of memory", "MemoryError");
  }
  return out;
}
