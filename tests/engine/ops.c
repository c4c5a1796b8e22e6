/* engine.ops: the engine's operations (core/engine: sandboxes.c, build.c,
 * templates.c, bundled.c) driven directly, without HTTP: a real engine
 * opened with engine_open on a temp state dir, its own cgroup name, envd
 * and asb-init of this build, and a templates dir with one bundled
 * template. Every sandbox is killed by engine_close at the end, also when
 * checks fail. Needs root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/build.h"
#include "engine/bundled.h"
#include "engine/engine.h"
#include "engine/registry.h"
#include "engine/sandboxes.h"
#include "engine/templates.h"
#include "proto/tar.h"
#include "testing.h"
#include "util/buf.h"
#include "util/util.h"

static engine E;
static char ROOT[64];

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    ASBT_FAIL("cannot write %s: %s", path, strerror(errno));
    return;
  }
  fputs(text, f);
  fclose(f);
}

/* A template dir <ROOT>/<name> holding template.yaml = yaml, packed. */
static int tar_of(const char *name, const char *yaml, asbi_buf *tar) {
  char dir[256], path[300], why[512];
  snprintf(dir, sizeof dir, "%s/%s", ROOT, name);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/template.yaml", dir);
  write_file(path, yaml);
  asbi_buf_init(tar, 1u << 20);
  if (asbi_tar_pack_dir(dir, tar, 1u << 20, why, sizeof why) || asbi_tar_finish(tar)) {
    ASBT_FAIL("pack %s: %s", dir, why);
    return -1;
  }
  return 0;
}

/* Waits (60 s at most) until id is gone for reason. */
static int wait_gone(const char *id, const char *reason) {
  for (int64_t end = asbi_unix_ms() + 60000; asbi_unix_ms() < end;) {
    sbx *s = NULL;
    eng_err err;
    if (sandboxes_get(&E, id, &s, &err) != 0)
      return err.status == ENG_ENOTFOUND && !strcmp(err.code, reason) ? 0 : -1;
    reg_put(&E, s);
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static sbx *create(const char *tmpl, int timeout_s, const cJSON *metadata) {
  sandboxes_create_req rq = {tmpl, timeout_s, 0, metadata, NULL, NULL, 0, 0, NULL};
  sbx *s = NULL;
  eng_err err;
  if (sandboxes_create(&E, &rq, &s, &err) != 0) {
    ASBT_FAIL("create %s: %s", tmpl, err.message);
    return NULL;
  }
  return s;
}

TEST(create_unknown_template) {
  sandboxes_create_req rq = {"no-such-template", 10, 0, NULL, NULL, NULL, 0, 0, NULL};
  sbx *s = NULL;
  eng_err err;
  CHECK_INT(sandboxes_create(&E, &rq, &s, &err), -1);
  CHECK(s == NULL);
  CHECK_INT(err.status, ENG_ENOTFOUND);
  CHECK_STR(err.message, "template \"no-such-template\" not found");
}

TEST(create_get_list_kill) {
  cJSON *meta = cJSON_CreateObject();
  cJSON_AddStringToObject(meta, "suite", "ops");
  int64_t before = asbi_unix_ms();
  sbx *a = create("base", 120, meta);
  sbx *b = create("base", 120, NULL);
  REQUIRE(a && b);
  CHECK_STR(a->template_id, "base");
  CHECK_INT(strlen(a->id), ENGINE_ID_LEN);
  CHECK_INT(strlen(a->token), 40);
  CHECK(strcmp(a->token, b->token) != 0);
  CHECK(a->started_ms >= before && a->end_ms == a->started_ms + 120000);
  CHECK(asbe_sandbox_alive(a->iso));
  /* the registry has both */
  sbx *got = NULL;
  eng_err err;
  CHECK_INT(sandboxes_get(&E, a->id, &got, &err), 0);
  CHECK(got == a);
  reg_put(&E, got);
  /* filters: metadata, newest first, pages */
  sandboxes_filter f;
  memset(&f, 0, sizeof f);
  f.running = 1;
  f.metadata = meta;
  sandboxes_page p;
  REQUIRE(sandboxes_list(&E, &f, &p, &err) == 0);
  CHECK_INT(p.n, 1);
  CHECK(p.n == 1 && p.v[0] == a);
  CHECK_INT(p.running, 1);
  sandboxes_page_free(&E, &p);
  f.metadata = NULL;
  f.limit = 1;
  REQUIRE(sandboxes_list(&E, &f, &p, &err) == 0);
  CHECK_INT(p.n, 1);
  CHECK(p.n == 1 && p.v[0] == b); /* newest first */
  CHECK_INT(p.more, 1);
  CHECK_INT(p.running, 2);
  sandboxes_page_free(&E, &p);
  f.cursor_ms = b->started_ms; /* the page after b */
  f.cursor_id = b->id;
  REQUIRE(sandboxes_list(&E, &f, &p, &err) == 0);
  CHECK(p.n == 1 && p.v[0] == a);
  CHECK_INT(p.more, 0);
  CHECK_INT(p.running, 2);
  sandboxes_page_free(&E, &p);
  f.ascending = 1; /* the exact reverse: after b, nothing */
  REQUIRE(sandboxes_list(&E, &f, &p, &err) == 0);
  CHECK_INT(p.n, 0);
  sandboxes_page_free(&E, &p);
  /* metrics sampled on demand */
  sbx_metric m[ENGINE_METRICS_RING];
  size_t nm = sandboxes_metrics(&E, a, 0, 0, m);
  CHECK(nm >= 1);
  CHECK(nm >= 1 && m[nm - 1].mem_total > 0);
  /* kill: gone, with why */
  char id[ENGINE_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", a->id);
  sandboxes_kill(&E, a);
  CHECK(!asbe_sandbox_alive(a->iso));
  reg_put(&E, a);
  CHECK_INT(sandboxes_get(&E, id, &got, &err), -1);
  CHECK_INT(err.status, ENG_ENOTFOUND);
  CHECK_STR(err.code, "killed");
  sandboxes_kill(&E, b);
  reg_put(&E, b);
  cJSON_Delete(meta);
}

TEST(pause_connect_timeout) {
  sbx *s = create("base", 120, NULL);
  REQUIRE(s);
  eng_err err;
  CHECK_INT(sandboxes_pause(&E, s, 1, &err), 0);
  CHECK_INT(s->state, SBX_PAUSED);
  CHECK_INT(sandboxes_pause(&E, s, 1, &err), -1);
  CHECK_INT(err.status, ENG_ECONFLICT);
  /* a running-only list leaves it out */
  sandboxes_filter f;
  memset(&f, 0, sizeof f);
  f.running = 1;
  sandboxes_page p;
  REQUIRE(sandboxes_list(&E, &f, &p, &err) == 0);
  CHECK_INT(p.n, 0);
  sandboxes_page_free(&E, &p);
  int resumed = 0;
  CHECK_INT(sandboxes_connect(&E, s, 300, 1, &resumed, &err), 0);
  CHECK_INT(resumed, 1);
  CHECK_INT(s->state, SBX_RUNNING);
  CHECK(s->end_ms >= asbi_unix_ms() + 290000);
  CHECK_INT(sandboxes_connect(&E, s, 300, 1, &resumed, &err), -1); /* resume: running */
  CHECK_INT(err.status, ENG_ECONFLICT);
  CHECK_INT(sandboxes_connect(&E, s, 10, 0, &resumed, &err), 0); /* never shortens */
  CHECK_INT(resumed, 0);
  CHECK(s->end_ms >= asbi_unix_ms() + 280000);
  /* an explicit timeout of 0: the lifecycle thread ends it */
  char id[ENGINE_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", s->id);
  sandboxes_set_timeout(&E, s, 0);
  reg_put(&E, s);
  CHECK_INT(wait_gone(id, "timeout"), 0);
}

TEST(build_cached_failed_invalid_delete) {
  asbi_buf tar;
  REQUIRE(tar_of("ops-built", "name: ops-built\nsteps:\n  - run: echo made > /ops-built\n", &tar) ==
          0);
  template_info *t = NULL;
  build_report rep;
  eng_err err;
  REQUIRE(build_run(&E, tar.data, tar.len, 0, NULL, &t, &rep, &err) == 0);
  CHECK_INT(rep.cached, 0);
  CHECK(rep.log && strstr(rep.log, "step 1/1 (template.yaml:3) run: echo made > /ops-built"));
  CHECK_STR(t->alias, "ops-built");
  char built_id[64];
  snprintf(built_id, sizeof built_id, "%s", t->id);
  templates_put(&E, t);
  build_report_free(&rep);
  /* the same inputs again: cached, nothing runs */
  REQUIRE(build_run(&E, tar.data, tar.len, 0, NULL, &t, &rep, &err) == 0);
  CHECK_INT(rep.cached, 1);
  CHECK(rep.log && strstr(rep.log, "cached: the inputs are those of build"));
  CHECK_STR(t->id, built_id);
  templates_put(&E, t);
  build_report_free(&rep);
  asbi_buf_free(&tar);
  /* a sandbox of it sees the layer */
  sbx *s = create("ops-built", 120, NULL);
  REQUIRE(s);
  const char *argv[] = {"/bin/cat", "/ops-built", NULL};
  char *out = NULL, *errs = NULL;
  CHECK_INT(asbe_sandbox_run(s->iso, argv, 0, NULL, &out, &errs, 4096, 30000), 0);
  CHECK_STR(out, "made\n");
  free(out);
  free(errs);
  /* in use: not deleted */
  CHECK_INT(templates_delete(&E, "ops-built", &err), -1);
  CHECK_INT(err.status, ENG_ECONFLICT);
  CHECK(strstr(err.message, "in use by 1 sandbox(es)"));
  sandboxes_kill(&E, s);
  reg_put(&E, s);
  CHECK_INT(templates_delete(&E, "ops-built", &err), 0);
  CHECK((t = templates_find(&E, "ops-built")) == NULL);
  CHECK_INT(templates_delete(&E, "ops-built", &err), -1);
  CHECK_INT(err.status, ENG_ENOTFOUND);
  CHECK_INT(templates_delete(&E, "base", &err), -1);
  CHECK_INT(err.status, ENG_EINVAL);
  /* a failing step: which, where, its output */
  REQUIRE(tar_of("ops-broken",
                 "name: ops-broken\nsteps:\n  - run: echo fine\n  - run: echo wrong >&2; exit 3\n",
                 &tar) == 0);
  CHECK_INT(build_run(&E, tar.data, tar.len, 0, NULL, &t, &rep, &err), -1);
  CHECK(t == NULL);
  CHECK_INT(err.status, ENG_EFAILED);
  CHECK_INT(rep.step, 2);
  CHECK_INT(rep.step_line, 4);
  CHECK(rep.output && strstr(rep.output, "wrong"));
  CHECK(strstr(err.message,
               "step 2/2 (run: echo wrong >&2; exit 3) at template.yaml:4 failed "
               "with exit code 3"));
  CHECK(rep.log && strstr(rep.log, "==> FAILED: failed with exit code 3"));
  CHECK(templates_find(&E, "ops-broken") == NULL);
  build_report_free(&rep);
  asbi_buf_free(&tar);
  /* invalid template.yaml: the file, the line, the field */
  REQUIRE(tar_of("ops-bad", "name: Bad-Name\n", &tar) == 0);
  CHECK_INT(build_run(&E, tar.data, tar.len, 0, NULL, &t, &rep, &err), -1);
  CHECK_INT(err.status, ENG_EINVAL);
  CHECK_STR(rep.file, "template.yaml");
  CHECK_INT(rep.line, 1);
  CHECK_STR(rep.field, "name");
  CHECK(strstr(err.message, "template.yaml:1:7: name: 'Bad-Name' is not a valid"));
  build_report_free(&rep);
  asbi_buf_free(&tar);
  /* not an archive */
  CHECK_INT(build_run(&E, "junk", 4, 0, NULL, &t, &rep, &err), -1);
  CHECK_INT(err.status, ENG_EINVAL);
  CHECK(strstr(err.message, "not a valid tar archive"));
  build_report_free(&rep);
}

TEST(bundled_built_on_first_create) {
  /* listed as waiting until the first create builds it, by build_run */
  size_t n = 0;
  char **names = bundled_names(&E, &n);
  CHECK(n == 1 && !strcmp(names[0], "ops-bundled"));
  bundled_names_free(names, n);
  template_info *w = NULL;
  char why[1024];
  REQUIRE(bundled_waiting(&E, "ops-bundled", &w, why, sizeof why) == 0);
  CHECK(w->builtin && w->spec);
  CHECK_STR(why, "");
  CHECK_INT(w->cpu_count, 1);
  templates_put(&E, w);
  CHECK(templates_find(&E, "ops-bundled") == NULL);
  sbx *s = create("ops-bundled", 120, NULL);
  REQUIRE(s);
  CHECK_STR(s->alias, "ops-bundled");
  CHECK_INT(s->cpu_count, 1);
  template_info *t = templates_find(&E, "ops-bundled");
  CHECK(t != NULL);
  templates_put(&E, t);
  const char *argv[] = {"/bin/cat", "/bundled", NULL};
  char *out = NULL, *errs = NULL;
  CHECK_INT(asbe_sandbox_run(s->iso, argv, 0, NULL, &out, &errs, 4096, 30000), 0);
  CHECK_STR(out, "bundled\n");
  free(out);
  free(errs);
  sandboxes_kill(&E, s);
  reg_put(&E, s);
}

int main(void) {
  if (geteuid() != 0) {
    printf("engine.ops needs root\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  snprintf(ROOT, sizeof ROOT, "/tmp/asbt-ops-XXXXXX");
  if (!mkdtemp(ROOT)) {
    perror("mkdtemp");
    return 1;
  }
  char state[128], tdir[128], bdir[160], cg[64], path[200];
  snprintf(state, sizeof state, "%s/state", ROOT);
  snprintf(tdir, sizeof tdir, "%s/bundled", ROOT);
  snprintf(bdir, sizeof bdir, "%s/ops-bundled", tdir);
  snprintf(cg, sizeof cg, "asbt-ops-%d", (int)getpid());
  mkdir(state, 0700);
  mkdir(tdir, 0755);
  mkdir(bdir, 0755);
  snprintf(path, sizeof path, "%s/template.yaml", bdir);
  write_file(path,
             "name: ops-bundled\nresources: {cpu: 1}\nsteps:\n"
             "  - run: echo bundled > /bundled\n");
  /* sandboxes with loopback only, as agent-sandboxd --no-network (the test
   * suite sets ASB_NO_NETWORK: tests/CMakeLists.txt) */
  const char *nn = getenv("ASB_NO_NETWORK");
  engine_config cfg = {.state_dir = state,
                       .envd = ASBT_ENVD,
                       .init = ASBT_INIT,
                       .templates_dir = tdir,
                       .cgroup_name = cg,
                       .no_network = nn && *nn};
  eng_err err;
  engine_init(&E);
  int rc = 1;
  if (engine_open(&E, &cfg, &err) != 0) {
    fprintf(stderr, "engine_open: %s\n", err.message);
  } else {
    RUN(create_unknown_template);
    RUN(create_get_list_kill);
    RUN(pause_connect_timeout);
    RUN(build_cached_failed_invalid_delete);
    RUN(bundled_built_on_first_create);
    engine_close(&E, 1); /* every sandbox, also those of failed checks */
    rc = asbt_failures ? 1 : 0;
    if (asbt_failures) printf("%d check(s) failed\n", asbt_failures);
  }
  engine_free(&E);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf --one-file-system '%s'", ROOT);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", ROOT);
  return rc;
}
