/* The code interpreter (E2B's port 49999) inside sandboxes: the engine
 * launches it as the sandbox's user — at create for the code-interpreter
 * templates, else on the first request the router sees for port 49999 — and
 * the router then forwards to it like to any port.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codei.h"
#include "proto/url.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/sha256.h"
#include "util/util.h"

#define USER_UID 1000

int codei_start(engine *e, sbx *s) {
  if (!e->codei_path) return -ENOTSUP;
  pthread_mutex_lock(&s->mu);
  if (s->codei_started || s->state != SBX_RUNNING) {
    int rc = s->codei_started ? 0 : -ESRCH;
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  s->codei_started = 1;
  /* Only the tokens' SHA-256 is on its command line (anyone in the sandbox
   * reads that, and the interpreter runs as user, who can read whatever it
   * holds): a hash lets it check a token without being able to use one. */
  char access_hex[65], traffic_hex[65];
  asbi_sha256_hex(s->token, strlen(s->token), access_hex);
  asbi_sha256_hex(s->traffic_token, strlen(s->traffic_token), traffic_hex);
  const char *args[] = {"--port", ASBI_STRINGIFY(ASBI_CODE_PORT), "--listen", "127.0.0.1", "--access-token-sha256",
                        access_hex, "--traffic-token-sha256", traffic_hex, "--cwd", "/home/user",
                        NULL};
  char **argv = asbe_agent_argv("code-interpreter", args);
  /* The sandbox's environment, as envd gives it to commands. */
  size_t n = s->env_vars ? (size_t)cJSON_GetArraySize(s->env_vars) : 0;
  char **envp = calloc(n + 8, sizeof *envp);
  size_t k = 0;
  int rc = argv && envp ? 0 : -ENOMEM;
  if (!rc) {
    envp[k++] = asbi_strdup("HOME=/home/user");
    envp[k++] = asbi_strdup("USER=user");
    envp[k++] = asbi_strdup("LOGNAME=user");
    envp[k++] = asbi_strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    envp[k++] = asbi_strdup("LANG=C.UTF-8");
    envp[k++] = asbi_strdup("E2B_SANDBOX=true");
    const cJSON *it;
    cJSON_ArrayForEach(it, s->env_vars) {
      if (!cJSON_IsString(it)) continue;
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_printf(&b, "%s=%s", it->string, it->valuestring);
      envp[k++] = asbi_buf_detach(&b, NULL);
    }
    asbe_exec_opts o;
    memset(&o, 0, sizeof o);
    o.argv = (const char *const *)argv;
    o.envp = (const char *const *)envp;
    o.uid = USER_UID;
    o.gid = USER_UID;
    o.gid_set = 1;
    o.cwd = "/home/user";
    o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
    asbe_proc *p = NULL;
    rc = asbe_sandbox_exec(s->iso, &o, &p);
    if (rc)
      asbi_log("sandbox %s: cannot start the code interpreter: %s", s->id, asbe_errmsg());
    asbe_proc_free(p);
  }
  if (rc) s->codei_started = 0;
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; envp && i < k; i++) free(envp[i]);
  free(envp);
  free(argv);
  return rc;
}

int codei_connect(engine *e, sbx *s, int timeout_ms) {
  int fd = asbe_sandbox_connect_tcp(s->iso, ASBI_CODE_PORT);
  if (fd >= 0 || !e->codei_path) return fd;
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
