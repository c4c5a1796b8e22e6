/* testing.h plus checks that show the library's last error on failure.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ASB_TESTING_H
#define ASB_ASB_TESTING_H

#include <agentsandbox.h>

#include "testing.h"

#define REQUIRE_RC(expr, code)                                                                 \
  do {                                                                                         \
    int rc_ = (expr);                                                                          \
    if (rc_ != (code)) {                                                                       \
      ASBT_FAIL("%s: got %s (%d), want %d: %s", #expr, asb_status_name(rc_), rc_, (int)(code), \
                asb_error_last()->message);                                                    \
      return;                                                                                  \
    }                                                                                          \
  } while (0)

#define CHECK_RC(expr, code)                                                                   \
  do {                                                                                         \
    int rc_ = (expr);                                                                          \
    if (rc_ != (code))                                                                         \
      ASBT_FAIL("%s: got %s (%d), want %d: %s", #expr, asb_status_name(rc_), rc_, (int)(code), \
                asb_error_last()->message);                                                    \
  } while (0)

/* Kills sb (a check: it must be killed) and frees its handle. */
static inline void asbt_kill(asb_sandbox *sb) {
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* Starts cmd in sb as user (NULL: the sandbox's default user) with no
 * time limit: ASB_OK and the process in *p (p NULL: it runs on, its
 * handle freed). */
static inline int asbt_start(asb_process **p, asb_sandbox *sb, const char *user, const char *cmd) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.user = user;
  o.timeout_ms = -1;
  asb_process *q = NULL;
  int rc = asb_commands_start(&q, sb, cmd, &o);
  if (p)
    *p = q;
  else
    asb_process_free(q);
  return rc;
}

/* A command's stdout as `user` (NULL: the sandbox's default user),
 * malloc'd; "<error>" (said on stderr) if it could not run. */
static inline char *asbt_run_as(asb_sandbox *sb, const char *user, const char *cmd) {
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.user = user;
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, cmd, &o) != ASB_OK) {
    fprintf(stderr, "run '%s': %s\n", cmd, asb_error_last()->message);
    asb_command_result_free(r);
    return strdup("<error>");
  }
  char *s = strdup(asb_command_result_stdout(r, NULL));
  asb_command_result_free(r);
  return s;
}

static inline char *asbt_run_out(asb_sandbox *sb, const char *cmd) {
  return asbt_run_as(sb, NULL, cmd);
}

/* A sandbox file's content once it has `len` bytes (0: once it is not
 * empty), malloc'd; NULL at the deadline. */
static inline char *asbt_wait_file(asb_sandbox *sb, const char *path, size_t len) {
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end; usleep(100000)) {
    char *d = NULL;
    size_t n = 0;
    if (asb_files_read(&d, &n, sb, path, NULL) == ASB_OK && (len ? n == len : n > 0)) {
      char *s = strndup(d, n);
      asb_free(d);
      return s;
    }
    asb_free(d);
  }
  return NULL;
}

/* Runs code in sb's code interpreter (context ctx, NULL: the default)
 * within 60 s: the main result's text ("<none>" without one), "!Name:
 * value" for an error, "<status: message>" when the call failed;
 * malloc'd. */
static inline char *asbt_code_value(asb_sandbox *sb, const char *code, const char *ctx) {
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.context_id = ctx;
  o.timeout_ms = 60000;
  asb_execution *e = NULL;
  int rc = asb_code_run(&e, sb, code, &o);
  char buf[512];
  if (rc != ASB_OK)
    snprintf(buf, sizeof buf, "<%s: %s>", asb_strerror(rc), asb_error_last()->message);
  else if (asb_execution_error_name(e))
    snprintf(buf, sizeof buf, "!%s: %s", asb_execution_error_name(e), asb_execution_error_value(e));
  else
    snprintf(buf, sizeof buf, "%s", asb_execution_text(e) ? asb_execution_text(e) : "<none>");
  asb_execution_free(e);
  return strdup(buf);
}

#endif
