/* The code interpreter (E2B's port 49999) inside sandboxes. It is asb-init's
 * aux agent (asb_init.c -a): root inside (as E2B's kernels are; root inside
 * is an unprivileged host uid), in the agent cgroup and supervised with the
 * agent's backoff, so a user's pkill or an OOM in the workload cannot take it
 * down, and it comes back if killed (its contexts then report
 * ContextRestarting, from its state file). It moves its kernels into the
 * workload cgroups. Code-interpreter templates start it at create, others on
 * the first request the router sees for port 49999 (codei_start signals the
 * init). The router then forwards to it like to any port.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codei.h"
#include "proto/url.h"
#include "sbxexec.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

char *codei_token_file(const sbx *s) {
  /* Only the tokens' SHA-256 (a hash lets it check a token without being
   * able to use one), in a file of /run/asb rather than on its command
   * line: a fork restored from its parent's memory has the parent's
   * command line, and gets its own file before the restore. */
  char access_hex[65], traffic_hex[65];
  asbi_sha256_hex(s->token, strlen(s->token), access_hex);
  asbi_sha256_hex(s->traffic_token, strlen(s->traffic_token), traffic_hex);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "access %s\ntraffic %s\n", access_hex, traffic_hex);
  return asbi_buf_detach(&b, NULL);
}

char **codei_aux_argv(engine *e, const sbx *s) {
  if (!e->codei_path) return NULL;
  (void)s;
  const char *args[] = {"--port",       ASBI_STRINGIFY(ASBI_CODE_PORT), "--listen", "127.0.0.1",
                        "--token-file", "/run/asb/" CODEI_TOKEN_FILE,   "--cwd",    "/home/user",
                        "--state",      "/run/asb/codei-contexts.json", NULL};
  char **argv = asbe_agent_argv("code-interpreter", args);
  if (!argv) return NULL;
  size_t na = 0;
  while (argv[na]) na++;
  /* Its environment (and so its kernels'): the sandbox's variables, as envd
   * gives them to commands, as NAME=VALUE words asb-init sets (asb-init's
   * own environment is the agent's: PATH, HOME, the ASB_* conventions). */
  size_t n = s->env_vars ? (size_t)cJSON_GetArraySize(s->env_vars) : 0;
  char **v = calloc(n + na + 8, sizeof *v);
  size_t k = 0;
  int ok = v != NULL;
  if (ok) {
    const char *fixed[] = {"HOME=/root", "USER=root", "LOGNAME=root", "LANG=C.UTF-8",
                           "E2B_SANDBOX=true"};
    for (size_t i = 0; ok && i < ASBI_ARRAY_LEN(fixed); i++)
      ok = (v[k++] = asbi_strdup(fixed[i])) != NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, s->env_vars) {
      if (!ok) break;
      /* a name asb-init could not split off (empty, or with '=') is skipped */
      if (!cJSON_IsString(it) || !it->string[0] || strchr(it->string, '=')) continue;
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_printf(&b, "%s=%s", it->string, it->valuestring);
      ok = (v[k++] = asbi_buf_detach(&b, NULL)) != NULL;
    }
    for (size_t i = 0; ok && i < na; i++) ok = (v[k++] = asbi_strdup(argv[i])) != NULL;
  }
  free(argv);
  if (!ok) {
    codei_argv_free(v);
    return NULL;
  }
  return v;
}

void codei_argv_free(char **v) {
  for (size_t i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

int codei_start(engine *e, sbx *s) {
  if (!e->codei_path) return -ENOTSUP;
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  if (s->state != SBX_RUNNING)
    rc = -ESRCH;
  else if (!s->codei_started && (rc = asbe_sandbox_start_aux(s->iso)) != 0)
    asbi_log("sandbox %s: cannot start the code interpreter: %s", s->id, asbe_errmsg());
  if (!rc) s->codei_started = 1;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int codei_connect(engine *e, sbx *s, int timeout_ms) {
  int fd = asbe_sandbox_connect_tcp(s->iso, ASBI_CODE_PORT);
  if (fd >= 0 || !e->codei_path) return fd;
  /* Not listening (yet): starting, or restarting after a crash (asb-init's
   * backoff is at most 5 s), or never asked for. Wait for it. */
  int rc = codei_start(e, s);
  if (rc) return rc;
  int64_t deadline = asbi_unix_ms() + timeout_ms;
  useconds_t nap = 1000;
  for (;;) {
    fd = asbe_sandbox_connect_tcp(s->iso, ASBI_CODE_PORT);
    if (fd >= 0) return fd;
    if (asbi_unix_ms() >= deadline || !asbe_sandbox_alive(s->iso)) return fd;
    usleep(nap);
    if (nap < 20000) nap *= 2;
  }
}

int codei_set_envs(engine *e, sbx *s, const cJSON *env) {
  (void)e;
  char *body = cJSON_PrintUnformatted(env);
  if (!body) return -ENOMEM;
  asbi_buf tok = ASBI_BUF_INIT;
  asbi_buf_printf(&tok, "X-Access-Token: %s", s->token);
  const char *hs[] = {"User-Agent: agent-sandboxd", "Content-Type: application/json", tok.data,
                      NULL};
  char *reply = NULL;
  int st = tok.data ? sbx_http(s->iso, ASBI_CODE_PORT, "POST", "/envs", hs, body, strlen(body),
                               &reply, 5000)
                    : -ENOMEM;
  if (st >= 0 && st != 200)
    asbi_log("sandbox %s: the code interpreter refused the envs (%d): %.200s", s->id, st,
             reply ? reply : "");
  free(reply);
  free(body);
  asbi_buf_free(&tok);
  return st == 200 ? 0 : st < 0 ? st : -EPROTO;
}

int codei_wait_ready(engine *e, sbx *s, int timeout_ms) {
  (void)e;
  /* E2B hands a code-interpreter sandbox out once its server answers
   * /health; ours answers 503 until the default python kernel is ready (or
   * failed to start), so poll it. A slow or broken interpreter does not fail
   * create: its first /execute waits for it (up to 120 s) or reports why. */
  int64_t deadline = asbi_unix_ms() + timeout_ms;
  useconds_t nap = 2000;
  const char *hs[] = {"User-Agent: agent-sandboxd", NULL};
  for (;;) {
    char *reply = NULL;
    int st = sbx_http(s->iso, ASBI_CODE_PORT, "GET", "/health", hs, NULL, 0, &reply, 2000);
    free(reply);
    if (st == 200) return 0;
    if (!asbe_sandbox_alive(s->iso)) return -ESRCH;
    if (asbi_unix_ms() >= deadline) return st < 0 ? st : -ETIMEDOUT;
    usleep(nap);
    if (nap < 20000) nap *= 2;
  }
}

/* ---- preflight: the code interpreter's packages ------------------------- */

extern const char codei_packages_txt[]; /* templates/code-interpreter/packages.txt */

/* The names of the installed packages in dpkg's status file (status holds
 * the whole file, NUL-terminated), sorted for bsearch. One pass over the
 * file: it is megabytes, and a search per package (strstr from each
 * "Package: " on) cost seconds of engine start-up under ASan, whose strstr
 * measures the whole rest of the haystack on every call. */
typedef struct dpkg_set {
  char **v;
  size_t n, cap;
} dpkg_set;

static int dpkg_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dpkg_set_load(dpkg_set *set, const char *status, size_t len) {
  const char *p = status, *end = status + len;
  const char *name = NULL;
  size_t name_len = 0;
  int installed = 0;
  while (p <= end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    size_t ll = (size_t)(eol - p);
    if (ll == 0) { /* end of a paragraph */
      if (name && installed) {
        if (set->n == set->cap) {
          size_t cap = set->cap ? set->cap * 2 : 1024;
          char **v = realloc(set->v, cap * sizeof *v);
          if (!v) break;
          set->v = v;
          set->cap = cap;
        }
        char *copy = malloc(name_len + 1);
        if (!copy) break;
        memcpy(copy, name, name_len);
        copy[name_len] = '\0';
        set->v[set->n++] = copy;
      }
      name = NULL;
      installed = 0;
    } else if (ll > 9 && memcmp(p, "Package: ", 9) == 0) {
      name = p + 9;
      name_len = ll - 9;
    } else if (ll >= 28 && memcmp(p, "Status: ", 8) == 0) {
      installed = memcmp(eol - 20, "install ok installed", 20) == 0;
    }
    p = eol + 1;
  }
  if (set->n) qsort(set->v, set->n, sizeof *set->v, dpkg_cmp);
}

static int dpkg_installed(const dpkg_set *set, const char *name) {
  return set->n && bsearch(&name, set->v, set->n, sizeof *set->v, dpkg_cmp) != NULL;
}

static void dpkg_set_free(dpkg_set *set) {
  for (size_t i = 0; i < set->n; i++) free(set->v[i]);
  free(set->v);
}

char *codei_preflight_status(const char *status, size_t len) {
  dpkg_set installed = {NULL, 0, 0};
  if (status) dpkg_set_load(&installed, status, len);
  asbi_buf out = ASBI_BUF_INIT;
  asbi_buf missing[2] = {ASBI_BUF_INIT, ASBI_BUF_INIT};
  int total[2] = {0, 0}, miss[2] = {0, 0}, sec = -1;
  const char *p = codei_packages_txt;
  while (*p && status) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    p += len + (eol ? 1 : 0);
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char name[128];
    if (sscanf(line, "%127s", name) != 1) continue;
    if (name[0] == '[') {
      sec = strcmp(name, "[core]") == 0 ? 0 : strcmp(name, "[full]") == 0 ? 1 : -1;
      continue;
    }
    if (sec < 0) continue;
    total[sec]++;
    if (!dpkg_installed(&installed, name)) {
      miss[sec]++;
      asbi_buf_printf(&missing[sec], " %s", name);
    }
  }
  if (!miss[0])
    asbi_buf_printf(&out, "ok   code interpreter packages (%d)\n", total[0]);
  else
    asbi_buf_printf(&out,
                    "WARN code interpreter packages: %d of %d missing:%s. Fix: scripts/deps.sh "
                    "(or apt-get install them)\n",
                    miss[0], total[0], missing[0].data);
  if (!miss[1])
    asbi_buf_printf(&out, "ok   code interpreter, the rest of E2B's image (%d)\n", total[1]);
  else
    asbi_buf_printf(&out,
                    "info code interpreter, the rest of E2B's image: %d of %d missing:%s. "
                    "Install: scripts/deps.sh --code-interpreter-full\n",
                    miss[1], total[1], missing[1].data);
  dpkg_set_free(&installed);
  asbi_buf_free(&missing[0]);
  asbi_buf_free(&missing[1]);
  return out.data;
}

char *codei_preflight(void) {
  FILE *f = fopen("/var/lib/dpkg/status", "re");
  if (!f) return asbi_strdup("info code interpreter packages: not a dpkg system, not checked\n");
  asbi_buf st = ASBI_BUF_INIT;
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) asbi_buf_append(&st, chunk, n);
  fclose(f);
  char *out = codei_preflight_status(st.data, st.len);
  asbi_buf_free(&st);
  return out;
}
