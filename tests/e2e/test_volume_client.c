/* The C ABI's volume mounts (asb_sandbox_options version 3, volume_mounts
 * "PATH=VOLUME") against the real engine: two sandboxes made through the
 * library share a volume made through E2B's /volumes API, by struct and by
 * name (asb_options_add_string); a malformed entry is refused locally, an
 * unknown volume by the engine, and a version-2 struct never sends one.
 * And the asb_volume* calls (volume.h): create, get, list, delete, and the
 * file calls of the content API, seen from a sandbox that mounts it; a
 * volume from its token (asb_volume_from_token); a sandbox info's
 * volumeMounts and lifecycle.onTimeout.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asb_testing.h"
#include "engine_http.h"

static engine_fixture F;
static asb_client *C;
static char VOL[64];

/* METHOD /volumes[...] with the API key; the HTTP status. */
static long volumes_call(const char *method, const char *path, const char *body) {
  return engine_api(&F, method, path, body, NULL);
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
  /* E2B's SandboxInfo.volumeMounts and lifecycle, from get_info and on
   * the list's items (ListedSandbox has volumeMounts, no lifecycle) */
  asb_sandbox_info *info = NULL;
  REQUIRE_RC(asb_sandbox_get_info(&info, b, NULL), ASB_OK);
  CHECK(asb_sandbox_info_volume_mount_count(info) == 1);
  CHECK_STR(asb_sandbox_info_volume_mount_name(info, 0), VOL);
  CHECK_STR(asb_sandbox_info_volume_mount_path(info, 0), "/home/user/v");
  CHECK(asb_sandbox_info_volume_mount_name(info, 1) == NULL);
  CHECK(asb_sandbox_info_volume_mount_path(info, 1) == NULL);
  CHECK_STR(asb_sandbox_info_on_timeout(info), "kill");
  CHECK(asb_sandbox_info_auto_resume(info) == 0);
  asb_sandbox_info_free(info);
  asb_sandbox_page *page = NULL;
  REQUIRE_RC(asb_sandbox_list(&page, C, NULL), ASB_OK);
  int listed = 0;
  for (size_t i = 0; i < asb_sandbox_page_count(page); i++) {
    const asb_sandbox_info *li = asb_sandbox_page_get(page, i);
    if (strcmp(asb_sandbox_info_id(li), asb_sandbox_id(a)) != 0) continue;
    listed = 1;
    CHECK(asb_sandbox_info_volume_mount_count(li) == 1);
    CHECK_STR(asb_sandbox_info_volume_mount_path(li, 0), "/mnt/shared");
    CHECK_STR(asb_sandbox_info_volume_mount_name(li, 0), VOL);
    CHECK(asb_sandbox_info_on_timeout(li) == NULL);
  }
  CHECK(listed);
  asb_sandbox_page_free(page);
  /* mounted: the volume is not deleted */
  char path[128];
  snprintf(path, sizeof path, "/volumes/%s", VOL);
  CHECK(volumes_call("DELETE", path, NULL) == 409);
  asb_sandbox_kill(a, NULL);
  if (b) asb_sandbox_kill(b, NULL);
  asb_sandbox_free(a);
  asb_sandbox_free(b);
}

/* E2B's `new Volume(volumeId, name, token)`: a volume object from its id
 * and token with no API call; its file calls need the token, not the
 * API key (the client here has a wrong one). */
TEST(volume_from_token) {
  asb_volume *v = NULL, *t = NULL, *bad = NULL;
  REQUIRE_RC(asb_volumes_get(&v, C, VOL, NULL), ASB_OK);
  asb_client_options co = ASB_CLIENT_OPTIONS_INIT;
  co.api_url = F.url;
  co.sandbox_url = F.url;
  co.api_key = "not-the-api-key";
  co.debug = -1;
  asb_client *nokey = NULL;
  REQUIRE_RC(asb_client_new(&nokey, &co), ASB_OK);
  CHECK_RC(asb_volume_from_token(&t, nokey, asb_volume_id(v), VOL, ""), ASB_EINVAL);
  CHECK_RC(asb_volume_from_token(&t, nokey, "", VOL, asb_volume_token(v)), ASB_EINVAL);
  CHECK_RC(asb_volume_from_token(&t, nokey, asb_volume_id(v), VOL, "tok\r\nX-API-Key: k"),
           ASB_EINVAL);
  CHECK(t == NULL);
  REQUIRE_RC(asb_volume_from_token(&t, nokey, asb_volume_id(v), VOL, asb_volume_token(v)), ASB_OK);
  CHECK_STR(asb_volume_id(t), asb_volume_id(v));
  CHECK_STR(asb_volume_name(t), VOL);
  CHECK_STR(asb_volume_token(t), asb_volume_token(v));
  CHECK(asb_volume_size_mb(t) == 0);
  /* the control plane refuses that client; the content API takes the token */
  asb_volume_list *l = NULL;
  CHECK_RC(asb_volumes_list(&l, nokey, NULL), ASB_EAUTH);
  asb_volume_write_options wo = ASB_VOLUME_WRITE_OPTIONS_INIT;
  wo.force = 1;
  CHECK_RC(asb_volume_write_file(NULL, t, "/from-token", "tok", 3, &wo), ASB_OK);
  char *d = NULL;
  size_t n = 0;
  CHECK_RC(asb_volume_read_file(&d, &n, v, "/from-token", NULL), ASB_OK);
  CHECK(d && n == 3 && memcmp(d, "tok", 3) == 0);
  free(d);
  CHECK_RC(asb_volume_remove(t, "/from-token", NULL), ASB_OK);
  /* a wrong token is found out by the first call, no name is needed */
  REQUIRE_RC(asb_volume_from_token(&bad, nokey, asb_volume_id(v), NULL, "wrong-token"), ASB_OK);
  CHECK_STR(asb_volume_name(bad), "");
  CHECK_RC(asb_volume_exists(bad, "/", NULL), ASB_EAUTH);
  asb_volume_free(bad);
  /* it holds its client */
  asb_client_free(nokey);
  CHECK_RC(asb_volume_exists(t, "/", NULL), 1);
  asb_volume_free(t);
  asb_volume_free(v);
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

static char *read_all(asb_volume *v, const char *path, size_t *len) {
  char *d = NULL;
  if (asb_volume_read_file(&d, len, v, path, NULL) != ASB_OK) {
    ASBT_FAIL("read %s: %s", path, asb_error_message(asb_error_last()));
    return strdup("");
  }
  return d;
}

TEST(volume_calls) {
  char name[64];
  snprintf(name, sizeof name, "vcapi-%d", (int)getpid());
  asb_volume *v = NULL, *dup = NULL, *got = NULL;
  CHECK_RC(asb_volumes_create(&dup, C, "bad/name", 0, NULL), ASB_EINVAL);
  CHECK_RC(asb_volumes_create(&dup, C, name, 8, NULL), ASB_EINVAL); /* below 16 MiB */
  REQUIRE_RC(asb_volumes_create(&v, C, name, 32, NULL), ASB_OK);
  CHECK_STR(asb_volume_name(v), name);
  CHECK(asb_volume_size_mb(v) == 32);
  CHECK(*asb_volume_id(v) && *asb_volume_token(v));
  CHECK_RC(asb_volumes_create(&dup, C, name, 0, NULL), ASB_EEXISTS);
  CHECK(dup == NULL);
  /* by name and by id: the same volume, with its token */
  REQUIRE_RC(asb_volumes_get(&got, C, name, NULL), ASB_OK);
  CHECK_STR(asb_volume_id(got), asb_volume_id(v));
  CHECK_STR(asb_volume_token(got), asb_volume_token(v));
  asb_volume_free(got);
  got = NULL;
  REQUIRE_RC(asb_volumes_get(&got, C, asb_volume_id(v), NULL), ASB_OK);
  CHECK_STR(asb_volume_name(got), name);
  CHECK_RC(asb_volumes_get(&dup, C, "no-such-volume", NULL), ASB_ENOTFOUND);
  /* the list: no tokens, so no file calls on its items */
  asb_volume_list *l = NULL;
  REQUIRE_RC(asb_volumes_list(&l, C, NULL), ASB_OK);
  const asb_volume *li = asb_volume_list_find(l, name);
  CHECK(li != NULL && asb_volume_size_mb(li) == 32);
  CHECK(li != NULL && strcmp(asb_volume_token(li), "") == 0);
  CHECK(asb_volume_list_find(l, VOL) != NULL);
  CHECK(asb_volume_list_get(l, asb_volume_list_count(l)) == NULL);
  CHECK_RC(asb_volume_exists((asb_volume *)li, "/", NULL), ASB_EINVAL);
  asb_volume_list_free(l);

  /* files: binary content, owner, no overwrite without force */
  asb_volume_write_options wo = ASB_VOLUME_WRITE_OPTIONS_INIT;
  wo.uid = wo.gid = 1000;
  asb_volume_entry *e = NULL;
  REQUIRE_RC(asb_volume_write_file(&e, v, "/hello.bin", "hi\0x", 4, &wo), ASB_OK);
  CHECK_STR(asb_volume_entry_type(e), "file");
  CHECK_STR(asb_volume_entry_path(e), "/hello.bin");
  CHECK(asb_volume_entry_size(e) == 4 && asb_volume_entry_uid(e) == 1000);
  CHECK(asb_volume_entry_mode(e) == 0644 && asb_volume_entry_modified_at(e) > 0);
  asb_volume_entry_free(e);
  CHECK_RC(asb_volume_write_file(NULL, v, "/hello.bin", "new", 3, &wo), ASB_EEXISTS);
  size_t n = 0;
  char *d = read_all(v, "/hello.bin", &n);
  CHECK(n == 4 && memcmp(d, "hi\0x", 4) == 0);
  free(d);
  wo.force = 1;
  CHECK_RC(asb_volume_write_file(NULL, v, "/hello.bin", "new", 3, &wo), ASB_OK);
  CHECK_RC(asb_volume_read_file(&d, &n, v, "/nothing", NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_volume_read_file(&d, &n, v, "/../x", NULL), ASB_EINVAL);
  /* dirs: parents only with force */
  wo.force = 0;
  CHECK_RC(asb_volume_make_dir(NULL, v, "/a/b", &wo), ASB_ENOTFOUND);
  wo.force = 1;
  e = NULL;
  CHECK_RC(asb_volume_make_dir(&e, v, "/a/b", &wo), ASB_OK);
  CHECK(e && strcmp(asb_volume_entry_type(e), "directory") == 0 &&
        asb_volume_entry_mode(e) == 0755);
  asb_volume_entry_free(e);
  CHECK_RC(asb_volume_exists(v, "/a/b", NULL), 1);
  CHECK_RC(asb_volume_exists(v, "/a/c", NULL), 0);
  asb_volume_entry_list *el = NULL;
  REQUIRE_RC(asb_volume_entries_list(&el, v, "/", 2, NULL), ASB_OK);
  int seen = 0;
  for (size_t i = 0; i < asb_volume_entry_list_count(el); i++) {
    const char *p = asb_volume_entry_path(asb_volume_entry_list_get(el, i));
    seen |= (strcmp(p, "/hello.bin") == 0) | (strcmp(p, "/a") == 0) << 1 |
            (strcmp(p, "/a/b") == 0) << 2;
  }
  CHECK(seen == 7);
  asb_volume_entry_list_free(el);
  /* metadata: -1 keeps a value */
  e = NULL;
  REQUIRE_RC(asb_volume_update_metadata(&e, v, "/hello.bin", -1, -1, 0600, NULL), ASB_OK);
  CHECK(asb_volume_entry_mode(e) == 0600 && asb_volume_entry_uid(e) == 1000);
  asb_volume_entry_free(e);

  /* a sandbox that mounts it sees those files and its writes come back */
  char m[128];
  snprintf(m, sizeof m, "/mnt/v=%s", name);
  const char *mounts[] = {m, NULL};
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.volume_mounts = mounts;
  asb_sandbox *sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  if (sb) {
    char *s = run(sb,
                  "cat /mnt/v/hello.bin; stat -c ' %a %U' /mnt/v/hello.bin; "
                  "echo from-sandbox > /mnt/v/a/b/f; ln -s /etc/passwd /mnt/v/link");
    CHECK_STR(s, "new 600 user\n");
    free(s);
    d = read_all(v, "/a/b/f", &n);
    CHECK_STR(d, "from-sandbox\n");
    free(d);
    e = NULL;
    CHECK_RC(asb_volume_get_info(&e, v, "/link", NULL), ASB_OK);
    CHECK(e && strcmp(asb_volume_entry_type(e), "symlink") == 0);
    CHECK(e && asb_volume_entry_target(e) &&
          strcmp(asb_volume_entry_target(e), "/etc/passwd") == 0);
    asb_volume_entry_free(e);
    /* mounted: not deleted */
    CHECK_RC(asb_volumes_delete(C, name, NULL), ASB_EEXISTS);
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
  }
  /* a volume outlives its client's user reference: freeing the client
   * does not cancel the volume's calls (its own stop token) */
  asb_client *c2 = NULL;
  asb_volume *v2 = NULL;
  REQUIRE_RC(engine_fixture_client(&F, &c2), ASB_OK);
  CHECK_RC(asb_volumes_get(&v2, c2, name, NULL), ASB_OK);
  asb_client_free(c2);
  CHECK_RC(asb_volume_exists(v2, "/hello.bin", NULL), 1);
  asb_volume_free(v2);
  CHECK_RC(asb_volume_remove(v, "/a", NULL), ASB_OK);
  CHECK_RC(asb_volume_exists(v, "/a/b/f", NULL), 0);
  CHECK_RC(asb_volume_remove(v, "/a", NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_volumes_delete(C, asb_volume_id(v), NULL), ASB_OK);
  CHECK_RC(asb_volumes_get(&dup, C, name, NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_volumes_delete(C, name, NULL), ASB_ENOTFOUND);
  /* the handle outlives its client's user reference (it holds one) */
  asb_volume_free(got);
  asb_volume_free(v);
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
  RUN(volume_from_token);
  RUN(volume_calls);
  asb_client_free(C);
  /* the volume and its image go with the state dir; no mount outlives the
   * engine (its mounts are fds, the sandboxes' go with them) */
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
