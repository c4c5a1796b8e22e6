/* Sessions on disk through the public API: save, get, list, delete, bad
 * names, corrupt files, and many processes writing at once.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asb_testing.h"

static char DIR_[128];
static asb_client *C;

static asb_sandbox *handle(const char *id) {
  asb_sandbox *sb = NULL;
  asb_sandbox_attach(&sb, C, id, NULL);
  return sb;
}

TEST(save_get_list_delete) {
  asb_sandbox *sb = handle("abc123");
  const char *meta[] = {"project=demo", "owner=me", NULL};
  REQUIRE_RC(asb_session_save("work", sb, meta), ASB_OK);
  asb_session *s = NULL;
  REQUIRE_RC(asb_session_get(&s, "work"), ASB_OK);
  CHECK_STR(asb_session_name(s), "work");
  CHECK_STR(asb_session_sandbox_id(s), "abc123");
  CHECK_STR(asb_session_metadata(s, "project"), "demo");
  CHECK(asb_session_metadata(s, "nope") == NULL);
  CHECK(asb_session_created_at(s) > 1700000000);
  asb_session_free(s);
  char path[256];
  snprintf(path, sizeof path, "%s/work.json", DIR_);
  struct stat st;
  REQUIRE(stat(path, &st) == 0);
  CHECK_INT(st.st_mode & 0777, 0600);
  /* Replace under the same name. */
  asb_sandbox *sb2 = handle("def456");
  REQUIRE_RC(asb_session_save("work", sb2, NULL), ASB_OK);
  REQUIRE_RC(asb_session_save("other", sb, NULL), ASB_OK);
  asb_session_list *l = NULL;
  REQUIRE_RC(asb_sessions_list(&l), ASB_OK);
  CHECK_INT(asb_session_list_count(l), 2);
  CHECK_STR(asb_session_name(asb_session_list_get(l, 0)), "other");
  CHECK_STR(asb_session_sandbox_id(asb_session_list_get(l, 1)), "def456");
  asb_session_list_free(l);
  CHECK_RC(asb_session_delete("work"), ASB_OK);
  CHECK_RC(asb_session_delete("work"), ASB_ENOTFOUND);
  CHECK_RC(asb_session_get(&s, "work"), ASB_ENOTFOUND);
  CHECK_RC(asb_session_delete("other"), ASB_OK);
  asb_sandbox_free(sb);
  asb_sandbox_free(sb2);
}

TEST(bad_names_and_corrupt_files) {
  asb_sandbox *sb = handle("abc123");
  const char *bad[] = {"", "../escape", "a/b", ".hidden", "sp ace", NULL};
  for (int i = 0; bad[i]; i++) CHECK_RC(asb_session_save(bad[i], sb, NULL), ASB_EINVAL);
  asb_session *s = NULL;
  CHECK_RC(asb_session_get(&s, "../../etc/passwd"), ASB_EINVAL);
  char path[256];
  snprintf(path, sizeof path, "%s/broken.json", DIR_);
  FILE *f = fopen(path, "w");
  fputs("{not json", f);
  fclose(f);
  CHECK_RC(asb_session_get(&s, "broken"), ASB_EPROTOCOL);
  asb_session_list *l = NULL;
  REQUIRE_RC(asb_sessions_list(&l), ASB_OK); /* a corrupt file is skipped */
  CHECK_INT(asb_session_list_count(l), 0);
  asb_session_list_free(l);
  remove(path);
  const char *badmeta[] = {"novalue", NULL};
  CHECK_RC(asb_session_save("ok", sb, badmeta), ASB_EINVAL);
  asb_sandbox_free(sb);
}

TEST(concurrent_processes) {
  /* 8 processes save and read their own sessions and one shared name at
   * once; every read sees a whole record. */
  pid_t kids[8];
  for (int k = 0; k < 8; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      asb_client *c = NULL;
      asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
      o.api_url = "http://127.0.0.1:9";
      asb_client_new(&c, &o);
      int bad = 0;
      for (int i = 0; i < 100; i++) {
        char id[32], name[32];
        snprintf(id, sizeof id, "sbx%dx%d", k, i);
        snprintf(name, sizeof name, "p%d", k);
        asb_sandbox *sb = NULL;
        asb_sandbox_attach(&sb, c, id, NULL);
        if (asb_session_save(name, sb, NULL) || asb_session_save("shared", sb, NULL)) bad++;
        asb_session *s = NULL;
        if (asb_session_get(&s, "shared") != ASB_OK || strncmp(asb_session_sandbox_id(s), "sbx", 3))
          bad++;
        asb_session_free(s);
        asb_sandbox_free(sb);
      }
      asb_client_free(c);
      _exit(bad ? 1 : 0);
    }
  }
  int failed = 0;
  for (int k = 0; k < 8; k++) {
    int st = 0;
    waitpid(kids[k], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st)) failed++;
  }
  CHECK_INT(failed, 0);
  asb_session_list *l = NULL;
  REQUIRE_RC(asb_sessions_list(&l), ASB_OK);
  CHECK_INT(asb_session_list_count(l), 9);
  asb_session_list_free(l);
}

int main(void) {
  snprintf(DIR_, sizeof DIR_, "/tmp/asb-sessions-%d", (int)getpid());
  setenv("ASB_SESSION_DIR", DIR_, 1);
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.api_url = "http://127.0.0.1:9";
  if (asb_client_new(&C, &o) != ASB_OK) return 1;
  RUN(save_get_list_delete);
  RUN(bad_names_and_corrupt_files);
  RUN(concurrent_processes);
  asb_client_free(C);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", DIR_);
  if (system(cmd) != 0) return 1;
  TEST_MAIN_END();
}
