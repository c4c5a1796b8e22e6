/* envd under hostile input: path traversal and symlink tricks against the
 * user's permissions, malformed/truncated/oversized envelopes and JSON,
 * invalid base64, unknown pids and users, access tokens and signed URLs,
 * download ranges and encodings.
 * Needs root (it acts as the unprivileged "user"). SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <zlib.h>

#include "envd_test.h"
#include "testing.h"

static et_envd E;
static et_conn C;
static char dir[64];
static uid_t uid;
static gid_t gid;
/* The files outside the test's directory it plants or must not see
 * created, named per run (other runs may use /root and /etc meanwhile). */
static char secret[64], etc_x[96], etc_evil[96], etc_mp[96], root_made[96], root_newdir[96];
/* A root-owned 0755 directory standing in for /etc and / */
static char rootdir[64];
/* Basic base64("user:") */
#define AS_USER "Authorization: Basic dXNlcjo=\r\n"

static int write_file(const char *path, const char *s);

static int exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

TEST(files_traversal_as_user) {
  et_resp r;
  char q[512];
  /* direct, ../.. from home, and through a symlink */
  char up[96];
  snprintf(up, sizeof up, "../..%s", secret);
  const char *reads[] = {secret, up, NULL};
  for (int i = 0; reads[i]; i++) {
    snprintf(q, sizeof q, "/files?username=user&path=%s", reads[i]);
    REQUIRE(et_request(&C, "GET", q, NULL, NULL, 0, &r) == 0);
    CHECK_INT(r.status, 403);
    CHECK(strstr(r.body, "TOPSECRET") == NULL);
    et_resp_free(&r);
  }
  snprintf(q, sizeof q, "/files?username=user&path=%s/link-secret", dir);
  REQUIRE(et_request(&C, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 403);
  CHECK(strstr(r.body, "TOPSECRET") == NULL);
  et_resp_free(&r);
  /* root may */
  snprintf(q, sizeof q, "/files?username=root&path=%s", secret);
  REQUIRE(et_request(&C, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK_STR(r.body, "TOPSECRET");
  et_resp_free(&r);
  /* Writes are E2B's: as root, what they create chowned to the user, in
   * a root-owned directory too (E2B's envd writes as root; issue 20). */
  struct stat st;
  snprintf(up, sizeof up, "../..%s", etc_x);
  const char *writes[] = {etc_x, up, NULL};
  for (int i = 0; writes[i]; i++) {
    snprintf(q, sizeof q, "/files?username=user&path=%s", writes[i]);
    REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "mine", 4,
                       &r) == 0);
    CHECK_INT(r.status, 200);
    et_resp_free(&r);
    REQUIRE(stat(etc_x, &st) == 0);
    CHECK_INT(st.st_uid, uid);
    CHECK_INT(st.st_gid, gid);
    CHECK_INT(st.st_size, 4);
  }
  /* an existing root-owned file: overwritten and given to the user, as
   * E2B's envd chowns it before the write */
  char rootfile[96];
  snprintf(rootfile, sizeof rootfile, "%s/root-file", rootdir);
  REQUIRE(write_file(rootfile, "root's old content") == 0);
  chmod(rootfile, 0644);
  snprintf(q, sizeof q, "/files?username=user&path=%s", rootfile);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "new", 3, &r) ==
          0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  REQUIRE(stat(rootfile, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  CHECK_INT(st.st_size, 3);
  /* a symlink is followed as E2B follows it */
  snprintf(q, sizeof q, "/files?username=user&path=%s/link-etc", dir);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "via", 3, &r) ==
          0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  REQUIRE(stat(etc_evil, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  /* missing parents in a root-owned directory: made and chowned, the
   * existing ones (rootdir, /) untouched */
  snprintf(q, sizeof q, "/files?username=user&path=%s/deep/f", root_newdir);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "x", 1, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  REQUIRE(stat(root_newdir, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  CHECK_INT(st.st_mode & 07777, 0755);
  snprintf(q, sizeof q, "%s/deep", root_newdir);
  REQUIRE(stat(q, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  REQUIRE(stat(rootdir, &st) == 0);
  CHECK_INT(st.st_uid, 0);
  /* /proc's magic links are never followed: a write through envd's own
   * root, cwd or descriptors (which, as root, would reach whatever envd
   * holds open) is refused and creates nothing */
  char magic[160];
  snprintf(magic, sizeof magic, "/proc/self/root%s/magic", rootdir);
  snprintf(q, sizeof q, "/files?username=user&path=%s", magic);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "m", 1, &r) == 0);
  CHECK(r.status >= 400);
  et_resp_free(&r);
  snprintf(magic, sizeof magic, "%s/magic", rootdir);
  CHECK(!exists(magic));
  snprintf(q, sizeof q, "/files?username=user&path=/proc/self/fd/0");
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "m", 1, &r) == 0);
  CHECK(r.status >= 400);
  et_resp_free(&r);
  snprintf(q, sizeof q, "/files?username=user&path=/proc/self/root%s/magicdir/f", rootdir);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "m", 1, &r) == 0);
  CHECK(r.status >= 400);
  et_resp_free(&r);
  snprintf(magic, sizeof magic, "%s/magicdir", rootdir);
  CHECK(!exists(magic));
  /* multipart: the part's filename is a path like any other */
  char mp[256];
  snprintf(mp, sizeof mp,
           "--XX\r\nContent-Disposition: form-data; name=\"file\"; "
           "filename=\"../..%s\"\r\n\r\nmp\r\n--XX--\r\n",
           etc_mp);
  REQUIRE(et_request(&C, "POST", "/files?username=user",
                     "Content-Type: multipart/form-data; boundary=XX\r\n", mp, strlen(mp),
                     &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  REQUIRE(stat(etc_mp, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  /* a user's own file: created, owned by the user, parents too */
  snprintf(q, sizeof q, "/files?username=user&path=%s/mine/a/b.txt", dir);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", "ok", 2, &r) ==
          0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  snprintf(q, sizeof q, "%s/mine/a/b.txt", dir);
  REQUIRE(stat(q, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  snprintf(q, sizeof q, "%s/mine/a", dir);
  REQUIRE(stat(q, &st) == 0);
  CHECK_INT(st.st_uid, uid);
}

TEST(rpc_traversal_as_user) {
  et_resp r;
  char j[512];
  snprintf(j, sizeof j, "{\"path\":\"%s\"}", secret);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Stat", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 403);
  CHECK(strstr(r.body, "permission_denied") != NULL);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/ListDir", "{\"path\":\"/root\"}", AS_USER, &r) == 0);
  CHECK_INT(r.status, 403);
  et_resp_free(&r);
  /* MakeDir is E2B's: as root, the directories it makes the user's */
  snprintf(j, sizeof j, "{\"path\":\"../..%s/sub\"}", root_made);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/MakeDir", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.body, "\"owner\":\"user\"") != NULL);
  et_resp_free(&r);
  struct stat st;
  REQUIRE(stat(root_made, &st) == 0);
  CHECK_INT(st.st_uid, uid);
  snprintf(j, sizeof j, "{\"path\":\"/proc/self/cwd/asb-magic-%d\"}", (int)getpid());
  REQUIRE(et_unary(&C, "filesystem.Filesystem/MakeDir", j, AS_USER, &r) == 0);
  CHECK(r.status >= 400);
  et_resp_free(&r);
  snprintf(j, sizeof j, "{\"path\":\"%s\"}", secret);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Remove", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 403);
  et_resp_free(&r);
  CHECK(exists(secret));
  snprintf(j, sizeof j, "{\"source\":\"%s\",\"destination\":\"%s/stolen\"}", secret, dir);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Move", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 403);
  et_resp_free(&r);
  CHECK(exists(secret));
  /* Remove through a symlink removes the link, never the target. */
  snprintf(j, sizeof j, "{\"path\":\"%s/link-secret\"}", dir);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Remove", j, NULL, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  CHECK(exists(secret));
  char lp[128];
  snprintf(lp, sizeof lp, "%s/link-secret", dir);
  CHECK(!exists(lp));
  CHECK(symlink(secret, lp) == 0);
  /* processes run as the user */
  snprintf(j, sizeof j, "{\"process\":{\"cmd\":\"/bin/cat\",\"args\":[\"%s\"]}}", secret);
  REQUIRE(et_stream(&C, "process.Process/Start", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK(et_contains(&r, "exit status 1"));
  CHECK(!et_contains(&r, "VE9QU0VDUkVU")); /* base64 of TOPSECRET */
  et_resp_free(&r);
}

TEST(malformed_rpc) {
  et_resp r;
  const char *bad[] = {"{", "[]", "\"x\"", "{\"path\":5}", "{\"path\":\"a\"} x", "", NULL};
  for (int i = 0; bad[i]; i++) {
    REQUIRE(et_unary(&C, "filesystem.Filesystem/Stat", bad[i], NULL, &r) == 0);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "invalid_argument") != NULL);
    et_resp_free(&r);
  }
  /* truncated, huge-length and compressed envelopes on a stream */
  const char *h = "Content-Type: application/connect+json\r\n";
  const char trunc[] = {0, 0, 0, 0, 10, '{', '}'};
  const char huge[] = {0, 0x7f, 0xff, 0xff, 0xff, '{', '}'};
  const char comp[] = {1, 0, 0, 0, 2, '{', '}'};
  const char two[] = {0, 0, 0, 0, 2, '{', '}', 0, 0, 0, 0, 2, '{', '}'};
  const struct {
    const char *d;
    size_t n;
  } envs[] = {
      {trunc, sizeof trunc}, {huge, sizeof huge}, {comp, sizeof comp}, {two, sizeof two}, {"", 0},
      {"\x00\x00", 2}};
  for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
    REQUIRE(et_request(&C, "POST", "/process.Process/Start", h, envs[i].d, envs[i].n, &r) == 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(et_end_json(&r, NULL), "invalid_argument") != NULL);
    et_resp_free(&r);
  }
  /* oversized body (envd runs with --max-body 65536) */
  size_t big = 200000;
  char *b = malloc(big);
  memset(b, ' ', big);
  b[0] = '{';
  b[big - 1] = '}';
  REQUIRE(et_request(&C, "POST", "/filesystem.Filesystem/Stat",
                     "Content-Type: application/json\r\n", b, big, &r) == 0);
  CHECK_INT(r.status, 400);
  CHECK(strstr(r.body, "invalid_argument") != NULL);
  et_resp_free(&r);
  free(b);
  /* wrong content type, unknown method, wrong HTTP method */
  REQUIRE(et_request(&C, "POST", "/filesystem.Filesystem/Stat", "Content-Type: text/plain\r\n",
                     "{}", 2, &r) == 0);
  CHECK_INT(r.status, 415);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Nope", "{}", NULL, &r) == 0);
  CHECK_INT(r.status, 404);
  et_resp_free(&r);
  REQUIRE(et_request(&C, "GET", "/process.Process/List", NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 405);
  et_resp_free(&r);
  /* bad types inside a Start */
  REQUIRE(et_stream(&C, "process.Process/Start",
                    "{\"process\":{\"cmd\":\"/bin/true\",\"args\":[1]}}", NULL, &r) == 0);
  CHECK(strstr(et_end_json(&r, NULL), "invalid_argument") != NULL);
  et_resp_free(&r);
  REQUIRE(et_stream(&C, "process.Process/Start",
                    "{\"process\":{\"cmd\":\"/bin/true\",\"cwd\":\"/nonexistent-dir\"}}", NULL,
                    &r) == 0);
  CHECK(strstr(et_end_json(&r, NULL), "invalid_argument") != NULL);
  et_resp_free(&r);
}

TEST(bad_input_values) {
  et_resp r;
  /* invalid base64 to a real process */
  REQUIRE(et_stream(&C, "process.Process/Start",
                    "{\"process\":{\"cmd\":\"/bin/sleep\",\"args\":[\"0.3\"]},\"tag\":\"b64\"}",
                    "Connect-Timeout-Ms: 50\r\n", &r) == 0);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "process.Process/SendInput",
                   "{\"process\":{\"tag\":\"b64\"},\"input\":{\"stdin\":\"!!!notbase64\"}}", NULL,
                   &r) == 0);
  CHECK(r.status == 400 || r.status == 404);
  et_resp_free(&r);
  /* unknown pid: unary and stream */
  REQUIRE(et_unary(&C, "process.Process/SendSignal",
                   "{\"process\":{\"pid\":4000000},\"signal\":\"SIGNAL_SIGKILL\"}", NULL, &r) == 0);
  CHECK_INT(r.status, 404);
  CHECK(strstr(r.body, "not_found") != NULL);
  et_resp_free(&r);
  REQUIRE(et_stream(&C, "process.Process/Connect", "{\"process\":{\"pid\":4000000}}", NULL, &r) ==
          0);
  CHECK_INT(r.status, 200);
  CHECK(strstr(et_end_json(&r, NULL), "not_found") != NULL);
  et_resp_free(&r);
  /* unknown user */
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Stat", "{\"path\":\"/\"}",
                   "Authorization: Basic bm9ib2R5LXh5ejo=\r\n", &r) == 0);
  CHECK_INT(r.status, 401);
  CHECK(strstr(r.body, "unauthenticated") != NULL);
  et_resp_free(&r);
  REQUIRE(et_request(&C, "GET", "/files?path=/etc/hostname&username=nobody-xyz", NULL, NULL, 0,
                     &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  /* missing path */
  REQUIRE(et_request(&C, "GET", "/files?path=/nonexistent/x", NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 404);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/Stat", "{\"path\":\"/nonexistent/x\"}", NULL, &r) ==
          0);
  CHECK_INT(r.status, 404);
  et_resp_free(&r);
  /* a directory is not downloadable; truncated multipart; bad gzip */
  REQUIRE(et_request(&C, "GET", "/files?path=/etc", NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 400);
  et_resp_free(&r);
  char q[256];
  snprintf(q, sizeof q, "/files?path=%s/trunc", dir);
  const char *mp =
      "--XX\r\nContent-Disposition: form-data; name=\"file\"; "
      "filename=\"a\"\r\n\r\npartial";
  REQUIRE(et_request(&C, "POST", q, "Content-Type: multipart/form-data; boundary=XX\r\n", mp,
                     strlen(mp), &r) == 0);
  CHECK(r.status >= 400);
  et_resp_free(&r);
  REQUIRE(et_request(&C, "POST", q,
                     "Content-Type: application/octet-stream\r\nContent-Encoding: gzip\r\n",
                     "notgzip", 7, &r) == 0);
  CHECK_INT(r.status, 400);
  et_resp_free(&r);
  REQUIRE(et_request(&C, "POST", q,
                     "Content-Type: application/octet-stream\r\n"
                     "X-Metadata-Bad: \x01\r\n",
                     "x", 1, &r) == 0);
  CHECK_INT(r.status, 400);
  et_resp_free(&r);
}

static size_t put_env(char *out, unsigned flags, const char *json) {
  size_t n = strlen(json);
  out[0] = (char)flags;
  out[1] = (char)(n >> 24);
  out[2] = (char)(n >> 16);
  out[3] = (char)(n >> 8);
  out[4] = (char)n;
  memcpy(out + 5, json, n);
  return n + 5;
}

TEST(stream_input_and_connect) {
  et_resp r;
  /* a background cat, fed through StreamInput, read back through Connect;
   * its Start stream is left unread on a second connection */
  et_conn bg;
  REQUIRE(et_connect(&bg, E.port) == 0);
  const char *sj = "{\"process\":{\"cmd\":\"/bin/cat\"},\"tag\":\"cat1\"}";
  char sb[256], head[256];
  size_t sn = put_env(sb, 0, sj);
  int hn = snprintf(head, sizeof head,
                    "POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    "application/connect+json\r\nContent-Length: %zu\r\n\r\n",
                    sn);
  REQUIRE(et_send(&bg, head, (size_t)hn) == 0 && et_send(&bg, sb, sn) == 0);
  /* its head comes once the process runs (not after a while); the body
   * stays unread */
  et_resp bgh;
  REQUIRE(et_read_head(&bg, &bgh) == 0);
  CHECK_INT(bgh.status, 200);
  char body[512];
  size_t n = 0;
  n += put_env(body + n, 0, "{\"start\":{\"process\":{\"tag\":\"cat1\"}}}");
  n += put_env(body + n, 0, "{\"data\":{\"input\":{\"stdin\":\"aGVsbG8K\"}}}");
  n += put_env(body + n, 0, "{\"keepalive\":{}}");
  n += put_env(body + n, 2, "{}");
  REQUIRE(et_request(&C, "POST", "/process.Process/StreamInput",
                     "Content-Type: application/connect+json\r\n", body, n, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK_STR(et_end_json(&r, NULL), "{}");
  et_resp_free(&r);
  /* watch with Connect (on a third connection), then close stdin */
  et_conn w;
  REQUIRE(et_connect(&w, E.port) == 0);
  sn = put_env(sb, 0, "{\"process\":{\"tag\":\"cat1\"}}");
  hn = snprintf(head, sizeof head,
                "POST /process.Process/Connect HTTP/1.1\r\nHost: x\r\nContent-Type: "
                "application/connect+json\r\nContent-Length: %zu\r\n\r\n",
                sn);
  REQUIRE(et_send(&w, head, (size_t)hn) == 0 && et_send(&w, sb, sn) == 0);
  /* attached once its head is here: what is written next must reach it */
  et_resp wr;
  REQUIRE(et_read_head(&w, &wr) == 0);
  CHECK_INT(wr.status, 200);
  n = put_env(body, 0, "{\"start\":{\"process\":{\"tag\":\"cat1\"}}}");
  n += put_env(body + n, 0, "{\"data\":{\"input\":{\"stdin\":\"d29ybGQK\"}}}");
  n += put_env(body + n, 2, "{}");
  REQUIRE(et_request(&C, "POST", "/process.Process/StreamInput",
                     "Content-Type: application/connect+json\r\n", body, n, &r) == 0);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "process.Process/CloseStdin", "{\"process\":{\"tag\":\"cat1\"}}", NULL,
                   &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  REQUIRE(et_read_body(&w, &wr, NULL, NULL) == 0);
  CHECK(et_contains(&wr, "d29ybGQK")); /* "world\n", written after Connect */
  CHECK(et_contains(&wr, "exit status 0"));
  CHECK_STR(et_end_json(&wr, NULL), "{}");
  et_resp_free(&wr);
  et_close(&w);
  et_close(&bg);
  /* data before start; unknown process in start */
  n = put_env(body, 0, "{\"data\":{\"input\":{\"stdin\":\"eA==\"}}}");
  n += put_env(body + n, 2, "{}");
  REQUIRE(et_request(&C, "POST", "/process.Process/StreamInput",
                     "Content-Type: application/connect+json\r\n", body, n, &r) == 0);
  CHECK(strstr(et_end_json(&r, NULL), "failed_precondition") != NULL);
  et_resp_free(&r);
  n = put_env(body, 0, "{\"start\":{\"process\":{\"pid\":4000000}}}");
  REQUIRE(et_request(&C, "POST", "/process.Process/StreamInput",
                     "Content-Type: application/connect+json\r\n", body, n, &r) == 0);
  CHECK(strstr(et_end_json(&r, NULL), "not_found") != NULL);
  et_resp_free(&r);
}

/* ENOSPC: 507 on /files, resource_exhausted on RPCs (a tiny tmpfs). */
TEST(no_space) {
  char mnt[128], cmd[256], q[256];
  snprintf(mnt, sizeof mnt, "%s/tiny", dir);
  mkdir(mnt, 0777);
  snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=64k,nr_inodes=8 asb-tiny %s 2>/dev/null", mnt);
  if (system(cmd) != 0) {
    printf("    SKIP: cannot mount a tmpfs\n");
    return;
  }
  et_resp r;
  size_t big = 1 << 20;
  char *b = calloc(1, big);
  snprintf(q, sizeof q, "/files?path=%s/big", mnt);
  REQUIRE(et_request(&C, "POST", q, "Content-Type: application/octet-stream\r\n", b, big, &r) == 0);
  CHECK_INT(r.status, 507);
  et_resp_free(&r);
  free(b);
  char j[256];
  int saw = 0;
  for (int i = 0; i < 16 && !saw; i++) {
    snprintf(j, sizeof j, "{\"path\":\"%s/d%d\"}", mnt, i);
    REQUIRE(et_unary(&C, "filesystem.Filesystem/MakeDir", j, NULL, &r) == 0);
    if (r.status == 429 && strstr(r.body, "resource_exhausted")) saw = 1;
    et_resp_free(&r);
  }
  CHECK(saw);
  snprintf(cmd, sizeof cmd, "umount %s", mnt);
  CHECK(system(cmd) == 0);
}

static void sign(const char *path, const char *op, const char *user, const char *tok,
                 const char *exp, char *out, size_t n);

/* The polling watcher trio (what the Python SDK's sync watch_dir uses). */
TEST(polling_watchers) {
  et_resp r;
  char j[512], wd[128], id[64] = {0};
  snprintf(wd, sizeof wd, "%s/pw", dir);
  mkdir(wd, 0777);
  chown(wd, uid, gid);
  snprintf(j, sizeof j, "{\"path\":\"%s\",\"recursive\":true,\"includeEntry\":true}", wd);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/CreateWatcher", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 200);
  const char *p = strstr(r.body, "\"watcherId\":\"");
  REQUIRE(p != NULL);
  sscanf(p + 13, "%63[^\"]", id);
  et_resp_free(&r);
  char f[256];
  snprintf(f, sizeof f, "%s/sub", wd);
  mkdir(f, 0777);
  /* at once: a file in a directory the watcher may not watch yet */
  snprintf(f, sizeof f, "%s/sub/new.txt", wd);
  FILE *fp = fopen(f, "w");
  REQUIRE(fp != NULL);
  fputs("x", fp);
  fclose(fp);
  /* poll until both have been reported (not once, after a while) */
  static const char sub_created[] = "\"name\":\"sub\",\"type\":\"EVENT_TYPE_CREATE\"";
  static const char new_created[] = "\"name\":\"sub/new.txt\",\"type\":\"EVENT_TYPE_CREATE\"";
  snprintf(j, sizeof j, "{\"watcherId\":\"%s\"}", id);
  char seen[16384] = "";
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS;
       !(strstr(seen, sub_created) && strstr(seen, new_created)) && asbt_now_ms() < end;) {
    REQUIRE(et_unary(&C, "filesystem.Filesystem/GetWatcherEvents", j, AS_USER, &r) == 0);
    CHECK_INT(r.status, 200);
    strncat(seen, r.body, sizeof seen - strlen(seen) - 1);
    et_resp_free(&r);
    usleep(10000);
  }
  CHECK(strstr(seen, sub_created) != NULL);
  CHECK(strstr(seen, new_created) != NULL);
  CHECK(strstr(seen, "\"entry\":{") != NULL);
  /* drained: what was returned is not returned again */
  REQUIRE(et_unary(&C, "filesystem.Filesystem/GetWatcherEvents", j, AS_USER, &r) == 0);
  CHECK(strstr(r.body, sub_created) == NULL && strstr(r.body, new_created) == NULL);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/RemoveWatcher", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/GetWatcherEvents", j, AS_USER, &r) == 0);
  CHECK_INT(r.status, 404);
  et_resp_free(&r);
  /* not a directory; a directory the user cannot read */
  REQUIRE(et_unary(&C, "filesystem.Filesystem/CreateWatcher", "{\"path\":\"/etc/hostname\"}", NULL,
                   &r) == 0);
  CHECK_INT(r.status, 400);
  et_resp_free(&r);
  REQUIRE(et_unary(&C, "filesystem.Filesystem/CreateWatcher", "{\"path\":\"/root\"}", AS_USER,
                   &r) == 0);
  CHECK_INT(r.status, 403);
  et_resp_free(&r);
}

static int write_file(const char *path, const char *s) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int rc = fputs(s, f) < 0 ? -1 : 0;
  return fclose(f) == 0 ? rc : -1;
}

/* ASB_WORKLOAD_CGROUPS and ASB_OOM_COUNTER on a cgroup v1 memory hierarchy
 * or cgroup v2. */
TEST(workload_cgroups_and_oom) {
  char cg[128], counter[160], limit[160];
  int v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  snprintf(cg, sizeof cg, "%s/asb-envd-test-%d", v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory",
           (int)getpid());
  if (mkdir(cg, 0755) != 0) {
    printf("    SKIP: cannot create a cgroup\n");
    return;
  }
  snprintf(counter, sizeof counter, "%s/%s", cg, v2 ? "memory.events" : "memory.oom_control");
  snprintf(limit, sizeof limit, "%s/%s", cg, v2 ? "memory.max" : "memory.limit_in_bytes");
  int have_limit = write_file(limit, "33554432") == 0;
  if (!v2) {
    char sw[160];
    snprintf(sw, sizeof sw, "%s/memory.memsw.limit_in_bytes", cg);
    write_file(sw, "33554432");
  }
  setenv("ASB_WORKLOAD_CGROUPS", cg, 1);
  setenv("ASB_OOM_COUNTER", counter, 1);
  et_envd G;
  int started = et_start(&G, NULL) == 0;
  unsetenv("ASB_WORKLOAD_CGROUPS");
  unsetenv("ASB_OOM_COUNTER");
  if (started) {
    et_conn c;
    et_resp r;
    REQUIRE(et_connect(&c, G.port) == 0);
    REQUIRE(et_stream(&c, "process.Process/Start",
                      "{\"process\":{\"cmd\":\"/bin/cat\",\"args\":[\"/proc/self/cgroup\"]}}",
                      AS_USER, &r) == 0);
    /* the child joined the cgroup before exec, even as the user */
    const char *leaf = strrchr(cg, '/');
    char *dec = NULL;
    int found = 0;
    for (size_t i = 0; i + 5 <= r.len;) {
      unsigned char *h = (unsigned char *)r.body + i;
      size_t l = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
      const char *js = r.body + i + 5;
      const char *so = memmem(js, l, "\"stdout\":\"", 10);
      if (so) {
        so += 10;
        const char *q = memchr(so, '"', l - (size_t)(so - js));
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "printf '%%s' '%.*s' | base64 -d", (int)(q - so), so);
        FILE *f = popen(cmd, "r");
        char out[4096] = {0};
        if (f) {
          size_t k = fread(out, 1, sizeof out - 1, f);
          out[k] = '\0';
          pclose(f);
        }
        if (strstr(out, leaf)) found = 1;
        free(dec);
      }
      i += 5 + l;
    }
    CHECK(found);
    et_resp_free(&r);
    if (have_limit) {
      REQUIRE(et_stream(&c, "process.Process/Start",
                        "{\"process\":{\"cmd\":\"/usr/bin/python3\",\"args\":[\"-c\",\"b = "
                        "bytearray(400 << 20)\"]}}",
                        NULL, &r) == 0);
      CHECK(et_contains(&r, "signal: killed (out of memory)"));
      if (!et_contains(&r, "out of memory")) {
        for (size_t k = 0; k < r.len; k++) putchar(r.body[k] >= 32 ? r.body[k] : '.');
        putchar('\n');
      }
      et_resp_free(&r);
    }
    et_close(&c);
    CHECK_INT(et_stop(&G), 0);
  }
  WAIT_UNTIL(rmdir(cg) == 0 || errno == ENOENT, ASBT_DEADLINE_MS);
}

/* ASB_TIMING: one line per Start with every phase, in order of the Starts,
 * and nothing when unset (the main envd of this file runs without it). */
TEST(phase_timers) {
  char log[96];
  snprintf(log, sizeof log, "%s/timing.log", dir);
  setenv("ASB_TIMING", log, 1);
  et_envd T;
  int started = et_start(&T, NULL) == 0;
  unsetenv("ASB_TIMING");
  REQUIRE(started);
  et_conn c;
  et_resp r;
  REQUIRE(et_connect(&c, T.port) == 0);
  int pids[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    REQUIRE(et_stream(&c, "process.Process/Start",
                      "{\"process\":{\"cmd\":\"/bin/echo\",\"args\":[\"x\"]}}", NULL, &r) == 0);
    const char *p = memmem(r.body, r.len, "\"pid\":", 6);
    CHECK(p != NULL);
    if (p) pids[i] = atoi(p + 6);
    et_resp_free(&r);
  }
  et_close(&c);
  CHECK_INT(et_stop(&T), 0);
  FILE *f = fopen(log, "r");
  REQUIRE(f != NULL);
  char line[600];
  int n = 0;
  static const char *const fields[] = {
      "recv_us=",  "prep_us=",    "spawn_us=", "start_ev_us=", "run_us=",
      "drain_us=", "deliver_us=", "total_us=", "wakeups=",     "pre="};
  while (fgets(line, sizeof line, f)) {
    char want[64];
    snprintf(want, sizeof want, "envd-timing Start pid=%d ", n < 2 ? pids[n] : -1);
    CHECK(strncmp(line, want, strlen(want)) == 0);
    for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) CHECK(strstr(line, fields[k]));
    n++;
  }
  fclose(f);
  CHECK_INT(n, 2);
  unlink(log);
}

TEST(token_and_signatures) {
  et_envd T;
  const char *args[] = {"--access-token", "s3cret", NULL};
  REQUIRE(et_start(&T, args) == 0);
  et_conn c;
  REQUIRE(et_connect(&c, T.port) == 0);
  et_resp r;
  char marker[128], j[512];
  snprintf(marker, sizeof marker, "%s/ran", dir);
  snprintf(j, sizeof j, "{\"process\":{\"cmd\":\"/bin/touch\",\"args\":[\"%s\"]}}", marker);
  REQUIRE(et_stream(&c, "process.Process/Start", j, NULL, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  REQUIRE(et_stream(&c, "process.Process/Start", j, "X-Access-Token: wrong\r\n", &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  usleep(100000);
  CHECK(!exists(marker));
  REQUIRE(et_stream(&c, "process.Process/Start", j, "X-Access-Token: s3cret\r\n", &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  CHECK(exists(marker));
  REQUIRE(et_request(&c, "GET", "/health", NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 204);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "GET", "/envs", NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  /* /files: header, signature, wrong and expired signatures */
  REQUIRE(et_request(&c, "GET", "/files?path=/etc/hostname", NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "GET", "/files?path=/etc/hostname", "X-Access-Token: s3cret\r\n", NULL, 0,
                     &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  char sig[128], q[512];
  sign("/etc/hostname", "read", "", "s3cret", NULL, sig, sizeof sig);
  snprintf(q, sizeof q, "/files?path=/etc/hostname&signature=%s", sig);
  REQUIRE(et_request(&c, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  sign("/etc/hostname", "write", "", "s3cret", NULL, sig, sizeof sig);
  snprintf(q, sizeof q, "/files?path=/etc/hostname&signature=%s", sig);
  REQUIRE(et_request(&c, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  char exp[32];
  snprintf(exp, sizeof exp, "%lld", (long long)time(NULL) + 60);
  sign("/etc/hostname", "read", "root", "s3cret", exp, sig, sizeof sig);
  snprintf(q, sizeof q,
           "/files?path=/etc/hostname&username=root&signature=%s&signature_expiration=%s", sig,
           exp);
  REQUIRE(et_request(&c, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  snprintf(exp, sizeof exp, "%lld", (long long)time(NULL) - 60);
  sign("/etc/hostname", "read", "root", "s3cret", exp, sig, sizeof sig);
  snprintf(q, sizeof q,
           "/files?path=/etc/hostname&username=root&signature=%s&signature_expiration=%s", sig,
           exp);
  REQUIRE(et_request(&c, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 401);
  CHECK(strstr(r.body, "expired") != NULL);
  et_resp_free(&r);
  char wpath[256];
  snprintf(wpath, sizeof wpath, "%s/signed-upload", dir);
  sign(wpath, "write", "", "s3cret", NULL, sig, sizeof sig);
  snprintf(q, sizeof q, "/files?path=%s&signature=%s", wpath, sig);
  REQUIRE(et_request(&c, "POST", q, "Content-Type: application/octet-stream\r\n", "up", 2, &r) ==
          0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  CHECK(exists(wpath));
  /* re-init: wrong token refused, same token accepted */
  REQUIRE(et_request(&c, "POST", "/init", "Content-Type: application/json\r\n",
                     "{\"accessToken\":\"other\"}", 23, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "POST", "/init", "Content-Type: application/json\r\n", "{}", 2, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  const char *init =
      "{\"accessToken\":\"s3cret\",\"envVars\":{\"A\":\"1\"},\"defaultUser\":\"user\"}";
  REQUIRE(et_request(&c, "POST", "/init", "Content-Type: application/json\r\n", init, strlen(init),
                     &r) == 0);
  CHECK_INT(r.status, 204);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "GET", "/metrics", "X-Access-Token: s3cret\r\n", NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.body, "\"cpu_count\":") && strstr(r.body, "\"mem_total\":") &&
        strstr(r.body, "\"disk_total\":") && strstr(r.body, "\"ts\":"));
  et_resp_free(&r);
  REQUIRE(et_request(&c, "GET", "/envs", "X-Access-Token: s3cret\r\n", NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.body, "\"A\":\"1\"") != NULL);
  et_resp_free(&r);
  REQUIRE(et_stream(&c, "process.Process/Start",
                    "{\"process\":{\"cmd\":\"/usr/bin/id\",\"args\":[\"-un\"]}}",
                    "X-Access-Token: s3cret\r\n", &r) == 0);
  CHECK(et_contains(&r, "dXNlcgo=")); /* "user\n": the new default */
  et_resp_free(&r);
  /* rotation (a fork's envd): only with the current token in the header;
   * after it the old token is refused everywhere, /init included */
  const char *rot = "{\"accessToken\":\"n3w\"}";
  REQUIRE(et_request(&c, "POST", "/init",
                     "Content-Type: application/json\r\nX-Access-Token: wrong\r\n", rot,
                     strlen(rot), &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "POST", "/init",
                     "Content-Type: application/json\r\nX-Access-Token: s3cret\r\n", rot,
                     strlen(rot), &r) == 0);
  CHECK_INT(r.status, 204);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "GET", "/envs", "X-Access-Token: s3cret\r\n", NULL, 0, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  REQUIRE(et_request(&c, "GET", "/envs", "X-Access-Token: n3w\r\n", NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  /* signatures are keyed by the token: one made with the old token is refused */
  sign("/etc/hostname", "read", "root", "s3cret", NULL, sig, sizeof sig);
  snprintf(q, sizeof q, "/files?path=/etc/hostname&username=root&signature=%s", sig);
  REQUIRE(et_request(&c, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  sign("/etc/hostname", "read", "root", "n3w", NULL, sig, sizeof sig);
  snprintf(q, sizeof q, "/files?path=/etc/hostname&username=root&signature=%s", sig);
  REQUIRE(et_request(&c, "GET", q, NULL, NULL, 0, &r) == 0);
  CHECK_INT(r.status, 200);
  et_resp_free(&r);
  /* the right header and no new token: no reset */
  REQUIRE(et_request(&c, "POST", "/init",
                     "Content-Type: application/json\r\nX-Access-Token: n3w\r\n", "{}", 2,
                     &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  const char *back = "{\"accessToken\":\"s3cret\"}";
  REQUIRE(et_request(&c, "POST", "/init",
                     "Content-Type: application/json\r\nX-Access-Token: s3cret\r\n", back,
                     strlen(back), &r) == 0);
  CHECK_INT(r.status, 401);
  et_resp_free(&r);
  et_close(&c);
  CHECK_INT(et_stop(&T), 0);
}

static void put_file(const char *path, const char *data) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (write(fd, data, strlen(data)) < 0) { /* checked by the GETs */
    }
    close(fd);
  }
}

/* GET on /files with one extra header; the body and headers in r. */
static int get_file(const char *q, const char *hdr, et_resp *r) {
  return et_request(&C, "GET", q, hdr, NULL, 0, r);
}

static void gunzip(const char *in, size_t n, char *out, size_t cap, size_t *got) {
  z_stream z;
  memset(&z, 0, sizeof z);
  *got = 0;
  if (inflateInit2(&z, 15 + 16) != Z_OK) return;
  z.next_in = (unsigned char *)in;
  z.avail_in = (uInt)n;
  z.next_out = (unsigned char *)out;
  z.avail_out = (uInt)cap;
  if (inflate(&z, Z_FINISH) == Z_STREAM_END) *got = cap - z.avail_out;
  inflateEnd(&z);
}

/* Range, Accept-Encoding, Content-Type and Content-Disposition of GET
 * /files, as Go's net/http answers them. */
TEST(download_ranges_and_encodings) {
  char path[128], q[256];
  snprintf(path, sizeof path, "%s/rng.txt", dir);
  put_file(path, "0123456789");
  snprintf(q, sizeof q, "/files?path=%s", path);
  static const struct {
    const char *range;
    int status;
    const char *body, *content_range;
  } cases[] = {
      {"bytes=2-4", 206, "234", "bytes 2-4/10"},
      {"bytes=7-", 206, "789", "bytes 7-9/10"},
      {"bytes=-3", 206, "789", "bytes 7-9/10"},
      {"bytes=-30", 206, "0123456789", "bytes 0-9/10"},
      {"bytes=5-100", 206, "56789", "bytes 5-9/10"},
      {"bytes=10-", 416, "invalid range: failed to overlap\n", "bytes */10"},
      {"bytes=5-2", 416, "invalid range: failed to overlap\n", "bytes */10"},
      {"bytes=0-1,3-4", 200, "0123456789", NULL},
      {"bytes=abc", 200, "0123456789", NULL},
      {"bytes=-0", 200, "0123456789", NULL},
      {"lines=1-2", 200, "0123456789", NULL},
  };
  et_resp r;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char h[128];
    snprintf(h, sizeof h, "Range: %s\r\n", cases[i].range);
    REQUIRE(get_file(q, h, &r) == 0);
    if (r.status != cases[i].status || strcmp(r.body, cases[i].body) != 0)
      ASBT_FAIL("Range %s: %d '%s', want %d '%s'", cases[i].range, r.status, r.body,
                cases[i].status, cases[i].body);
    const char *cr = et_header(&r, "Content-Range");
    if (cases[i].content_range)
      CHECK(cr && strncmp(cr, cases[i].content_range, strlen(cases[i].content_range)) == 0);
    else
      CHECK(cr == NULL);
    et_resp_free(&r);
  }
  /* gzip when asked (never with a Range), identity when gzip is refused,
   * 406 when identity is refused and gzip not offered */
  REQUIRE(get_file(q, "Accept-Encoding: gzip\r\n", &r) == 0);
  CHECK_INT(r.status, 200);
  const char *ce = et_header(&r, "Content-Encoding");
  CHECK(ce && strncmp(ce, "gzip", 4) == 0);
  char plain[64];
  size_t got = 0;
  gunzip(r.body, r.len, plain, sizeof plain, &got);
  CHECK_MEM(plain, got, "0123456789", (size_t)10);
  et_resp_free(&r);
  REQUIRE(get_file(q, "Accept-Encoding: gzip\r\nRange: bytes=1-2\r\n", &r) == 0);
  CHECK_INT(r.status, 206);
  CHECK(et_header(&r, "Content-Encoding") == NULL);
  CHECK_STR(r.body, "12");
  et_resp_free(&r);
  REQUIRE(get_file(q, "Accept-Encoding: gzip;q=0, identity\r\n", &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK(et_header(&r, "Content-Encoding") == NULL);
  CHECK_STR(r.body, "0123456789");
  et_resp_free(&r);
  REQUIRE(get_file(q, "Accept-Encoding: br, identity;q=0\r\n", &r) == 0);
  CHECK_INT(r.status, 406);
  et_resp_free(&r);
  REQUIRE(get_file(q, "Accept-Encoding: *;q=0\r\n", &r) == 0);
  CHECK_INT(r.status, 406);
  et_resp_free(&r);
  REQUIRE(get_file(q, "Accept-Encoding: br\r\n", &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK_STR(r.body, "0123456789");
  const char *ct = et_header(&r, "Content-Type");
  CHECK(ct && strncmp(ct, "text/plain; charset=utf-8", 25) == 0);
  const char *cd = et_header(&r, "Content-Disposition");
  CHECK(cd && strncmp(cd, "inline; filename=rng.txt", 24) == 0);
  CHECK(et_header(&r, "Accept-Ranges") != NULL);
  et_resp_free(&r);
  /* a name that needs RFC 5987 encoding, a type by extension */
  snprintf(path, sizeof path, "%s/a b.JSON", dir);
  put_file(path, "{}");
  snprintf(q, sizeof q, "/files?path=%s/a%%20b.JSON", dir);
  REQUIRE(get_file(q, NULL, &r) == 0);
  CHECK_INT(r.status, 200);
  ct = et_header(&r, "Content-Type");
  CHECK(ct && strncmp(ct, "application/json", 16) == 0);
  cd = et_header(&r, "Content-Disposition");
  CHECK(cd && strncmp(cd, "inline; filename*=utf-8''a%20b.JSON", 35) == 0);
  et_resp_free(&r);
}

/* A second implementation of the signature (sha256 via sha256sum). */
static void sign(const char *path, const char *op, const char *user, const char *tok,
                 const char *exp, char *out, size_t n) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import hashlib,base64,sys;print(base64.b64encode("
           "hashlib.sha256(sys.argv[1].encode()).digest()).decode().rstrip(\"=\"))' "
           "'%s:%s:%s:%s%s%s'",
           path, op, user, tok, exp ? ":" : "", exp ? exp : "");
  FILE *f = popen(cmd, "r");
  char b[128] = {0};
  if (f) {
    if (!fgets(b, sizeof b, f)) b[0] = '\0';
    pclose(f);
    b[strcspn(b, "\n")] = '\0';
  }
  /* percent-encode for the query string */
  char enc[256];
  size_t w = 0;
  for (const char *p = b; *p && w + 4 < sizeof enc; p++) {
    if (*p == '+' || *p == '/')
      w += (size_t)snprintf(enc + w, sizeof enc - w, "%%%02X", *p);
    else
      enc[w++] = *p;
  }
  enc[w] = '\0';
  snprintf(out, n, "v1_%s", enc);
}

int main(void) {
  if (geteuid() != 0) {
    printf("SKIP: needs root\n");
    return 77;
  }
  struct passwd *pw = getpwnam("user");
  if (!pw) {
    printf("SKIP: needs a 'user' account (scripts/test.sh creates it)\n");
    return 77;
  }
  uid = pw->pw_uid;
  gid = pw->pw_gid;
  snprintf(dir, sizeof dir, "/tmp/asb-hostile-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  chown(dir, uid, gid);
  int pid = (int)getpid();
  snprintf(secret, sizeof secret, "/root/asb-secret-%d", pid);
  snprintf(rootdir, sizeof rootdir, "/tmp/asb-hostile-root-XXXXXX");
  if (!mkdtemp(rootdir) || chmod(rootdir, 0755) != 0) return 1;
  snprintf(etc_x, sizeof etc_x, "%s/x", rootdir);
  snprintf(etc_evil, sizeof etc_evil, "%s/evil", rootdir);
  snprintf(etc_mp, sizeof etc_mp, "%s/mp", rootdir);
  snprintf(root_made, sizeof root_made, "%s/made", rootdir);
  snprintf(root_newdir, sizeof root_newdir, "%s/newdir", rootdir);
  int fd = open(secret, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, "TOPSECRET", 9) != 9) return 1;
  close(fd);
  char p[128];
  snprintf(p, sizeof p, "%s/link-secret", dir);
  symlink(secret, p);
  snprintf(p, sizeof p, "%s/link-etc", dir);
  symlink(etc_evil, p);
  const char *args[] = {"--max-body", "65536", NULL};
  if (et_start(&E, args) != 0) {
    printf("cannot start envd\n");
    return 1;
  }
  et_connect(&C, E.port);
  RUN(files_traversal_as_user);
  RUN(rpc_traversal_as_user);
  RUN(malformed_rpc);
  RUN(bad_input_values);
  RUN(download_ranges_and_encodings);
  RUN(token_and_signatures);
  RUN(stream_input_and_connect);
  RUN(no_space);
  RUN(polling_watchers);
  RUN(workload_cgroups_and_oom);
  RUN(phase_timers);
  et_close(&C);
  CHECK_INT(et_stop(&E), 0);
  unlink(secret);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, rootdir);
  if (system(cmd) != 0) return 1;
  TEST_MAIN_END();
}
