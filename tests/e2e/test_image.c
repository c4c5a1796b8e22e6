/* Templates on local container images against a real agent-sandboxd: an OCI
 * image layout and a `docker save` tarball written by the test
 * (tests/support/mkimage.py, from Debian's busybox-static: a root without
 * glibc), two layers with a whiteout and an opaque dir and an Env; the
 * template built on it with template.yaml (`base: oci:...`), a sandbox
 * created, commands run by envd inside (files of both layers, the whited-out
 * file absent, the image's Env visible, the build step's file); registry
 * names refused with a message naming the local forms. Runs as root; cleans
 * up its engine, sandboxes, templates and files.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "asb_testing.h"
#include "engine_fixture.h"
#include "template_dir.h"

#ifndef ASBT_MKIMAGE
#error "define ASBT_MKIMAGE (tests/support/mkimage.py)"
#endif
#ifndef ASBT_EXAMPLE
#error "define ASBT_EXAMPLE (examples/templates/busybox-image)"
#endif

static engine_fixture F;
static asb_client *C;
static char WORK[128];

static const char *busybox(void) {
  return access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" : "/usr/bin/busybox";
}

/* An image of format fmt ("oci", "docker") named name: busybox, then a
 * second layer that adds, whites out and makes a dir opaque. */
static int mkimage(const char *fmt, const char *out, const char *name) {
  char js[256], cmd[600];
  snprintf(js, sizeof js, "%s/%s.json", WORK, fmt);
  FILE *f = fopen(js, "w");
  if (!f) return -1;
  fprintf(f,
          "{\"format\": \"%s\", \"out\": \"%s\", \"name\": \"%s\","
          " \"config\": {\"Env\": [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\","
          " \"GREETING=hello from the image\"], \"Cmd\": [\"sh\"]},"
          " \"layers\": [[{\"name\": \"bin\", \"type\": \"dir\"},"
          "  {\"name\": \"bin/busybox\", \"host\": \"%s\"},"
          "  {\"name\": \"bin/sh\", \"type\": \"symlink\", \"link\": \"busybox\"},"
          "  {\"name\": \"gone.txt\", \"data\": \"lower\\n\"},"
          "  {\"name\": \"opq/old\", \"data\": \"old\\n\"},"
          "  {\"name\": \"one.txt\", \"data\": \"from layer 1\\n\"}],"
          " [{\"name\": \"two.txt\", \"data\": \"from layer 2\\n\"},"
          "  {\"name\": \".wh.gone.txt\"}, {\"name\": \"opq\", \"type\": \"dir\"},"
          "  {\"name\": \"opq/.wh..wh..opq\"}, {\"name\": \"opq/new\", \"data\": \"new\\n\"}]]}",
          fmt, out, name, busybox());
  fclose(f);
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", ASBT_MKIMAGE, js);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *tdir(const char *name, const char *yaml) {
  return asbt_template_dir(WORK, name, yaml, NULL);
}

static char *sh(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, cmd, NULL);
  char *out = strdup(r ? asb_command_result_stdout(r, NULL) : "<error>");
  if (rc != ASB_OK)
    fprintf(stderr, "run '%s': %s (%s)\n", cmd, asb_error_last()->message,
            r ? asb_command_result_stderr(r, NULL) : "");
  asb_command_result_free(r);
  return out;
}

static void build_and_run(const char *fmt, const char *ref, const char *name) {
  char yaml[1024];
  snprintf(yaml, sizeof yaml,
           "name: %s\n"
           "base: \"%s\"\n"
           "env:\n  FROM_YAML: \"yes\"\n"
           "steps:\n"
           "  - run: echo \"built with $GREETING\" > /built.txt\n"
           "resources: {cpu: 1, memory: 128Mi, disk: 256Mi}\n",
           name, ref);
  asb_template *t = NULL;
  REQUIRE_RC(asb_templates_build(&t, C, tdir(fmt, yaml), NULL), ASB_OK);
  CHECK_STR(asb_template_name(t), name);
  asb_template_free(t);
  /* GET /templates/{name}: the image it was built on, its config */
  char get[512], body[4096] = "";
  snprintf(get, sizeof get, "curl -s -H 'X-API-Key: %s' '%s/templates/%s'", F.key, F.url, name);
  FILE *p = popen(get, "r");
  if (p) {
    size_t n = fread(body, 1, sizeof body - 1, p);
    body[n] = '\0';
    pclose(p);
  }
  CHECK(strstr(body, "\"configDigest\":\"sha256:") != NULL);
  CHECK(strstr(body, "\"cmd\":[\"sh\"]") != NULL);
  CHECK(strstr(body, "\"GREETING\":\"hello from the image\"") != NULL); /* in env */
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = name;
  o.timeout_ms = 300000;
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char *out = sh(sb,
                 "cat /one.txt /two.txt /built.txt; ls /opq; test -e /gone.txt || echo gone;"
                 " echo \"$GREETING\"; id -un; test -e /usr/lib/x86_64-linux-gnu/libc.so.6 ||"
                 " echo no-glibc");
  CHECK_STR(out,
            "from layer 1\nfrom layer 2\nbuilt with hello from the image\nnew\ngone\n"
            "hello from the image\nuser\nno-glibc\n");
  free(out);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
  CHECK_RC(asb_templates_delete(C, name, NULL), ASB_OK);
}

TEST(oci_layout) {
  char img[256], ref[300];
  snprintf(img, sizeof img, "%s/oci", WORK);
  REQUIRE(mkimage("oci", img, "v1") == 0);
  snprintf(ref, sizeof ref, "oci:%s:v1", img);
  build_and_run("oci", ref, "img-oci");
}

TEST(docker_archive) {
  char img[256], ref[300];
  snprintf(img, sizeof img, "%s/img.tar", WORK);
  REQUIRE(mkimage("docker", img, "demo:1") == 0);
  snprintf(ref, sizeof ref, "docker-archive:%s:demo:1", img);
  build_and_run("docker", ref, "img-docker");
}

/* examples/templates/busybox-image: make-image.sh's layout (written with
 * coreutils, tar and gzip), the example's template.yaml at its own path */
TEST(example_busybox_image) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "sh %s/make-image.sh %s/ex-oci >/dev/null && mkdir -p %s/ex && sed "
           "'s|/var/lib/agent-sandbox/images/busybox-oci|%s/ex-oci|' "
           "%s/template.yaml > %s/ex/template.yaml",
           ASBT_EXAMPLE, WORK, WORK, WORK, ASBT_EXAMPLE, WORK);
  REQUIRE(system(cmd) == 0);
  snprintf(cmd, sizeof cmd, "%s/ex", WORK);
  asb_template *t = NULL;
  REQUIRE_RC(asb_templates_build(&t, C, cmd, NULL), ASB_OK);
  CHECK_STR(asb_template_name(t), "busybox-image");
  asb_template_free(t);
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = "busybox-image";
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &o), ASB_OK);
  char *out = sh(sb, "cut -d, -f1 /etc/motd; cat /README");
  CHECK_STR(out, "hello from the image\nmade from busybox-static\n");
  free(out);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
  CHECK_RC(asb_templates_delete(C, "busybox-image", NULL), ASB_OK);
}

TEST(registry_names_and_bad_images) {
  asb_template *t = NULL;
  CHECK_RC(asb_templates_build(
               &t, C, tdir("reg", "name: reg\nbase: docker.io/library/alpine:3.19\n"), NULL),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "pulls from no registry"));
  CHECK(strstr(asb_error_last()->message, "oci:/dir[:name]"));
  CHECK_RC(asb_templates_build(&t, C, tdir("reg2", "name: reg2\nbase: ubuntu:22.04\n"), NULL),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "'ubuntu:22.04' is a container registry image"));
  char y[400];
  snprintf(y, sizeof y, "name: bad\nbase: oci:%s/nonexistent-xyz\n", WORK);
  CHECK_RC(asb_templates_build(&t, C, tdir("bad", y), NULL), ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "/nonexistent-xyz: No such file"));
  /* a path outside the engine's image directories is not read at all */
  CHECK_RC(asb_templates_build(&t, C, tdir("host", "name: host\nbase: oci:/etc\n"), NULL),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "/etc is not in the engine's image directories"));
}

/* entries in the engine's cache of unpacked images */
static int unpacked_images(void) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/templates/.images", F.state);
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* An unpacked image stays while a template is built on it and goes with
 * the last one (before, every image ever built on stayed on disk). */
TEST(unpacked_images_go_with_their_last_template) {
  CHECK_INT(unpacked_images(), 0); /* the tests above deleted theirs */
  char img[256], ref[300], yaml[600];
  snprintf(img, sizeof img, "%s/gc-oci", WORK);
  REQUIRE(mkimage("oci", img, "v1") == 0);
  snprintf(ref, sizeof ref, "oci:%s:v1", img);
  const char *names[2] = {"img-gc-a", "img-gc-b"};
  for (int i = 0; i < 2; i++) {
    snprintf(yaml, sizeof yaml, "name: %s\nbase: \"%s\"\nsteps:\n  - run: echo %d > /n\n", names[i],
             ref, i);
    asb_template *t = NULL;
    REQUIRE_RC(asb_templates_build(&t, C, tdir(names[i], yaml), NULL), ASB_OK);
    asb_template_free(t);
  }
  CHECK_INT(unpacked_images(), 1); /* one image, two templates */
  CHECK_RC(asb_templates_delete(C, names[0], NULL), ASB_OK);
  CHECK_INT(unpacked_images(), 1);
  CHECK_RC(asb_templates_delete(C, names[1], NULL), ASB_OK);
  CHECK_INT(unpacked_images(), 0);
}

int main(void) {
  snprintf(WORK, sizeof WORK, "/tmp/asb-e2e-img-%d", (int)getpid());
  mkdir(WORK, 0755);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", WORK);
  const char *args[] = {"--image-dir", WORK, NULL};
  if (engine_fixture_start_args(&F, "img", args) != 0 || engine_fixture_client(&F, &C) != 0) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
    return 1;
  }
  RUN(oci_layout);
  RUN(docker_archive);
  RUN(example_busybox_image);
  RUN(registry_names_and_bad_images);
  RUN(unpacked_images_go_with_their_last_template);
  asb_client_free(C);
  engine_fixture_stop(&F);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
  TEST_MAIN_END();
}
