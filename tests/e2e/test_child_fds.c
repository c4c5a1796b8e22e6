/* A program using the library starts children as any program does
 * (popen, system, fork+exec): they inherit none of the library's
 * descriptors — its pooled connections' sockets and libcurl's wakeup
 * socketpairs (core/client/http.c) — while its calls and a command's
 * stream are open; and a host curl it starts reaches a sandbox port's
 * loopback URL (core/engine/loopurl.c): one request, three on one kept
 * alive connection, eight curls at once. `timeout` only stops a hang; the
 * outcome is what curl printed. Runs as root. SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static int SETUP_OK;
static char BASE[4096]; /* what a child inherited before the library did anything */

static void read_all(FILE *p, char *out, size_t n) {
  size_t len = 0;
  for (size_t r; len + 1 < n && (r = fread(out + len, 1, n - 1 - len, p)) > 0;) len += r;
  out[len] = 0;
}

/* The sockets, pipes and anonymous inodes (eventfd, epoll, ...) a child
 * started now inherits: "<fd> -> <target>" lines of its fds past 2, in
 * ls's order. (Files are left out: the fixture's reaper thread opens /proc
 * files for a moment, a child may catch one.) */
static void child_fds(char *out, size_t n) {
  FILE *p = popen("exec sh -c 'ls -l /proc/$$/fd'", "r");
  char line[512];
  size_t len = 0;
  out[0] = 0;
  while (p && fgets(line, sizeof line, p)) {
    char *arrow = strstr(line, " -> ");
    if (!arrow) continue;
    char *fd = arrow;
    while (fd > line && fd[-1] != ' ') fd--;
    int num = atoi(fd);
    const char *t = arrow + 4;
    if (num <= 2 || !(strncmp(t, "socket:", 7) == 0 || strncmp(t, "pipe:", 5) == 0 ||
                      strncmp(t, "anon_inode:", 11) == 0))
      continue;
    int w = snprintf(out + len, n - len, "%s", fd);
    if (w > 0 && (size_t)w < n - len) len += (size_t)w;
  }
  if (p) pclose(p);
}

/* A child started now inherits what one did before the library did anything. */
#define CHECK_INHERITS_NOTHING()                                                             \
  do {                                                                                       \
    char now_[4096];                                                                         \
    child_fds(now_, sizeof now_);                                                            \
    if (strcmp(now_, BASE) != 0)                                                             \
      fprintf(stderr, "a child inherits the library's descriptors:\n%s(before: %s)\n", now_, \
              BASE);                                                                         \
    CHECK_STR(now_, BASE);                                                                   \
  } while (0)

/* A shell command's output (stderr too) and its exit status. */
static int sh(const char *cmd, char *out, size_t n) {
  char full[2048];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  if (!p) return -1;
  read_all(p, out, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(host_curl_reaches_a_loopback_url_and_children_inherit_no_library_fd) {
  asb_sandbox *sb = NULL;
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.timeout_ms = 120000;
  REQUIRE_RC(asb_sandbox_create(&sb, C, &so), ASB_OK);
  REQUIRE_RC(asb_files_write(NULL, sb, "/tmp/www/index.txt", "from the sandbox", 16, NULL), ASB_OK);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.timeout_ms = -1;
  asb_process *srv = NULL; /* its stream stays open through the checks below */
  REQUIRE_RC(asb_commands_start(&srv, sb,
                                "exec python3 -m http.server 8000 --bind 127.0.0.1 "
                                "--directory /tmp/www",
                                &o),
             ASB_OK);
  char *lu = NULL;
  REQUIRE_RC(asb_sandbox_loopback_url(&lu, sb, 8000, NULL), ASB_OK);
  char cmd[1024], out[4096];
  /* the server is up: curl in a loop, each bounded (condition, not time) */
  int rc = -1;
  for (long long end = asbt_now_ms() + ASBT_DEADLINE_MS; asbt_now_ms() < end;) {
    snprintf(cmd, sizeof cmd, "timeout -k 5 60 curl -sSf %s/index.txt", lu);
    rc = sh(cmd, out, sizeof out);
    if (rc == 0 || rc == 124) break;
    usleep(100000);
  }
  if (rc != 0) fprintf(stderr, "host curl: exit %d (124: it hung): %s\n", rc, out);
  CHECK_INT(rc, 0);
  CHECK_STR(out, "from the sandbox");
  /* keep-alive: three requests on one connection */
  snprintf(cmd, sizeof cmd,
           "timeout -k 5 120 curl -sS -w ' %%{num_connects}\\n' %s/index.txt %s/index.txt "
           "%s/index.txt",
           lu, lu, lu);
  CHECK_INT(sh(cmd, out, sizeof out), 0);
  CHECK_STR(out, "from the sandbox 1\nfrom the sandbox 0\nfrom the sandbox 0\n");
  /* eight at once (each body is one write to the shared pipe) */
  snprintf(cmd, sizeof cmd,
           "for i in 1 2 3 4 5 6 7 8; do timeout -k 5 120 curl -sS %s/index.txt & done; wait", lu);
  CHECK_INT(sh(cmd, out, sizeof out), 0);
  CHECK_STR(out,
            "from the sandboxfrom the sandboxfrom the sandboxfrom the sandbox"
            "from the sandboxfrom the sandboxfrom the sandboxfrom the sandbox");
  /* a second stream open: one more of the library's slots in use */
  asb_process *cat = NULL;
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.stdin_enabled = 1;
  co.timeout_ms = -1;
  REQUIRE_RC(asb_commands_start(&cat, sb, "cat", &co), ASB_OK);
  CHECK_INHERITS_NOTHING();
  CHECK_RC(asb_process_kill(cat, NULL), ASB_OK);
  asb_process_free(cat);
  asb_free(lu);
  CHECK_RC(asb_process_kill(srv, NULL), ASB_OK);
  asb_process_free(srv);
  CHECK_RC(asb_sandbox_kill(sb, NULL), ASB_OK);
  asb_sandbox_free(sb);
}

/* Another thread of the host opening and closing descriptors (files,
 * sockets; all close-on-exec, so a child inherits none of them) while the
 * library makes its connection slots: the wakeup socketpair each slot's
 * libcurl handle makes still ends up close-on-exec. (Predicting the pair's
 * numbers lost this race: a /proc file opened in that instant moved it.) */
static atomic_int CHURN_STOP;

static void *churn(void *arg) {
  (void)arg;
  while (!atomic_load(&CHURN_STOP)) {
    int a = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (a >= 0) close(a);
    if (b >= 0) close(b);
  }
  return NULL;
}

enum { ROUNDS = 6, CALLERS = 8 };

static void *list_once(void *arg) {
  asb_client *c = arg;
  asb_sandbox_page *pg = NULL;
  asb_sandbox_list_options lo = ASB_SANDBOX_LIST_OPTIONS_INIT;
  int rc = asb_sandbox_list(&pg, c, &lo);
  asb_sandbox_page_free(pg);
  return (void *)(intptr_t)rc;
}

TEST(slots_made_while_another_thread_opens_descriptors_are_not_inherited) {
  pthread_t ch;
  atomic_store(&CHURN_STOP, 0);
  REQUIRE(pthread_create(&ch, NULL, churn, NULL) == 0);
  asb_client *cs[ROUNDS] = {0};
  int failures = 0;
  for (int r = 0; r < ROUNDS; r++) {
    if (engine_fixture_client(&F, &cs[r]) != ASB_OK) {
      failures++;
      continue;
    }
    /* CALLERS calls at once on a new client: as many new slots */
    pthread_t t[CALLERS];
    int started = 0;
    while (started < CALLERS && pthread_create(&t[started], NULL, list_once, cs[r]) == 0) started++;
    failures += CALLERS - started;
    for (int i = 0; i < started; i++) {
      void *rv = NULL;
      pthread_join(t[i], &rv);
      if ((intptr_t)rv != ASB_OK) failures++;
    }
  }
  atomic_store(&CHURN_STOP, 1);
  pthread_join(ch, NULL);
  CHECK_INT(failures, 0);
  CHECK_INHERITS_NOTHING();
  for (int r = 0; r < ROUNDS; r++) asb_client_free(cs[r]);
}

static void setup(void) {
  REQUIRE(engine_fixture_start(&F, "childfds") == 0);
  child_fds(BASE, sizeof BASE); /* before the library made anything */
  REQUIRE_RC(engine_fixture_client(&F, &C), ASB_OK);
  SETUP_OK = 1;
}

int main(void) {
  setup();
  if (SETUP_OK) {
    RUN(host_curl_reaches_a_loopback_url_and_children_inherit_no_library_fd);
    RUN(slots_made_while_another_thread_opens_descriptors_are_not_inherited);
  }
  asb_client_free(C);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
