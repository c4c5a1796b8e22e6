/* The C ABI's volume mounts (asb_sandbox_options version 3, volume_mounts
 * "PATH=VOLUME") against the real engine: two sandboxes made through the
 * library share a volume made through E2B's /volumes API, by struct and by
 * name (asb_options_add_string); a malformed entry is refused locally, an
 * unknown volume by the engine, and a version-2 struct never sends one.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static char VOL[64];

static size_t sink(char *p, size_t s, size_t n, void *u) {
  (void)p, (void)u;
  return s * n;
}

/* METHOD /volumes[...] with the API key; the HTTP status. */
static long volumes_call(const char *method, const char *path, const char *body) {
  CURL *h = curl_easy_init();
  char url[256], key[200];
  snprintf(url, sizeof url, "%s%s", F.url, path);
  snprintf(key, sizeof key, "X-API-Key: %s", F.key);
  struct curl_slist *hd = curl_slist_append(NULL, key);
  hd = curl_slist_append(hd, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  if (body) curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  long st = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  return st;
}

static char *run(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, cmd, NULL) != ASB_OK) {
    ASBT_FAIL("%s: %s", cmd, asb_error_message(asb_error_last()));
    asb_command_result_free(r);
    return strdup("");
  }
  char *s = strdup(asb_command_result_stdout(r, NULL));
  asb_command_result_free(r);
  return s;
}

TEST(two_sandboxes_share_a_volume) {
  char m[128];
  snprintf(m, sizeof m, "/mnt/shared=%s", VOL);
  const char *mounts[] = {m, NULL};
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.volume_mounts = mounts;
  asb_sandbox *a = NULL, *b = NULL;
  REQUIRE_RC(asb_sandbox_create(&a, C, &o), ASB_OK);
  /* by name, at another path */
  void *ob = NULL;
  REQUIRE_RC(asb_options_new(&ob, "asb_sandbox_options", 3), ASB_OK);
  snprintf(m, sizeof m, "/home/user/v=%s", VOL);
  CHECK_RC(asb_options_add_string(ob, "volume_mounts", m), ASB_OK);
  CHECK_RC(asb_sandbox_create(&b, C, ob), ASB_OK);
  asb_options_free(ob);
  if (b) {
    free(run(a, "echo from-a > /mnt/shared/f"));
    char *s = run(b, "cat /home/user/v/f; stat -c %U /home/user/v/f");
    CHECK_STR(s, "from-a\nuser\n");
    free(s);
  }
  /* mounted: the volume is not deleted */
  char path[128];
  snprintf(path, sizeof path, "/volumes/%s", VOL);
  CHECK(volumes_call("DELETE", path, NULL) == 409);
  asb_sandbox_kill(a, NULL);
  if (b) asb_sandbox_kill(b, NULL);
  asb_sandbox_free(a);
  asb_sandbox_free(b);
}

TEST(refusals) {
  const char *bad[] = {"no-equals-sign", NULL};
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.volume_mounts = bad;
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_EINVAL);
  const char *unknown[] = {"/data=no-such-volume", NULL};
  o.volume_mounts = unknown;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_ENOTFOUND);
  const char *proc[] = {"/proc/x=no-such-volume", NULL};
  o.volume_mounts = proc;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_EINVAL);
  CHECK(strstr(asb_error_message(asb_error_last()), "volume mount path") != NULL);
  /* options of version 2 (a program built before volume_mounts) have no
   * such member: the by-name setter refuses it, and nothing is mounted */
  void *old = NULL;
  REQUIRE_RC(asb_options_new(&old, "asb_sandbox_options", 2), ASB_OK);
  CHECK_RC(asb_options_add_string(old, "volume_mounts", "/mnt/shared=x"), ASB_EVERSION);
  CHECK_RC(asb_options_set_int(old, "timeout_ms", 30000), ASB_OK);
  CHECK_RC(asb_sandbox_create(&sb, C, old), ASB_OK);
  if (sb) {
    char *s = run(sb, "test -e /mnt/shared && echo mounted || echo none");
    CHECK_STR(s, "none\n");
    free(s);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  asb_options_free(old);
}

int main(void) {
  if (engine_fixture_start(&F, "volclient") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  if (engine_fixture_client(&F, &C) != ASB_OK) {
    engine_fixture_stop(&F);
    return 1;
  }
  snprintf(VOL, sizeof VOL, "vc-%d", (int)getpid());
  char body[128];
  snprintf(body, sizeof body, "{\"name\":\"%s\",\"sizeMB\":32}", VOL);
  if (volumes_call("POST", "/volumes", body) != 201) {
    fprintf(stderr, "cannot create a volume\n");
    asb_client_free(C);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(two_sandboxes_share_a_volume);
  RUN(refusals);
  asb_client_free(C);
  /* the volume and its image go with the state dir; no mount outlives the
   * engine (its mounts are fds, the sandboxes' go with them) */
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
