/* E2B's Template builder through the C ABI (asb_templates_build_steps and
 * friends) against a real agent-sandboxd: steps JSON as E2B's SDKs send it,
 * COPY files from a local context directory uploaded by hash, a RUN whose
 * output is checked in a sandbox created from the result, the log
 * callback, a failing step's error, step index and log, bad COPY sources,
 * a build in the background followed by its status, aliases and tags,
 * and the same build one step per call (asb_templates_request_build...).
 * Runs as root; cleans up the engine, its sandboxes and templates.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static char CTX[128];

static void put(const char *rel, const char *content) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", CTX, rel);
  FILE *f = fopen(p, "w");
  if (f) {
    fputs(content, f);
    fclose(f);
  }
}

typedef struct logs {
  char text[65536];
  size_t len;
  int lines, stop_after;
} logs;

static int on_log(asb_int64 ts, const char *level, const char *message, void *ud) {
  logs *l = ud;
  int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%s %s\n", level, message);
  if (n > 0 && l->len + (size_t)n < sizeof l->text) l->len += (size_t)n;
  l->lines++;
  if (ts <= 1700000000000LL) return -1; /* a time that parsed */
  return l->stop_after && l->lines >= l->stop_after ? 1 : 0;
}

static char *sh(asb_sandbox *sb, const char *cmd) {
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, cmd, NULL);
  char *out = strdup(r ? asb_command_result_stdout(r, NULL) : "<error>");
  if (rc != ASB_OK) fprintf(stderr, "run '%s': %s\n", cmd, asb_error_last()->message);
  asb_command_result_free(r);
  return out;
}

/* The status of build bid of tid once it is "ready" or "error" (waiting
 * for that; past the deadline the last one read, NULL if none was). */
static asb_template_build *build_finished(const char *tid, const char *bid) {
  asb_template_build *s = NULL;
  const char *st = "";
  WAIT_UNTIL((asb_template_build_free(s), s = NULL,
              asb_templates_build_status(&s, C, tid, bid, 0, NULL) == ASB_OK &&
                  (!strcmp(st = asb_template_build_status(s), "ready") || !strcmp(st, "error"))),
             ASBT_DEADLINE_MS);
  return s;
}

static const char BUILD[] =
    "{\"fromTemplate\": \"base\", \"steps\": ["
    "{\"type\": \"ENV\", \"args\": [\"GREETING\", \"hi there\"]},"
    "{\"type\": \"COPY\", \"args\": [\"app\", \"/opt/app\", \"\", \"\"]},"
    "{\"type\": \"COPY\", \"args\": [\"conf/*.txt\", \"/opt/conf/\", \"root\", \"0604\"]},"
    "{\"type\": \"RUN\", \"args\": [\"cat /opt/app/hello.txt > /home/user/out.txt && "
    "echo \\\"built: $GREETING $(whoami)\\\"\", \"\"]},"
    "{\"type\": \"WORKDIR\", \"args\": [\"/opt/app\"]}]}";

TEST(build_copy_run_and_create) {
  logs l;
  memset(&l, 0, sizeof l);
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  const char *tags[] = {"v2", NULL};
  o.context_dir = CTX;
  o.cpu_count = 1;
  o.memory_mb = 256;
  o.tags = tags;
  o.on_log = on_log;
  o.userdata = &l;
  asb_template_build *b = NULL;
  REQUIRE_RC(asb_templates_build_steps(&b, C, "steps-app:v1", BUILD, &o), ASB_OK);
  CHECK_STR(asb_template_build_status(b), "ready");
  CHECK(asb_template_build_error(b) == NULL);
  CHECK_INT(asb_template_build_error_step(b), -1);
  CHECK_INT(strlen(asb_template_build_template_id(b)), 20);
  CHECK(*asb_template_build_build_id(b));
  /* the engine's lines, after the library's own progress (as E2B's SDKs log it) */
  int engine_lines = (int)asb_template_build_log_count(b);
  CHECK_INT(engine_lines + 4, l.lines);
  CHECK(asb_template_build_log_count(b) > 0);
  CHECK(strstr(l.text, "info Template created with ID: "));
  CHECK(strstr(l.text, "info Uploaded 'app'\ninfo Uploaded 'conf/*.txt'\ninfo Starting building"));
  /* the RUN step's output came through the callback, as the user it ran as */
  CHECK(strstr(l.text, "built: hi there user"));
  CHECK(strstr(l.text, "info "));
  char tid[64], bid[64];
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  asb_template_build_free(b);

  /* the status of that build, its log from an offset */
  REQUIRE_RC(asb_templates_build_status(&b, C, tid, bid, 1, NULL), ASB_OK);
  CHECK_STR(asb_template_build_status(b), "ready");
  CHECK_INT((int)asb_template_build_log_count(b), engine_lines - 1);
  CHECK(asb_template_build_log_message(b, 0) != NULL);
  CHECK(asb_template_build_log_message(b, 100000) == NULL);
  asb_template_build_free(b);

  /* the files and the RUN's work, in a sandbox of the template */
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = "steps-app";
  so.timeout_ms = 120000;
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &so), ASB_OK);
  char *out = sh(sb,
                 "cat /home/user/out.txt /opt/app/sub/deep.txt; readlink /opt/app/link; "
                 "cat /opt/conf/a.txt /opt/conf/b.txt; stat -c '%U %a' /opt/conf/a.txt "
                 "/opt/app/hello.txt; test -e /opt/conf/skip.md || echo no-md; "
                 "echo \"$GREETING\"");
  CHECK_STR(out,
            "hello from the context\ndeep\nhello.txt\nA\nB\nroot 604\nuser 644\nno-md\n"
            "hi there\n");
  free(out);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);

  /* aliases and tags */
  int exists = -1;
  CHECK_RC(asb_templates_alias_exists(&exists, C, "steps-app", NULL), ASB_OK);
  CHECK_INT(exists, 1);
  CHECK_RC(asb_templates_alias_exists(&exists, C, "no-such-template-xyz", NULL), ASB_OK);
  CHECK_INT(exists, 0);
  char *tj = NULL;
  REQUIRE_RC(asb_templates_tags_list(&tj, C, tid, NULL), ASB_OK);
  CHECK(strstr(tj, "\"tag\":\"v1\"") && strstr(tj, "\"tag\":\"v2\""));
  asb_free(tj);
  const char *more[] = {"prod", NULL};
  CHECK_RC(asb_templates_tags_assign(C, "steps-app:v1", more, NULL), ASB_OK);
  REQUIRE_RC(asb_templates_tags_list(&tj, C, tid, NULL), ASB_OK);
  CHECK(strstr(tj, "\"tag\":\"prod\""));
  asb_free(tj);
  CHECK_RC(asb_templates_tags_remove(C, "steps-app", more, NULL), ASB_OK);
  REQUIRE_RC(asb_templates_tags_list(&tj, C, tid, NULL), ASB_OK);
  CHECK(!strstr(tj, "\"tag\":\"prod\""));
  asb_free(tj);
  CHECK_RC(asb_templates_delete(C, "steps-app", NULL), ASB_OK);
  CHECK_RC(asb_templates_alias_exists(&exists, C, "steps-app", NULL), ASB_OK);
  CHECK_INT(exists, 0);
}

TEST(a_failing_step) {
  logs l;
  memset(&l, 0, sizeof l);
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  o.context_dir = CTX;
  o.on_log = on_log;
  o.userdata = &l;
  asb_template_build *b = NULL;
  REQUIRE_RC(asb_templates_build_steps(
                 &b, C, "steps-fail",
                 "{\"fromTemplate\": \"base\", \"steps\": ["
                 "{\"type\": \"RUN\", \"args\": [\"true\"]},"
                 "{\"type\": \"RUN\", \"args\": [\"echo boom-out; echo boom-err >&2; exit 7\"]}]}",
                 &o),
             ASB_EBUILD);
  REQUIRE(b);
  const char *msg = asb_error_last()->message;
  CHECK(strstr(msg, "exit code 7") && strstr(msg, "boom-err"));
  /* the step as the program wrote it, not the generated template.yaml's line */
  CHECK(
      strstr(msg, "step 2 (RUN echo boom-out; echo boom-err >&2; exit 7) failed with exit code 7"));
  CHECK(!strstr(msg, "template.yaml"));
  CHECK_STR(asb_template_build_status(b), "error");
  CHECK(asb_template_build_error(b) && strstr(asb_template_build_error(b), "exit code 7"));
  CHECK_INT(asb_template_build_error_step(b), 2); /* E2B's: 0 is the base */
  CHECK(strstr(l.text, "error ") && strstr(l.text, "boom-out"));
  /* the log names the steps as the program wrote them too */
  CHECK(
      strstr(l.text, "==> step 1/2: RUN true (E2B's step 1)") &&
      strstr(l.text, "==> step 2/2: RUN echo boom-out; echo boom-err >&2; exit 7 (E2B's step 2)"));
  CHECK(!strstr(l.text, "template.yaml"));
  asb_template_build_free(b);
  int exists = -1;
  CHECK_RC(asb_templates_alias_exists(&exists, C, "steps-fail", NULL), ASB_OK);
  CHECK_INT(exists, 0);
}

TEST(bad_input) {
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  o.context_dir = CTX;
  asb_template_build *b = NULL;
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-bad", "[1]", &o), ASB_EINVAL);
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-bad",
                                     "{\"steps\": [{\"type\": \"COPY\", \"args\": "
                                     "[\"nothing-here/*\", \"/x\"]}]}",
                                     &o),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "steps[0] (COPY)") &&
        strstr(asb_error_last()->message, "matches 'nothing-here/*'"));
  CHECK_RC(asb_templates_build_steps(
               &b, C, "steps-bad",
               "{\"steps\": [{\"type\": \"COPY\", \"args\": [\"../etc/passwd\", \"/x\"]}]}", &o),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "without '..'"));
  /* what the engine refuses comes back with the step's index */
  CHECK_RC(asb_templates_build_steps(
               &b, C, "steps-bad",
               "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": [\"true\"]},"
               "{\"type\": \"USER\", \"args\": [\"nobody-here\"]}]}",
               &o),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "steps[1]"));
  CHECK(b == NULL);
  asb_template_steps_options v0 = o;
  v0.version = 99;
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-bad", "{}", &v0), ASB_EVERSION);
}

TEST(background_then_status_and_log_abort) {
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  o.background = 1;
  o.skip_cache = 1;
  asb_template_build *b = NULL;
  const char *spec =
      "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": [\"echo bg\"]}]}";
  REQUIRE_RC(asb_templates_build_steps(&b, C, "steps-bg", spec, &o), ASB_OK);
  CHECK(!strcmp(asb_template_build_status(b), "building") ||
        !strcmp(asb_template_build_status(b), "ready"));
  char tid[64], bid[64];
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  asb_template_build_free(b);
  asb_template_build *s = build_finished(tid, bid);
  REQUIRE(s);
  CHECK_STR(asb_template_build_status(s), "ready");
  asb_template_build_free(s);
  CHECK_RC(asb_templates_build_status(&s, C, tid, "no-such-build", 0, NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_templates_delete(C, "steps-bg", NULL), ASB_OK);

  /* a log callback that says stop before the build started: ASB_EUSER, no
   * build; once it started (the engine's first line): ASB_EUSER, and the
   * build to follow */
  logs l;
  memset(&l, 0, sizeof l);
  l.stop_after = 1;
  o.background = 0;
  o.on_log = on_log;
  o.userdata = &l;
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-bg", spec, &o), ASB_EUSER);
  CHECK(b == NULL);
  CHECK(strstr(l.text, "Template created with ID"));
  memset(&l, 0, sizeof l);
  l.stop_after = 3; /* created, starting, the engine's first */
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-bg", spec, &o), ASB_EUSER);
  REQUIRE(b);
  CHECK_INT(l.lines, 3);
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  asb_template_build_free(b);
  s = build_finished(tid, bid);
  REQUIRE(s);
  CHECK_STR(asb_template_build_status(s), "ready");
  asb_template_build_free(s);
  CHECK_RC(asb_templates_delete(C, "steps-bg", NULL), ASB_OK);
}

/* COPY . of a context with a .dockerignore, plus ignore_patterns: what
 * they leave out is not uploaded (Docker's rules: "**", a leading "/",
 * comments, a directory and what it holds, "!" exceptions); a COPY whose
 * matches are all left out is refused; a bad pattern is refused. */
TEST(dockerignore) {
  char ctx[200], p[300];
  snprintf(ctx, sizeof ctx, "%s/ign", CTX);
  const char *dirs[] = {"", "/sub", "/build", "/build/keep"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(p, sizeof p, "%s%s", ctx, dirs[i]);
    mkdir(p, 0755);
  }
  const char *files[] = {"keep.txt",  "secret.txt",       "a.log",
                         "sub/b.log", "sub/ok.txt",       "sub/secret.txt",
                         "build/x.o", "build/keep/k.txt", "extra.txt"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    snprintf(p, sizeof p, "ign/%s", files[i]);
    put(p, "x\n");
  }
  put("ign/.dockerignore",
      "# comments and blank lines are skipped\n\n**/*.log\n/secret.txt\nbuild\n!build/keep\n");
  logs l;
  memset(&l, 0, sizeof l);
  const char *extra[] = {"extra.txt", NULL};
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  o.context_dir = ctx;
  o.ignore_patterns = extra;
  o.on_log = on_log;
  o.userdata = &l;
  asb_template_build *b = NULL;
  CHECK_RC(asb_templates_build_steps(
               &b, C, "steps-ign",
               "{\"fromTemplate\": \"base\", \"steps\": ["
               "{\"type\": \"COPY\", \"args\": [\".\", \"/opt/ign\", \"\", \"\"]},"
               "{\"type\": \"RUN\", \"args\": [\"cd /opt/ign && find . -type f | sort | "
               "sed 's/^/have /'\"]}]}",
               &o),
           ASB_OK);
  asb_template_build_free(b);
  const char *kept[] = {"have ./.dockerignore\n", "have ./keep.txt\n", "have ./sub/ok.txt\n",
                        "have ./sub/secret.txt\n", "have ./build/keep/k.txt\n"};
  for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
    if (!strstr(l.text, kept[i])) {
      fprintf(stderr, "missing %s", kept[i]);
      CHECK(0);
    }
  const char *gone[] = {"have ./secret.txt", "a.log", "b.log", "x.o", "extra.txt"};
  for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
    if (strstr(l.text, gone[i])) {
      fprintf(stderr, "not left out: %s\n", gone[i]);
      CHECK(0);
    }
  CHECK_RC(asb_templates_delete(C, "steps-ign", NULL), ASB_OK);
  /* all of it left out: refused before the build */
  o.on_log = NULL;
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-ign",
                                     "{\"fromTemplate\": \"base\", \"steps\": ["
                                     "{\"type\": \"COPY\", \"args\": [\"*.log\", \"/x/\"]}]}",
                                     &o),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "steps[0] (COPY)") &&
        strstr(asb_error_last()->message, "left out"));
  asb_template_build_free(b);
  b = NULL;
  const char *bad[] = {"file[0-9", NULL};
  o.ignore_patterns = bad;
  CHECK_RC(asb_templates_build_steps(&b, C, "steps-ign",
                                     "{\"fromTemplate\": \"base\", \"steps\": ["
                                     "{\"type\": \"COPY\", \"args\": [\"keep.txt\", \"/x/\"]}]}",
                                     &o),
           ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "unclosed '['"));
  asb_template_build_free(b);
}

/* The steps asb_templates_build_steps makes, one call each (as E2B's SDKs
 * drive a build): request the build, hash the COPY's files, ask the engine
 * for them, upload, start the build with the hash filled in, follow the
 * status; then asb_templates_build_steps of the same COPY finds the files
 * already uploaded (the same tar, the same hash). */
TEST(split_calls) {
  /* files no other test uploaded (the engine keeps files by their hash) */
  char p[300], unique[64];
  snprintf(p, sizeof p, "%s/split", CTX);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/split/sub", CTX);
  mkdir(p, 0755);
  snprintf(unique, sizeof unique, "one-%d\n", (int)getpid());
  put("split/one.txt", unique);
  put("split/sub/two.txt", "two\n");
  asb_template_files_options fo = ASB_TEMPLATE_FILES_OPTIONS_INIT;
  fo.context_dir = CTX;
  char *h1 = NULL, *h2 = NULL;
  REQUIRE_RC(asb_templates_files_hash(&h1, "split", &fo), ASB_OK);
  CHECK_INT(strlen(h1), 64);
  REQUIRE_RC(asb_templates_files_hash(&h2, "split", &fo), ASB_OK);
  CHECK_STR(h2, h1); /* the same files, the same archive */
  asb_free(h2);
  h2 = NULL;
  CHECK_RC(asb_templates_files_hash(&h2, "nothing-here/*", &fo), ASB_EINVAL);
  CHECK(h2 == NULL && strstr(asb_error_last()->message, "matches 'nothing-here/*'"));
  CHECK_RC(asb_templates_files_hash(&h2, "../etc", &fo), ASB_EINVAL);
  const char *ign[] = {"split/sub", NULL};
  fo.ignore_patterns = ign;
  REQUIRE_RC(asb_templates_files_hash(&h2, "split", &fo), ASB_OK);
  CHECK(strcmp(h2, h1) != 0); /* less what the patterns leave out */
  asb_free(h2);
  h2 = NULL;
  fo.ignore_patterns = NULL;

  asb_template_request_options ro = ASB_TEMPLATE_REQUEST_OPTIONS_INIT;
  const char *tags[] = {"extra", NULL};
  ro.tags = tags;
  ro.cpu_count = 1;
  ro.memory_mb = 256;
  asb_template_build *b = NULL;
  REQUIRE_RC(asb_templates_request_build(&b, C, "steps-split:v1", &ro), ASB_OK);
  CHECK_STR(asb_template_build_status(b), "waiting");
  CHECK_INT(strlen(asb_template_build_template_id(b)), 20);
  int tv1 = 0, textra = 0;
  for (size_t i = 0; i < asb_template_build_tag_count(b); i++) {
    tv1 |= !strcmp(asb_template_build_tag(b, i), "v1");
    textra |= !strcmp(asb_template_build_tag(b, i), "extra");
  }
  CHECK(tv1 && textra);
  CHECK(asb_template_build_tag(b, 100) == NULL);
  char tid[64], bid[64];
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  asb_template_build_free(b);
  b = NULL;

  int present = -1;
  char *url = NULL;
  REQUIRE_RC(asb_templates_files_link(&present, &url, C, tid, h1, NULL), ASB_OK);
  CHECK_INT(present, 0);
  REQUIRE(url);
  REQUIRE_RC(asb_templates_files_upload(&h2, C, url, "split", &fo), ASB_OK);
  CHECK_STR(h2, h1);
  asb_free(h2);
  asb_free(url);
  url = NULL;
  REQUIRE_RC(asb_templates_files_link(&present, &url, C, tid, h1, NULL), ASB_OK);
  CHECK_INT(present, 1);
  asb_free(url);

  char spec[1024];
  snprintf(spec, sizeof spec,
           "{\"fromTemplate\": \"base\", \"steps\": ["
           "{\"type\": \"COPY\", \"args\": [\"split\", \"/opt/split\", \"\", \"\"], "
           "\"filesHash\": \"%s\"},"
           "{\"type\": \"RUN\", \"args\": [\"echo split: $(cat /opt/split/one.txt)\"]}]}",
           h1);
  CHECK_RC(asb_templates_trigger_build(C, tid, bid, "[1]", NULL), ASB_EINVAL);
  REQUIRE_RC(asb_templates_trigger_build(C, tid, bid, spec, NULL), ASB_OK);
  asb_template_build *s = build_finished(tid, bid);
  REQUIRE(s);
  CHECK_STR(asb_template_build_status(s), "ready");
  char want[80];
  snprintf(want, sizeof want, "split: one-%d", (int)getpid());
  int saw = 0;
  for (size_t i = 0; i < asb_template_build_log_count(s); i++)
    saw |= strstr(asb_template_build_log_message(s, i), want) != NULL;
  CHECK(saw);
  asb_template_build_free(s);

  /* the one-call build packs the same tar: the engine has it already */
  logs l;
  memset(&l, 0, sizeof l);
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  o.context_dir = CTX;
  o.on_log = on_log;
  o.userdata = &l;
  REQUIRE_RC(asb_templates_build_steps(
                 &b, C, "steps-split:v2",
                 "{\"fromTemplate\": \"base\", \"steps\": ["
                 "{\"type\": \"COPY\", \"args\": [\"split\", \"/opt/split\", \"\", \"\"]}]}",
                 &o),
             ASB_OK);
  CHECK_STR(asb_template_build_template_id(b), tid);
  CHECK(strstr(l.text, "info Skipping upload of 'split', already cached\n"));
  asb_template_build_free(b);
  asb_free(h1);

  asb_template_request_options rv = ro;
  rv.version = 99;
  CHECK_RC(asb_templates_request_build(&b, C, "steps-split", &rv), ASB_EVERSION);
  CHECK(b == NULL);
  CHECK_RC(asb_templates_delete(C, "steps-split", NULL), ASB_OK);
}

/* The pid of a process in another mount namespace (a sandbox's) whose
 * command line holds marker, 0 if none. */
static int find_proc(const char *marker) {
  char self_ns[64] = "", ns[64], nsp[64];
  if (readlink("/proc/self/ns/mnt", self_ns, sizeof self_ns - 1) < 0) return 0;
  DIR *d = opendir("/proc");
  int found = 0;
  for (int pid; !found && (pid = asbt_next_pid(d));) {
    char buf[4096];
    if (asbt_cmdline(pid, buf, sizeof buf) < 0) continue;
    snprintf(nsp, sizeof nsp, "/proc/%d/ns/mnt", pid);
    ssize_t l = readlink(nsp, ns, sizeof ns - 1);
    if (l > 0) ns[l] = '\0';
    if (strstr(buf, marker) && l > 0 && strcmp(ns, self_ns)) found = pid;
  }
  if (d) closedir(d);
  return found;
}

/* Makes /tmp/<name> inside the sandbox of process pid. The sandbox's
 * filesystems belong to its user namespace, where the host's root has no
 * id (a file it made would have no owner there: EOVERFLOW), so the file is
 * made with the process's own (host) uid and gid as the filesystem ids, in
 * a child, on the directory opened as root. */
static int release(int pid, const char *name) {
  char p[128], line[256];
  unsigned uid = 0, gid = 0;
  snprintf(p, sizeof p, "/proc/%d/status", pid);
  FILE *f = fopen(p, "r");
  while (f && fgets(line, sizeof line, f)) {
    if (!strncmp(line, "Uid:", 4)) uid = (unsigned)strtoul(line + 4, NULL, 10);
    if (!strncmp(line, "Gid:", 4)) gid = (unsigned)strtoul(line + 4, NULL, 10);
  }
  if (f) fclose(f);
  snprintf(p, sizeof p, "/proc/%d/root/tmp", pid);
  int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    fprintf(stderr, "open %s: %s\n", p, strerror(errno));
    return -1;
  }
  pid_t c = fork();
  if (c == 0) {
    setfsgid(gid);
    setfsuid(uid);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) fprintf(stderr, "create %s/%s as %u:%u: %s\n", p, name, uid, gid, strerror(errno));
    _exit(fd < 0);
  }
  int st = -1;
  if (c > 0) waitpid(c, &st, 0);
  close(dfd);
  return c > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* DELETE of a template whose rebuild is under way: 409 naming the build
 * (it answered "the base of template <itself>" once the build had ended);
 * once the build is ready, the delete works. The rebuild's step waits for
 * a file the test makes inside the build sandbox (through /proc/<pid>/root
 * of the step's shell), so the delete surely lands mid-build. */
TEST(delete_while_rebuilding) {
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  asb_template_build *b = NULL;
  REQUIRE_RC(
      asb_templates_build_steps(
          &b, C, "steps-del",
          "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": [\"true\"]}]}",
          &o),
      ASB_OK);
  asb_template_build_free(b);
  b = NULL;
  o.background = 1;
  REQUIRE_RC(
      asb_templates_build_steps(
          &b, C, "steps-del",
          "{\"fromTemplate\": \"base\", \"steps\": [{\"type\": \"RUN\", \"args\": "
          "[\"i=0; while [ ! -e /tmp/del-go ] && [ $i -lt 3000 ]; do sleep 0.05; i=$((i+1)); done; "
          "echo tplb-del-wait\"]}]}",
          &o),
      ASB_OK);
  REQUIRE(b);
  char tid[64], bid[64];
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  asb_template_build_free(b);
  CHECK_RC(asb_templates_delete(C, "steps-del", NULL), ASB_EEXISTS);
  CHECK_INT(asb_error_last()->http_status, 409);
  CHECK(strstr(asb_error_last()->message, "is being built") &&
        strstr(asb_error_last()->message, bid));
  /* the step is running: release it */
  int pid = 0;
  WAIT_UNTIL((pid = find_proc("tplb-del-wait")) > 0, ASBT_DEADLINE_MS);
  CHECK(pid > 0 && release(pid, "del-go") == 0);
  asb_template_build *s = build_finished(tid, bid);
  CHECK(s && !strcmp(asb_template_build_status(s), "ready"));
  asb_template_build_free(s);
  CHECK_RC(asb_templates_delete(C, "steps-del", NULL), ASB_OK);
  int exists = -1;
  CHECK_RC(asb_templates_alias_exists(&exists, C, "steps-del", NULL), ASB_OK);
  CHECK_INT(exists, 0);
}

/* A template.yaml in its own directory under CTX (for ready_cmd_alone). */
static const char *ready_tdir(const char *sub, const char *yaml) {
  static char dir[256];
  snprintf(dir, sizeof dir, "%s/%s", CTX, sub);
  mkdir(dir, 0755);
  char path[300];
  snprintf(path, sizeof path, "%s/template.yaml", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(yaml, f);
    fclose(f);
  }
  return dir;
}

/* setReadyCmd without setStartCmd (and `ready` without `start`): E2B
 * loops the ready command until it exits 0 before the template is done;
 * here each create runs it until it passes, failing at its timeout. */
TEST(ready_cmd_alone) {
  asb_template_steps_options o = ASB_TEMPLATE_STEPS_OPTIONS_INIT;
  asb_template_build *b = NULL;
  /* passes once it ran twice: the check is retried, as the user */
  REQUIRE_RC(asb_templates_build_steps(
                 &b, C, "ready-alone",
                 "{\"fromTemplate\": \"base\", \"steps\": [], \"readyCmd\": "
                 "\"echo $(whoami) >> /home/user/ready-ran; test $(wc -l < /home/user/ready-ran) "
                 "-ge 2\"}",
                 &o),
             ASB_OK);
  asb_template_build_free(b);
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = "ready-alone";
  so.timeout_ms = 120000;
  asb_sandbox *sb = NULL;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &so), ASB_OK);
  char *out = sh(sb, "cat /home/user/ready-ran");
  CHECK_STR(out, "user\nuser\n"); /* ran before create returned, until it passed */
  free(out);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  CHECK_RC(asb_templates_delete(C, "ready-alone", NULL), ASB_OK);

  /* template.yaml: a check that never passes fails the create at its timeout */
  asb_template *t = NULL;
  REQUIRE_RC(asb_templates_build(&t, C,
                                 ready_tdir("never-ready",
                                            "name: never-ready\nready: {cmd: "
                                            "'test -f /tmp/never', timeout: 1}\n"),
                                 NULL),
             ASB_OK);
  asb_template_free(t);
  so.template_id = "never-ready";
  sb = NULL;
  CHECK_RC(asb_sandbox_create(&sb, C, &so), ASB_ETEMPLATE);
  const char *m = asb_error_last()->message;
  CHECK(strstr(m,
               "the ready check (command 'test -f /tmp/never') did not pass within 1 s "
               "(no start command)"));
  asb_sandbox_free(sb);
  CHECK_RC(asb_templates_delete(C, "never-ready", NULL), ASB_OK);
}

int main(void) {
  snprintf(CTX, sizeof CTX, "/tmp/asb-tplb-%d", (int)getpid());
  char p[256];
  mkdir(CTX, 0755);
  snprintf(p, sizeof p, "%s/app", CTX);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/app/sub", CTX);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/conf", CTX);
  mkdir(p, 0755);
  put("app/hello.txt", "hello from the context\n");
  put("app/sub/deep.txt", "deep\n");
  put("conf/a.txt", "A\n");
  put("conf/b.txt", "B\n");
  put("conf/skip.md", "not copied\n");
  snprintf(p, sizeof p, "%s/app/link", CTX);
  if (symlink("hello.txt", p) != 0) perror("symlink");
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", CTX);
  if (engine_fixture_start(&F, "tplb") != 0 || engine_fixture_client(&F, &C) != 0) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", CTX);
    return 1;
  }
  RUN(build_copy_run_and_create);
  RUN(a_failing_step);
  RUN(bad_input);
  RUN(background_then_status_and_log_abort);
  RUN(delete_while_rebuilding);
  RUN(dockerignore);
  RUN(ready_cmd_alone);
  RUN(split_calls);
  asb_client_free(C);
  engine_fixture_stop(&F);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", CTX);
  TEST_MAIN_END();
}
