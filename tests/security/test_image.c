/* Local container images as template bases (core/engine/image.c), at the
 * importer: images are written by tests/support/mkimage.py (OCI layouts and
 * docker save tarballs, with Debian's busybox-static), imported, and the
 * unpacked root checked: layers in order, whiteouts and opaque dirs, the
 * config, the cache; then the attacks a layer can carry — ".." names,
 * absolute names, symlinks out of the root written through (in the same
 * and a later layer), hard links to outside, device nodes, set-user-ID
 * bits, size limits, truncated, corrupt and tampered blobs — each leaving
 * the host untouched and the cache clean. Runs as root (owners, mknod).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "engine/image.h"
#include "testing.h"

#ifndef ASBT_MKIMAGE
#error "define ASBT_MKIMAGE (tests/support/mkimage.py)"
#endif

static char WORK[128], OUTSIDE[160];
static int N;

/* Writes spec (a JSON object without "out", which is added) into an image
 * of format fmt; returns its path. */
static const char *mk(const char *fmt, const char *spec) {
  static char out[256];
  char js[256], cmd[600];
  int k = N++;
  snprintf(out, sizeof out, "%s/img%d%s", WORK, k, strcmp(fmt, "oci") ? ".tar" : "");
  snprintf(js, sizeof js, "%s/spec%d.json", WORK, k);
  FILE *f = fopen(js, "w");
  if (!f) return NULL;
  fprintf(f, "{\"format\": \"%s\", \"out\": \"%s\", %s}", fmt, out, spec);
  fclose(f);
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", ASBT_MKIMAGE, js);
  return system(cmd) == 0 ? out : NULL;
}

static int import_(const char *fmt, const char *path, const char *name, image_result *r, char *err,
                   size_t errlen, const image_limits *lim) {
  char ref[512], cache[256];
  snprintf(ref, sizeof ref, "%s:%s%s%s", strncmp(fmt, "docker", 6) ? fmt : "docker-archive", path,
           name ? ":" : "", name ? name : "");
  snprintf(cache, sizeof cache, "%s/cache", WORK);
  return image_import(ref, cache, lim, r, err, errlen);
}

static char *slurp(const char *root, const char *rel) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  FILE *f = fopen(p, "r");
  if (!f) return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static int exists(const char *root, const char *rel) {
  char p[512];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", root, rel);
  return lstat(p, &st) == 0;
}

/* Nothing of a failed import is left in the cache (no tmp.* dirs). */
static int cache_clean(void) {
  char p[256];
  snprintf(p, sizeof p, "%s/cache", WORK);
  DIR *d = opendir(p);
  int ok = 1;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "tmp.", 4)) ok = 0;
  if (d) closedir(d);
  return ok;
}

static int outside_empty(void) {
  DIR *d = opendir(OUTSIDE);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.' && strcmp(de->d_name, "secret")) n++;
  if (d) closedir(d);
  struct stat st;
  char s[256];
  snprintf(s, sizeof s, "%s/secret", OUTSIDE);
  return n == 0 && stat(s, &st) == 0 && st.st_nlink == 1 && st.st_size == 4;
}

#define TWO_LAYERS                                                                               \
  "\"name\": \"%s\", \"config\": {\"Env\": [\"PATH=/usr/bin:/bin\", \"GREETING=hello world\"], " \
  "\"WorkingDir\": \"/srv\", \"User\": \"1000\", \"Entrypoint\": [\"/bin/sh\"], "                \
  "\"Cmd\": [\"-c\", \"echo hi\"]}, \"layers\": ["                                               \
  "[{\"name\": \"bin\", \"type\": \"dir\"}, {\"name\": \"bin/busybox\", \"host\": \"%s\"},"      \
  " {\"name\": \"bin/sh\", \"type\": \"symlink\", \"link\": \"busybox\"},"                       \
  " {\"name\": \"gone.txt\", \"data\": \"x\"}, {\"name\": \"keep/a\", \"data\": \"a\"},"         \
  " {\"name\": \"opq/old\", \"data\": \"old\"}, {\"name\": \"lib\", \"type\": \"symlink\","      \
  " \"link\": \"/usr/lib\"}, {\"name\": \"usr/lib\", \"type\": \"dir\"},"                        \
  " {\"name\": \"etc/passwd\", \"data\": "                                                       \
  "\"root:x:0:0:root:/root:/bin/sh\\nbin:x:1:1::/:/bin/false\\n\"}],"                            \
  "[{\"name\": \"two.txt\", \"data\": \"from layer 2\"}, {\"name\": \".wh.gone.txt\"},"          \
  " {\"name\": \"opq\", \"type\": \"dir\"}, {\"name\": \"opq/.wh..wh..opq\"},"                   \
  " {\"name\": \"opq/new\", \"data\": \"new\"}, {\"name\": \"keep/b\", \"data\": \"b\"},"        \
  " {\"name\": \"lib/through\", \"data\": \"via the symlink\"}]]"

static const char *busybox(void) {
  return access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" : "/usr/bin/busybox";
}

static void check_two_layers(const image_result *r) {
  const char *root = r->rootfs;
  CHECK(exists(root, "bin/busybox"));
  char *s = slurp(root, "two.txt");
  CHECK_STR(s, "from layer 2");
  CHECK(!exists(root, "gone.txt")); /* whiteout */
  CHECK(exists(root, "keep/a") && exists(root, "keep/b"));
  CHECK(!exists(root, "opq/old"));        /* opaque: the lower layer's contents hidden */
  CHECK(exists(root, "opq/new"));         /* ... not the same layer's */
  CHECK(exists(root, "usr/lib/through")); /* an in-image symlink, followed in the root */
  /* fix-ups: the accounts, the mount points, the Env for login shells */
  s = slurp(root, "etc/passwd");
  CHECK(s && strstr(s, "bin:x:1:1") && strstr(s, "\nuser:x:1000:1000:"));
  CHECK(exists(root, "proc") && exists(root, "home/user") && exists(root, ".asb"));
  s = slurp(root, "etc/profile.d/00-image-env.sh");
  CHECK(s && strstr(s, "export GREETING='hello world'\n"));
  CHECK_INT(r->cfg.n_env, 2);
  CHECK_STR(r->cfg.workdir, "/srv");
  CHECK_STR(r->cfg.user, "1000");
  CHECK_INT(r->cfg.n_entrypoint, 1);
  CHECK_INT(r->cfg.n_cmd, 2);
}

TEST(oci_layout_two_layers_whiteouts) {
  char spec[4096], err[1024] = "";
  snprintf(spec, sizeof spec, TWO_LAYERS, "v1", busybox());
  const char *img = mk("oci", spec);
  REQUIRE(img);
  image_result r;
  int rc = import_("oci", img, "v1", &r, err, sizeof err, NULL);
  if (rc) ASBT_FAIL("import: %s", err);
  REQUIRE(rc == 0);
  CHECK_INT(r.cached, 0);
  check_two_layers(&r);
  char id[65];
  memcpy(id, r.id, sizeof id);
  image_result_free(&r);
  /* again: found in the cache; without a name: the only manifest */
  REQUIRE(import_("oci", img, NULL, &r, err, sizeof err, NULL) == 0);
  CHECK_INT(r.cached, 1);
  CHECK_STR(r.id, id);
  image_result_free(&r);
  /* a name the index does not have */
  CHECK(import_("oci", img, "v2", &r, err, sizeof err, NULL) == -1);
  CHECK(strstr(err, "no manifest named 'v2'") != NULL);
  CHECK(cache_clean());
}

static void docker_two_layers(const char *fmt) {
  char spec[4096], err[1024] = "", cache[256], cmd[300];
  snprintf(spec, sizeof spec, TWO_LAYERS, "i:1", busybox()); /* a RepoTags entry */
  const char *img = mk(fmt, spec);
  REQUIRE(img);
  snprintf(cache, sizeof cache, "%s/cache", WORK);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache); /* unpack it, not the OCI one */
  REQUIRE(system(cmd) == 0);
  image_result r;
  int rc = import_(fmt, img, "i:1", &r, err, sizeof err, NULL);
  if (rc) ASBT_FAIL("import: %s", err);
  if (rc) return;
  CHECK_INT(r.cached, 0);
  check_two_layers(&r);
  image_result_free(&r);
  CHECK(cache_clean());
}

TEST(docker_archive_two_layers_whiteouts) {
  docker_two_layers("docker");
}

/* Docker 25+'s docker save: an OCI layout inside, read through manifest.json */
TEST(docker_archive_oci_style) {
  docker_two_layers("docker-oci");
}

/* An import that must fail, with a message containing want, leaving the
 * host and the cache as they were. */
static void must_fail(const char *fmt, const char *spec, const char *want,
                      const image_limits *lim) {
  const char *img = mk(fmt, spec);
  if (!img) {
    ASBT_FAIL("cannot make the image");
    return;
  }
  image_result r;
  char err[1024] = "";
  int rc = import_(fmt, img, NULL, &r, err, sizeof err, lim);
  if (rc == 0) {
    ASBT_FAIL("imported, want an error with '%s'", want);
    image_result_free(&r);
  } else if (!strstr(err, want)) {
    ASBT_FAIL("error '%s', want '%s'", err, want);
  }
  CHECK(cache_clean());
  CHECK(outside_empty());
}

TEST(dotdot_names_fail) {
  char spec[1024];
  snprintf(spec, sizeof spec,
           "\"layers\": [[{\"name\": \"../../../../../../..%s/pwned\", \"data\": \"x\"}]]",
           OUTSIDE);
  must_fail("oci", spec, "has a '..' component", NULL);
  snprintf(spec, sizeof spec, "\"layers\": [[{\"name\": \"a/../../b\", \"data\": \"x\"}]]");
  must_fail("docker", spec, "has a '..' component", NULL);
}

/* Imports spec, which must succeed; the root is returned for checks. */
static int must_import(const char *fmt, const char *spec, image_result *r) {
  const char *img = mk(fmt, spec);
  char err[1024] = "";
  if (!img || import_(fmt, img, NULL, r, err, sizeof err, NULL)) {
    ASBT_FAIL("import: %s", err);
    return -1;
  }
  return 0;
}

TEST(absolute_names_stay_in_the_root) {
  char spec[1024];
  snprintf(spec, sizeof spec, "\"layers\": [[{\"name\": \"%s/abs\", \"data\": \"in\"}]]", OUTSIDE);
  image_result r;
  if (must_import("oci", spec, &r)) return;
  char rel[256];
  snprintf(rel, sizeof rel, "%s/abs", OUTSIDE + 1);
  CHECK_STR(slurp(r.rootfs, rel), "in");
  CHECK(outside_empty());
  image_result_free(&r);
}

TEST(symlinks_out_of_the_root_are_written_inside) {
  char spec[2048];
  /* the same layer: an absolute link to the host dir, a relative one that
   * climbs, a link to "/", then files written through each */
  snprintf(
      spec, sizeof spec,
      "\"layers\": [[{\"name\": \"esc\", \"type\": \"symlink\", \"link\": \"%s\"},"
      " {\"name\": \"up\", \"type\": \"symlink\", \"link\": \"../../../../../../../..%s\"},"
      " {\"name\": \"slash\", \"type\": \"symlink\", \"link\": \"/\"},"
      " {\"name\": \"esc/p1\", \"data\": \"1\"}, {\"name\": \"up/p2\", \"data\": \"2\"},"
      " {\"name\": \"slash/%s/p3\", \"data\": \"3\"}],"
      " [{\"name\": \"esc/p4\", \"data\": \"4\"},"
      "  {\"name\": \"esc/sub\", \"type\": \"dir\"}, {\"name\": \"esc/sub/p5\", \"data\": \"5\"}]]",
      OUTSIDE, OUTSIDE, OUTSIDE + 1);
  image_result r;
  if (must_import("oci", spec, &r)) return;
  CHECK(outside_empty()); /* nothing reached the host dir */
  char rel[256];
  for (int i = 1; i <= 4; i++) {
    snprintf(rel, sizeof rel, "%s/p%d", OUTSIDE + 1, i);
    CHECK(exists(r.rootfs, rel)); /* where the sandbox sees it */
  }
  snprintf(rel, sizeof rel, "%s/sub/p5", OUTSIDE + 1);
  CHECK(exists(r.rootfs, rel));
  image_result_free(&r);
}

/* The sandbox's mount points as symlinks (to the host's dirs or in the
 * image): replaced by real directories, the targets untouched. */
TEST(mount_points_are_real_directories) {
  char spec[1024];
  snprintf(spec, sizeof spec,
           "\"layers\": [[{\"name\": \".asb\", \"type\": \"symlink\", \"link\": \"%s\"},"
           " {\"name\": \"proc\", \"type\": \"symlink\", \"link\": \"/\"},"
           " {\"name\": \"var/run\", \"type\": \"dir\"},"
           " {\"name\": \"run\", \"type\": \"symlink\", \"link\": \"var/run\"},"
           " {\"name\": \"dev\", \"data\": \"a file\"}]]",
           OUTSIDE);
  image_result r;
  if (must_import("oci", spec, &r)) return;
  static const char *const mp[] = {".asb", "proc", "run", "run/asb", "dev", "sys"};
  for (size_t i = 0; i < sizeof mp / sizeof mp[0]; i++) {
    char p[4300];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", r.rootfs, mp[i]);
    if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode)) ASBT_FAIL("/%s is not a directory", mp[i]);
  }
  CHECK(exists(r.rootfs, "var/run"));
  CHECK(outside_empty());
  image_result_free(&r);
}

TEST(hard_links_to_outside_fail) {
  char spec[1024];
  snprintf(spec, sizeof spec,
           "\"layers\": [[{\"name\": \"hl\", \"type\": \"hardlink\", \"link\": \"%s/secret\"}]]",
           OUTSIDE);
  must_fail("oci", spec, "is not in the image", NULL);
  snprintf(spec, sizeof spec,
           "\"layers\": [[{\"name\": \"hl\", \"type\": \"hardlink\", \"link\": "
           "\"../../../../../..%s/secret\"}]]",
           OUTSIDE);
  must_fail("oci", spec, "leaves the root", NULL);
  /* through a symlink to the host dir: resolved in the root, not found */
  snprintf(spec, sizeof spec,
           "\"layers\": [[{\"name\": \"esc\", \"type\": \"symlink\", \"link\": \"%s\"},"
           " {\"name\": \"hl\", \"type\": \"hardlink\", \"link\": \"esc/secret\"}]]",
           OUTSIDE);
  must_fail("oci", spec, "is not in the image", NULL);
  /* inside the image: a real hard link */
  image_result r;
  if (must_import("oci",
                  "\"layers\": [[{\"name\": \"f\", \"data\": \"same\"},"
                  " {\"name\": \"g\", \"type\": \"hardlink\", \"link\": \"f\"}]]",
                  &r))
    return;
  struct stat a, b;
  char pa[4300], pb[4300];
  snprintf(pa, sizeof pa, "%s/f", r.rootfs);
  snprintf(pb, sizeof pb, "%s/g", r.rootfs);
  CHECK(stat(pa, &a) == 0 && stat(pb, &b) == 0 && a.st_ino == b.st_ino);
  image_result_free(&r);
}

TEST(devices_skipped_setuid_dropped_owners_kept) {
  image_result r;
  if (must_import("oci",
                  "\"layers\": [[{\"name\": \"mem\", \"type\": \"chardev\"},"
                  " {\"name\": \"suid\", \"data\": \"#!/bin/sh\\n\", \"mode\": 3565},"
                  " {\"name\": \"owned\", \"data\": \"o\", \"uid\": 1000, \"gid\": 1001},"
                  " {\"name\": \"fifo\", \"type\": \"fifo\"}]]",
                  &r))
    return;
  CHECK(!exists(r.rootfs, "mem"));
  CHECK_INT(r.skipped_devices, 1);
  struct stat st;
  char p[4300];
  snprintf(p, sizeof p, "%s/suid", r.rootfs);
  CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0755); /* 06755 given */
  snprintf(p, sizeof p, "%s/owned", r.rootfs);
  CHECK(stat(p, &st) == 0 && st.st_uid == 1000 && st.st_gid == 1001);
  snprintf(p, sizeof p, "%s/fifo", r.rootfs);
  CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode));
  image_result_free(&r);
}

TEST(limits_and_broken_blobs) {
  image_limits lim = {1 << 20, 0, NULL};
  must_fail("oci", "\"layers\": [[{\"name\": \"big\", \"size\": 2097152}]]",
            "unpacks to more than 1048576 bytes", &lim);
  image_limits few = {0, 3, NULL};
  must_fail("oci",
            "\"layers\": [[{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"},"
            " {\"name\": \"d\"}]]",
            "more than 3 entries", &few);
  const char *two =
      "\"layers\": [[{\"name\": \"a\", \"size\": 200000}],"
      " [{\"name\": \"b\", \"data\": \"b\"}]], ";
  char spec[512];
  snprintf(spec, sizeof spec, "%s\"break\": {\"layer\": 1, \"how\": \"digest\"}", two);
  must_fail("oci", spec, "layer 2/2: digest mismatch", NULL);
  snprintf(spec, sizeof spec, "%s\"break\": {\"layer\": 0, \"how\": \"truncate\"}", two);
  must_fail("oci", spec, "layer 1/2: ", NULL);
  snprintf(spec, sizeof spec, "%s\"break\": {\"layer\": 0, \"how\": \"garbage\"}", two);
  must_fail("oci", spec, "layer 1/2: ", NULL);
  snprintf(spec, sizeof spec, "%s\"break\": {\"how\": \"config\"}", two);
  must_fail("oci", spec, "the image config: digest mismatch", NULL);
  must_fail("docker", spec, "the image config: digest mismatch", NULL);
  /* docker save: a layer whose bytes are not its diff_id */
  snprintf(spec, sizeof spec, "%s\"break\": {\"layer\": 1, \"how\": \"digest\"}", two);
  must_fail("docker", spec, "layer 2/2: digest mismatch", NULL);
}

TEST(refs) {
  CHECK(image_ref_is_local("oci:/x"));
  CHECK(image_ref_is_local("docker-archive:/x.tar:a:b"));
  CHECK(!image_ref_is_local("alpine:3"));
  CHECK(image_ref_is_registry("docker.io/library/alpine:3"));
  CHECK(image_ref_is_registry("ghcr.io/x/y@sha256:00"));
  CHECK(!image_ref_is_registry("base"));
  image_result r;
  char err[512];
  CHECK(image_import("oci:relative/dir", WORK, NULL, &r, err, sizeof err) == -1);
  CHECK(strstr(err, "must be absolute") != NULL);
  CHECK(image_import("oci:/nonexistent-dir-xyz", WORK, NULL, &r, err, sizeof err) == -1);
  CHECK(strstr(err, "OCI image layout") != NULL);
}

/* The engine reads images only from its image directories: outside them,
 * through a symlink that leads out, or with `..` in the path, the import
 * fails before anything is read. */
TEST(only_the_image_directories) {
  char spec[4096], err[1024] = "", path[512], link[512];
  snprintf(spec, sizeof spec, TWO_LAYERS, "v1", busybox());
  const char *made = mk("oci", spec);
  REQUIRE(made);
  char img[256];
  snprintf(img, sizeof img, "%s", made);
  const char *work_only[] = {WORK, NULL}, *outside_only[] = {OUTSIDE, NULL};
  image_limits in_work = {0, 0, work_only}, in_outside = {0, 0, outside_only};
  image_result r;
  /* inside: read */
  int rc = import_("oci", img, "v1", &r, err, sizeof err, &in_work);
  if (rc) ASBT_FAIL("import: %s", err);
  CHECK(rc == 0);
  if (rc == 0) image_result_free(&r);
  /* outside every image dir */
  CHECK(import_("oci", img, "v1", &r, err, sizeof err, &in_outside) == -1);
  CHECK(strstr(err, "not in the engine's image directories") != NULL);
  CHECK(strstr(err, "--image-dir") != NULL);
  /* a symlink in an image dir that points out of it */
  snprintf(link, sizeof link, "%s/link", OUTSIDE);
  unlink(link);
  REQUIRE(symlink(img, link) == 0);
  CHECK(import_("oci", link, "v1", &r, err, sizeof err, &in_outside) == -1);
  CHECK(strstr(err, "leads out of the image directory") != NULL);
  /* `..` out of an image dir: refused as written */
  snprintf(path, sizeof path, "%s/../%s", OUTSIDE, strrchr(img, '/') + 1);
  CHECK(import_("oci", path, "v1", &r, err, sizeof err, &in_outside) == -1);
  CHECK(strstr(err, "'..' component") != NULL);
  /* a prefix that is not a path component (OUTSIDE is WORK + "-outside") */
  const char *prefix_only[] = {WORK, NULL};
  image_limits lp = {0, 0, prefix_only};
  snprintf(path, sizeof path, "%s/secret", OUTSIDE);
  CHECK(import_("docker", path, NULL, &r, err, sizeof err, &lp) == -1);
  CHECK(strstr(err, "not in the engine's image directories") != NULL);
  unlink(link);
}

int main(void) {
  if (geteuid() != 0) {
    printf("skipped: needs root\n");
    return 77;
  }
  snprintf(WORK, sizeof WORK, "/tmp/asb-img-%d", (int)getpid());
  snprintf(OUTSIDE, sizeof OUTSIDE, "%s-outside", WORK);
  mkdir(WORK, 0755);
  mkdir(OUTSIDE, 0755);
  char s[256];
  snprintf(s, sizeof s, "%s/secret", OUTSIDE);
  FILE *f = fopen(s, "w");
  if (f) {
    fputs("host", f);
    fclose(f);
  }
  RUN(refs);
  RUN(oci_layout_two_layers_whiteouts);
  RUN(docker_archive_two_layers_whiteouts);
  RUN(docker_archive_oci_style);
  RUN(dotdot_names_fail);
  RUN(absolute_names_stay_in_the_root);
  RUN(symlinks_out_of_the_root_are_written_inside);
  RUN(mount_points_are_real_directories);
  RUN(hard_links_to_outside_fail);
  RUN(devices_skipped_setuid_dropped_owners_kept);
  RUN(limits_and_broken_blobs);
  RUN(only_the_image_directories);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", WORK, OUTSIDE);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
  TEST_MAIN_END();
}
