/* template.yaml → normalised template spec (see tmpl.h, docs/templates.md).
 * SPDX-License-Identifier: Apache-2.0 */
#include "tmpl.h"
#include "util/agents_table.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "proto/cmdargs.h"
#include "proto/pjson.h"
#include "util/util.h"

#define MAX_VISITS 200000
#define MAX_SCALAR (256u * 1024u)
#define MAX_ITEMS 4096

#define DEFAULT_CPU 2
#define DEFAULT_MEMORY_MB 512
#define DEFAULT_DISK_MB 1024
#define DEFAULT_STEP_TIMEOUT_S 600
#define DEFAULT_CMD_TIMEOUT_S 60
#define DEFAULT_READY_TIMEOUT_S 30
#define DEFAULT_READY_INTERVAL_MS 200
#define DEFAULT_COMMANDS_PORT 9000

typedef struct ctx {
  yaml_document_t *doc;
  asbi_tmpl_error *err;
  long visits;
  int failed;
} ctx;

/* ---- errors ---------------------------------------------------------------- */

/* Walks libyaml's events, stopping at the first collection nested deeper
 * than ASBI_TMPL_MAX_DEPTH: the scanner has then looked at most a line's
 * simple-key window ahead, so a file of 100 000 '[' costs milliseconds
 * instead of the seconds (to minutes) that building its document takes.
 * YAML syntax errors are left to the real parse, which reports them. */
static int depth_check(const char *text_in, size_t len, asbi_tmpl_error *err) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) {
    snprintf(err->message, sizeof err->message, "out of memory");
    return -1;
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text_in, len);
  int depth = 0, rc = 0;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) break;
    yaml_event_type_t t = ev.type;
    if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
      if (++depth > ASBI_TMPL_MAX_DEPTH) {
        err->line = (int)ev.start_mark.line + 1;
        err->column = (int)ev.start_mark.column + 1;
        snprintf(err->message, sizeof err->message,
                 "mappings and lists nested deeper than %d levels", ASBI_TMPL_MAX_DEPTH);
        rc = -1;
      }
    } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
      depth--;
    }
    yaml_event_delete(&ev);
    if (rc || t == YAML_STREAM_END_EVENT) break;
  }
  yaml_parser_delete(&p);
  return rc;
}

static void vfail_at(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, va_list ap) {
  if (c->failed) return;
  c->failed = 1;
  c->err->line = n ? (int)n->start_mark.line + 1 : 0;
  c->err->column = n ? (int)n->start_mark.column + 1 : 0;
  snprintf(c->err->field, sizeof c->err->field, "%s", field ? field : "");
  vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
}

static int fail_at(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail_at(c, n, field, fmt, ap);
  va_end(ap);
  return -1;
}

void asbi_tmpl_format_error(const asbi_tmpl_error *e, const char *file, char *out, size_t outlen) {
  char pos[64] = "";
  if (e->line > 0) snprintf(pos, sizeof pos, ":%d:%d", e->line, e->column);
  snprintf(out, outlen, "%s%s: %s%s%s", file ? file : "template.yaml", pos, e->field,
           e->field[0] ? ": " : "", e->message);
}

/* ---- nodes ------------------------------------------------------------------- */

static yaml_node_t *node(ctx *c, int id) {
  if (++c->visits > MAX_VISITS) {
    if (!c->failed) fail_at(c, NULL, NULL, "the document is too large or too deeply aliased");
    return NULL;
  }
  return yaml_document_get_node(c->doc, id);
}

static const char *kind_name(const yaml_node_t *n) {
  if (!n) return "nothing";
  switch (n->type) {
    case YAML_SCALAR_NODE:
      return "a scalar";
    case YAML_SEQUENCE_NODE:
      return "a list";
    case YAML_MAPPING_NODE:
      return "a mapping";
    default:
      return "nothing";
  }
}

static const char *text(const yaml_node_t *n) {
  return (const char *)n->data.scalar.value;
}

static int is_null(const yaml_node_t *n) {
  if (!n) return 1;
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
  const char *t = text(n);
  return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") || !strcmp(t, "NULL");
}

static int scalar(ctx *c, const yaml_node_t *n, const char *field, const char **out) {
  if (!n || n->type != YAML_SCALAR_NODE)
    return fail_at(c, n, field, "expected a string, got %s", kind_name(n));
  if (n->data.scalar.length > MAX_SCALAR)
    return fail_at(c, n, field, "value over %u bytes", MAX_SCALAR);
  if (strlen(text(n)) != n->data.scalar.length)
    return fail_at(c, n, field, "value contains a NUL character");
  *out = text(n);
  return 0;
}

static int nonempty(ctx *c, const yaml_node_t *n, const char *field, const char **out) {
  if (scalar(c, n, field, out)) return -1;
  if (!**out) return fail_at(c, n, field, "must not be empty");
  return 0;
}

static int integer(ctx *c, const yaml_node_t *n, const char *field, long min, long max, long *out) {
  const char *t;
  if (scalar(c, n, field, &t)) return -1;
  int64_t v;
  const char *p = t;
  if (*p == '+') p++;
  if (!*p || strspn(p, "-0123456789") != strlen(p) || asbi_parse_i64(p, strlen(p), &v) || v < min ||
      v > max)
    return fail_at(c, n, field, "expected a whole number in %ld..%ld, got '%.64s'", min, max, t);
  *out = (long)v;
  return 0;
}

static int boolean(ctx *c, const yaml_node_t *n, const char *field, int *out) {
  const char *t;
  if (scalar(c, n, field, &t)) return -1;
  static const char *const T[] = {"true", "yes", "on", "y"}, *const F[] = {"false", "no", "off",
                                                                           "n"};
  for (int i = 0; i < 4; i++) {
    if (!strcasecmp(t, T[i])) return *out = 1, 0;
    if (!strcasecmp(t, F[i])) return *out = 0, 0;
  }
  return fail_at(c, n, field, "expected true or false, got '%.64s'", t);
}

long asbi_tmpl_parse_mib(const char *s) {
  if (!s || !isdigit((unsigned char)*s)) return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || v > (1ull << 40)) return -1;
  while (*end == ' ') end++;
  unsigned long long mib;
  if (!*end || !strcasecmp(end, "M") || !strcasecmp(end, "Mi") || !strcasecmp(end, "MB") ||
      !strcasecmp(end, "MiB"))
    mib = v;
  else if (!strcasecmp(end, "G") || !strcasecmp(end, "Gi") || !strcasecmp(end, "GB") ||
           !strcasecmp(end, "GiB"))
    mib = v * 1024;
  else
    return -1;
  return mib > (1ull << 30) ? -1 : (long)mib;
}

static int size_mib(ctx *c, const yaml_node_t *n, const char *field, long min, long max,
                    long *out) {
  const char *t;
  if (scalar(c, n, field, &t)) return -1;
  long v = asbi_tmpl_parse_mib(t);
  if (v < 0)
    return fail_at(c, n, field,
                   "expected a size like 512 (MiB), \"512Mi\" or \"2Gi\", got "
                   "'%.64s'",
                   t);
  if (v < min || v > max)
    return fail_at(c, n, field, "%ld MiB is out of range (%ld..%ld MiB)", v, min, max);
  *out = v;
  return 0;
}

/* Iterates a mapping's pairs with scalar, unique keys. */
typedef int (*pair_fn)(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud);

static int each_pair(ctx *c, yaml_node_t *m, const char *field, pair_fn fn, void *ud) {
  if (!m || m->type != YAML_MAPPING_NODE)
    return fail_at(c, m, field, "expected a mapping, got %s", kind_name(m));
  long count = 0;
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    if (++count > MAX_ITEMS) return fail_at(c, m, field, "more than %d entries", MAX_ITEMS);
    yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
    if (!k || !v) return -1;
    const char *key;
    if (k->type != YAML_SCALAR_NODE)
      return fail_at(c, k, field, "keys must be strings, got %s", kind_name(k));
    if (scalar(c, k, field, &key)) return -1;
    for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *k2 = yaml_document_get_node(c->doc, q->key);
      if (k2 && k2->type == YAML_SCALAR_NODE && !strcmp(text(k2), key))
        return fail_at(c, k, field, "'%.64s' is given twice", key);
    }
    if (fn(c, key, k, v, ud)) return -1;
  }
  return 0;
}

static int env_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *env = ud;
  char field[256];
  snprintf(field, sizeof field, "env.%.100s", key);
  if (!(isalpha((unsigned char)key[0]) || key[0] == '_') ||
      strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(key))
    return fail_at(c, k, field, "not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
  const char *t = "";
  if (!is_null(v) && scalar(c, v, field, &t)) return -1;
  cJSON_AddStringToObject(env, key, t);
  return 0;
}

static cJSON *env_map(ctx *c, yaml_node_t *n, const char *field) {
  cJSON *env = cJSON_CreateObject();
  if (!env) return NULL;
  if (!is_null(n) && each_pair(c, n, field, env_pair, env)) {
    cJSON_Delete(env);
    return NULL;
  }
  return env;
}

/* A list of strings: a sequence of scalars, or one scalar (split on
 * whitespace when split is set). */
static cJSON *string_list(ctx *c, yaml_node_t *n, const char *field, int split) {
  cJSON *arr = cJSON_CreateArray();
  if (!arr || is_null(n)) return arr;
  char f[300];
  if (n->type == YAML_SCALAR_NODE) {
    const char *t;
    if (scalar(c, n, field, &t)) goto bad;
    if (!split) {
      cJSON_AddItemToArray(arr, cJSON_CreateString(t));
      return arr;
    }
    char *dup = asbi_strdup(t), *save = NULL;
    for (char *w = dup ? strtok_r(dup, " \t\n", &save) : NULL; w;
         w = strtok_r(NULL, " \t\n", &save))
      cJSON_AddItemToArray(arr, cJSON_CreateString(w));
    free(dup);
    return arr;
  }
  if (n->type != YAML_SEQUENCE_NODE) {
    fail_at(c, n, field, "expected a list, got %s", kind_name(n));
    goto bad;
  }
  int i = 0;
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
       it++, i++) {
    if (i >= MAX_ITEMS) {
      fail_at(c, n, field, "more than %d entries", MAX_ITEMS);
      goto bad;
    }
    yaml_node_t *e = node(c, *it);
    const char *t;
    snprintf(f, sizeof f, "%s[%d]", field, i);
    if (!e || nonempty(c, e, f, &t)) goto bad;
    cJSON_AddItemToArray(arr, cJSON_CreateString(t));
  }
  return arr;
bad:
  cJSON_Delete(arr);
  return NULL;
}

/* ---- the spec ------------------------------------------------------------------ */

typedef struct spec {
  cJSON *out;
  yaml_node_t *name_node;
  /* compat build keys, ordered into steps at the end */
  cJSON *compat_copy, *compat_apt, *compat_pip, *compat_npm, *compat_run;
  cJSON *steps;
  yaml_node_t *ready_node, *start_node;
  int have_resources_cpu, have_resources_mem, have_resources_disk;
} spec;

static int valid_template_name(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > 63 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0]))) return 0;
  return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int valid_user(const char *u) {
  return !strcmp(u, "root") || !strcmp(u, "user");
}

static int abs_path(ctx *c, yaml_node_t *n, const char *field, const char **out) {
  if (nonempty(c, n, field, out)) return -1;
  if ((*out)[0] != '/') return fail_at(c, n, field, "must be an absolute path, got '%.64s'", *out);
  return 0;
}

/* The fields a build step and the start command share: user, cwd (alias
 * workdir), env. 1 if key was one of them (stored in st), 0 if not, -1 on a
 * bad value. */
static int process_field(ctx *c, const char *key, yaml_node_t *v, const char *f, cJSON *st) {
  const char *t;
  if (!strcmp(key, "user")) {
    if (scalar(c, v, f, &t)) return -1;
    if (!valid_user(t)) return fail_at(c, v, f, "must be root or user, got '%.32s'", t);
    cJSON_ReplaceItemInObject(st, "user", cJSON_CreateString(t));
  } else if (!strcmp(key, "cwd") || !strcmp(key, "workdir")) {
    if (abs_path(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(st, "cwd", cJSON_CreateString(t));
  } else if (!strcmp(key, "env")) {
    cJSON *env = env_map(c, v, f);
    if (!env) return -1;
    cJSON_ReplaceItemInObject(st, "env", env);
  } else {
    return 0;
  }
  return 1;
}

/* One step. kinds: run, copy, apt, pip, npm. */
typedef struct step_ctx {
  cJSON *step;
  const char *kind;
  yaml_node_t *kind_node;
  const char *field;
  int idx;
} step_ctx;

static int step_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  step_ctx *s = ud;
  char f[300];
  snprintf(f, sizeof f, "%s.%s", s->field, key);
  static const char *const kinds[] = {"run", "copy", "apt", "pip", "npm"};
  for (int i = 0; i < 5; i++)
    if (!strcmp(key, kinds[i])) {
      if (s->kind)
        return fail_at(c, k, s->field, "a step does one thing: both '%s' and '%s' given", s->kind,
                       key);
      s->kind = kinds[i];
      s->kind_node = v;
      return 0;
    }
  cJSON *st = s->step;
  const char *t;
  long l;
  int pf = process_field(c, key, v, f, st);
  if (pf) return pf < 0 ? -1 : 0;
  if (!strcmp(key, "timeout")) {
    if (integer(c, v, f, 1, 86400, &l)) return -1;
    cJSON_ReplaceItemInObject(st, "timeout", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "owner") || !strcmp(key, "mode")) {
    if (scalar(c, v, f, &t)) return -1;
    if (key[0] == 'o' && !valid_user(t)) return fail_at(c, v, f, "must be root or user");
    if (key[0] == 'm' && (strlen(t) < 3 || strlen(t) > 4 || strspn(t, "01234567") != strlen(t)))
      return fail_at(c, v, f, "expected an octal mode like \"0755\", got '%.16s'", t);
    cJSON_DeleteItemFromObject(st, key);
    cJSON_AddStringToObject(st, key, t);
  } else {
    return fail_at(c, k, f,
                   "unknown step field (a step is one of run, copy, apt, pip, npm, "
                   "with user, cwd, env, timeout; copy also takes owner and mode)");
  }
  return 0;
}

static cJSON *new_step(const char *kind, long line) {
  cJSON *st = cJSON_CreateObject();
  if (!st) return NULL;
  cJSON_AddStringToObject(st, "kind", kind);
  cJSON_AddStringToObject(st, "user", "root");
  cJSON_AddStringToObject(st, "cwd", "/");
  cJSON_AddItemToObject(st, "env", cJSON_CreateObject());
  cJSON_AddNumberToObject(st, "timeout", DEFAULT_STEP_TIMEOUT_S);
  cJSON_AddNumberToObject(st, "line", (double)line);
  return st;
}

static int copy_spec(ctx *c, cJSON *st, yaml_node_t *v, const char *field);

static int copy_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *st = ud;
  char f[300];
  snprintf(f, sizeof f, "%.200s.%s", cJSON_GetObjectItem(st, "_field")->valuestring, key);
  const char *t;
  if (!strcmp(key, "src") || !strcmp(key, "source")) {
    if (nonempty(c, v, f, &t)) return -1;
    if (t[0] == '/' || !strcmp(t, "..") || !strncmp(t, "../", 3) || strstr(t, "/../") ||
        (strlen(t) >= 3 && !strcmp(t + strlen(t) - 3, "/..")))
      return fail_at(c, v, f, "must be a path inside the template directory, got '%.64s'", t);
    cJSON_ReplaceItemInObject(st, "src", cJSON_CreateString(t));
  } else if (!strcmp(key, "dest") || !strcmp(key, "destination") || !strcmp(key, "dst")) {
    if (abs_path(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(st, "dest", cJSON_CreateString(t));
  } else if (!strcmp(key, "owner")) {
    if (scalar(c, v, f, &t)) return -1;
    if (!valid_user(t)) return fail_at(c, v, f, "must be root or user, got '%.32s'", t);
    cJSON_ReplaceItemInObject(st, "owner", cJSON_CreateString(t));
  } else if (!strcmp(key, "mode")) {
    if (scalar(c, v, f, &t)) return -1;
    if (strlen(t) < 3 || strlen(t) > 4 || strspn(t, "01234567") != strlen(t))
      return fail_at(c, v, f, "expected an octal mode like \"0755\", got '%.16s'", t);
    cJSON_ReplaceItemInObject(st, "mode", cJSON_CreateString(t));
  } else {
    return fail_at(c, k, f, "unknown copy field (src, dest, owner, mode)");
  }
  return 0;
}

/* copy: {src, dest, owner, mode} or "src dest" */
static int copy_spec(ctx *c, cJSON *st, yaml_node_t *v, const char *field) {
  cJSON_AddStringToObject(st, "src", "");
  cJSON_AddStringToObject(st, "dest", "");
  cJSON_AddStringToObject(st, "owner", "root");
  cJSON_AddNullToObject(st, "mode");
  if (v && v->type == YAML_SCALAR_NODE) {
    const char *t;
    if (nonempty(c, v, field, &t)) return -1;
    char a[4096], b[4096], extra[8];
    int n = sscanf(t, "%4095s %4095s %7s", a, b, extra);
    if (n != 2)
      return fail_at(c, v, field, "expected \"<src> <dest>\" or a mapping with src and dest");
    if (a[0] == '/' || !strcmp(a, "..") || !strncmp(a, "../", 3) || strstr(a, "/../"))
      return fail_at(c, v, field, "the source must be a path inside the template directory");
    if (b[0] != '/') return fail_at(c, v, field, "the destination must be an absolute path");
    cJSON_ReplaceItemInObject(st, "src", cJSON_CreateString(a));
    cJSON_ReplaceItemInObject(st, "dest", cJSON_CreateString(b));
    return 0;
  }
  cJSON_AddStringToObject(st, "_field", field);
  int rc = each_pair(c, v, field, copy_pair, st);
  cJSON_DeleteItemFromObject(st, "_field");
  if (rc) return -1;
  if (!*cJSON_GetObjectItem(st, "src")->valuestring)
    return fail_at(c, v, field, "'src' is required");
  if (!*cJSON_GetObjectItem(st, "dest")->valuestring)
    return fail_at(c, v, field, "'dest' is required");
  return 0;
}

static cJSON *parse_step(ctx *c, yaml_node_t *n, const char *field) {
  cJSON *st = new_step("run", (long)n->start_mark.line + 1);
  if (!st) return NULL;
  const char *t;
  if (n->type == YAML_SCALAR_NODE) { /* "- make install" = run */
    if (nonempty(c, n, field, &t)) goto bad;
    cJSON_AddStringToObject(st, "cmd", t);
    return st;
  }
  step_ctx s = {st, NULL, NULL, field, 0};
  if (each_pair(c, n, field, step_pair, &s)) goto bad;
  if (!s.kind) {
    fail_at(c, n, field, "a step needs one of run, copy, apt, pip, npm");
    goto bad;
  }
  cJSON_ReplaceItemInObject(st, "kind", cJSON_CreateString(s.kind));
  char f[300];
  snprintf(f, sizeof f, "%s.%s", field, s.kind);
  int has_copy_opts = cJSON_GetObjectItem(st, "owner") || cJSON_GetObjectItem(st, "mode");
  if (!strcmp(s.kind, "run")) {
    if (has_copy_opts) {
      fail_at(c, n, field, "owner and mode belong to copy steps");
      goto bad;
    }
    if (nonempty(c, s.kind_node, f, &t)) goto bad;
    cJSON_AddStringToObject(st, "cmd", t);
  } else if (!strcmp(s.kind, "copy")) {
    cJSON *owner = cJSON_DetachItemFromObject(st, "owner");
    cJSON *mode = cJSON_DetachItemFromObject(st, "mode");
    int rc = copy_spec(c, st, s.kind_node, f);
    if (!rc && owner) cJSON_ReplaceItemInObject(st, "owner", owner), owner = NULL;
    if (!rc && mode) cJSON_ReplaceItemInObject(st, "mode", mode), mode = NULL;
    cJSON_Delete(owner);
    cJSON_Delete(mode);
    if (rc) goto bad;
  } else {
    if (has_copy_opts) {
      fail_at(c, n, field, "owner and mode belong to copy steps");
      goto bad;
    }
    cJSON *pk = string_list(c, s.kind_node, f, 1);
    if (!pk) goto bad;
    if (!cJSON_GetArraySize(pk)) {
      cJSON_Delete(pk);
      fail_at(c, s.kind_node, f, "list at least one package");
      goto bad;
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, pk) {
      if (p->valuestring[0] == '-' || strpbrk(p->valuestring, "'\"`$;&|<>\\")) {
        fail_at(c, s.kind_node, f, "'%.64s' is not a package name", p->valuestring);
        cJSON_Delete(pk);
        goto bad;
      }
    }
    cJSON_AddItemToObject(st, "packages", pk);
  }
  return st;
bad:
  cJSON_Delete(st);
  return NULL;
}

static int parse_steps(ctx *c, yaml_node_t *n, const char *field, cJSON *steps) {
  if (is_null(n)) return 0;
  if (n->type != YAML_SEQUENCE_NODE)
    return fail_at(c, n, field, "expected a list of steps, got %s", kind_name(n));
  int i = 0;
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
       it++, i++) {
    if (i >= MAX_ITEMS) return fail_at(c, n, field, "more than %d steps", MAX_ITEMS);
    char f[300];
    snprintf(f, sizeof f, "%s[%d]", field, i);
    yaml_node_t *e = node(c, *it);
    if (!e) return -1;
    cJSON *st = parse_step(c, e, f);
    if (!st) return -1;
    cJSON_AddItemToArray(steps, st);
  }
  return 0;
}

/* ---- start and ready ------------------------------------------------------------ */

static int start_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *st = ud;
  char f[300];
  snprintf(f, sizeof f, "start.%s", key);
  const char *t;
  int pf = process_field(c, key, v, f, st);
  if (pf) return pf < 0 ? -1 : 0;
  if (!strcmp(key, "cmd") || !strcmp(key, "command")) {
    if (nonempty(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(st, "cmd", cJSON_CreateString(t));
  } else {
    return fail_at(c, k, f, "unknown field (cmd, user, cwd, env)");
  }
  return 0;
}

static cJSON *parse_start(ctx *c, yaml_node_t *n) {
  cJSON *st = cJSON_CreateObject();
  if (!st) return NULL;
  cJSON_AddStringToObject(st, "cmd", "");
  cJSON_AddStringToObject(st, "user", "user");
  cJSON_AddStringToObject(st, "cwd", "/home/user");
  cJSON_AddItemToObject(st, "env", cJSON_CreateObject());
  const char *t;
  if (n->type == YAML_SCALAR_NODE) {
    if (nonempty(c, n, "start", &t)) goto bad;
    cJSON_ReplaceItemInObject(st, "cmd", cJSON_CreateString(t));
    return st;
  }
  if (each_pair(c, n, "start", start_pair, st)) goto bad;
  if (!*cJSON_GetObjectItem(st, "cmd")->valuestring) {
    fail_at(c, n, "start", "'cmd' is required");
    goto bad;
  }
  return st;
bad:
  cJSON_Delete(st);
  return NULL;
}

static int ready_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *r = ud;
  char f[300];
  snprintf(f, sizeof f, "ready.%s", key);
  const char *t;
  long l;
  if (!strcmp(key, "port")) {
    if (integer(c, v, f, 1, 65535, &l)) return -1;
    cJSON_AddNumberToObject(r, "port", (double)l);
  } else if (!strcmp(key, "cmd") || !strcmp(key, "command")) {
    if (nonempty(c, v, f, &t)) return -1;
    cJSON_AddStringToObject(r, "cmd", t);
  } else if (!strcmp(key, "timeout")) {
    if (integer(c, v, f, 1, 3600, &l)) return -1;
    cJSON_ReplaceItemInObject(r, "timeout", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "interval")) {
    if (integer(c, v, f, 10, 60000, &l)) return -1;
    cJSON_ReplaceItemInObject(r, "interval", cJSON_CreateNumber((double)l));
  } else {
    return fail_at(c, k, f, "unknown field (port or cmd, timeout in seconds, interval in ms)");
  }
  return 0;
}

static cJSON *parse_ready(ctx *c, yaml_node_t *n) {
  cJSON *r = cJSON_CreateObject();
  if (!r) return NULL;
  cJSON_AddNumberToObject(r, "timeout", DEFAULT_READY_TIMEOUT_S);
  cJSON_AddNumberToObject(r, "interval", DEFAULT_READY_INTERVAL_MS);
  if (n->type == YAML_SCALAR_NODE) {
    const char *t;
    if (nonempty(c, n, "ready", &t)) goto bad;
    long port;
    if (strspn(t, "0123456789") == strlen(t)) { /* ready: 9000 */
      if (integer(c, n, "ready", 1, 65535, &port)) goto bad;
      cJSON_AddNumberToObject(r, "port", (double)port);
    } else {
      cJSON_AddStringToObject(r, "cmd", t);
    }
    return r;
  }
  if (each_pair(c, n, "ready", ready_pair, r)) goto bad;
  int has_port = cJSON_GetObjectItem(r, "port") != NULL,
      has_cmd = cJSON_GetObjectItem(r, "cmd") != NULL;
  if (has_port == has_cmd) {
    fail_at(c, n, "ready", "give either 'port' or 'cmd'");
    goto bad;
  }
  return r;
bad:
  cJSON_Delete(r);
  return NULL;
}

/* ---- custom commands ----------------------------------------------------------- */

typedef struct cmd_ctx {
  cJSON *cmd;
  const char *field;
  yaml_node_t *cmd_node, *args_node;
} cmd_ctx;

static int arg_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *a = ud;
  const char *field = cJSON_GetObjectItem(a, "_field")->valuestring;
  char f[400];
  snprintf(f, sizeof f, "%s.%s", field, key);
  const char *t;
  int b;
  if (!strcmp(key, "name")) {
    if (nonempty(c, v, f, &t)) return -1;
    if (!(isalpha((unsigned char)t[0]) || t[0] == '_') || strlen(t) > 128 ||
        strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != strlen(t))
      return fail_at(c, v, f, "'%.64s' is not a valid argument name ([A-Za-z_][A-Za-z0-9_]*)", t);
    cJSON_ReplaceItemInObject(a, "name", cJSON_CreateString(t));
  } else if (!strcmp(key, "type")) {
    if (scalar(c, v, f, &t)) return -1;
    int ty = asbi_argtype_parse(t);
    if (!ty)
      return fail_at(c, v, f, "unknown type '%.32s' (string, integer, float, boolean, json)", t);
    cJSON_ReplaceItemInObject(a, "type", cJSON_CreateString(asbi_argtype_name(ty)));
  } else if (!strcmp(key, "required")) {
    if (boolean(c, v, f, &b)) return -1;
    cJSON_ReplaceItemInObject(a, "required", cJSON_CreateBool(b));
    cJSON_AddBoolToObject(a, "_required_given", 1);
  } else if (!strcmp(key, "default")) {
    cJSON_AddNumberToObject(a, "_default_line", (double)v->start_mark.line + 1);
    cJSON_AddNumberToObject(a, "_default_col", (double)v->start_mark.column + 1);
    if (is_null(v)) return 0;
    if (v->type != YAML_SCALAR_NODE)
      return fail_at(c, v, f, "expected a scalar default (write JSON defaults as a string)");
    if (scalar(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(a, "default", cJSON_CreateString(t));
  } else if (!strcmp(key, "description")) {
    if (scalar(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(a, "description", cJSON_CreateString(t));
  } else {
    return fail_at(c, k, f, "unknown field (name, type, required, default, description)");
  }
  return 0;
}

static int parse_args(ctx *c, yaml_node_t *n, const char *field, cJSON *args) {
  if (is_null(n)) return 0;
  if (n->type != YAML_SEQUENCE_NODE)
    return fail_at(c, n, field, "expected a list of arguments, got %s", kind_name(n));
  int i = 0;
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
       it++, i++) {
    char f[300];
    snprintf(f, sizeof f, "%s[%d]", field, i);
    yaml_node_t *e = node(c, *it);
    if (!e) return -1;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddItemToArray(args, a);
    cJSON_AddStringToObject(a, "name", "");
    cJSON_AddStringToObject(a, "type", "string");
    cJSON_AddBoolToObject(a, "required", 1);
    cJSON_AddNullToObject(a, "default");
    cJSON_AddStringToObject(a, "description", "");
    if (e->type == YAML_SCALAR_NODE) { /* "- name" */
      cJSON_AddStringToObject(a, "_field", f);
      int rc = arg_pair(c, "name", e, e, a);
      cJSON_DeleteItemFromObject(a, "_field");
      if (rc) return -1;
    } else {
      cJSON_AddStringToObject(a, "_field", f);
      int rc = each_pair(c, e, f, arg_pair, a);
      cJSON_DeleteItemFromObject(a, "_field");
      if (rc) return -1;
    }
    const char *name = cJSON_GetObjectItem(a, "name")->valuestring;
    if (!*name) return fail_at(c, e, f, "'name' is required");
    for (cJSON *o = args->child; o != a; o = o->next)
      if (!strcmp(cJSON_GetObjectItem(o, "name")->valuestring, name))
        return fail_at(c, e, f, "argument '%s' is declared twice", name);
    const cJSON *d = cJSON_GetObjectItem(a, "default");
    int given = cJSON_GetObjectItem(a, "_required_given") != NULL;
    if (cJSON_IsString(d)) {
      if (given && cJSON_IsTrue(cJSON_GetObjectItem(a, "required")))
        return fail_at(c, e, f, "a required argument has no default");
      cJSON_ReplaceItemInObject(a, "required", cJSON_CreateBool(0));
      const char *why = NULL;
      int ty = asbi_argtype_parse(cJSON_GetObjectItem(a, "type")->valuestring);
      cJSON *dv = asbi_arg_from_text(ty, d->valuestring, &why);
      if (!dv) {
        asbi_tmpl_error *err = c->err;
        fail_at(c, e, f, "default '%.64s' is not a valid %s (%s)", d->valuestring,
                asbi_argtype_name(ty), why ? why : "invalid");
        const cJSON *l = cJSON_GetObjectItem(a, "_default_line");
        const cJSON *col = cJSON_GetObjectItem(a, "_default_col");
        if (l && col) {
          err->line = l->valueint;
          err->column = col->valueint;
          snprintf(err->field, sizeof err->field, "%.240s.default", f);
        }
        return -1;
      }
      cJSON_Delete(dv);
    }
    cJSON_DeleteItemFromObject(a, "_required_given");
    cJSON_DeleteItemFromObject(a, "_default_line");
    cJSON_DeleteItemFromObject(a, "_default_col");
  }
  return 0;
}

static int cmd_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cmd_ctx *cc = ud;
  cJSON *cmd = cc->cmd;
  char f[300];
  snprintf(f, sizeof f, "%s.%s", cc->field, key);
  const char *t;
  long l;
  int b;
  if (!strcmp(key, "cmd") || !strcmp(key, "command")) {
    if (nonempty(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(cmd, "cmd", cJSON_CreateString(t));
    cc->cmd_node = v;
  } else if (!strcmp(key, "description")) {
    if (scalar(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(cmd, "description", cJSON_CreateString(t));
  } else if (!strcmp(key, "cwd") || !strcmp(key, "workdir")) {
    if (abs_path(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(cmd, "cwd", cJSON_CreateString(t));
  } else if (!strcmp(key, "user")) {
    if (scalar(c, v, f, &t)) return -1;
    if (!valid_user(t)) return fail_at(c, v, f, "must be root or user, got '%.32s'", t);
    cJSON_ReplaceItemInObject(cmd, "user", cJSON_CreateString(t));
  } else if (!strcmp(key, "timeout")) {
    if (integer(c, v, f, 1, 86400, &l)) return -1;
    cJSON_ReplaceItemInObject(cmd, "timeout", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "env")) {
    cJSON *env = env_map(c, v, f);
    if (!env) return -1;
    cJSON_ReplaceItemInObject(cmd, "env", env);
  } else if (!strcmp(key, "hidden")) {
    if (boolean(c, v, f, &b)) return -1;
    cJSON_ReplaceItemInObject(cmd, "hidden", cJSON_CreateBool(b));
  } else if (!strcmp(key, "args") || !strcmp(key, "arguments")) {
    cc->args_node = v;
    if (parse_args(c, v, f, cJSON_GetObjectItem(cmd, "args"))) return -1;
  } else {
    return fail_at(c, k, f,
                   "unknown field (cmd, description, cwd, user, timeout, env, "
                   "hidden, args)");
  }
  return 0;
}

typedef struct ph_check {
  ctx *c;
  const cJSON *args;
  yaml_node_t *node;
  const char *field;
} ph_check;

static int check_placeholder(void *ud, const char *name, size_t len) {
  ph_check *p = ud;
  for (const cJSON *a = p->args->child; a; a = a->next) {
    const char *n = cJSON_GetObjectItem(a, "name")->valuestring;
    if (strlen(n) == len && !memcmp(n, name, len)) return 0;
  }
  return fail_at(p->c, p->node, p->field,
                 "placeholder {%.*s} names no declared argument (declare it under args, or "
                 "write {{ }} for literal braces)",
                 (int)(len > 64 ? 64 : len), name);
}

static int custom_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *cmds = ud;
  char f[300];
  snprintf(f, sizeof f, "custom_commands.%.128s", key);
  if (!(isalpha((unsigned char)key[0]) || key[0] == '_') || strlen(key) > 128 ||
      strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
          strlen(key))
    return fail_at(c, k, f,
                   "not a valid command name (letters, digits, _ . -; starting with a "
                   "letter or _)");
  cJSON *cmd = cJSON_CreateObject();
  cJSON_AddItemToArray(cmds, cmd);
  cJSON_AddStringToObject(cmd, "name", key);
  cJSON_AddStringToObject(cmd, "cmd", "");
  cJSON_AddStringToObject(cmd, "description", "");
  cJSON_AddStringToObject(cmd, "cwd", "/home/user");
  cJSON_AddStringToObject(cmd, "user", "user");
  cJSON_AddNumberToObject(cmd, "timeout", DEFAULT_CMD_TIMEOUT_S);
  cJSON_AddItemToObject(cmd, "env", cJSON_CreateObject());
  cJSON_AddBoolToObject(cmd, "hidden", 0);
  cJSON_AddItemToObject(cmd, "args", cJSON_CreateArray());
  cmd_ctx cc = {cmd, f, NULL, NULL};
  if (v->type == YAML_SCALAR_NODE) { /* name: "echo hi" */
    const char *t;
    if (nonempty(c, v, f, &t)) return -1;
    cJSON_ReplaceItemInObject(cmd, "cmd", cJSON_CreateString(t));
    cc.cmd_node = v;
  } else if (each_pair(c, v, f, cmd_pair, &cc)) {
    return -1;
  }
  if (!cc.cmd_node) return fail_at(c, v, f, "'cmd' is required");
  char cf[320];
  snprintf(cf, sizeof cf, "%s.cmd", f);
  ph_check p = {c, cJSON_GetObjectItem(cmd, "args"), cc.cmd_node, cf};
  if (asbi_args_placeholders(cJSON_GetObjectItem(cmd, "cmd")->valuestring, check_placeholder, &p))
    return -1;
  return 0;
}

/* ---- resources ------------------------------------------------------------------- */

static int resources_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  spec *s = ud;
  cJSON *res = cJSON_GetObjectItem(s->out, "resources");
  char f[300];
  snprintf(f, sizeof f, "resources.%s", key);
  long l;
  if (!strcmp(key, "cpu") || !strcmp(key, "cpus") || !strcmp(key, "cpu_count")) {
    if (integer(c, v, f, 1, 64, &l)) return -1;
    cJSON_ReplaceItemInObject(res, "cpu", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "memory") || !strcmp(key, "memory_mb")) {
    if (size_mib(c, v, f, 64, 1 << 20, &l)) return -1;
    cJSON_ReplaceItemInObject(res, "memoryMB", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "disk") || !strcmp(key, "disk_mb")) {
    if (size_mib(c, v, f, 64, 1 << 20, &l)) return -1;
    cJSON_ReplaceItemInObject(res, "diskMB", cJSON_CreateNumber((double)l));
  } else {
    return fail_at(c, k, f, "unknown field (cpu, memory, disk)");
  }
  return 0;
}

/* pool: {size: N} -- the engine's warm pool for this template (docs/engine.md,
 * "Warm pools"): N sandboxes kept made ahead of time, 0..1000. */
static int pool_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  cJSON *pool = ud;
  char f[300];
  snprintf(f, sizeof f, "pool.%s", key);
  long l;
  if (!strcmp(key, "size")) {
    if (integer(c, v, f, 0, 1000, &l)) return -1;
    cJSON_ReplaceItemInObject(pool, "size", cJSON_CreateNumber((double)l));
    return 0;
  }
  return fail_at(c, k, f, "unknown field (size)");
}

/* ---- the top level ----------------------------------------------------------------- */

static const char *const TOP_KEYS =
    "name, version, description, author, license, tags, base, env, ports, resources, "
    "capabilities, network, steps, agents, start, ready, commands_port, custom_commands, pool (and "
    "the "
    "aliases "
    "system_packages, python_packages, node_packages, commands, copy_files, start_cmd, "
    "ready_cmd, cpu_count, memory_mb, disk_mb)";

/* network: the build sandbox's network (docs/templates.md), E2B's shape:
 * allowInternetAccess, allowOut (CIDR, IP; domains once the egress proxy
 * is there), denyOut. The engine checks the entries (core/net/policy.c). */
static int network_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  spec *s = ud;
  cJSON *net = cJSON_GetObjectItem(s->out, "network");
  if (!net) net = cJSON_AddObjectToObject(s->out, "network");
  char f[300];
  snprintf(f, sizeof f, "network.%s", key);
  if (!strcmp(key, "allowInternetAccess") || !strcmp(key, "allow_internet_access")) {
    int b;
    if (boolean(c, v, f, &b)) return -1;
    cJSON_DeleteItemFromObject(net, "allowInternetAccess");
    cJSON_AddBoolToObject(net, "allowInternetAccess", b);
  } else if (!strcmp(key, "allowOut") || !strcmp(key, "denyOut") || !strcmp(key, "allow_out") ||
             !strcmp(key, "deny_out")) {
    cJSON *l = string_list(c, v, f, 0);
    if (!l) return -1;
    const char *name = key[0] == 'a' ? "allowOut" : "denyOut";
    cJSON_DeleteItemFromObject(net, name);
    cJSON_AddItemToObject(net, name, l);
  } else {
    return fail_at(c, k, f, "unknown field (allowInternetAccess, allowOut, denyOut)");
  }
  return 0;
}

static int top_pair(ctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *ud) {
  spec *s = ud;
  cJSON *o = s->out;
  const char *t;
  long l;
  if (!strcmp(key, "name")) {
    if (nonempty(c, v, key, &t)) return -1;
    if (!valid_template_name(t))
      return fail_at(c, v, key,
                     "'%.64s' is not a valid template name (1..63 of a-z 0-9 . _ -, "
                     "starting with a letter or digit)",
                     t);
    if (!strcmp(t, "base") || !strcmp(t, "busybox"))
      return fail_at(c, v, key, "'%s' is the name of a built-in template", t);
    cJSON_ReplaceItemInObject(o, "name", cJSON_CreateString(t));
    s->name_node = v;
  } else if (!strcmp(key, "version") || !strcmp(key, "description") || !strcmp(key, "author") ||
             !strcmp(key, "license")) {
    if (is_null(v)) return 0;
    if (scalar(c, v, key, &t)) return -1;
    cJSON_ReplaceItemInObject(o, key, cJSON_CreateString(t));
  } else if (!strcmp(key, "tags")) {
    cJSON *tags = string_list(c, v, key, 0);
    if (!tags) return -1;
    cJSON_ReplaceItemInObject(o, "tags", tags);
  } else if (!strcmp(key, "base") || !strcmp(key, "from")) {
    if (nonempty(c, v, key, &t)) return -1;
    cJSON_ReplaceItemInObject(o, "base", cJSON_CreateString(t));
  } else if (!strcmp(key, "env")) {
    cJSON *env = env_map(c, v, key);
    if (!env) return -1;
    cJSON_ReplaceItemInObject(o, "env", env);
  } else if (!strcmp(key, "ports")) {
    cJSON *ports = cJSON_CreateArray();
    cJSON_ReplaceItemInObject(o, "ports", ports);
    if (is_null(v)) return 0;
    if (v->type == YAML_SCALAR_NODE) {
      if (integer(c, v, key, 1, 65535, &l)) return -1;
      cJSON_AddItemToArray(ports, cJSON_CreateNumber((double)l));
      return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE)
      return fail_at(c, v, key, "expected a list of ports, got %s", kind_name(v));
    int i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, i++) {
      char f[64];
      snprintf(f, sizeof f, "ports[%d]", i);
      yaml_node_t *e = node(c, *it);
      if (!e || integer(c, e, f, 1, 65535, &l)) return -1;
      cJSON_AddItemToArray(ports, cJSON_CreateNumber((double)l));
    }
  } else if (!strcmp(key, "resources")) {
    if (is_null(v)) return 0;
    return each_pair(c, v, key, resources_pair, s);
  } else if (!strcmp(key, "network")) {
    if (is_null(v)) return 0;
    return each_pair(c, v, key, network_pair, s);
  } else if (!strcmp(key, "cpu_count")) {
    if (integer(c, v, key, 1, 64, &l)) return -1;
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "resources"), "cpu",
                              cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "memory_mb") || !strcmp(key, "disk_mb")) {
    if (size_mib(c, v, key, 64, 1 << 20, &l)) return -1;
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "resources"),
                              key[0] == 'm' ? "memoryMB" : "diskMB", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "capabilities")) {
    cJSON *caps = string_list(c, v, key, 0);
    if (!caps) return -1;
    static const char *const known[] = {"shell", "files", "code", "terminal", "ports", "commands"};
    const cJSON *cap;
    cJSON_ArrayForEach(cap, caps) {
      size_t i = 0;
      while (i < ASBI_ARRAY_LEN(known) && strcmp(known[i], cap->valuestring)) i++;
      if (i == ASBI_ARRAY_LEN(known)) {
        fail_at(c, v, key,
                "unknown capability '%.32s' (shell, files, code, terminal, ports, "
                "commands)",
                cap->valuestring);
        cJSON_Delete(caps);
        return -1;
      }
    }
    cJSON_ReplaceItemInObject(o, "capabilities", caps);
  } else if (!strcmp(key, "steps") || !strcmp(key, "build")) {
    return parse_steps(c, v, key, s->steps);
  } else if (!strcmp(key, "commands")) { /* compat: shell commands run at build */
    cJSON *runs = string_list(c, v, key, 0);
    if (!runs) return -1;
    const cJSON *r;
    cJSON_ArrayForEach(r, runs) {
      cJSON *st = new_step("run", (long)v->start_mark.line + 1);
      cJSON_AddStringToObject(st, "cmd", r->valuestring);
      cJSON_AddItemToArray(s->compat_run, st);
    }
    cJSON_Delete(runs);
  } else if (!strcmp(key, "agents")) {
    /* coding-agent CLIs to have at build time: a run step that finds each
     * in the template's prefix or the host-wide one the base shows (then it
     * is checked and skipped, as apt steps are), else installs it with npm
     * into the template's prefix (which needs a registry the build sandbox
     * reaches: build steps have no network here) */
    cJSON *names = string_list(c, v, key, 1);
    if (!names) return -1;
    asbi_buf sh = ASBI_BUF_INIT;
    asbi_buf_puts(
        &sh,
        "set -e\n"
        "asb_agent() {\n"
        "  for p in " ASBI_AGENTS_TEMPLATE_PREFIX " " ASBI_AGENTS_HOST_PREFIX
        "; do\n"
        "    if [ -x \"$p/bin/$3\" ]; then\n"
        "      v=$(sed -n 's/^ *\"version\": *\"\\([^\"]*\\)\".*/\\1/p' "
        "\"$p/lib/node_modules/$2/package.json\" 2>/dev/null | head -n 1)\n"
        "      echo \"agent $1: $2 ${v:-(version unknown)} at $p/bin/$3: present, skipped\"\n"
        "      return 0\n"
        "    fi\n"
        "  done\n"
        "  echo \"agent $1: npm install -g --prefix " ASBI_AGENTS_TEMPLATE_PREFIX
        " $2\"\n"
        "  if ! npm install -g --prefix " ASBI_AGENTS_TEMPLATE_PREFIX
        " --no-audit --no-fund --no-update-notifier \"$2\"; then\n"
        "    echo \"agent $1: cannot preinstall $2: npm install failed (build steps have no "
        "network here: install it on the host into " ASBI_AGENTS_HOST_PREFIX
        ", e.g. with scripts/agents-cache.sh, or set npm_config_registry in env to a registry "
        "the build sandbox reaches)\" >&2\n"
        "    return 1\n"
        "  fi\n"
        "}\n");
    const cJSON *n;
    int i = 0, bad = 0;
    cJSON_ArrayForEach(n, names) {
      const char *pkg = NULL, *cmd = NULL;
#define ASBI_AGENT_MATCH(nm, pk, cm)         \
  if (!pkg && !strcmp(n->valuestring, nm)) { \
    pkg = pk;                                \
    cmd = cm;                                \
  }
      ASBI_AGENTS(ASBI_AGENT_MATCH)
#undef ASBI_AGENT_MATCH
      if (!pkg) {
        char f[64];
        snprintf(f, sizeof f, "agents[%d]", i);
        fail_at(c, v, f, "unknown agent '%.64s' (codex, qwen, claude, opencode)", n->valuestring);
        bad = 1;
        break;
      }
      asbi_buf_printf(&sh, "asb_agent %s %s %s\n", n->valuestring, pkg, cmd);
      i++;
    }
    cJSON_Delete(names);
    if (bad || !sh.data) {
      asbi_buf_free(&sh);
      return -1;
    }
    if (i) {
      cJSON *st = new_step("run", (long)v->start_mark.line + 1);
      cJSON_AddStringToObject(st, "cmd", sh.data);
      cJSON_AddItemToArray(s->compat_run, st);
    }
    asbi_buf_free(&sh);
  } else if (!strcmp(key, "system_packages") || !strcmp(key, "python_packages") ||
             !strcmp(key, "node_packages")) {
    const char *kind = key[0] == 's' ? "apt" : key[0] == 'p' ? "pip" : "npm";
    cJSON *pk = string_list(c, v, key, 1);
    if (!pk) return -1;
    const cJSON *p;
    cJSON_ArrayForEach(p, pk) {
      if (p->valuestring[0] == '-' || strpbrk(p->valuestring, "'\"`$;&|<>\\")) {
        fail_at(c, v, key, "'%.64s' is not a package name", p->valuestring);
        cJSON_Delete(pk);
        return -1;
      }
    }
    if (!cJSON_GetArraySize(pk)) {
      cJSON_Delete(pk);
      return 0;
    }
    cJSON *st = new_step(kind, (long)v->start_mark.line + 1);
    cJSON_AddItemToObject(st, "packages", pk);
    cJSON *dst = kind[0] == 'a' ? s->compat_apt : kind[0] == 'p' ? s->compat_pip : s->compat_npm;
    cJSON_AddItemToArray(dst, st);
  } else if (!strcmp(key, "copy_files")) {
    if (is_null(v)) return 0;
    if (v->type != YAML_SEQUENCE_NODE) return fail_at(c, v, key, "expected a list of {src, dest}");
    int i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++, i++) {
      char f[64];
      snprintf(f, sizeof f, "copy_files[%d]", i);
      yaml_node_t *e = node(c, *it);
      if (!e) return -1;
      cJSON *st = new_step("copy", (long)e->start_mark.line + 1);
      cJSON_AddItemToArray(s->compat_copy, st);
      if (copy_spec(c, st, e, f)) return -1;
    }
  } else if (!strcmp(key, "start") || !strcmp(key, "start_cmd") || !strcmp(key, "start_command")) {
    if (s->start_node) return fail_at(c, k, key, "the start command is given twice");
    s->start_node = v;
    if (is_null(v)) return 0;
    cJSON *st = parse_start(c, v);
    if (!st) return -1;
    cJSON_ReplaceItemInObject(o, "start", st);
  } else if (!strcmp(key, "ready") || !strcmp(key, "ready_cmd") || !strcmp(key, "ready_check")) {
    if (s->ready_node) return fail_at(c, k, key, "the ready check is given twice");
    s->ready_node = v;
    if (is_null(v)) return 0;
    cJSON *r = parse_ready(c, v);
    if (!r) return -1;
    cJSON_ReplaceItemInObject(o, "ready", r);
  } else if (!strcmp(key, "commands_port")) {
    if (integer(c, v, key, 1, 65535, &l)) return -1;
    cJSON_ReplaceItemInObject(o, "commandsPort", cJSON_CreateNumber((double)l));
  } else if (!strcmp(key, "custom_commands")) {
    if (is_null(v)) return 0;
    return each_pair(c, v, key, custom_pair, cJSON_GetObjectItem(o, "commands"));
  } else if (!strcmp(key, "pool")) {
    if (is_null(v)) return 0;
    cJSON *pool = cJSON_GetObjectItem(o, "pool");
    if (!pool) {
      pool = cJSON_AddObjectToObject(o, "pool");
      if (!pool || !cJSON_AddNumberToObject(pool, "size", 0))
        return fail_at(c, v, key, "out of memory");
    }
    return each_pair(c, v, key, pool_pair, pool);
  } else {
    return fail_at(c, k, key, "unknown field; the fields are %s", TOP_KEYS);
  }
  return 0;
}

static cJSON *skeleton(void) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "name", "");
  cJSON_AddStringToObject(o, "version", "");
  cJSON_AddStringToObject(o, "description", "");
  cJSON_AddStringToObject(o, "author", "");
  cJSON_AddStringToObject(o, "license", "");
  cJSON_AddItemToObject(o, "tags", cJSON_CreateArray());
  cJSON_AddStringToObject(o, "base", "base");
  cJSON_AddItemToObject(o, "env", cJSON_CreateObject());
  cJSON_AddItemToObject(o, "ports", cJSON_CreateArray());
  cJSON *res = cJSON_AddObjectToObject(o, "resources");
  cJSON_AddNumberToObject(res, "cpu", DEFAULT_CPU);
  cJSON_AddNumberToObject(res, "memoryMB", DEFAULT_MEMORY_MB);
  cJSON_AddNumberToObject(res, "diskMB", DEFAULT_DISK_MB);
  cJSON *caps = cJSON_AddArrayToObject(o, "capabilities");
  cJSON_AddItemToArray(caps, cJSON_CreateString("shell"));
  cJSON_AddItemToArray(caps, cJSON_CreateString("files"));
  cJSON_AddItemToArray(caps, cJSON_CreateString("code"));
  cJSON_AddItemToObject(o, "steps", cJSON_CreateArray());
  cJSON_AddNullToObject(o, "start");
  cJSON_AddNullToObject(o, "ready");
  cJSON_AddNumberToObject(o, "commandsPort", DEFAULT_COMMANDS_PORT);
  cJSON_AddItemToObject(o, "commands", cJSON_CreateArray());
  return o;
}

static void move_all(cJSON *from, cJSON *to) {
  while (from && from->child)
    cJSON_AddItemToArray(to, cJSON_DetachItemViaPointer(from, from->child));
}

cJSON *asbi_tmpl_parse(const char *text_in, size_t len, asbi_tmpl_error *err) {
  memset(err, 0, sizeof *err);
  if (len > ASBI_TMPL_MAX_BYTES) {
    snprintf(err->message, sizeof err->message, "the file is over %u bytes", ASBI_TMPL_MAX_BYTES);
    return NULL;
  }
  if (!asbi_utf8_valid(text_in, len)) {
    snprintf(err->message, sizeof err->message, "the file is not valid UTF-8");
    return NULL;
  }
  if (depth_check(text_in, len, err)) return NULL;
  yaml_parser_t p;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&p)) {
    snprintf(err->message, sizeof err->message, "out of memory");
    return NULL;
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text_in, len);
  if (!yaml_parser_load(&p, &doc)) {
    err->line = (int)p.problem_mark.line + 1;
    err->column = (int)p.problem_mark.column + 1;
    snprintf(err->message, sizeof err->message, "YAML syntax: %s%s%s",
             p.problem ? p.problem : "invalid", p.context ? " " : "", p.context ? p.context : "");
    yaml_parser_delete(&p);
    return NULL;
  }
  ctx c = {&doc, err, 0, 0};
  spec s;
  memset(&s, 0, sizeof s);
  cJSON *out = NULL;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root || is_null(root)) {
    snprintf(err->message, sizeof err->message, "the file is empty (name is required)");
    goto done;
  }
  /* exactly one document */
  {
    yaml_document_t more;
    if (!yaml_parser_load(&p, &more)) {
      err->line = (int)p.problem_mark.line + 1;
      err->column = (int)p.problem_mark.column + 1;
      snprintf(err->message, sizeof err->message, "YAML syntax: %s",
               p.problem ? p.problem : "invalid");
      goto done;
    }
    yaml_node_t *r2 = yaml_document_get_root_node(&more);
    if (r2) {
      fail_at(&c, r2, NULL, "only one YAML document is allowed");
      yaml_document_delete(&more);
      goto done;
    }
    yaml_document_delete(&more);
  }
  s.out = skeleton();
  s.steps = cJSON_CreateArray();
  s.compat_copy = cJSON_CreateArray();
  s.compat_apt = cJSON_CreateArray();
  s.compat_pip = cJSON_CreateArray();
  s.compat_npm = cJSON_CreateArray();
  s.compat_run = cJSON_CreateArray();
  if (!s.out || !s.steps || !s.compat_copy || !s.compat_apt || !s.compat_pip || !s.compat_npm ||
      !s.compat_run) {
    snprintf(err->message, sizeof err->message, "out of memory");
    goto done;
  }
  if (root->type != YAML_MAPPING_NODE) {
    fail_at(&c, root, NULL, "the top level must be a mapping of fields, got %s", kind_name(root));
    goto done;
  }
  if (each_pair(&c, root, "", top_pair, &s)) goto done;
  if (!*cJSON_GetObjectItem(s.out, "name")->valuestring) {
    fail_at(&c, root, "name", "is required");
    goto done;
  }
  {
    cJSON *steps = cJSON_GetObjectItem(s.out, "steps");
    move_all(s.compat_copy, steps);
    move_all(s.compat_apt, steps);
    move_all(s.compat_pip, steps);
    move_all(s.compat_npm, steps);
    move_all(s.compat_run, steps);
    move_all(s.steps, steps);
  }
  out = s.out;
  s.out = NULL;
done:
  cJSON_Delete(s.out);
  cJSON_Delete(s.steps);
  cJSON_Delete(s.compat_copy);
  cJSON_Delete(s.compat_apt);
  cJSON_Delete(s.compat_pip);
  cJSON_Delete(s.compat_npm);
  cJSON_Delete(s.compat_run);
  yaml_document_delete(&doc);
  yaml_parser_delete(&p);
  if (!out && !err->message[0]) snprintf(err->message, sizeof err->message, "invalid template");
  return out;
}
