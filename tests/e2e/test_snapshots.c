/* Snapshots and fork through the C ABI against a real agent-sandboxd
 * (docs/snapshots.md): asb_sandbox_snapshot (files of that instant, the
 * parent untouched), a create from the snapshot id, asb_sandbox_fork (its
 * writes not the parent's), asb_snapshots_list with its filters, delete
 * through asb_templates_delete, and the errors of a killed sandbox.
 * Runs as root; cleans up the engine and its sandboxes.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdlib.h>
#include <string.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;

static asb_sandbox *make(const char *tmpl) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = tmpl;
  o.timeout_ms = 300000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, C, &o) != ASB_OK) {
    fprintf(stderr, "create %s: %s\n", tmpl, asb_error_last()->message);
    return NULL;
  }
  return sb;
}

/* stdout of cmd (malloc'd), "<error>" when it could not run */
static char *sh(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, cmd, NULL);
  char *out = strdup(r ? asb_command_result_stdout(r, NULL) : "<error>");
  if (rc != ASB_OK && rc != ASB_ECOMMANDEXIT)
    fprintf(stderr, "run '%s': %s\n", cmd, asb_error_last()->message);
  asb_command_result_free(r);
  return out;
}

#define CHECK_SH(sb, cmd, want) \
  do {                          \
    char *got_ = sh(sb, cmd);   \
    CHECK_STR(got_, want);      \
    free(got_);                 \
  } while (0)

static size_t listed(const char *sandbox_id, const char *name, const char *want) {
  asb_snapshot_list *l = NULL;
  if (asb_snapshots_list(&l, C, sandbox_id, name, NULL) != ASB_OK) return (size_t)-1;
  size_t n = asb_snapshot_list_count(l), found = 0;
  for (size_t i = 0; i < n; i++)
    if (want && !strcmp(asb_snapshot_list_get(l, i), want)) found++;
  if (asb_snapshot_list_get(l, n) != NULL) found = (size_t)-2;
  asb_snapshot_list_free(l);
  return want ? found : n;
}

TEST(snapshot_fork_list_delete) {
  asb_sandbox *p = make("base");
  REQUIRE(p);
  CHECK_SH(p, "echo before > /home/user/f && cat /home/user/f", "before\n");
  char *id = NULL;
  REQUIRE_RC(asb_sandbox_snapshot(&id, p, "c-snap", NULL), ASB_OK);
  CHECK_STR(id, "c-snap:default");
  CHECK_SH(p, "echo after > /home/user/f && cat /home/user/f", "after\n");
  asb_sandbox *c = make(id);
  CHECK(c != NULL);
  if (c) CHECK_SH(c, "cat /home/user/f", "before\n");
  /* an unnamed one: its id is its name */
  char *anon = NULL;
  CHECK_RC(asb_sandbox_snapshot(&anon, p, NULL, NULL), ASB_OK);
  CHECK(anon && strlen(anon) == 20 + strlen(":default"));
  char *bad = (char *)"untouched";
  CHECK_RC(asb_sandbox_snapshot(&bad, p, "Bad/Name", NULL), ASB_EINVAL);
  CHECK(bad == NULL); /* cleared on failure */
  /* fork: the parent's files now; its writes stay its own */
  asb_sandbox *k = NULL;
  CHECK_RC(asb_sandbox_fork(&k, p, 300000, NULL), ASB_OK);
  if (k) {
    CHECK(strcmp(asb_sandbox_id(k), asb_sandbox_id(p)) != 0);
    CHECK_SH(k, "cat /home/user/f; echo k > /home/user/f", "after\n");
    CHECK_SH(p, "cat /home/user/f", "after\n");
  }
  /* lists: by source sandbox, by name, with the tag */
  CHECK_INT((long)listed(asb_sandbox_id(p), NULL, NULL), 2);
  CHECK_INT((long)listed(NULL, "c-snap", "c-snap:default"), 1);
  CHECK_INT((long)listed(NULL, "c-snap:default", NULL), 1);
  CHECK_INT((long)listed(NULL, "nothing-like-it", NULL), 0);
  /* delete: gone from the list and for creates; a second delete 404s */
  CHECK_RC(asb_templates_delete(C, id, NULL), ASB_OK);
  CHECK_RC(asb_templates_delete(C, id, NULL), ASB_ENOTFOUND);
  CHECK_INT((long)listed(NULL, "c-snap", NULL), 0);
  if (c) CHECK_SH(c, "cat /home/user/f", "before\n"); /* in use: kept */
  /* a killed sandbox: not found */
  CHECK_RC(asb_sandbox_kill(p, NULL), ASB_OK);
  char *none = NULL;
  asb_sandbox *nk = NULL;
  int rc = asb_sandbox_snapshot(&none, p, NULL, NULL);
  CHECK(rc == ASB_ESANDBOXNOTFOUND || rc == ASB_ESANDBOXGONE);
  rc = asb_sandbox_fork(&nk, p, 0, NULL);
  CHECK(rc == ASB_ESANDBOXNOTFOUND || rc == ASB_ESANDBOXGONE);
  CHECK(none == NULL && nk == NULL);
  if (anon) asb_templates_delete(C, anon, NULL);
  asb_free(anon);
  asb_free(id);
  if (k) asb_sandbox_kill(k, NULL);
  if (c) asb_sandbox_kill(c, NULL);
  asb_sandbox_free(k);
  asb_sandbox_free(c);
  asb_sandbox_free(p);
}

/* A paused sandbox snapshots and forks as it is: frozen (memory kept) or
 * stopped (files only, its writable layer read from the disk image); it
 * stays paused, and resumes with its files as they were. */
TEST(snapshot_and_fork_of_a_paused_sandbox) {
  for (int keep = 1; keep >= 0; keep--) {
    asb_sandbox *p = make("base");
    REQUIRE(p);
    CHECK_SH(p, "echo paused > /home/user/f && sync && cat /home/user/f", "paused\n");
    CHECK_INT(asb_sandbox_pause_memory(p, keep, NULL), 1);
    char *id = NULL;
    CHECK_RC(asb_sandbox_snapshot(&id, p, keep ? "c-paused-mem" : "c-paused-files", NULL), ASB_OK);
    asb_sandbox *k = NULL;
    CHECK_RC(asb_sandbox_fork(&k, p, 300000, NULL), ASB_OK);
    asb_sandbox *c = id ? make(id) : NULL;
    CHECK(c != NULL);
    if (c) CHECK_SH(c, "cat /home/user/f", "paused\n");
    if (k) CHECK_SH(k, "cat /home/user/f", "paused\n");
    asb_sandbox_info *info = NULL;
    CHECK_RC(asb_sandbox_get_info(&info, p, NULL), ASB_OK);
    if (info) CHECK_STR(asb_sandbox_info_state(info), "paused");
    asb_sandbox_info_free(info);
    CHECK_RC(asb_sandbox_resume(p, 300000, NULL), ASB_OK);
    CHECK_SH(p, "cat /home/user/f", "paused\n");
    if (id) asb_templates_delete(C, id, NULL);
    asb_free(id);
    if (k) asb_sandbox_kill(k, NULL);
    if (c) asb_sandbox_kill(c, NULL);
    asb_sandbox_kill(p, NULL);
    asb_sandbox_free(k);
    asb_sandbox_free(c);
    asb_sandbox_free(p);
  }
}

int main(void) {
  if (engine_fixture_start(&F, "snap") != 0 || engine_fixture_client(&F, &C) != 0) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(snapshot_fork_list_delete);
  RUN(snapshot_and_fork_of_a_paused_sandbox);
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
