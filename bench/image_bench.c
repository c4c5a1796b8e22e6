/* Templates on local container images (core/engine/image.c) against a real
 * engine, in one run, side by side:
 *   - the template build on an OCI layout of busybox-static: with the image
 *     unpacked anew (the cache dir removed, forced) and with the unpacked
 *     image reused (forced build, same image)
 *   - create + first commands.run("true") of a sandbox of that template
 *     next to one of the built-in busybox template (the same binary, made
 *     by the engine) and of base
 *   - commands.run("true") in each: envd in a foreign root (its own loader
 *     and libraries from /.asb) against the host's /usr
 * usage: image_bench [iterations]   (as root)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <sys/stat.h>

#include "../tests/support/engine_fixture.h"
#include "bench.h"
#include "bench_signals.h"

#ifndef ASBT_MKIMAGE
#define ASBT_MKIMAGE "tests/support/mkimage.py"
#endif

static engine_fixture F;
static asb_client *C;
static char WORK[128];

static asb_sandbox *create(const char *tmpl) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = tmpl;
  o.timeout_ms = 600000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, C, &o) != ASB_OK) {
    fprintf(stderr, "create %s: %s\n", tmpl, asb_error_last()->message);
    return NULL;
  }
  return sb;
}

static int run_true(asb_sandbox *sb) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "true", NULL);
  asb_command_result_free(r);
  return rc;
}

static int build(const char *dir) {
  asb_template_build_options o = ASB_TEMPLATE_BUILD_OPTIONS_INIT;
  o.force = 1;
  asb_template *t = NULL;
  int rc = asb_templates_build(&t, C, dir, &o);
  if (rc) fprintf(stderr, "build: %s\n", asb_error_last()->message);
  asb_template_free(t);
  return rc;
}

int main(int argc, char **argv) {
  bench_exit_on_signals(); /* the engines stopped, their state removed */
  int iters = argc > 1 ? atoi(argv[1]) : 100;
  if (iters < 10) iters = 10;
  snprintf(WORK, sizeof WORK, "/tmp/asb-imgbench-%d", (int)getpid());
  mkdir(WORK, 0755);
  char cmd[1024], dir[256];
  snprintf(cmd, sizeof cmd,
           "printf '{\"format\": \"oci\", \"out\": \"%s/oci\", \"name\": \"v1\", \"config\": "
           "{\"Env\": [\"PATH=/bin\"]}, \"layers\": [[{\"name\": \"bin/busybox\", \"host\": "
           "\"/bin/busybox\"}, {\"name\": \"bin/sh\", \"type\": \"symlink\", \"link\": "
           "\"busybox\"}], [{\"name\": \"two\", \"data\": \"2\"}]]}' > %s/spec.json && "
           "/usr/bin/python3 %s %s/spec.json && mkdir -p %s/t && printf 'name: img-bench\\n"
           "base: \"oci:%s/oci:v1\"\\nsteps:\\n  - run: \"true\"\\n' > %s/t/template.yaml",
           WORK, WORK, ASBT_MKIMAGE, WORK, WORK, WORK, WORK);
  if (system(cmd) != 0) {
    fprintf(stderr, "cannot make the image\n");
    return 1;
  }
  snprintf(dir, sizeof dir, "%s/t", WORK);
  const char *args[] = {"--image-dir", WORK, NULL};
  if (engine_fixture_start_args(&F, "ibench", args) != 0 ||
      engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  int builds = iters / 10 < 5 ? 5 : iters / 10, creates = iters / 5 < 10 ? 10 : iters / 5;
  double *v = calloc((size_t)iters, sizeof *v), *w = calloc((size_t)iters, sizeof *w);
  int rc = 1;
  char images[512];
  snprintf(images, sizeof images, "rm -rf '%s/templates/.images'", F.state);
  printf("== build on oci:<busybox, 2 layers> ==\n");
  for (int i = 0; i < builds; i++) {
    if (system(images) != 0) goto out;
    double t0 = bench_now();
    if (build(dir)) goto out;
    v[i] = bench_now() - t0;
    t0 = bench_now();
    if (build(dir)) goto out;
    w[i] = bench_now() - t0;
  }
  double cold = bench_report("build, image unpacked anew", v, builds);
  double warm = bench_report("build, unpacked image reused", w, builds);
  printf("ratio unpack+build / build: %.2fx\n", cold / warm);
  static const char *const tmpls[] = {"img-bench", "busybox", "base"};
  double p50[3];
  printf("== create + first commands.run(\"true\") ==\n");
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < creates; i++) {
      double t0 = bench_now();
      asb_sandbox *sb = create(tmpls[k]);
      if (!sb || run_true(sb)) goto out;
      v[i] = bench_now() - t0;
      asb_sandbox_kill(sb, NULL);
      asb_sandbox_free(sb);
    }
    char name[64];
    snprintf(name, sizeof name, "create+run %s", tmpls[k]);
    p50[k] = bench_report(name, v, creates);
  }
  printf("ratio image / busybox: %.2fx, image / base: %.2fx\n", p50[0] / p50[1], p50[0] / p50[2]);
  printf("== commands.run(\"true\") ==\n");
  for (int k = 0; k < 3; k++) {
    asb_sandbox *sb = create(tmpls[k]);
    if (!sb) goto out;
    for (int i = 0; i < iters; i++) {
      double t0 = bench_now();
      if (run_true(sb)) goto out;
      v[i] = bench_now() - t0;
    }
    asb_sandbox_kill(sb, NULL);
    asb_sandbox_free(sb);
    char name[64];
    snprintf(name, sizeof name, "commands.run in %s", tmpls[k]);
    p50[k] = bench_report(name, v, iters);
  }
  printf("ratio image / busybox: %.2fx, image / base: %.2fx\n", p50[0] / p50[1], p50[0] / p50[2]);
  rc = 0;
out:
  free(v);
  free(w);
  asb_templates_delete(C, "img-bench", NULL);
  asb_client_free(C);
  engine_fixture_stop(&F);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", WORK);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", WORK);
  return rc;
}
