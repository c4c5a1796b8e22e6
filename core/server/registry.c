/* The command registry, the listing, and calls (arguments and results).
 * SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/pjson.h"
#include "util/util.h"

#define NAME_MAX_LEN 128

/* ---- registration ------------------------------------------------------------ */

static int valid_name(const char *s, int allow_dot_dash) {
  if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
  size_t n = 0;
  for (; s[n]; n++) {
    unsigned char c = (unsigned char)s[n];
    if (!(isalnum(c) || c == '_' || (allow_dot_dash && (c == '.' || c == '-')))) return 0;
  }
  return n <= NAME_MAX_LEN;
}

asb_server_command *asbs_find(const asb_server *s, const char *name) {
  for (size_t i = 0; i < s->ncmds; i++)
    if (strcmp(s->cmds[i]->name, name) == 0) return s->cmds[i];
  return NULL;
}

int asb_server_register(asb_server_command **out, asb_server *s, const char *name,
                        const char *description, asb_server_handler_fn handler, void *userdata,
                        asb_server_destroy_fn destroy) {
  int rc = ASB_OK;
  if (out) *out = NULL;
  if (!s)
    rc = asbs_err(ASB_EINVAL, "asb_server_register: no server");
  else if (atomic_load(&s->running))
    rc = asbs_err(ASB_EINVAL,
                  "asb_server_register: the server is running; register "
                  "commands before starting it");
  else if (!valid_name(name, 1))
    rc = asbs_err(ASB_EINVAL,
                  "asb_server_register: invalid command name '%.140s' (1..128 "
                  "of [A-Za-z0-9_.-], starting with a letter or '_')",
                  name ? name : "");
  else if (asbs_find(s, name))
    rc = asbs_err(ASB_EEXISTS, "asb_server_register: command '%s' is already registered", name);
  asb_server_command *c = NULL;
  if (!rc) {
    c = calloc(1, sizeof *c);
    if (c) {
      c->name = asbi_strdup(name);
      c->description = asbi_strdup(description ? description : "");
    }
    if (!c || !c->name || !c->description) rc = asbs_oom();
  }
  if (!rc && s->ncmds == s->capcmds) {
    size_t cap = s->capcmds ? s->capcmds * 2 : 8;
    asb_server_command **v = realloc(s->cmds, cap * sizeof *v);
    if (!v) {
      rc = asbs_oom();
    } else {
      s->cmds = v;
      s->capcmds = cap;
    }
  }
  if (rc) {
    if (c) {
      free(c->name);
      free(c->description);
      free(c);
    }
    if (destroy) destroy(userdata);
    return rc;
  }
  c->server = s;
  c->handler = handler;
  c->userdata = userdata;
  c->destroy = destroy;
  s->cmds[s->ncmds++] = c;
  if (out) *out = c;
  return ASB_OK;
}

int asb_server_command_add_arg(asb_server_command *c, const char *name, int type, int flags,
                               const char *default_value, const char *description) {
  if (!c) return asbs_err(ASB_EINVAL, "asb_server_command_add_arg: no command");
  if (atomic_load(&c->server->running))
    return asbs_err(ASB_EINVAL, "asb_server_command_add_arg: the server is running");
  if (!valid_name(name, 0))
    return asbs_err(ASB_EINVAL,
                    "command '%s': invalid argument name '%.140s' "
                    "([A-Za-z_][A-Za-z0-9_]*, at most 128)",
                    c->name, name ? name : "");
  if (!asbi_argtype_name(type))
    return asbs_err(ASB_EINVAL, "command '%s', argument '%s': unknown type %d", c->name, name,
                    type);
  if (flags & ~ASB_ARG_REQUIRED)
    return asbs_err(ASB_EINVAL, "command '%s', argument '%s': unknown flags 0x%x", c->name, name,
                    (unsigned)flags);
  int required = (flags & ASB_ARG_REQUIRED) != 0;
  if (required && default_value)
    return asbs_err(ASB_EINVAL,
                    "command '%s', argument '%s': a required argument has no "
                    "default",
                    c->name, name);
  for (size_t i = 0; i < c->nargs; i++)
    if (strcmp(c->args[i].name, name) == 0)
      return asbs_err(ASB_EEXISTS, "command '%s': argument '%s' is already declared", c->name,
                      name);
  cJSON *dflt = NULL;
  if (default_value) {
    const char *why = NULL;
    dflt = asbi_arg_from_text(type, default_value, &why);
    if (!dflt)
      return asbs_err(ASB_EINVAL,
                      "command '%s', argument '%s': default '%.200s' is not a "
                      "valid %s (%s)",
                      c->name, name, default_value, asbi_argtype_name(type), why ? why : "invalid");
  }
  if (c->nargs == c->capargs) {
    size_t cap = c->capargs ? c->capargs * 2 : 4;
    asbs_arg *v = realloc(c->args, cap * sizeof *v);
    if (!v) {
      cJSON_Delete(dflt);
      return asbs_oom();
    }
    c->args = v;
    c->capargs = cap;
  }
  asbs_arg *a = &c->args[c->nargs];
  memset(a, 0, sizeof *a);
  a->name = asbi_strdup(name);
  a->description = asbi_strdup(description ? description : "");
  a->dflt_text = default_value ? asbi_strdup(default_value) : NULL;
  if (!a->name || !a->description || (default_value && !a->dflt_text)) {
    free(a->name);
    free(a->description);
    free(a->dflt_text);
    cJSON_Delete(dflt);
    return asbs_oom();
  }
  a->dflt = dflt;
  a->type = type;
  a->required = required;
  c->nargs++;
  return ASB_OK;
}

int asb_server_command_set_hidden(asb_server_command *c, int hidden) {
  if (!c) return asbs_err(ASB_EINVAL, "asb_server_command_set_hidden: no command");
  if (atomic_load(&c->server->running))
    return asbs_err(ASB_EINVAL, "asb_server_command_set_hidden: the server is running");
  c->hidden = hidden != 0;
  return ASB_OK;
}

void asbs_command_free(asb_server_command *c);
void asbs_command_free(asb_server_command *c) {
  if (!c) return;
  if (c->destroy) c->destroy(c->userdata);
  for (size_t i = 0; i < c->nargs; i++) {
    free(c->args[i].name);
    free(c->args[i].description);
    free(c->args[i].dflt_text);
    cJSON_Delete(c->args[i].dflt);
  }
  free(c->args);
  free(c->specs);
  free(c->name);
  free(c->description);
  free(c);
}

/* ---- freezing: specs and the listing ------------------------------------------- */

int asbs_freeze(asb_server *s) {
  cJSON *root = cJSON_CreateObject();
  cJSON *arr = root ? cJSON_AddArrayToObject(root, "commands") : NULL;
  int rc = arr ? ASB_OK : asbs_oom();
  for (size_t i = 0; !rc && i < s->ncmds; i++) {
    asb_server_command *c = s->cmds[i];
    free(c->specs);
    c->specs = calloc(c->nargs ? c->nargs : 1, sizeof *c->specs);
    if (!c->specs) {
      rc = asbs_oom();
      break;
    }
    for (size_t k = 0; k < c->nargs; k++) {
      c->specs[k].name = c->args[k].name;
      c->specs[k].type = c->args[k].type;
      c->specs[k].required = c->args[k].required;
      c->specs[k].dflt = c->args[k].dflt;
    }
    if (c->hidden) continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "description", c->description);
    cJSON *args = cJSON_AddArrayToObject(o, "args");
    for (size_t k = 0; k < c->nargs; k++) {
      const asbs_arg *a = &c->args[k];
      cJSON *ao = cJSON_CreateObject();
      cJSON_AddItemToArray(args, ao);
      cJSON_AddStringToObject(ao, "name", a->name);
      cJSON_AddStringToObject(ao, "type", asbi_argtype_name(a->type));
      cJSON_AddBoolToObject(ao, "required", a->required);
      if (a->dflt_text)
        cJSON_AddStringToObject(ao, "default", a->dflt_text);
      else
        cJSON_AddNullToObject(ao, "default");
      cJSON_AddStringToObject(ao, "description", a->description);
    }
  }
  if (!rc) {
    asbi_buf b = ASBI_BUF_INIT;
    if (asbi_json_print(root, &b)) {
      asbi_buf_free(&b);
      rc = asbs_oom();
    } else {
      free(s->listing);
      s->listing = asbi_buf_detach(&b, NULL);
    }
  }
  cJSON_Delete(root);
  return rc;
}

/* ---- calls ------------------------------------------------------------------------ */

char *asbs_error_json(const char *message, const char *type) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddStringToObject(j, "error", message ? message : "");
  cJSON_AddStringToObject(j, "type", type ? type : "Error");
  asbi_buf b = ASBI_BUF_INIT;
  char *out = asbi_json_print(j, &b) == 0 ? asbi_buf_detach(&b, NULL) : NULL;
  asbi_buf_free(&b);
  cJSON_Delete(j);
  return out;
}

static int arg_index(const asb_server_call *call, const char *arg) {
  if (!call || !arg) return -1;
  for (size_t i = 0; i < call->cmd->nargs; i++)
    if (strcmp(call->cmd->args[i].name, arg) == 0) return (int)i;
  return -1;
}

static const cJSON *arg_value(const asb_server_call *call, const char *arg) {
  if (arg_index(call, arg) < 0) return NULL;
  return cJSON_GetObjectItemCaseSensitive(call->args, arg);
}

const char *asb_server_call_command(const asb_server_call *call) {
  return call ? call->cmd->name : NULL;
}

int asb_server_call_has(const asb_server_call *call, const char *arg) {
  return arg_value(call, arg) != NULL;
}

static const char *cached_text(asb_server_call *call, const char *arg, int json) {
  int i = arg_index(call, arg);
  const cJSON *v = arg_value(call, arg);
  if (i < 0 || !v) return NULL;
  /* two slots per argument: [2i] text, [2i+1] JSON */
  char **slot = &call->texts[2 * i + (json ? 1 : 0)];
  if (!*slot) {
    if (json) {
      asbi_buf b = ASBI_BUF_INIT;
      if (asbi_json_print(v, &b) == 0) *slot = asbi_buf_detach(&b, NULL);
      asbi_buf_free(&b);
    } else {
      *slot = asbi_arg_text(v);
    }
    if (!*slot) asbs_oom();
  }
  return *slot;
}

const char *asb_server_call_string(asb_server_call *call, const char *arg) {
  return cached_text(call, arg, 0);
}

const char *asb_server_call_json(asb_server_call *call, const char *arg) {
  return cached_text(call, arg, 1);
}

asb_int64 asb_server_call_integer(const asb_server_call *call, const char *arg) {
  const cJSON *v = arg_value(call, arg);
  int64_t x;
  if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? 1 : 0;
  if (!cJSON_IsNumber(v)) return 0;
  if (asbi_json_get_i64(v, &x) == 0) return (asb_int64)x;
  double d = v->valuedouble;
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return 0;
  return (asb_int64)(int64_t)d;
}

double asb_server_call_float(const asb_server_call *call, const char *arg) {
  const cJSON *v = arg_value(call, arg);
  if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? 1.0 : 0.0;
  return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

int asb_server_call_boolean(const asb_server_call *call, const char *arg) {
  const cJSON *v = arg_value(call, arg);
  if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? 1 : 0;
  if (cJSON_IsNumber(v)) return v->valuedouble != 0;
  return 0;
}

const char *asb_server_call_args_json(asb_server_call *call) {
  if (!call) return NULL;
  if (!call->args_text) {
    asbi_buf b = ASBI_BUF_INIT;
    if (asbi_json_print(call->args, &b) == 0) call->args_text = asbi_buf_detach(&b, NULL);
    asbi_buf_free(&b);
    if (!call->args_text) asbs_oom();
  }
  return call->args_text;
}

static int set_result(asb_server_call *call, char *text) {
  if (!text) return asbs_oom();
  free(call->result);
  call->result = text;
  return ASB_OK;
}

static int set_result_item(asb_server_call *call, cJSON *v) {
  if (!call) {
    cJSON_Delete(v);
    return asbs_err(ASB_EINVAL, "asb_server_call_set_result: no call");
  }
  if (!v) return asbs_oom();
  asbi_buf b = ASBI_BUF_INIT;
  char *text = asbi_json_print(v, &b) == 0 ? asbi_buf_detach(&b, NULL) : NULL;
  asbi_buf_free(&b);
  cJSON_Delete(v);
  return set_result(call, text);
}

int asb_server_call_set_result_json(asb_server_call *call, const char *json) {
  if (!call || !json) return asbs_err(ASB_EINVAL, "asb_server_call_set_result_json: bad arguments");
  const char *why = NULL;
  cJSON *v = asbi_pj_parse(json, strlen(json), &why);
  if (!v)
    return asbs_err(ASB_EINVAL, "command '%s': the result is not valid JSON (%s)", call->cmd->name,
                    why ? why : "invalid");
  return set_result_item(call, v);
}

int asb_server_call_set_result_string(asb_server_call *call, const char *value) {
  if (!value) return asbs_err(ASB_EINVAL, "asb_server_call_set_result_string: NULL");
  if (!asbi_utf8_valid(value, strlen(value)))
    return asbs_err(ASB_EINVAL, "asb_server_call_set_result_string: not valid UTF-8");
  return set_result_item(call, cJSON_CreateString(value));
}

int asb_server_call_set_result_integer(asb_server_call *call, asb_int64 value) {
  return set_result_item(call, asbi_json_int((int64_t)value));
}

int asb_server_call_set_result_float(asb_server_call *call, double value) {
  if (!isfinite(value))
    return asbs_err(ASB_EINVAL, "asb_server_call_set_result_float: not a finite number");
  return set_result_item(call, cJSON_CreateNumber(value));
}

int asb_server_call_set_result_boolean(asb_server_call *call, int value) {
  return set_result_item(call, cJSON_CreateBool(value != 0));
}

/* Keeps valid UTF-8 (else replaces bytes with '?') so the reply is JSON. */
static char *clean_text(const char *s) {
  char *d = asbi_strdup(s ? s : "");
  if (!d) return NULL;
  size_t n = strlen(d);
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)d[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k = asbi_utf8_seq((const unsigned char *)d + i, n - i);
    if (!k) {
      d[i++] = '?';
      continue;
    }
    i += k;
  }
  return d;
}

int asb_server_call_error(asb_server_call *call, const char *type, const char *message) {
  if (!call) return asbs_err(ASB_EINVAL, "asb_server_call_error: no call");
  free(call->err_type);
  free(call->err_message);
  call->err_type = clean_text(type && *type ? type : "Error");
  call->err_message = clean_text(message ? message : "");
  if (!call->err_type || !call->err_message) return asbs_oom();
  asbs_err(ASB_ECOMMANDFAILED, "command '%s' failed: %s: %s", call->cmd->name, call->err_type,
           call->err_message);
  return ASB_ECOMMANDFAILED;
}

static void reply_error(int *status, char **reply, int st, const char *msg, const char *type) {
  *status = st;
  *reply = asbs_error_json(msg, type);
}

asb_server_call *asbs_call_new(asb_server_command *c, const char *body, size_t len, int *status,
                               char **reply) {
  char err[512];
  err[0] = '\0';
  asb_server_call *call = calloc(1, sizeof *call);
  if (!call) {
    reply_error(status, reply, 500, "out of memory", "MemoryError");
    return NULL;
  }
  call->cmd = c;
  call->args = asbi_args_parse(body ? body : "", len, c->specs, c->nargs, err, sizeof err);
  if (!call->args) {
    char msg[700];
    snprintf(msg, sizeof msg, "command '%s': %s", c->name, err);
    reply_error(status, reply, 400, msg, "ValidationError");
    free(call);
    return NULL;
  }
  call->texts = calloc(2 * c->nargs + 1, sizeof *call->texts);
  if (!call->texts) {
    cJSON_Delete(call->args);
    free(call);
    reply_error(status, reply, 500, "out of memory", "MemoryError");
    return NULL;
  }
  call->server = c->server;
  atomic_fetch_add(&c->server->refs, 1);
  atomic_init(&call->refs, 1);
  return call;
}

void asbs_call_finish(asb_server_call *call, int rc, int *status, char **reply) {
  asb_server_command *c = call->cmd;
  if (rc == 0 && !call->err_type) {
    asbi_buf b = ASBI_BUF_INIT;
    asbi_buf_puts(&b, "{\"result\":");
    asbi_buf_puts(&b, call->result ? call->result : "null");
    asbi_buf_putc(&b, '}');
    if (b.data && b.len) {
      *status = 200;
      *reply = asbi_buf_detach(&b, NULL);
    } else {
      asbi_buf_free(&b);
      reply_error(status, reply, 500, "out of memory", "MemoryError");
    }
  } else if (call->err_type) {
    reply_error(status, reply, 500, call->err_message, call->err_type);
  } else {
    char msg[300];
    snprintf(msg, sizeof msg, "command '%s' failed (its handler returned %d)", c->name, rc);
    reply_error(status, reply, 500, msg, "Error");
  }
}

void asbs_call_release(asb_server_call *call) {
  if (!call || atomic_fetch_sub(&call->refs, 1) != 1) return;
  for (size_t i = 0; i < 2 * call->cmd->nargs; i++) free(call->texts[i]);
  free(call->texts);
  free(call->args_text);
  free(call->result);
  free(call->err_type);
  free(call->err_message);
  free(call->reply);
  cJSON_Delete(call->args);
  asb_server *s = call->server;
  free(call);
  asbs_server_unref(s);
}
