/* The --pause-criu tests' fixture (e2e.pause_criu, net.pause_criu,
 * security.criu): the criu binary ($ASB_CRIU, else
 * /var/cache/agent-sandbox/criu/bin/criu, scripts/build-criu.sh), a test
 * engine started with --pause-criu --criu <it> and its client, and what
 * their tests do to a sandbox around a checkpoint. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CRIU_FIXTURE_H
#define ASB_CRIU_FIXTURE_H

#include <agentsandbox.h>
#include <curl/curl.h>

#include "asb_testing.h"
#include "engine_http.h"

/* The engine's options (they outlive the fixture: restarts pass them). */
static const char *criu_fixture_args[4];

/* Starts *f (state dir and cgroup named after tag) with --pause-criu and
 * *c, its client, after curl_global_init: 0; 77 (the skip line printed,
 * as `test`) when there is no criu binary; 1 when the engine does not
 * start. */
static inline int criu_fixture_start(engine_fixture *f, asb_client **c, const char *test,
                                     const char *tag) {
  const char *criu = getenv("ASB_CRIU");
  if (!criu || !*criu) criu = "/var/cache/agent-sandbox/criu/bin/criu";
  if (access(criu, X_OK) != 0) {
    printf(
        "SKIP %s: no criu binary at %s (build it with scripts/build-criu.sh, or "
        "set ASB_CRIU)\n",
        test, criu);
    return 77;
  }
  criu_fixture_args[0] = "--pause-criu";
  criu_fixture_args[1] = "--criu";
  criu_fixture_args[2] = criu;
  criu_fixture_args[3] = NULL;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (engine_fixture_start_args(f, tag, criu_fixture_args) != 0 ||
      engine_fixture_client(f, c) != ASB_OK) {
    fprintf(stderr, "cannot start the engine (%s --pause-criu)\n", ASB_ENGINE_BIN);
    engine_fixture_stop(f);
    return 1;
  }
  return 0;
}

static inline void criu_fixture_stop(engine_fixture *f, asb_client *c) {
  asb_client_free(c);
  engine_fixture_stop(f);
  curl_global_cleanup();
}

/* A sandbox of c's for 300 s (autoPause, autoResume as asked), its id in
 * id: NULL if it could not be made. */
static inline asb_sandbox *criu_fixture_sandbox(asb_client *c, char id[64], int auto_pause,
                                                int auto_resume) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  o.auto_pause = auto_pause;
  o.auto_resume = auto_resume;
  if (asb_sandbox_create(&sb, c, &o) != ASB_OK) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    return NULL;
  }
  snprintf(id, 64, "%s", asb_sandbox_id(sb));
  return sb;
}

/* Starts cmd in the sandbox as user (NULL: its default user), with no
 * time limit, and lets it run. */
static inline int criu_fixture_spawn(asb_sandbox *sb, const char *user, const char *cmd) {
  return asbt_start(NULL, sb, user, cmd);
}

/* The sandbox's host uid range from its runtime record (0 if none). */
static inline unsigned long criu_fixture_host_uid(const engine_fixture *f, const char *id) {
  char v[32];
  return strtoul(engine_fixture_record(f, id, "host_uid", v, sizeof v), NULL, 10);
}

/* The counter the criu tests run (a shell appending 0, 1, 2... to
 * /tmp/count): its last number, and whether the file counts without a gap
 * or a restart (-1: unreadable). */
static inline long criu_fixture_last_count(asb_sandbox *sb, int *in_order) {
  char *d = NULL;
  size_t n = 0;
  long last = -1;
  *in_order = 1;
  if (asb_files_read(&d, &n, sb, "/tmp/count", NULL) != ASB_OK) {
    asb_free(d);
    return -1;
  }
  char *s = strndup(d, n);
  asb_free(d);
  for (char *save = NULL, *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    long v = atol(l);
    if (v != last + 1) *in_order = 0;
    last = v;
  }
  free(s);
  return last;
}

/* Waits until the counter is past `than`. */
static inline long criu_fixture_count_past(asb_sandbox *sb, long than, int *in_order) {
  long v = -1;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000))
    if ((v = criu_fixture_last_count(sb, in_order)) > than) break;
  return v;
}

#endif
