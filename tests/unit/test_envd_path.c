/* Unit tests for envd's paths (core/envd/path.c) and user lookup
 * (auth.c): Go's filepath.Clean and Join, and ExpandAndResolve — the
 * default workdir, "~", paths relative to the user's home, "..", and
 * symlinks, which resolution never follows (the kernel does, under the
 * user's credentials). SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "path.h"
#include "state.h"
#include "testing.h"

static void check_clean(const char *in, const char *want) {
  char *got = envd_path_clean(in);
  if (!got || strcmp(got, want) != 0)
    ASBT_FAIL("clean(\"%s\") = \"%s\", want \"%s\"", in, got ? got : "(null)", want);
  free(got);
}

static void check_join(const char *a, const char *b, const char *want) {
  char *got = envd_path_join(a, b);
  if (!got || strcmp(got, want) != 0)
    ASBT_FAIL("join(\"%s\", \"%s\") = \"%s\", want \"%s\"", a, b, got ? got : "(null)", want);
  free(got);
}

static envd_user user_at(const char *home) {
  envd_user u;
  memset(&u, 0, sizeof u);
  strcpy(u.name, "someone");
  u.uid = 4242;
  u.gid = 4242;
  snprintf(u.home, sizeof u.home, "%s", home);
  return u;
}

static void check_resolve(const envd_user *u, const char *in, const char *want) {
  const char *err = "unset";
  char *got = envd_resolve_path(in, u, &err);
  if (!got || strcmp(got, want) != 0)
    ASBT_FAIL("resolve(\"%s\") = \"%s\", want \"%s\"", in, got ? got : "(null)", want);
  CHECK(err == NULL);
  free(got);
}

static void set_workdir(const char *wd) {
  pthread_mutex_lock(&g_envd.lock);
  free(g_envd.default_workdir);
  g_envd.default_workdir = wd ? strdup(wd) : NULL;
  pthread_mutex_unlock(&g_envd.lock);
}

/* Go's path/filepath.Clean on Unix (its own test table, in part). */
TEST(clean) {
  check_clean("", ".");
  check_clean("abc", "abc");
  check_clean("abc/def", "abc/def");
  check_clean("a/b/c", "a/b/c");
  check_clean(".", ".");
  check_clean("..", "..");
  check_clean("../..", "../..");
  check_clean("../../abc", "../../abc");
  check_clean("/abc", "/abc");
  check_clean("/", "/");
  check_clean("abc/", "abc");
  check_clean("abc/def/", "abc/def");
  check_clean("./", ".");
  check_clean("../", "..");
  check_clean("/abc/", "/abc");
  check_clean("abc//def//ghi", "abc/def/ghi");
  check_clean("//abc", "/abc");
  check_clean("///abc", "/abc");
  check_clean("abc/./def", "abc/def");
  check_clean("/./abc/def", "/abc/def");
  check_clean("abc/.", "abc");
  check_clean("abc/def/ghi/../jkl", "abc/def/jkl");
  check_clean("abc/def/../ghi/../jkl", "abc/jkl");
  check_clean("abc/def/..", "abc");
  check_clean("abc/def/../..", ".");
  check_clean("/abc/def/../..", "/");
  check_clean("abc/def/../../..", "..");
  check_clean("/abc/def/../../..", "/");
  check_clean("abc/def/../../../ghi/jkl/../../../mno", "../../mno");
  check_clean("/../abc", "/abc");
  check_clean("abc/./../def", "def");
  check_clean("abc//./../def", "def");
  check_clean("abc/../../././../def", "../../def");
}

TEST(join) {
  check_join("", "", "");
  check_join("a", "", "a");
  check_join("", "b", "b");
  check_join("a", "b", "a/b");
  check_join("a/", "/b", "a/b");
  check_join("/a", "../b", "/b");
  check_join("/a", "../../../b", "/b");
  check_join("a", "..", ".");
  check_join("/home/u", "x/./y//", "/home/u/x/y");
}

TEST(resolve_home_relative_and_tilde) {
  set_workdir(NULL);
  envd_user u = user_at("/home/someone");
  check_resolve(&u, "", "/home/someone"); /* no workdir: the home */
  check_resolve(&u, "~", "/home/someone");
  check_resolve(&u, "~/", "/home/someone");
  check_resolve(&u, "~/x/y", "/home/someone/x/y");
  check_resolve(&u, "~/x/../y", "/home/someone/y");
  check_resolve(&u, "rel", "/home/someone/rel");
  check_resolve(&u, "./rel/", "/home/someone/rel");
  check_resolve(&u, "a//b/./c", "/home/someone/a/b/c");
  /* "~\x" is "~" followed by a Windows separator, as in Go */
  check_resolve(&u, "~\\x", "/home/someone/\\x");
  /* the user's home need not exist: resolution is lexical */
  envd_user gone = user_at("/nonexistent/home");
  check_resolve(&gone, "f", "/nonexistent/home/f");
  envd_user rooted = user_at("/");
  check_resolve(&rooted, "~/etc", "/etc");
  check_resolve(&rooted, "etc", "/etc");
}

/* ".." is cleaned lexically, and may leave the home: what the path may
 * reach is decided by the kernel against the user's credentials. Absolute
 * paths come back as given (Go returns them unchanged, uncleaned). */
TEST(resolve_dotdot_and_absolute) {
  set_workdir(NULL);
  envd_user u = user_at("/home/someone");
  check_resolve(&u, "../other", "/home/other");
  check_resolve(&u, "../../../../etc/passwd", "/etc/passwd");
  check_resolve(&u, "~/../../root", "/root");
  check_resolve(&u, "/abs", "/abs");
  check_resolve(&u, "/abs/../x", "/abs/../x");
  check_resolve(&u, "//x/./y", "//x/./y");
}

TEST(resolve_other_users_home_is_refused) {
  envd_user u = user_at("/home/someone");
  const char *err = NULL;
  char *got = envd_resolve_path("~root", &u, &err);
  CHECK(got == NULL);
  CHECK_STR(err, "cannot expand user-specific home dir");
  free(got);
  err = NULL;
  got = envd_resolve_path("~root/.ssh", &u, &err);
  CHECK(got == NULL && err != NULL);
  free(got);
}

TEST(resolve_default_workdir) {
  envd_user u = user_at("/home/someone");
  set_workdir("/work/dir");
  check_resolve(&u, "", "/work/dir");
  check_resolve(&u, "x", "/home/someone/x"); /* only "" means the workdir */
  set_workdir("proj/../code");
  check_resolve(&u, "", "/home/someone/code");
  set_workdir("~/w");
  check_resolve(&u, "", "/home/someone/w");
  set_workdir("~other");
  const char *err = NULL;
  char *got = envd_resolve_path("", &u, &err);
  CHECK(got == NULL && err != NULL);
  free(got);
  set_workdir(NULL);
}

/* Symlinks are never followed by the resolution: a link in the home to
 * /etc gives a path through the link, which the kernel then resolves with
 * the user's credentials. */
TEST(resolve_does_not_follow_symlinks) {
  char home[] = "/tmp/asb-envd-path-XXXXXX";
  REQUIRE(mkdtemp(home) != NULL);
  char link[128], loop[128];
  snprintf(link, sizeof link, "%s/etc-link", home);
  snprintf(loop, sizeof loop, "%s/loop", home);
  CHECK(symlink("/etc", link) == 0);
  CHECK(symlink(loop, loop) == 0); /* a cycle costs nothing either */
  envd_user u = user_at(home);
  char want[256];
  snprintf(want, sizeof want, "%s/etc-link/passwd", home);
  check_resolve(&u, "etc-link/passwd", want);
  snprintf(want, sizeof want, "%s/etc-link", home);
  check_resolve(&u, "etc-link/x/..", want); /* lexical, not /etc */
  snprintf(want, sizeof want, "%s/loop/a", home);
  check_resolve(&u, "~/loop/a", want);
  unlink(link);
  unlink(loop);
  rmdir(home);
}

TEST(user_lookup) {
  envd_user u;
  REQUIRE(envd_user_lookup("root", &u) == 0);
  CHECK_INT(u.uid, 0);
  CHECK_INT(u.gid, 0);
  CHECK_STR(u.name, "root");
  CHECK(u.home[0] == '/');
  CHECK(u.ngroups >= 1);
  /* cached: the same answer again */
  envd_user again;
  REQUIRE(envd_user_lookup("root", &again) == 0);
  CHECK_STR(again.home, u.home);
  CHECK(envd_user_lookup("asb-no-such-user-x", &u) == -1);
  CHECK(envd_user_lookup("", &u) == -1);
  CHECK(envd_user_lookup(NULL, &u) == -1);
  char longname[100];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK(envd_user_lookup(longname, &u) == -1);
  /* "~" of a looked-up user is that user's home */
  REQUIRE(envd_user_lookup("root", &u) == 0);
  check_resolve(&u, "~", u.home);
  char name[64];
  envd_uid_name(0, name, sizeof name);
  CHECK_STR(name, "root");
  envd_gid_name(0, name, sizeof name);
  CHECK_STR(name, "root");
  envd_uid_name(4000000000u, name, sizeof name); /* unknown: the number */
  CHECK_STR(name, "4000000000");
}

int main(void) {
  RUN(clean);
  RUN(join);
  RUN(resolve_home_relative_and_tilde);
  RUN(resolve_dotdot_and_absolute);
  RUN(resolve_other_users_home_is_refused);
  RUN(resolve_default_workdir);
  RUN(resolve_does_not_follow_symlinks);
  RUN(user_lookup);
  envd_state_free();
  TEST_MAIN_END();
}
