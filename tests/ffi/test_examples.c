/* One FFI example (examples/ffi/) against a real engine, configured the way
 * users run it: nothing but ASB_STATE_DIR (the local-engine default), the
 * library found through the loader's path or $ASB_LIBRARY. It must exit 0
 * and print what shows each step worked: the command's output streamed
 * through the example's own callback, the error of a failing command, the
 * file round trip, the kill.
 *
 * usage: ffi_example LANG [--source FILE] [--binary FILE] -- COMMAND...
 *   LANG      what the example says hello as ("hello from LANG")
 *   --source  must not include the library's header (no header is needed)
 *   --binary  must not be linked against the library (no NEEDED entry)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <fcntl.h>

#include "engine_fixture.h"
#include "testing.h"

static engine_fixture F;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

static void check_source(const char *path) {
  const char *s = slurp(path);
  if (!s) {
    ASBT_FAIL("cannot read %s", path);
    return;
  }
  if (strstr(s, "#include <agentsandbox") || strstr(s, "#include \"agentsandbox"))
    ASBT_FAIL("%s includes the library's header", path);
}

static void check_binary(const char *path) {
  char cmd[1200], line[512];
  snprintf(cmd, sizeof cmd, "readelf -d '%s'", path);
  FILE *p = popen(cmd, "r");
  int needed = 0;
  while (p && fgets(line, sizeof line, p)) {
    if (!strstr(line, "(NEEDED)")) continue;
    needed++;
    if (strstr(line, "libagentsandbox")) ASBT_FAIL("%s is linked against it: %s", path, line);
  }
  if (p) pclose(p);
  CHECK(needed > 0); /* readelf ran and read the dynamic section */
}

static void run_example(const char *lang, char **argv) {
  char log[128];
  snprintf(log, sizeof log, "/tmp/asb-ffi-example-%s-%d.log", lang, (int)getpid());
  pid_t pid = fork();
  if (pid < 0) {
    ASBT_FAIL("fork");
    return;
  }
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  const char *out = slurp(log);
  if (!out) {
    ASBT_FAIL("no output in %s", log);
    return;
  }
  char hello[96];
  snprintf(hello, sizeof hello, "streamed: hello from %s", lang);
  /* chunks are as the output arrived: "in /tmp" may share the first */
  const char *want[] = {"libagentsandbox 1.", hello,
                        "in /tmp\n",          "exit 3: ASB_ECOMMANDEXIT, exit code 3",
                        "file round trip ok", "killed"};
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(out, want[i])) {
      ASBT_FAIL("%s: no '%s' in its output", argv[0], want[i]);
      ok = 0;
    }
  if (!ok) {
    ASBT_FAIL("%s exited with status %d; its output:\n%s", argv[0], status, out);
    return;
  }
  fputs(out, stdout);
  remove(log);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LANG [--source FILE] [--binary FILE] -- COMMAND...\n", argv[0]);
    return 2;
  }
  const char *lang = argv[1];
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
    if (i + 1 >= argc) return 2;
    if (strcmp(argv[i], "--source") == 0)
      check_source(argv[i + 1]);
    else if (strcmp(argv[i], "--binary") == 0)
      check_binary(argv[i + 1]);
    else
      return 2;
  }
  if (i + 1 >= argc) return 2;
  if (engine_fixture_start(&F, "ffi") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  /* The examples configure nothing: the library finds this engine through
   * its state dir (engine.url, api_key). */
  setenv("ASB_STATE_DIR", F.state, 1);
  const char *vars[] = {"E2B_API_KEY", "E2B_API_URL", "E2B_DOMAIN", "E2B_SANDBOX_URL", "E2B_DEBUG",
                        "ASB_API_KEY", "ASB_API_URL", "ASB_DOMAIN", "ASB_SANDBOX_URL", "ASB_DEBUG"};
  for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) unsetenv(vars[k]);
  run_example(lang, argv + i + 1);
  printf("%s %s\n", asbt_failures ? "FAIL" : "ok  ", lang);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
