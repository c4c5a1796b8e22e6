/* A pause with memory to disk (the engine's --pause-criu, docs/lifecycle.md):
 * a process counts in the sandbox; the pause writes its memory to the
 * sandbox's disk (pauseMode "checkpoint", the RAM freed), the resume
 * restores it and the same process counts on from where it was.
 * Against an engine without --pause-criu the pause keeps the RAM
 * (pauseMode "memory") and the process goes on just the same.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The counter's "pid count" line, once it has one past `after` (0 on a
 * deadline: the example gives up after a minute). */
static long read_count(asb_sandbox *sb, long after, long *pid) {
  for (int i = 0; i < 600; i++) {
    char *d = NULL;
    size_t n = 0;
    long p = 0, c = 0;
    if (asb_files_read(&d, &n, sb, "/tmp/count", NULL) == ASB_OK) {
      char line[64];
      snprintf(line, sizeof line, "%.*s", (int)(n < 63 ? n : 63), d);
      if (sscanf(line, "%ld %ld", &p, &c) == 2 && c > after) {
        asb_free(d);
        *pid = p;
        return c;
      }
    }
    asb_free(d);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

int main(void) {
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL)) return 1;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 300000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &o)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  /* A process that counts, ten times a second, into /tmp/count. */
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.timeout_ms = -1;
  asb_process *proc = NULL;
  if (asb_commands_start(&proc, sb,
                         "python3 -c \"import os, time\n"
                         "i = 0\n"
                         "while True:\n"
                         "    i += 1\n"
                         "    open('/tmp/count.new', 'w').write('%d %d' % (os.getpid(), i))\n"
                         "    os.rename('/tmp/count.new', '/tmp/count')\n"
                         "    time.sleep(0.1)\"",
                         &co) != ASB_OK) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  asb_process_free(proc);
  long pid = 0, pid2 = 0;
  long before = read_count(sb, 2, &pid);
  printf("counting: pid %ld at %ld\n", pid, before);

  if (asb_sandbox_pause(sb, NULL) < 0) {
    fprintf(stderr, "pause: %s\n", asb_error_last()->message);
    return 1;
  }
  asb_sandbox_info *info = NULL;
  if (asb_sandbox_get_info(&info, sb, NULL) == ASB_OK) {
    /* "checkpoint" under --pause-criu: the memory is in the sandbox's
     * state dir (<state>/sandboxes/<id>/checkpoint), its RAM freed. */
    printf("paused: %s, pause mode %s\n", asb_sandbox_info_state(info),
           asb_sandbox_info_pause_mode(info));
    asb_sandbox_info_free(info);
  }

  if (asb_sandbox_resume(sb, 120000, NULL) != ASB_OK) {
    fprintf(stderr, "resume: %s\n", asb_error_last()->message);
    return 1;
  }
  /* Where it stopped (at least where it was before the pause: it did not
   * start again), then a count past that: it runs again. */
  long at = read_count(sb, 0, &pid2);
  long pid3 = 0, after = read_count(sb, at, &pid3);
  int ok = pid2 == pid && pid3 == pid && at >= before && after > at;
  printf("resumed: pid %ld at %ld, then %ld: %s\n", pid3, at, after,
         ok ? "the same process counts on" : "NOT the same process going on");
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return ok ? 0 : 1;
}
