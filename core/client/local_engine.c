/* The local engine default of the client: the API key from the state dir,
 * and the engine started on demand (agent-sandboxd --daemon) when nobody
 * answers.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"
#include "http.h"
#include "internal.h"

#define ENGINE_START_WAIT_MS 20000
#ifndef ASB_ENGINE_BUILD_PATH
#define ASB_ENGINE_BUILD_PATH ""
#endif
#ifndef ASB_ENGINE_INSTALL_PATH
#define ASB_ENGINE_INSTALL_PATH ""
#endif

static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;

static int read_key(asb_client *c) {
  char path[4096], key[128] = "";
  snprintf(path, sizeof path, "%s/api_key", c->state_dir);
  FILE *f = fopen(path, "re");
  if (!f) return -errno;
  int ok = fgets(key, sizeof key, f) != NULL;
  fclose(f);
  key[strcspn(key, "\r\n")] = 0;
  if (!ok || !*key) return -EINVAL;
  char *k = asbi_strdup(key);
  if (!k) return -ENOMEM;
  free(c->api_key);
  c->api_key = k;
  return 0;
}

static int engine_healthy(asb_client *c, const char *url) {
  asbi_buf u = ASBI_BUF_INIT, h = ASBI_BUF_INIT;
  asbi_buf_printf(&u, "%s/health", url);
  asbi_buf_printf(&h, "X-API-Key: %s", c->api_key ? c->api_key : "");
  const char *hs[] = {h.data, NULL};
  asbi_http_req r = {.method = "GET",
                     .url = u.data,
                     .headers = hs,
                     .timeout_ms = 2000,
                     .connect_timeout_ms = 1000};
  asbi_http_resp resp = ASBI_HTTP_RESP_INIT;
  int rc = asbi_http_do(c->http, &r, &resp);
  int ok = rc == ASB_OK && resp.status == 204;
  asbi_http_resp_free(&resp);
  asbi_buf_free(&u);
  asbi_buf_free(&h);
  return ok;
}

static const char *engine_binary(void) {
  const char *env = asbi_getenv("ASB_ENGINE_BIN");
  if (env) return env;
  if (*ASB_ENGINE_BUILD_PATH && access(ASB_ENGINE_BUILD_PATH, X_OK) == 0)
    return ASB_ENGINE_BUILD_PATH;
  if (*ASB_ENGINE_INSTALL_PATH && access(ASB_ENGINE_INSTALL_PATH, X_OK) == 0)
    return ASB_ENGINE_INSTALL_PATH;
  return "agent-sandboxd"; /* from PATH */
}

/* Start `agent-sandboxd --daemon --state-dir <dir> [$ASB_ENGINE_ARGS]` and
 * wait for it; then follow the URL it records (it may listen elsewhere). */
static int start_engine(asb_client *c) {
  const char *bin = engine_binary();
  const char *extra = asbi_getenv("ASB_ENGINE_ARGS");
  char *extra_copy = asbi_strdup(extra ? extra : "");
  const char *argv[32];
  int n = 0;
  argv[n++] = bin;
  argv[n++] = "--daemon";
  argv[n++] = "--state-dir";
  argv[n++] = c->state_dir;
  char *save = NULL;
  for (char *t = extra_copy ? strtok_r(extra_copy, " \t", &save) : NULL; t && n < 30;
       t = strtok_r(NULL, " \t", &save))
    argv[n++] = t;
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    free(extra_copy);
    return asbi_err(ASB_ECONNECTION, "cannot start the local engine: %s", strerror(errno));
  }
  if (pid == 0) {
    /* The engine outlives this process and must not depend on its host's
     * state (an FFI host, a daemon — docs/ffi.md): signals the host ignores
     * (SIGCHLD: the engine would lose its children's exit statuses, and
     * failed to start at all) or blocks in this thread stay so across exec,
     * and every descriptor without O_CLOEXEC would be held open by the
     * engine for its lifetime. Only async-signal-safe calls between fork
     * and exec: the host may have other threads. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL); /* EINVAL for KILL, STOP, libc's */
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
      dup2(nul, 2);
    }
    if (close_range(3, ~0u, 0) != 0)
      for (int fd = 3; fd < 4096; fd++) close(fd);
    execvp(bin, (char *const *)argv);
    _exit(127);
  }
  free(extra_copy);
  int status = 0;
  /* --daemon: the parent exits once detached. Only this pid is waited for
   * (a host's own children are its business); a host signal handler
   * without SA_RESTART must not leave it a zombie, and a host that ignores
   * SIGCHLD has it reaped already (ECHILD: then the health check below
   * tells whether it started). */
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return asbi_err(ASB_ECONNECTION,
                    "the local engine (%s) could not start (exit %d); run "
                    "`agent-sandboxd --preflight` as root to see why, or set "
                    "E2B_API_URL/E2B_API_KEY to use a remote engine",
                    bin, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  uint64_t deadline = asbi_now_ms() + ENGINE_START_WAIT_MS;
  while (asbi_now_ms() < deadline) {
    pthread_mutex_lock(&c->mu);
    if (!c->api_key) read_key(c);
    pthread_mutex_unlock(&c->mu);
    asbi_client_follow_engine_url(c);
    if (c->api_key && engine_healthy(c, c->api_url)) return ASB_OK;
    usleep(20000);
  }
  return asbi_err(ASB_ETIMEOUT,
                  "the local engine did not answer within %d ms "
                  "(see %s/engine.log)",
                  ENGINE_START_WAIT_MS, c->state_dir);
}

int asbi_client_local_prepare(asb_client *c, int start) {
  if (!c->local) return ASB_OK;
  pthread_mutex_lock(&c->mu);
  int krc = c->api_key ? 0 : read_key(c);
  pthread_mutex_unlock(&c->mu);
  if (start <= 0) {
    if (krc == -EACCES)
      return asbi_err(ASB_EAUTH,
                      "cannot read the local engine's API key in %s: "
                      "permission denied (run as root or set E2B_API_KEY)",
                      c->state_dir);
    /* No key in the state dir: its engine never ran (it writes the key
     * before it listens), so whatever answers on the default port is
     * another engine. Start ours instead of sending that one a request
     * without a key (401). Not for a call that may not start it. */
    if (start < 0 || krc != -ENOENT) return ASB_OK;
  }
  pthread_mutex_lock(&start_mu);
  int rc = ASB_OK;
  if (c->api_key && engine_healthy(c, c->api_url))
    rc = ASB_OK;
  else if (!c->autostart)
    rc = asbi_err(ASB_ECONNECTION,
                  "the local engine (%s, state dir %s) is not running and autostart is off "
                  "(asb_client_options.autostart / ASB_AUTOSTART)",
                  c->api_url, c->state_dir);
  else
    rc = start_engine(c);
  pthread_mutex_unlock(&start_mu);
  return rc;
}
