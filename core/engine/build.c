/* Building templates from template.yaml (docs/templates.md):
 *
 *   POST /templates/builds[?force=true]   body: a tar of the template dir
 *
 * The engine reads template.yaml from the archive, validates it, hashes the
 * inputs (the base's layers, template.yaml, every file: name, type, mode,
 * contents) and, unless a build of the same inputs exists, creates a build
 * sandbox on the base (no agent; network as template.yaml's `network:`
 * says, internet on by default), unpacks the archive into it
 * (tar runs inside the sandbox), runs the steps as root or user, then kills
 * it and copies its writable layer out as the template's new read-only
 * layer (asbe_sandbox_export_upper). build_run is synchronous and says
 * what happened as plain data (a template, a build report, an eng_err):
 * api_templates.c makes E2B's replies of it (201 built, 200 cached, 400
 * invalid input, 422 a failed step), bundled.c builds with it directly.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build.h"
#include "eng_err.h"
#include "host.h"
#include "image.h"
#include "net/policy.h"
#include "proto/cmdargs.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "registry.h"
#include "sbxexec.h"
#include "sbxnet.h"
#include "templates.h"
#include "tmpl/tmpl.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/util.h"

#define LOG_MAX (1u << 20)
#define STEP_OUTPUT_MAX (256u * 1024u)
#define ERROR_TAIL 3000
#define UNPACK_TIMEOUT_MS 300000
#define BUILD_PIDS 4096
#define CTX_DIR "/.asb-build/ctx"

/* ---- helpers ------------------------------------------------------------------------ */

/* Invalid input in a file of the archive: ENG_EINVAL, where in rep. -1. */
static int bad_input(build_report *rep, eng_err *err, const asbi_tmpl_error *te, const char *file) {
  char msg[1024];
  asbi_tmpl_format_error(te, file, msg, sizeof msg);
  snprintf(rep->file, sizeof rep->file, "%s", file);
  rep->line = te->line;
  rep->column = te->column;
  snprintf(rep->field, sizeof rep->field, "%s", te->field);
  return eng_err_set(err, ENG_EINVAL, NULL, "%s", msg);
}

static int bad(build_report *rep, eng_err *err, const char *file, int line, const char *field,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int bad(build_report *rep, eng_err *err, const char *file, int line, const char *field,
               const char *fmt, ...) {
  asbi_tmpl_error te;
  memset(&te, 0, sizeof te);
  te.line = line;
  te.column = line ? 1 : 0;
  snprintf(te.field, sizeof te.field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(te.message, sizeof te.message, fmt, ap);
  va_end(ap);
  return bad_input(rep, err, &te, file);
}

static int cmp_entries(const void *a, const void *b) {
  return strcmp((*(asbi_tar_entry *const *)a)->name, (*(asbi_tar_entry *const *)b)->name);
}

static void hex(const unsigned char *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void h_str(EVP_MD_CTX *h, const char *s) {
  EVP_DigestUpdate(h, s, strlen(s) + 1);
}

static void h_u64(EVP_MD_CTX *h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  EVP_DigestUpdate(h, b, 8);
}

static int has_usr_bind(const asbe_template *t) {
  for (size_t i = 0; i < asbe_template_bind_count(t); i++) {
    const char *dst = NULL;
    const char *src = asbe_template_bind(t, i, &dst);
    if (src && dst && !strcmp(src, "/usr") && !strcmp(dst, "/usr")) return 1;
  }
  return 0;
}

/* The name part of a package spec: "foo=1.2" → "foo", "requests>=2" →
 * "requests", "@scope/x@1" → "@scope/x". */
static void pkg_name(const char *spec, const char *stops, int npm, char *out, size_t len) {
  size_t n = strcspn(spec, stops);
  if (npm) {
    const char *at = strrchr(spec, '@');
    n = at && at != spec ? (size_t)(at - spec) : strlen(spec);
  }
  snprintf(out, len, "%.*s", (int)n, spec);
}

/* ---- one build ------------------------------------------------------------------------ */

typedef struct build {
  engine *e;
  eng_err *err;
  build_report *rep;
  const cJSON *spec;
  template_info *base;
  asbe_sandbox *iso;
  struct asbn_dp_link *net; /* its network (sbxnet.c), NULL: none */
  char sid[ENGINE_ID_LEN + 1];
  asbi_buf log;
  int nsteps;
  char img_err[1024]; /* why a local image base failed */
} build;

static void logf_(build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(build *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char line[4096];
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (b->log.len + strlen(line) < LOG_MAX) asbi_buf_puts(&b->log, line);
}

static void log_output(build *b, const asbi_buf *out) {
  if (!out->len) return;
  if (b->log.len + out->len < LOG_MAX) {
    asbi_buf_append(&b->log, out->data, out->len);
    if (out->data[out->len - 1] != '\n') asbi_buf_putc(&b->log, '\n');
  } else {
    logf_(b, "[%zu bytes of output not kept: the build log is full]\n", out->len);
  }
}

/* ENG_EFAILED naming the step, with its output's tail; the step, its line
 * and its whole output in the report. */
static void step_failed(build *b, int idx, const cJSON *step, const char *desc, const char *why,
                        const asbi_buf *out) {
  const char *text = out && out->data ? out->data : "";
  size_t n = strlen(text);
  const char *tail = n > ERROR_TAIL ? text + n - ERROR_TAIL : text;
  const cJSON *line = cJSON_GetObjectItemCaseSensitive(step, "line");
  char msg[ERROR_TAIL + 1024];
  snprintf(msg, sizeof msg, "template %s: step %d/%d (%s) at template.yaml:%d %s%s%s",
           cJSON_GetObjectItemCaseSensitive(b->spec, "name")->valuestring, idx + 1, b->nsteps, desc,
           cJSON_IsNumber(line) ? line->valueint : 0, why, *tail ? ":\n" : "", tail);
  logf_(b, "==> FAILED: %s\n", why);
  b->rep->step = idx + 1;
  b->rep->step_line = cJSON_IsNumber(line) ? line->valueint : 0;
  free(b->rep->output);
  b->rep->output = asbi_strdup(text);
  free(b->rep->why);
  b->rep->why = asbi_strdup(why);
  eng_err_set(b->err, ENG_EFAILED, NULL, "%s", msg);
}

static const char *step_desc(const cJSON *st, char *buf, size_t len) {
  const char *kind = cJSON_GetObjectItemCaseSensitive(st, "kind")->valuestring;
  if (!strcmp(kind, "run")) {
    snprintf(buf, len, "run: %.120s", cJSON_GetObjectItemCaseSensitive(st, "cmd")->valuestring);
  } else if (!strcmp(kind, "copy")) {
    snprintf(buf, len, "copy: %.100s -> %.100s",
             cJSON_GetObjectItemCaseSensitive(st, "src")->valuestring,
             cJSON_GetObjectItemCaseSensitive(st, "dest")->valuestring);
  } else {
    asbi_buf p = ASBI_BUF_INIT;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(st, "packages")) {
      asbi_buf_printf(&p, "%s%s", p.len ? " " : "", it->valuestring);
    }
    snprintf(buf, len, "%s: %.200s", kind, p.data ? p.data : "");
    asbi_buf_free(&p);
  }
  return buf;
}

/* Runs argv in the build sandbox; 0 if it exited 0, else fails the step. */
static int run_step_cmd(build *b, int idx, const cJSON *st, const char *desc,
                        const char *const *argv, int uid, const char *cwd, const cJSON *env,
                        int timeout_s) {
  char **envp = sbx_env(uid, cJSON_GetObjectItemCaseSensitive(b->spec, "env"), NULL, env, NULL);
  sbx_run_opts o = {
      argv, (const char *const *)envp, uid, cwd, NULL, 0, timeout_s * 1000, STEP_OUTPUT_MAX, 1, 1};
  sbx_run_result res;
  int rc = envp ? sbx_run_until(b->iso, &o, &b->e->builds_stop, &res) : -ENOMEM;
  sbx_env_free(envp);
  if (rc) {
    char why[600];
    snprintf(why, sizeof why, "could not start: %s", asbe_errmsg());
    step_failed(b, idx, st, desc, why, NULL);
    return -1;
  }
  log_output(b, &res.out);
  int ok = !res.timed_out && !res.stopped && res.exit_code == 0;
  if (!ok) {
    char why[128];
    if (res.stopped)
      snprintf(why, sizeof why, "%s", BUILD_STOPPING_WHY);
    else if (res.timed_out)
      snprintf(why, sizeof why, "timed out after %d s", timeout_s);
    else
      snprintf(why, sizeof why, "failed with exit code %d", res.exit_code);
    step_failed(b, idx, st, desc, why, &res.out);
  } else {
    logf_(b, "    (%lld ms)\n", (long long)res.ms);
  }
  sbx_run_result_free(&res);
  return ok ? 0 : -1;
}

static const char COPY_SCRIPT[] =
    "set -e\n"
    "src=\"$1\"; dest=\"$2\"; owner=\"$3\"; mode=\"$4\"\n"
    "case \"$dest\" in */) mkdir -p \"$dest\"; dest=\"$dest$(basename \"$src\")\";; esac\n"
    "mkdir -p \"$(dirname \"$dest\")\"\n"
    "if [ -d \"$src\" ]; then mkdir -p \"$dest\"; cp -a \"$src/.\" \"$dest/\";\n"
    "else cp -a \"$src\" \"$dest\"; fi\n"
    "if [ \"$owner\" = user ]; then chown -R 1000:1000 \"$dest\"; fi\n"
    "if [ -n \"$mode\" ]; then chmod \"$mode\" \"$dest\"; fi\n"
    "echo \"copied $src to $dest\"\n";

static const char PIP_CHECK[] =
    "import sys, importlib.metadata as m\n"
    "missing = []\n"
    "for p in sys.argv[1:]:\n"
    "    try:\n"
    "        print(p, m.version(p))\n"
    "    except Exception:\n"
    "        missing.append(p)\n"
    "if missing:\n"
    "    print('not installed:', ' '.join(missing))\n"
    "    sys.exit(1)\n";

static const char NPM_CHECK[] =
    "m=\n"
    "for p; do f=\n"
    "  for d in /usr/local/lib/node_modules /usr/lib/node_modules /usr/share/nodejs "
    "/usr/lib/nodejs; do\n"
    "    [ -e \"$d/$p/package.json\" ] && { echo \"$p in $d\"; f=1; break; }\n"
    "  done\n"
    "  [ -n \"$f\" ] || m=\"$m $p\"\n"
    "done\n"
    "[ -z \"$m\" ] || { echo \"not installed:$m\"; exit 1; }\n";

static int package_step(build *b, int idx, const cJSON *st, const char *desc) {
  const char *kind = cJSON_GetObjectItemCaseSensitive(st, "kind")->valuestring;
  const cJSON *pk = cJSON_GetObjectItemCaseSensitive(st, "packages"), *it;
  int n = cJSON_GetArraySize(pk);
  const char **names = calloc((size_t)n + 8, sizeof *names);
  char(*bufs)[256] = calloc((size_t)n + 1, sizeof *bufs);
  if (!names || !bufs) {
    free(names);
    free(bufs);
    step_failed(b, idx, st, desc, "out of memory", NULL);
    return -1;
  }
  int k = 0, rc = 0;
  cJSON_ArrayForEach(it, pk) {
    pkg_name(it->valuestring, !strcmp(kind, "apt") ? "=:" : "<>=!~[;@ ", !strcmp(kind, "npm"),
             bufs[k], sizeof bufs[k]);
    k++;
  }
  const char *no_net =
      "; package steps check the base, they do not install (its /usr is the host's, "
      "read-only): install with a run: step into a path of the template's own (build "
      "sandboxes have network unless template.yaml's network: or the engine's "
      "--no-network says otherwise)";
  if (!strcmp(kind, "apt")) {
    /* The base shares the host's /usr: its packages are the host's. */
    if (!has_usr_bind(b->base->tmpl)) {
      char why[512];
      snprintf(why, sizeof why, "cannot check packages: the base '%s' has no package database%s",
               b->base->alias, no_net);
      step_failed(b, idx, st, desc, why, NULL);
      rc = -1;
    } else {
      asbi_buf missing = ASBI_BUF_INIT, out = ASBI_BUF_INIT;
      for (int i = 0; i < k; i++) {
        char *o = NULL;
        const char *argv[] = {"/usr/bin/dpkg-query", "-W", "-f=${db:Status-Status} ${Version}",
                              bufs[i], NULL};
        int st2 = access(argv[0], X_OK) == 0 ? host_run(argv, &o) : -ENOENT;
        if (st2 == 0 && o && !strncmp(o, "installed ", 10))
          asbi_buf_printf(&out, "%s %s (installed on the host)\n", bufs[i], o + 10);
        else
          asbi_buf_printf(&missing, " %s", bufs[i]);
        free(o);
      }
      if (missing.len) {
        char why[1024];
        snprintf(why, sizeof why,
                 "package(s)%s not installed in the base (the host's /usr)%s: install them on "
                 "the host (apt-get install%s), then build again",
                 missing.data, no_net, missing.data);
        step_failed(b, idx, st, desc, why, &out);
        rc = -1;
      } else {
        log_output(b, &out);
        logf_(b, "    all present: skipped\n");
      }
      asbi_buf_free(&missing);
      asbi_buf_free(&out);
    }
  } else {
    int pip = !strcmp(kind, "pip");
    names[0] = pip ? "/usr/bin/python3" : "/bin/sh";
    names[1] = "-c";
    names[2] = pip ? PIP_CHECK : NPM_CHECK;
    int a = 3;
    if (!pip) names[a++] = "sh";
    for (int i = 0; i < k; i++) names[a++] = bufs[i];
    names[a] = NULL;
    char **envp = sbx_env(0, NULL, NULL, NULL, NULL);
    sbx_run_opts o = {names, (const char *const *)envp, 0, "/", NULL, 0, 120000, 65536, 1, 0};
    sbx_run_result res;
    int r = envp ? sbx_run_until(b->iso, &o, &b->e->builds_stop, &res) : -ENOMEM;
    sbx_env_free(envp);
    if (r) {
      char why[600];
      snprintf(why, sizeof why, "cannot check packages (%s)%s", asbe_errmsg(), no_net);
      step_failed(b, idx, st, desc, why, NULL);
      rc = -1;
    } else if (res.exit_code != 0) {
      char why[600];
      if (res.stopped)
        snprintf(why, sizeof why, "%s", BUILD_STOPPING_WHY);
      else
        snprintf(why, sizeof why, "package(s) missing from the base%s", no_net);
      step_failed(b, idx, st, desc, why, &res.out);
      rc = -1;
    } else {
      log_output(b, &res.out);
      logf_(b, "    all present: skipped\n");
    }
    if (!r) sbx_run_result_free(&res);
  }
  free(names);
  free(bufs);
  return rc;
}

static int run_steps(build *b) {
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(b->spec, "steps"), *st;
  b->nsteps = cJSON_GetArraySize(steps);
  int idx = 0;
  cJSON_ArrayForEach(st, steps) {
    char desc[512];
    step_desc(st, desc, sizeof desc);
    if (__atomic_load_n(&b->e->builds_stop, __ATOMIC_ACQUIRE)) {
      step_failed(b, idx, st, desc, BUILD_STOPPING_WHY, NULL); /* not started */
      return -1;
    }
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(st, "line");
    logf_(b, "==> step %d/%d (template.yaml:%d) %s\n", idx + 1, b->nsteps,
          cJSON_IsNumber(line) ? line->valueint : 0, desc);
    const char *kind = cJSON_GetObjectItemCaseSensitive(st, "kind")->valuestring;
    const char *user = cJSON_GetObjectItemCaseSensitive(st, "user")->valuestring;
    int uid = !strcmp(user, "user") ? 1000 : 0;
    const char *cwd = cJSON_GetObjectItemCaseSensitive(st, "cwd")->valuestring;
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(st, "env");
    int timeout = cJSON_GetObjectItemCaseSensitive(st, "timeout")->valueint;
    int rc;
    if (!strcmp(kind, "run")) {
      const char *argv[] = {"/bin/sh", "-c",
                            cJSON_GetObjectItemCaseSensitive(st, "cmd")->valuestring, NULL};
      rc = run_step_cmd(b, idx, st, desc, argv, uid, cwd, env, timeout);
    } else if (!strcmp(kind, "copy")) {
      char src[4200];
      snprintf(src, sizeof src, "%s/%s", CTX_DIR,
               cJSON_GetObjectItemCaseSensitive(st, "src")->valuestring);
      const cJSON *mode = cJSON_GetObjectItemCaseSensitive(st, "mode");
      const char *argv[] = {"/bin/sh",
                            "-c",
                            COPY_SCRIPT,
                            "sh",
                            src,
                            cJSON_GetObjectItemCaseSensitive(st, "dest")->valuestring,
                            cJSON_GetObjectItemCaseSensitive(st, "owner")->valuestring,
                            cJSON_IsString(mode) ? mode->valuestring : "",
                            NULL};
      rc = run_step_cmd(b, idx, st, desc, argv, 0, "/", env, timeout);
    } else {
      rc = package_step(b, idx, st, desc);
    }
    if (rc) return -1;
    idx++;
  }
  return 0;
}

/* Unpacks the archive into CTX_DIR inside the build sandbox. */
static int unpack(build *b, const char *tar, size_t len) {
  const char *argv[] = {"/bin/sh", "-c",
                        "mkdir -p " CTX_DIR " && cd " CTX_DIR " && exec tar -x -o -f -", NULL};
  char **envp = sbx_env(0, NULL, NULL, NULL, NULL);
  sbx_run_opts o = {argv, (const char *const *)envp, 0,     "/", tar,
                    len,  UNPACK_TIMEOUT_MS,         65536, 1,   1};
  sbx_run_result res;
  int rc = envp ? sbx_run_until(b->iso, &o, &b->e->builds_stop, &res) : -ENOMEM;
  sbx_env_free(envp);
  if (rc) {
    eng_err_set(b->err, ENG_EINTERNAL, NULL,
                "cannot unpack the template directory in the build sandbox: %s", asbe_errmsg());
    return -1;
  }
  if (res.stopped) {
    eng_err_set(b->err, ENG_EINTERNAL, "engine_stopping", "the build was " BUILD_STOPPING_WHY);
    sbx_run_result_free(&res);
    return -1;
  }
  if (res.exit_code != 0) {
    eng_err_set(b->err, ENG_EINTERNAL, NULL,
                "cannot unpack the template directory in the build sandbox (tar exit %d): %.2000s",
                res.exit_code, res.out.data);
    sbx_run_result_free(&res);
    return -1;
  }
  sbx_run_result_free(&res);
  return 0;
}

static int finish_layer(build *b) {
  const char *argv[] = {"/bin/sh", "-c",
                        "rm -rf /.asb-build && mkdir -p /var/log/asb && "
                        "chown 1000:1000 /var/log/asb && chmod 0755 /var/log/asb",
                        NULL};
  char **envp = sbx_env(0, NULL, NULL, NULL, NULL);
  sbx_run_opts o = {argv, (const char *const *)envp, 0, "/", NULL, 0, 120000, 65536, 1, 1};
  sbx_run_result res;
  int rc = envp ? sbx_run_until(b->iso, &o, &b->e->builds_stop, &res) : -ENOMEM;
  sbx_env_free(envp);
  if (rc || res.exit_code != 0) {
    eng_err_set(b->err, ENG_EINTERNAL, !rc && res.stopped ? "engine_stopping" : NULL,
                "cannot finish the build: %s",
                rc            ? asbe_errmsg()
                : res.stopped ? BUILD_STOPPING_WHY
                              : (res.out.data ? res.out.data : ""));
    if (!rc) sbx_run_result_free(&res);
    return -1;
  }
  sbx_run_result_free(&res);
  return 0;
}

int build_write_json(const char *path, cJSON *j) {
  char *text = cJSON_Print(j);
  if (!text) return -ENOMEM;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int rc = 0;
  if (fd < 0) {
    rc = -errno;
  } else {
    size_t n = strlen(text);
    if (write(fd, text, n) != (ssize_t)n || fsync(fd) != 0) rc = -EIO;
    close(fd);
    if (!rc && rename(tmp, path) != 0) rc = -errno;
  }
  free(text);
  return rc;
}

/* The base's layer paths as template.json stores them (relative to the
 * templates dir when inside it). */
cJSON *build_rel_layers(engine *e, const asbe_template *t) {
  char tdir[4200];
  snprintf(tdir, sizeof tdir, "%s/templates/", e->state_dir);
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < asbe_template_layer_count(t); i++) {
    const char *l = asbe_template_layer(t, i);
    cJSON_AddItemToArray(a, cJSON_CreateString(asbi_startswith(l, tdir) ? l + strlen(tdir) : l));
  }
  return a;
}

void build_report_free(build_report *rep) {
  if (!rep) return;
  free(rep->log);
  free(rep->output);
  free(rep->why);
  memset(rep, 0, sizeof *rep);
}

/* A local image (oci:, docker-archive:) as the base: imported (or found)
 * under <state>/templates/.images/<config digest>/rootfs, which becomes
 * the base's one layer; the image's Env joins template.yaml's env (which
 * wins) and the rest of its config is recorded in the spec's "image". */
static int image_base(engine *e, build *b, cJSON *spec, const char *ref, template_info **out) {
  *out = NULL;
  char cache[4200];
  snprintf(cache, sizeof cache, "%s/templates/.images", e->state_dir);
  image_result img;
  int64_t t0 = asbi_unix_ms();
  image_limits lim = {0, 0, (const char *const *)e->image_dirs};
  if (image_import(ref, cache, &lim, &img, b->img_err, sizeof b->img_err)) {
    char why[1024];
    snprintf(why, sizeof why, "%s", b->img_err);
    snprintf(b->img_err, sizeof b->img_err, "image '%s': %s", ref, why);
    asbi_log("template: image %s: %s", ref, why);
    return -1;
  }
  logf_(b, "==> image %s: config sha256:%.12s, %s in %lld ms%s\n", ref, img.id,
        img.cached ? "unpacked before" : "unpacked", (long long)(asbi_unix_ms() - t0),
        img.skipped_devices ? " (device nodes skipped)" : "");
  template_info *t = templates_info_new(ref, ref, cache);
  int rc =
      t && (t->tmpl = asbe_template_new()) ? asbe_template_add_layer(t->tmpl, img.rootfs) : -ENOMEM;
  cJSON *env = cJSON_GetObjectItemCaseSensitive(spec, "env");
  if (!rc && !cJSON_IsObject(env)) {
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "env");
    env = cJSON_AddObjectToObject(spec, "env");
  }
  cJSON *info = rc ? NULL : cJSON_CreateObject();
  if (info) {
    cJSON_AddStringToObject(info, "ref", ref);
    char dg[80];
    snprintf(dg, sizeof dg, "sha256:%s", img.id);
    cJSON_AddStringToObject(info, "configDigest", dg);
    cJSON *ie = cJSON_AddArrayToObject(info, "env");
    for (size_t i = 0; i < img.cfg.n_env; i++) {
      cJSON_AddItemToArray(ie, cJSON_CreateString(img.cfg.env[i]));
      const char *eq = strchr(img.cfg.env[i], '=');
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)(eq - img.cfg.env[i]), img.cfg.env[i]);
      if (env && !cJSON_GetObjectItemCaseSensitive(env, name))
        cJSON_AddStringToObject(env, name, eq + 1);
    }
    cJSON_AddStringToObject(info, "workingDir", img.cfg.workdir ? img.cfg.workdir : "");
    cJSON_AddStringToObject(info, "user", img.cfg.user ? img.cfg.user : "");
    cJSON *ep = cJSON_AddArrayToObject(info, "entrypoint");
    for (size_t i = 0; i < img.cfg.n_entrypoint; i++)
      cJSON_AddItemToArray(ep, cJSON_CreateString(img.cfg.entrypoint[i]));
    cJSON *cm = cJSON_AddArrayToObject(info, "cmd");
    for (size_t i = 0; i < img.cfg.n_cmd; i++)
      cJSON_AddItemToArray(cm, cJSON_CreateString(img.cfg.cmd[i]));
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "image");
    cJSON_AddItemToObject(spec, "image", info);
  }
  image_result_free(&img);
  if (rc || !info) {
    snprintf(b->img_err, sizeof b->img_err, "image '%s': out of memory", ref);
    templates_put(e, t);
    return -1;
  }
  *out = t;
  return 0;
}

int build_run(engine *e, const void *tar, size_t tar_len, int force, build_base_fn base_fn,
              template_info **out, build_report *rep, eng_err *err) {
  return build_run_as(e, tar, tar_len, force, base_fn, NULL, out, rep, err);
}

int build_run_as(engine *e, const void *tar, size_t tar_len, int force, build_base_fn base_fn,
                 const char *new_id, template_info **out, build_report *rep, eng_err *err) {
  *out = NULL;
  memset(rep, 0, sizeof *rep);
  eng_err_clear(err);
  int64_t t0 = asbi_unix_ms();
  if (!tar || !tar_len) return eng_err_set(err, ENG_EINVAL, NULL, "the template archive is empty");
  /* ---- read the archive ---- */
  asbi_tar_reader tr;
  asbi_tar_reader_init(&tr, tar, tar_len);
  size_t cap = 64, n = 0;
  asbi_tar_entry **ents = calloc(cap, sizeof *ents);
  int rc = ents ? 0 : -1;
  const asbi_tar_entry *yaml = NULL;
  while (!rc) {
    if (n == cap) {
      asbi_tar_entry **v = realloc(ents, cap * 2 * sizeof *v);
      if (!v) {
        rc = -1;
        break;
      }
      ents = v;
      cap *= 2;
    }
    asbi_tar_entry *en = malloc(sizeof *en);
    if (!en) {
      rc = -1;
      break;
    }
    int k = asbi_tar_next(&tr, en);
    if (k <= 0) {
      free(en);
      if (k < 0) {
        eng_err_set(err, ENG_EINVAL, NULL, "the body is not a valid tar archive: %s", tr.err);
        rc = -2;
      }
      break;
    }
    if (!en->name[0]) {
      free(en);
      continue;
    }
    ents[n++] = en;
    if ((!strcmp(en->name, "template.yaml") || (!yaml && !strcmp(en->name, "template.yml"))) &&
        en->type == ASBI_TAR_FILE)
      yaml = en;
  }
  cJSON *spec = NULL;
  template_info *base = NULL, *existing = NULL;
  build b;
  memset(&b, 0, sizeof b);
  b.e = e;
  b.err = err;
  b.rep = rep;
  int locked = 0, ok = 0, importing = 0;
  char tdir[4200] = "", bdir[4400] = "";
  if (rc == -1) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "out of memory");
    goto out;
  }
  if (rc) goto out;
  if (!yaml) {
    eng_err_set(err, ENG_EINVAL, NULL, "the archive has no template.yaml at its top level");
    goto out;
  }
  const char *yname = !strcmp(yaml->name, "template.yml") ? "template.yml" : "template.yaml";
  asbi_tmpl_error te;
  spec = asbi_tmpl_parse(yaml->data, (size_t)yaml->size, &te);
  if (!spec) {
    bad_input(rep, err, &te, yname);
    goto out;
  }
  b.spec = spec;
  const char *name = cJSON_GetObjectItemCaseSensitive(spec, "name")->valuestring;
  const char *base_name = cJSON_GetObjectItemCaseSensitive(spec, "base")->valuestring;
  if (base_fn) {
    eng_err why;
    if (base_fn(e, base_name, &why)) {
      bad(rep, err, yname, 0, "base", "%s", why.message);
      goto out;
    }
  }
  if (image_ref_is_local(base_name)) {
    /* its unpacked image is in no template until this build registers:
     * build_gc must not take it meanwhile */
    pthread_mutex_lock(&e->mu);
    e->image_imports++;
    pthread_mutex_unlock(&e->mu);
    importing = 1;
    if (image_base(e, &b, spec, base_name, &base)) {
      bad(rep, err, yname, 0, "base", "%s", b.img_err);
      goto out;
    }
  } else {
    base = templates_find(e, base_name);
  }
  int registry = !base && image_ref_is_registry(base_name);
  if (!base && !registry && strchr(base_name, ':')) {
    /* "alpine:3.19": a registry image unless its name is a template's
     * (then a tag it does not have) */
    char nm[256];
    snprintf(nm, sizeof nm, "%.*s", (int)(strchr(base_name, ':') - base_name), base_name);
    template_info *named = templates_find(e, nm);
    registry = !named;
    templates_put(e, named);
  }
  if (registry) {
    bad(rep, err, yname, 0, "base",
        "'%s' is a container registry image: this engine pulls from no registry (sandboxes "
        "and builds are loopback-only). Use a local image: an OCI image layout directory "
        "(oci:/dir[:name], e.g. from skopeo copy docker://IMAGE oci:/dir:name) or a docker "
        "save tarball (docker-archive:/file.tar[:repo:tag]), or one of the engine's templates",
        base_name);
    goto out;
  }
  if (!base) {
    bad(rep, err, yname, 0, "base",
        "template '%s' not found (base, busybox, a template built before, or a local image: "
        "oci:/dir[:name], docker-archive:/file.tar)",
        base_name);
    goto out;
  }
  if (!strcmp(base->alias, name) || !strcmp(base->id, name)) {
    bad(rep, err, yname, 0, "base", "a template cannot be built on itself");
    goto out;
  }
  /* copy sources must be in the archive */
  {
    const cJSON *st;
    int i = 0;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(spec, "steps")) {
      if (!strcmp(cJSON_GetObjectItemCaseSensitive(st, "kind")->valuestring, "copy")) {
        char src[4096];
        const char *raw = cJSON_GetObjectItemCaseSensitive(st, "src")->valuestring;
        /* normalise like the tar reader: drop "./" and trailing "/" */
        while (raw[0] == '.' && raw[1] == '/') raw += 2;
        snprintf(src, sizeof src, "%s", raw);
        size_t sl = strlen(src);
        while (sl > 1 && src[sl - 1] == '/') src[--sl] = '\0';
        int found = !strcmp(src, ".") || !sl;
        for (size_t k = 0; !found && k < n; k++)
          if (!strcmp(ents[k]->name, src) ||
              (!strncmp(ents[k]->name, src, sl) && ents[k]->name[sl] == '/'))
            found = 1;
        if (!found) {
          char field[64];
          snprintf(field, sizeof field, "steps[%d].copy.src", i);
          bad(rep, err, yname, cJSON_GetObjectItemCaseSensitive(st, "line")->valueint, field,
              "'%s' is not in the template directory", raw);
          goto out;
        }
      }
      i++;
    }
  }
  /* ---- the inputs' hash ---- */
  char hash[65];
  {
    qsort(ents, n, sizeof *ents, cmp_entries);
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    unsigned char d[32];
    unsigned dl = 0;
    EVP_DigestInit_ex(h, EVP_sha256(), NULL);
    h_str(h, "asb-template-build-v1");
    for (size_t i = 0; i < asbe_template_layer_count(base->tmpl); i++)
      h_str(h, asbe_template_layer(base->tmpl, i));
    for (size_t i = 0; i < asbe_template_bind_count(base->tmpl); i++) {
      const char *dst = NULL;
      h_str(h, asbe_template_bind(base->tmpl, i, &dst));
      h_str(h, dst);
    }
    for (size_t i = 0; i < n; i++) {
      const asbi_tar_entry *en = ents[i];
      h_str(h, en->name);
      h_u64(h, (uint64_t)en->type);
      h_u64(h, en->mode);
      h_u64(h, en->size);
      if (en->size) EVP_DigestUpdate(h, en->data, (size_t)en->size);
      h_str(h, en->linkname);
    }
    EVP_DigestFinal_ex(h, d, &dl);
    EVP_MD_CTX_free(h);
    hex(d, 32, hash);
  }
  /* ---- one build at a time; cached? ---- */
  pthread_mutex_lock(&e->build_mu);
  locked = 1;
  if (__atomic_load_n(&e->builds_stop, __ATOMIC_ACQUIRE)) { /* waited for its turn meanwhile */
    eng_err_set(err, ENG_EINTERNAL, "engine_stopping",
                "template %s: not built: the engine is stopping", name);
    asbi_log("template %s: build not started: the engine is stopping", name);
    goto out;
  }
  existing = templates_find(e, name);
  if (existing && existing->builtin) {
    bad(rep, err, yname, 0, "name", "'%s' is a built-in template", name);
    goto out;
  }
  if (existing && strcmp(existing->alias, name) != 0) {
    /* found by id: a name must not shadow another template's id */
    bad(rep, err, yname, 0, "name", "'%s' is the id of template '%s'", name, existing->alias);
    goto out;
  }
  if (existing && !force && !strcmp(existing->hash, hash)) {
    asbi_buf_printf(&b.log, "cached: the inputs are those of build %s (hash %.16s)\n",
                    existing->build_id, hash);
    rep->cached = 1;
    templates_hold(e, existing);
    *out = existing;
    ok = 1;
    asbi_log("template %s: build cached (%s)", name, existing->build_id);
    goto out;
  }
  char id[ENGINE_ID_LEN + 1], suffix[7];
  if (existing) {
    snprintf(id, sizeof id, "%s", existing->id);
    /* a delete meanwhile answers 409 instead of waiting for build_mu */
    pthread_mutex_lock(&e->mu);
    snprintf(e->rebuilding, sizeof e->rebuilding, "%s", id);
    pthread_mutex_unlock(&e->mu);
  } else if (new_id && strlen(new_id) == ENGINE_ID_LEN)
    snprintf(id, sizeof id, "%s", new_id);
  else if (asbi_random_alnum(id, ENGINE_ID_LEN)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "no randomness available");
    goto out;
  }
  asbi_random_alnum(suffix, 6);
  char build_id[32];
  snprintf(build_id, sizeof build_id, "%.16s-%s", hash, suffix);
  snprintf(tdir, sizeof tdir, "%s/templates/%s", e->state_dir, id);
  snprintf(bdir, sizeof bdir, "%s/builds/%s", tdir, build_id);
  char builds[4300];
  snprintf(builds, sizeof builds, "%s/builds", tdir);
  if ((mkdir(tdir, 0755) && errno != EEXIST) || (mkdir(builds, 0755) && errno != EEXIST) ||
      mkdir(bdir, 0755)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot make %s: %s", bdir, strerror(errno));
    bdir[0] = '\0';
    goto out;
  }
  asbi_log("template %s: build %s started on %s", name, build_id, base->alias);
  logf_(&b, "==> build %s of template %s on %s\n", build_id, name, base->alias);
  /* ---- the build sandbox ---- */
  b.base = base;
  snprintf(b.sid, sizeof b.sid, "bld");
  if (asbi_random_alnum(b.sid + 3, ENGINE_ID_LEN - 3)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "no randomness available");
    goto out;
  }
  const cJSON *res = cJSON_GetObjectItemCaseSensitive(spec, "resources");
  asbe_sandbox_spec ss;
  memset(&ss, 0, sizeof ss);
  ss.id = b.sid;
  ss.tmpl = base->tmpl;
  ss.memory_bytes = (uint64_t)cJSON_GetObjectItemCaseSensitive(res, "memoryMB")->valueint << 20;
  ss.pids_max = BUILD_PIDS;
  ss.cpu_millicores = (uint32_t)cJSON_GetObjectItemCaseSensitive(res, "cpu")->valueint * 1000;
  ss.disk_bytes = (uint64_t)cJSON_GetObjectItemCaseSensitive(res, "diskMB")->valueint << 20;
  ss.agent_argv = NULL; /* no agent: steps run through the exec service */
  ss.resolv_conf = sbxnet_resolv_conf(e);
  /* template.yaml's network: (internet on when absent), as a create's */
  const cJSON *netspec = cJSON_GetObjectItemCaseSensitive(spec, "network");
  asbn_policy pol;
  char nwhy[512];
  if (asbn_policy_parse(cJSON_GetObjectItemCaseSensitive(netspec, "allowInternetAccess"), netspec,
                        &pol, nwhy, sizeof nwhy)) {
    eng_err_set(err, ENG_EINVAL, NULL, "template.yaml: %s", nwhy);
    goto out;
  }
  if (asbe_sandbox_create(e->iso, &ss, &b.iso)) {
    asbn_policy_free(&pol);
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot create the build sandbox: %s", asbe_errmsg());
    goto out;
  }
  int nrc = sbxnet_attach_iso(e, b.iso, &b.net, nwhy, sizeof nwhy);
  if (nrc == 0) nrc = sbxnet_apply_link(e, b.net, &pol, nwhy, sizeof nwhy);
  asbn_policy_free(&pol);
  if (nrc) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot connect the build sandbox's network: %s", nwhy);
    goto out;
  }
  if (unpack(&b, tar, tar_len) || run_steps(&b) || finish_layer(&b)) goto out;
  /* ---- commit: the writable layer becomes the template's layer ---- */
  sbxnet_detach_link(e, &b.net, 1);
  if (asbe_sandbox_kill(b.iso, 0)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot stop the build sandbox: %s", asbe_errmsg());
    goto out;
  }
  char layer[4500];
  snprintf(layer, sizeof layer, "%s/layer", bdir);
  int64_t tc = asbi_unix_ms();
  if (asbe_sandbox_export_upper(b.iso, layer)) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot commit the build: %s", asbe_errmsg());
    goto out;
  }
  logf_(&b, "==> committed the layer in %lld ms\n", (long long)(asbi_unix_ms() - tc));
  asbe_state_remove(e->iso, b.sid);
  asbe_sandbox_release(b.iso);
  b.iso = NULL;
  /* ---- record it ---- */
  int64_t took = asbi_unix_ms() - t0;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "alias", name);
  cJSON_AddStringToObject(j, "base", base->id);
  cJSON_AddStringToObject(j, "buildID", build_id);
  cJSON_AddStringToObject(j, "hash", hash);
  cJSON *own = cJSON_AddArrayToObject(j, "layers");
  char rel[128];
  snprintf(rel, sizeof rel, "builds/%s/layer", build_id);
  cJSON_AddItemToArray(own, cJSON_CreateString(rel));
  cJSON_AddItemToObject(j, "lowerLayers", build_rel_layers(e, base->tmpl));
  cJSON *binds = cJSON_AddArrayToObject(j, "binds");
  for (size_t i = 0; i < asbe_template_bind_count(base->tmpl); i++) {
    const char *dst = NULL;
    const char *src = asbe_template_bind(base->tmpl, i, &dst);
    cJSON *pair = cJSON_CreateArray();
    cJSON_AddItemToArray(pair, cJSON_CreateString(src));
    cJSON_AddItemToArray(pair, cJSON_CreateString(dst));
    cJSON_AddItemToArray(binds, pair);
  }
  cJSON_AddNumberToObject(j, "cpuCount", cJSON_GetObjectItemCaseSensitive(res, "cpu")->valueint);
  cJSON_AddNumberToObject(j, "memoryMB",
                          cJSON_GetObjectItemCaseSensitive(res, "memoryMB")->valueint);
  cJSON_AddNumberToObject(j, "diskSizeMB",
                          cJSON_GetObjectItemCaseSensitive(res, "diskMB")->valueint);
  cJSON_AddNumberToObject(j, "createdMs", (double)asbi_unix_ms());
  cJSON_AddNumberToObject(j, "buildMs", (double)took);
  cJSON_AddItemToObject(j, "spec", cJSON_Duplicate(spec, 1));
  char path[4500];
  snprintf(path, sizeof path, "%s/template.json", tdir);
  rc = build_write_json(path, j);
  cJSON_Delete(j);
  template_info *t = NULL;
  if (rc || (rc = templates_load(e, id, &t))) {
    eng_err_set(err, ENG_EINTERNAL, NULL, "cannot record the template: %s", strerror(-rc));
    goto out;
  }
  templates_hold(e, t); /* the caller's, next to the registry's */
  templates_install(e, t);
  bdir[0] = '\0'; /* keep it */
  asbi_log("template %s: build %s ready in %lld ms", name, build_id, (long long)took);
  logf_(&b, "==> template %s (%s) ready in %lld ms\n", name, id, (long long)took);
  *out = t;
  ok = 1;
  build_gc(e);
out:
  if (b.iso) {
    sbxnet_detach_link(e, &b.net, 1);
    asbe_sandbox_kill(b.iso, 1);
    asbe_sandbox_release(b.iso);
    asbi_log("template %s: build failed%s",
             spec ? cJSON_GetObjectItemCaseSensitive(spec, "name")->valuestring : "?",
             __atomic_load_n(&e->builds_stop, __ATOMIC_ACQUIRE) ? " (" BUILD_STOPPING_WHY ")" : "");
  }
  if (bdir[0]) {
    host_rm_rf(bdir);
    if (!existing && tdir[0]) host_rm_rf(tdir); /* a new name that never built */
  }
  if (importing) {
    pthread_mutex_lock(&e->mu);
    e->image_imports--;
    pthread_mutex_unlock(&e->mu);
  }
  if (locked) {
    pthread_mutex_lock(&e->mu);
    e->rebuilding[0] = '\0';
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_unlock(&e->build_mu);
  }
  templates_put(e, existing);
  templates_put(e, base);
  cJSON_Delete(spec);
  rep->log = asbi_buf_detach(&b.log, NULL);
  if (!rep->log) rep->log = asbi_strdup("");
  for (size_t i = 0; i < n; i++) free(ents[i]);
  free(ents);
  return ok ? 0 : -1;
}

void build_stop_all(engine *e) {
  __atomic_store_n(&e->builds_stop, 1, __ATOMIC_RELEASE);
}

/* ---- garbage collection ------------------------------------------------- */

/* 1 if path lies in dir (dir itself or below it). */
static int under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

static int in_list(const cJSON *arr, const char *dir) {
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    if (cJSON_IsString(it) && under(it->valuestring, dir)) return 1;
  }
  return 0;
}

void build_gc(engine *e) {
  /* every layer in use: by templates and by live sandboxes */
  cJSON *used = cJSON_CreateArray();
  size_t nt = 0, ns = 0;
  template_info **all = templates_snapshot_all(e, &nt); /* retired ones in use too */
  for (size_t i = 0; all && i < nt; i++)
    for (size_t k = 0; k < asbe_template_layer_count(all[i]->tmpl); k++)
      cJSON_AddItemToArray(used, cJSON_CreateString(asbe_template_layer(all[i]->tmpl, k)));
  templates_put_all(e, all, nt);
  sbx **v = reg_list(e, &ns);
  for (size_t i = 0; v && i < ns; i++) {
    pthread_mutex_lock(&v[i]->mu);
    const cJSON *it;
    cJSON_ArrayForEach(it, v[i]->tmpl_layers) {
      if (cJSON_IsString(it)) cJSON_AddItemToArray(used, cJSON_CreateString(it->valuestring));
    }
    pthread_mutex_unlock(&v[i]->mu);
  }
  reg_put_all(e, v, ns);
  char tdir[4200];
  snprintf(tdir, sizeof tdir, "%s/templates", e->state_dir);
  DIR *d = opendir(tdir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char path[4500];
    size_t nl = strlen(de->d_name);
    if (nl > 8 && !strcmp(de->d_name + nl - 8, ".deleted")) { /* an interrupted delete */
      snprintf(path, sizeof path, "%s/%s", tdir, de->d_name);
      host_rm_rf(path);
      continue;
    }
    char builds[4500];
    snprintf(builds, sizeof builds, "%s/%s/builds", tdir, de->d_name);
    DIR *bd = opendir(builds);
    struct dirent *be;
    size_t kept = 0;
    while (bd && (be = readdir(bd))) {
      if (be->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", builds, be->d_name);
      if (!in_list(used, path)) {
        asbi_log("template %s: removing unused build %s", de->d_name, be->d_name);
        host_rm_rf(path);
      } else {
        kept++;
      }
    }
    if (bd) closedir(bd);
    /* a snapshot deleted while in use (templates_delete): gone once unused */
    snprintf(path, sizeof path, "%s/%s/template.json.deleted", tdir, de->d_name);
    if (!kept && access(path, F_OK) == 0) {
      snprintf(path, sizeof path, "%s/%s", tdir, de->d_name);
      asbi_log("template %s: removing the deleted snapshot's files", de->d_name);
      host_rm_rf(path);
    }
  }
  if (d) closedir(d);
  /* unpacked local images (image_base) no template or sandbox is on */
  pthread_mutex_lock(&e->mu);
  int importing = e->image_imports;
  pthread_mutex_unlock(&e->mu);
  snprintf(tdir, sizeof tdir, "%s/templates/.images", e->state_dir);
  d = importing ? NULL : opendir(tdir);
  while (d && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char path[4500];
    snprintf(path, sizeof path, "%s/%s", tdir, de->d_name);
    if (!in_list(used, path)) {
      asbi_log("image %.12s: no template is built on it any more; removing it", de->d_name);
      host_rm_rf(path);
    }
  }
  if (d) closedir(d);
  cJSON_Delete(used);
}

void build_cleanup(engine *e) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/sandboxes", e->state_dir);
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (strncmp(de->d_name, "bld", 3) != 0 || strlen(de->d_name) != ENGINE_ID_LEN) continue;
    if (asbe_state_remove(e->iso, de->d_name) == 0)
      asbi_log("removed the build sandbox %s of an interrupted build", de->d_name);
  }
  if (d) closedir(d);
}
