/* Unit tests for envd's state (core/envd/state.c): the /init environment
 * variables next to envd's own, and /init itself — the token guard (only
 * the current token may re-init), the authenticated rotation, timestamp
 * order, what an /init changes and what it leaves. SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "testing.h"

/* 1 when the env snapshot holds exactly "K=V". */
static int has_env(const char *kv) {
  size_t n = 0;
  char **v = envd_env_snapshot(&n);
  int found = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i], kv) == 0) found = 1;
  CHECK(v[n] == NULL);
  envd_strv_free(v);
  return found;
}

static size_t env_count(void) {
  size_t n = 0;
  char **v = envd_env_snapshot(&n);
  envd_strv_free(v);
  return n;
}

/* An /init whose X-Access-Token header is auth (NULL: none). */
static int init_auth(const char *auth, const char *tok, const char *user, const char *wd,
                     const char *envs_json, int has_ts, int64_t ts) {
  cJSON *envs = envs_json ? cJSON_Parse(envs_json) : NULL;
  envd_init in = {tok, auth, user, wd, envs, has_ts, ts};
  int rc = envd_state_init(&in);
  cJSON_Delete(envs);
  return rc;
}

static int init_with(const char *tok, const char *user, const char *wd, const char *envs_json,
                     int has_ts, int64_t ts) {
  return init_auth(NULL, tok, user, wd, envs_json, has_ts, ts);
}

static void check_state(const char *tok, const char *user, const char *wd) {
  char *t = envd_token(), *u = envd_default_user(), *w = envd_default_workdir();
  if ((tok ? !t || strcmp(t, tok) : t != NULL) || strcmp(u ? u : "", user) != 0 ||
      (wd ? !w || strcmp(w, wd) : w != NULL))
    ASBT_FAIL("state token=%s user=%s workdir=%s, want %s %s %s", t ? t : "(none)",
              u ? u : "(none)", w ? w : "(none)", tok ? tok : "(none)", user, wd ? wd : "(none)");
  free(t);
  free(u);
  free(w);
}

TEST(env_vars) {
  envd_env_set_internal("E2B_SANDBOX", "true");
  cJSON *o = cJSON_Parse(
      "{\"A\":\"1\",\"B\":\"two words\",\"E2B_SANDBOX\":\"no\","
      "\"\":\"empty\",\"K=V\":\"x\",\"N\":5}");
  envd_env_replace(o);
  cJSON_Delete(o);
  CHECK(has_env("A=1"));
  CHECK(has_env("B=two words"));
  CHECK(has_env("E2B_SANDBOX=true")); /* envd's own cannot be replaced */
  CHECK_INT(env_count(), 3);          /* "", "K=V" and non-strings dropped */
  cJSON *j = envd_env_json();
  cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "A");
  CHECK(cJSON_IsString(a) && strcmp(a->valuestring, "1") == 0);
  CHECK_INT(cJSON_GetArraySize(j), 3);
  cJSON_Delete(j);
  /* a replacement removes what it does not name, envd's own stay */
  o = cJSON_Parse("{\"B\":\"2\"}");
  envd_env_replace(o);
  cJSON_Delete(o);
  CHECK(!has_env("A=1"));
  CHECK(has_env("B=2"));
  CHECK(has_env("E2B_SANDBOX=true"));
  CHECK_INT(env_count(), 2);
  o = cJSON_CreateObject();
  envd_env_replace(o);
  cJSON_Delete(o);
  CHECK_INT(env_count(), 1);
  /* envd may change its own */
  envd_env_set_internal("E2B_SANDBOX", "false");
  CHECK(has_env("E2B_SANDBOX=false"));
  CHECK_INT(env_count(), 1);
}

TEST(init_sets_and_guards_the_token) {
  g_envd.default_user = strdup("root");
  check_state(NULL, "root", NULL);
  /* without a token, anyone may init: the token is set */
  CHECK_INT(init_with("t1", "user", "/work", "{\"X\":\"1\"}", 1, 100), ENVD_INIT_APPLIED);
  check_state("t1", "user", "/work");
  CHECK(has_env("X=1"));
  /* now only t1 may: no token, or another one, changes nothing */
  CHECK_INT(init_with(NULL, "evil", "/evil", "{\"Y\":\"1\"}", 1, 200), ENVD_INIT_RESET_DENIED);
  CHECK_INT(init_with("", "evil", "/evil", NULL, 0, 0), ENVD_INIT_RESET_DENIED);
  CHECK_INT(init_with("t2", "evil", "/evil", NULL, 1, 300), ENVD_INIT_BAD_TOKEN);
  CHECK_INT(init_with("t1x", NULL, NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  check_state("t1", "user", "/work");
  CHECK(has_env("X=1") && !has_env("Y=1"));
  /* the token holder's /init applies; empty user and workdir and absent
   * envVars leave what is there; the token stays (once set it can only be
   * presented again, never changed) */
  CHECK_INT(init_with("t1", "", NULL, NULL, 1, 400), ENVD_INIT_APPLIED);
  check_state("t1", "user", "/work");
  CHECK(has_env("X=1"));
  CHECK_INT(init_with("t1", NULL, NULL, NULL, 1, 500), ENVD_INIT_APPLIED);
  check_state("t1", "user", "/work");
}

TEST(init_timestamps) {
  /* continues from the state above: token t1, newest timestamp 500 */
  CHECK_INT(init_with("t1", "older", "/older", "{\"Z\":\"1\"}", 1, 499), ENVD_INIT_STALE);
  CHECK_INT(init_with("t1", "older", "/older", "{\"Z\":\"1\"}", 1, 500), ENVD_INIT_STALE);
  check_state("t1", "user", "/work");
  CHECK(!has_env("Z=1"));
  CHECK_INT(init_with("t1", "newer", "/newer", "{\"Z\":\"1\"}", 1, 501), ENVD_INIT_APPLIED);
  check_state("t1", "newer", "/newer");
  CHECK(has_env("Z=1") && !has_env("X=1"));
  /* without a timestamp an /init always applies, and keeps the newest */
  CHECK_INT(init_with("t1", "nots", NULL, NULL, 0, 0), ENVD_INIT_APPLIED);
  check_state("t1", "nots", "/newer");
  CHECK_INT(init_with("t1", "stale", NULL, NULL, 1, 501), ENVD_INIT_STALE);
  check_state("t1", "nots", "/newer");
  /* a stale /init by someone else is still refused first */
  CHECK_INT(init_with("t9", NULL, NULL, NULL, 1, 1), ENVD_INIT_BAD_TOKEN);
}

/* The rotation (a fork's envd restored with its parent's token): the
 * current token in X-Access-Token, the new one in the body. Nothing else
 * rotates it: a wrong header, no header, a header and no new token. */
TEST(init_rotates_the_token_authenticated) {
  envd_state_free();
  g_envd.default_user = strdup("root");
  CHECK_INT(init_with("parent", "user", "/home/user", "{\"P\":\"1\"}", 1, 100), ENVD_INIT_APPLIED);
  /* a wrong or missing header: E2B's guard as before */
  CHECK_INT(init_auth("guess", "fork", NULL, NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  CHECK_INT(init_auth("", "fork", NULL, NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  CHECK_INT(init_auth("fork", "fork", NULL, NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  CHECK_INT(init_auth("paren", "fork", NULL, NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  /* the right header but no new token: no reset */
  CHECK_INT(init_auth("parent", NULL, NULL, NULL, NULL, 0, 0), ENVD_INIT_RESET_DENIED);
  CHECK_INT(init_auth("parent", "", NULL, NULL, NULL, 0, 0), ENVD_INIT_RESET_DENIED);
  check_state("parent", "user", "/home/user");
  /* the rotation, with the fork's variables */
  CHECK_INT(init_auth("parent", "fork", NULL, NULL, "{\"F\":\"2\"}", 0, 0), ENVD_INIT_APPLIED);
  check_state("fork", "user", "/home/user");
  CHECK(has_env("F=2") && !has_env("P=1"));
  /* the old token is nobody's now: neither in the body nor in the header */
  CHECK_INT(init_with("parent", "evil", NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  CHECK_INT(init_auth("parent", "back", NULL, NULL, NULL, 0, 0), ENVD_INIT_BAD_TOKEN);
  check_state("fork", "user", "/home/user");
  /* the same token in the header and the body is an ordinary re-init */
  CHECK_INT(init_auth("fork", "fork", "u2", NULL, NULL, 0, 0), ENVD_INIT_APPLIED);
  check_state("fork", "u2", "/home/user");
  /* a rotation keeps the timestamp order of what it applies */
  CHECK_INT(init_auth("fork", "third", NULL, NULL, NULL, 1, 50), ENVD_INIT_STALE);
  check_state("fork", "u2", "/home/user");
}

TEST(init_without_a_token_set) {
  envd_state_free(); /* a fresh state */
  CHECK_INT(init_with(NULL, "a", NULL, "{\"K\":\"v\"}", 0, 0), ENVD_INIT_APPLIED);
  check_state(NULL, "a", NULL);
  CHECK(has_env("K=v"));
  CHECK_INT(init_with("", "b", "w", NULL, 0, 0), ENVD_INIT_APPLIED);
  check_state(NULL, "b", "w"); /* "" is no token */
}

int main(void) {
  RUN(env_vars);
  RUN(init_sets_and_guards_the_token);
  RUN(init_timestamps);
  RUN(init_rotates_the_token_authenticated);
  RUN(init_without_a_token_set);
  envd_state_free();
  TEST_MAIN_END();
}
