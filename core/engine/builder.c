/* E2B's Template builder onto our build engine (builder.h).
 *
 * E2B's SDKs send the template as a list of Dockerfile-like steps (RUN,
 * COPY, ENV, WORKDIR, USER; makeDir/makeSymlink/remove/rename arrive as
 * RUN) plus fromTemplate/fromImage, startCmd and readyCmd. We keep one
 * build engine: the steps become a template.yaml (written as JSON, which
 * YAML reads) whose `run` steps carry E2B's semantics: each step runs as
 * the current USER in the current WORKDIR with the ENV set so far; COPY
 * copies out of the step's uploaded archive, unpacked by the engine into
 * the build context under files/<filesHash>/; the ENV at the end goes into
 * /etc/profile.d so the sandbox's login shells (envd's commands) have it,
 * and into the start command's env. template.yaml's own parser then
 * validates the result like any template.yaml.
 * SPDX-License-Identifier: Apache-2.0 */
#include "builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "proto/tar.h"
#include "util/util.h"

#define CTX "/.asb-build/ctx/" BUILDER_FILES_DIR "/"

void builder_plan_free(builder_plan *p) {
  if (!p) return;
  free(p->yaml);
  for (size_t i = 0; i < p->nhashes; i++) free(p->hashes[i]);
  free(p->hashes);
  free(p->step_of);
  for (size_t i = 0; p->step_label && i < p->nsteps; i++) free(p->step_label[i]);
  free(p->step_label);
  memset(p, 0, sizeof *p);
}

int builder_hash_ok(const char *s) {
  size_t n = 0;
  for (; s && s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
  return n == 64;
}

static int emit(const cJSON *v, asbi_buf *b);
/* The accounts of our templates: root and user (uid 1000). */
static const char *owner_of(const char *user) {
  if (!strcmp(user, "root")) return "0:0";
  if (!strcmp(user, "user")) return "1000:1000";
  return NULL;
}

/* path made absolute against dir, "." and ".." resolved lexically. 0, or
 * -1 when too long. */
static int abs_path(const char *dir, const char *path, char *out, size_t len) {
  char tmp[4096];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s", path[0] == '/' ? "" : dir, path) >= sizeof tmp)
    return -1;
  size_t o = 0;
  out[0] = '\0';
  char *save = NULL;
  for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, ".")) continue;
    if (!strcmp(c, "..")) {
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
      out[o] = '\0';
      continue;
    }
    size_t n = strlen(c);
    if (o + n + 2 >= len) return -1;
    out[o++] = '/';
    memcpy(out + o, c, n);
    o += n;
    out[o] = '\0';
  }
  if (o == 0) snprintf(out, len, "/");
  /* keep a trailing '/' (COPY: "into this directory") */
  size_t pl = strlen(path);
  if (pl && path[pl - 1] == '/' && strcmp(out, "/") && o + 1 < len) {
    out[o++] = '/';
    out[o] = '\0';
  }
  return 0;
}

static int env_name_ok(const char *s) {
  if (!s || !*s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
  for (s++; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

/* COPY out of the unpacked archive, with Docker's rules: a directory's
 * contents go into dest; several sources (a glob) or a dest ending in '/'
 * or an existing directory: into dest; else the file becomes dest. */
static const char COPY_SH[] =
    "set -e\n"
    "cd \"$ctx\"\n"
    "IFS=\n"
    "set -- $src\n"
    "if [ ! -e \"$1\" ] && [ ! -L \"$1\" ]; then\n"
    "  echo \"copy: nothing in the uploaded files matches '$src'\" >&2; exit 1; fi\n"
    "n=$#\n"
    "for f; do\n"
    "  if [ -d \"$f\" ] && [ ! -L \"$f\" ]; then mkdir -p \"$dest\"; cp -a \"$f/.\" \"$dest/\"; "
    "t=\"$dest\"\n"
    "  elif [ \"$n\" -gt 1 ] || [ \"${dest%/}\" != \"$dest\" ] || [ -d \"$dest\" ]; then\n"
    "    mkdir -p \"$dest\"; t=\"${dest%/}/${f##*/}\"; cp -a \"$f\" \"$t\"\n"
    "  else mkdir -p \"$(dirname \"$dest\")\"; cp -a \"$f\" \"$dest\"; t=\"$dest\"; fi\n"
    "  chown -hR \"$owner\" \"$t\"\n"
    "  if [ -n \"$mode\" ] && [ ! -L \"$t\" ]; then chmod \"$mode\" \"$t\"; fi\n"
    "  echo \"copied $f to $t\"\n"
    "done\n";

static const char *arg(const cJSON *args, int i) {
  const cJSON *a = cJSON_GetArrayItem(args, i);
  return cJSON_IsString(a) ? a->valuestring : NULL;
}

typedef struct tr {
  cJSON *steps;
  builder_plan *p;
  char user[16];
  char workdir[4096];
  cJSON *env;
  char label[192]; /* the E2B step being translated (builder_plan.step_label) */
} tr;

/* "TYPE arg arg ..." of an E2B step, the empty optional args left out. */
static void set_label(tr *t, const char *type, const cJSON *args) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, type);
  const cJSON *a;
  cJSON_ArrayForEach(a, args) {
    if (cJSON_IsString(a) && *a->valuestring) asbi_buf_printf(&b, " %s", a->valuestring);
  }
  const char *s = b.data ? b.data : type;
  size_t n = strlen(s), max = sizeof t->label - 1;
  if (n > max)
    snprintf(t->label, sizeof t->label, "%.*s...", (int)max - 3, s);
  else
    snprintf(t->label, sizeof t->label, "%s", s);
  for (char *c = t->label; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
  asbi_buf_free(&b);
}

static int add_step(tr *t, int e2b_step, const char *cmd, const char *user, const char *cwd) {
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "run", cmd);
  cJSON_AddStringToObject(s, "user", user);
  cJSON_AddStringToObject(s, "cwd", cwd);
  cJSON_AddItemToObject(s, "env", cJSON_Duplicate(t->env, 1));
  cJSON_AddItemToArray(t->steps, s);
  int *v = realloc(t->p->step_of, (t->p->nsteps + 1) * sizeof *v);
  if (!v) return -1;
  t->p->step_of = v;
  char **l = realloc(t->p->step_label, (t->p->nsteps + 1) * sizeof *l);
  if (!l) return -1;
  t->p->step_label = l;
  if (!(l[t->p->nsteps] = asbi_strdup(t->label))) return -1;
  v[t->p->nsteps++] = e2b_step;
  return 0;
}

static int add_hash(builder_plan *p, const char *h) {
  for (size_t i = 0; i < p->nhashes; i++)
    if (!strcmp(p->hashes[i], h)) return 0;
  char **v = realloc(p->hashes, (p->nhashes + 1) * sizeof *v);
  if (!v) return -1;
  p->hashes = v;
  if (!(v[p->nhashes] = asbi_strdup(h))) return -1;
  p->nhashes++;
  return 0;
}

static int translate_step(tr *t, int idx, const cJSON *st, char *err, size_t errlen) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(st, "type");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(st, "args");
  const cJSON *force = cJSON_GetObjectItemCaseSensitive(st, "force");
  int n = idx + 1; /* E2B counts the base as step 0 */
  if (!cJSON_IsObject(st) || !cJSON_IsString(type))
    return asbi_errf(err, errlen, "steps[%d]: a step is an object with a string \"type\"", idx);
  if (args && !cJSON_IsArray(args))
    return asbi_errf(err, errlen, "steps[%d].args: expected a list of strings", idx);
  const cJSON *a;
  cJSON_ArrayForEach(a, args) {
    if (!cJSON_IsString(a))
      return asbi_errf(err, errlen, "steps[%d].args: expected a list of strings", idx);
  }
  if (cJSON_IsTrue(force)) t->p->force = 1;
  int na = cJSON_GetArraySize(args);
  const char *ty = type->valuestring;
  set_label(t, ty, args);
  asbi_buf cmd = ASBI_BUF_INIT;
  int rc = 0;
  if (!strcmp(ty, "RUN")) {
    const char *c = arg(args, 0), *u = na > 1 && arg(args, 1)[0] ? arg(args, 1) : t->user;
    if (!c || !*c || na > 2)
      return asbi_errf(err, errlen,
                       "steps[%d] (RUN): args are [command, user?], the command not empty", idx);
    if (!owner_of(u))
      return asbi_errf(
          err, errlen,
          "steps[%d] (RUN): unknown user '%s' (the local templates have root and user)", idx, u);
    rc = add_step(t, n, c, u, t->workdir);
  } else if (!strcmp(ty, "USER")) {
    const char *u = arg(args, 0);
    if (!u || na != 1) return asbi_errf(err, errlen, "steps[%d] (USER): args are [user]", idx);
    if (!owner_of(u))
      return asbi_errf(
          err, errlen,
          "steps[%d] (USER): unknown user '%s' (the local templates have root and user)", idx, u);
    snprintf(t->user, sizeof t->user, "%s", u);
  } else if (!strcmp(ty, "WORKDIR")) {
    const char *d = arg(args, 0);
    char abs[4096];
    if (!d || !*d || na != 1)
      return asbi_errf(err, errlen, "steps[%d] (WORKDIR): args are [path]", idx);
    if (abs_path(t->workdir, d, abs, sizeof abs))
      return asbi_errf(err, errlen, "steps[%d] (WORKDIR): path too long", idx);
    size_t l = strlen(abs);
    if (l > 1 && abs[l - 1] == '/') abs[l - 1] = '\0';
    /* made if missing, owned by the current user (as E2B's WORKDIR) */
    asbi_buf_puts(&cmd, "d=");
    asbi_buf_sh_quote(&cmd, abs);
    asbi_buf_printf(&cmd, "; [ -d \"$d\" ] || { mkdir -p \"$d\" && chown %s \"$d\"; }",
                    owner_of(t->user));
    rc = add_step(t, n, cmd.data, "root", "/");
    snprintf(t->workdir, sizeof t->workdir, "%s", abs);
  } else if (!strcmp(ty, "ENV")) {
    if (na == 0 || na % 2)
      return asbi_errf(err, errlen, "steps[%d] (ENV): args are [name, value, name, value, ...]",
                       idx);
    for (int i = 0; i < na; i += 2) {
      const char *k = arg(args, i), *v = arg(args, i + 1);
      if (!env_name_ok(k))
        return asbi_errf(err, errlen,
                         "steps[%d] (ENV): '%s' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)",
                         idx, k);
      cJSON_DeleteItemFromObjectCaseSensitive(t->env, k);
      cJSON_AddStringToObject(t->env, k, v);
    }
  } else if (!strcmp(ty, "COPY")) {
    const char *src = arg(args, 0), *dest = arg(args, 1);
    const char *u = na > 2 && arg(args, 2)[0] ? arg(args, 2) : t->user;
    const char *mode = na > 3 ? arg(args, 3) : "";
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(st, "filesHash");
    if (!src || !dest || !*src || !*dest || na > 4)
      return asbi_errf(err, errlen, "steps[%d] (COPY): args are [src, dest, user?, mode?]", idx);
    if (!cJSON_IsString(h) || !builder_hash_ok(h->valuestring))
      return asbi_errf(
          err, errlen,
          "steps[%d] (COPY): filesHash must be the 64 hex digits of the uploaded files", idx);
    if (src[0] == '/' || !strcmp(src, "..") || !strncmp(src, "../", 3) || strstr(src, "/../") ||
        (strlen(src) >= 3 && !strcmp(src + strlen(src) - 3, "/..")))
      return asbi_errf(err, errlen, "steps[%d] (COPY): src '%s' must be relative, without '..'",
                       idx, src);
    if (!owner_of(u))
      return asbi_errf(
          err, errlen,
          "steps[%d] (COPY): unknown user '%s' (the local templates have root and user)", idx, u);
    for (const char *m = mode; *m; m++)
      if (*m < '0' || *m > '7' || strlen(mode) > 4)
        return asbi_errf(err, errlen, "steps[%d] (COPY): mode '%s' is not octal like 0644", idx,
                         mode);
    char abs[4096], ctx[200];
    if (abs_path(t->workdir, dest, abs, sizeof abs))
      return asbi_errf(err, errlen, "steps[%d] (COPY): dest too long", idx);
    snprintf(ctx, sizeof ctx, CTX "%s", h->valuestring);
    asbi_buf_puts(&cmd, "src=");
    asbi_buf_sh_quote(&cmd, src);
    asbi_buf_puts(&cmd, " dest=");
    asbi_buf_sh_quote(&cmd, abs);
    asbi_buf_printf(&cmd, " owner=%s mode=", owner_of(u));
    asbi_buf_sh_quote(&cmd, mode);
    asbi_buf_puts(&cmd, " ctx=");
    asbi_buf_sh_quote(&cmd, ctx);
    asbi_buf_puts(&cmd, "\n");
    asbi_buf_puts(&cmd, COPY_SH);
    rc = add_hash(t->p, h->valuestring);
    if (!rc) rc = add_step(t, n, cmd.data, "root", "/");
  } else {
    asbi_buf_free(&cmd);
    return asbi_errf(err, errlen,
                     "steps[%d]: unknown step type '%s' (known: RUN, COPY, ENV, WORKDIR, USER)",
                     idx, ty);
  }
  asbi_buf_free(&cmd);
  return rc ? asbi_errf(err, errlen, "out of memory") : 0;
}

int builder_translate(const cJSON *body, const char *name, int cpu, int memory_mb, builder_plan *p,
                      char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (!cJSON_IsObject(body)) return asbi_errf(err, errlen, "the body must be a JSON object");
  const cJSON *img = cJSON_GetObjectItemCaseSensitive(body, "fromImage");
  const cJSON *from = cJSON_GetObjectItemCaseSensitive(body, "fromTemplate");
  const cJSON *reg = cJSON_GetObjectItemCaseSensitive(body, "fromImageRegistry");
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(body, "steps");
  const cJSON *start = cJSON_GetObjectItemCaseSensitive(body, "startCmd");
  const cJSON *ready = cJSON_GetObjectItemCaseSensitive(body, "readyCmd");
  const cJSON *force = cJSON_GetObjectItemCaseSensitive(body, "force");
  /* fromImage names a local image (image.c: an OCI layout or a docker
   * save tarball on the engine's host) or a registry image, refused */
  int local = cJSON_IsString(img) && (!strncmp(img->valuestring, "oci:", 4) ||
                                      !strncmp(img->valuestring, "docker-archive:", 15));
  if ((img && !cJSON_IsNull(img) && !local) || (reg && !cJSON_IsNull(reg)))
    return asbi_errf(
        err, errlen,
        "fromImage '%s': this engine reaches no container registry (sandboxes and builds "
        "are loopback-only); use a local image on the engine's host, an OCI image layout "
        "(oci:/dir[:name]) or a docker save tarball (docker-archive:/file.tar[:repo:tag]), "
        "or build from one of its templates with fromTemplate (base, code-interpreter-v1, "
        "busybox or one built before)",
        cJSON_IsString(img) ? img->valuestring : "");
  if (local) from = img;
  if (!cJSON_IsString(from) || !*from->valuestring)
    return asbi_errf(err, errlen,
                     "fromTemplate is required (base, code-interpreter-v1, busybox or a "
                     "template built before)");
  if (steps && !cJSON_IsNull(steps) && !cJSON_IsArray(steps))
    return asbi_errf(err, errlen, "steps: expected a list");
  if ((start && !cJSON_IsNull(start) && !cJSON_IsString(start)) ||
      (ready && !cJSON_IsNull(ready) && !cJSON_IsString(ready)))
    return asbi_errf(err, errlen, "startCmd and readyCmd are strings");
  p->force = cJSON_IsTrue(force);
  tr t;
  memset(&t, 0, sizeof t);
  t.p = p;
  snprintf(t.user, sizeof t.user, "user");
  snprintf(t.workdir, sizeof t.workdir, "/home/user");
  t.env = cJSON_CreateObject();
  t.steps = cJSON_CreateArray();
  int rc = t.env && t.steps ? 0 : asbi_errf(err, errlen, "out of memory");
  int i = 0;
  const cJSON *st;
  cJSON_ArrayForEach(st, steps) {
    if (rc) break;
    rc = translate_step(&t, i++, st, err, errlen);
  }
  /* the ENV for the sandbox's login shells */
  if (!rc && cJSON_GetArraySize(t.env) > 0) {
    asbi_buf lines = ASBI_BUF_INIT, cmd = ASBI_BUF_INIT;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, t.env) {
      asbi_buf_printf(&lines, "export %s=", kv->string);
      asbi_buf_sh_quote(&lines, kv->valuestring);
      asbi_buf_putc(&lines, '\n');
    }
    asbi_buf_puts(&cmd, "mkdir -p /etc/profile.d && printf '%s' ");
    asbi_buf_sh_quote(&cmd, lines.data);
    asbi_buf_puts(&cmd, " > /etc/profile.d/e2b-template-env.sh");
    snprintf(t.label, sizeof t.label, "ENV (the variables for the sandboxes' shells)");
    rc = add_step(&t, i + 1, cmd.data, "root", "/") ? asbi_errf(err, errlen, "out of memory") : 0;
    asbi_buf_free(&lines);
    asbi_buf_free(&cmd);
  }
  if (rc) {
    cJSON_Delete(t.env);
    cJSON_Delete(t.steps);
    builder_plan_free(p);
    return -1;
  }
  cJSON *y = cJSON_CreateObject();
  cJSON_AddStringToObject(y, "name", name);
  cJSON_AddStringToObject(y, "description", "built with E2B's Template builder");
  cJSON_AddStringToObject(y, "base", from->valuestring);
  cJSON *res = cJSON_AddObjectToObject(y, "resources");
  cJSON_AddNumberToObject(res, "cpu", cpu);
  cJSON_AddNumberToObject(res, "memory", memory_mb);
  cJSON_AddItemToObject(y, "steps", t.steps);
  if (cJSON_IsString(start) && *start->valuestring) {
    cJSON *s = cJSON_AddObjectToObject(y, "start");
    cJSON_AddStringToObject(s, "cmd", start->valuestring);
    cJSON_AddStringToObject(s, "user", t.user);
    cJSON_AddStringToObject(s, "cwd", t.workdir);
    cJSON_AddItemToObject(s, "env", cJSON_Duplicate(t.env, 1));
  }
  /* alone too (setReadyCmd without setStartCmd): E2B loops it before its
   * snapshot; here each sandbox's create waits for it (tstart.c) */
  if (cJSON_IsString(ready) && *ready->valuestring) {
    cJSON *r = cJSON_AddObjectToObject(y, "ready");
    cJSON_AddStringToObject(r, "cmd", ready->valuestring);
  }
  cJSON_Delete(t.env);
  asbi_buf text = ASBI_BUF_INIT;
  if (emit(y, &text) || !text.data) {
    asbi_buf_free(&text);
    cJSON_Delete(y);
    builder_plan_free(p);
    return asbi_errf(err, errlen, "the body's strings must be valid UTF-8");
  }
  cJSON_Delete(y);
  p->yaml = asbi_buf_detach(&text, NULL);
  return 0;
}

/* ---- template.yaml text ------------------------------------------------------------ */

/* v as YAML flow text: mappings, lists, numbers and double-quoted strings
 * with every character YAML might not take as is (controls, DEL, all of
 * non-ASCII) escaped (\xXX, \uXXXX, \UXXXXXXXX), so any string the SDK
 * sent reads back the same. -1 if a string is not valid UTF-8. Not
 * cJSON_Print: JSON leaves DEL and C1 controls raw, which YAML refuses. */
static int emit(const cJSON *v, asbi_buf *b) {
  if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
    int obj = cJSON_IsObject(v), first = 1;
    asbi_buf_putc(b, obj ? '{' : '[');
    const cJSON *c;
    cJSON_ArrayForEach(c, v) {
      if (!first) asbi_buf_puts(b, ", ");
      first = 0;
      if (obj) {
        cJSON k;
        memset(&k, 0, sizeof k);
        k.type = cJSON_String;
        k.valuestring = c->string;
        if (emit(&k, b)) return -1;
        asbi_buf_puts(b, ": ");
      }
      if (emit(c, b)) return -1;
    }
    asbi_buf_putc(b, obj ? '}' : ']');
    return 0;
  }
  if (cJSON_IsNumber(v)) return asbi_buf_printf(b, "%d", v->valueint) < 0 ? -1 : 0;
  if (cJSON_IsBool(v)) return asbi_buf_puts(b, cJSON_IsTrue(v) ? "true" : "false") < 0 ? -1 : 0;
  if (!cJSON_IsString(v)) return asbi_buf_puts(b, "null") < 0 ? -1 : 0;
  const unsigned char *s = (const unsigned char *)v->valuestring;
  size_t n = strlen(v->valuestring);
  if (!asbi_utf8_valid((const char *)s, n)) return -1;
  asbi_buf_putc(b, '"');
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (c == '"' || c == '\\') {
      asbi_buf_putc(b, '\\');
      asbi_buf_putc(b, (char)c);
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      asbi_buf_printf(b, "\\x%02x", c);
      i++;
    } else if (c < 0x80) {
      asbi_buf_putc(b, (char)c);
      i++;
    } else {
      size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      unsigned cp = c & (k == 4 ? 0x07 : k == 3 ? 0x0f : 0x1f);
      for (size_t j = 1; j < k; j++) cp = (cp << 6) | (s[i + j] & 0x3f);
      if (cp > 0xffff)
        asbi_buf_printf(b, "\\U%08x", cp);
      else
        asbi_buf_printf(b, "\\u%04x", cp);
      i += k;
    }
  }
  asbi_buf_putc(b, '"');
  return 0;
}

/* ---- uploaded archives ------------------------------------------------------------ */

static int gunzip(const unsigned char *in, size_t len, asbi_buf *out, char *err, size_t errlen) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK) return asbi_errf(err, errlen, "cannot start gzip");
  z.next_in = (unsigned char *)in;
  z.avail_in = (uInt)len;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (asbi_buf_reserve(out, 1u << 16)) {
      inflateEnd(&z);
      return asbi_errf(err, errlen, "the archive unpacks to over %u MiB",
                       BUILDER_UNPACKED_MAX >> 20);
    }
    z.next_out = (unsigned char *)out->data + out->len;
    z.avail_out = 1u << 16;
    rc = inflate(&z, Z_NO_FLUSH);
    out->len += (1u << 16) - z.avail_out;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    return asbi_errf(err, errlen, "the gzip stream is %s",
                     rc == Z_BUF_ERROR ? "truncated" : "corrupt");
  return 0;
}

int builder_archive_repack(const void *data, size_t len, const char *prefix, asbi_buf *out,
                           char *err, size_t errlen) {
  const unsigned char *d = data;
  asbi_buf plain;
  asbi_buf_init(&plain, BUILDER_UNPACKED_MAX);
  if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
    if (gunzip(d, len, &plain, err, errlen)) {
      asbi_buf_free(&plain);
      return -1;
    }
    d = (const unsigned char *)plain.data;
    len = plain.len;
  }
  asbi_tar_reader r;
  asbi_tar_reader_init(&r, (const char *)d, len);
  asbi_tar_entry *e = malloc(sizeof *e);
  int rc = e ? 0 : asbi_errf(err, errlen, "out of memory"), k = 0, n = 0;
  while (!rc && (k = asbi_tar_next(&r, e)) > 0) {
    if (!e->name[0]) continue;
    char name[4200];
    snprintf(name, sizeof name, "%s%s", prefix, e->name);
    if (e->type == ASBI_TAR_FILE || e->type == ASBI_TAR_DIR || e->type == ASBI_TAR_SYMLINK) {
      int a =
          asbi_tar_add(out, name, e->type, e->mode & 07777, e->data, (size_t)e->size, e->linkname);
      if (a == -2)
        rc = asbi_errf(err, errlen, "'%.200s': name or link target too long", e->name);
      else if (a)
        rc = asbi_errf(err, errlen, "out of memory");
      n++;
    } else {
      rc = asbi_errf(err, errlen, "'%.200s': only files, directories and symlinks can be copied",
                     e->name);
    }
  }
  if (!rc && k < 0) rc = asbi_errf(err, errlen, "not a tar archive (or gzip'd tar): %s", r.err);
  if (!rc && n == 0) rc = asbi_errf(err, errlen, "the archive is empty");
  free(e);
  asbi_buf_free(&plain);
  return rc;
}
