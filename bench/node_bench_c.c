/* The C library's side of bench/node_bench.mjs: the same operations the
 * Node binding and the stock e2b SDK do there, against the same engine
 * (configured by the same E2B_* variables) and the same sandbox
 * (NODE_BENCH_SANDBOX, by id), driven round by round over stdin so the
 * three are interleaved:
 *   run N     N x commands.run("true")
 *   files N   N x (4 KiB files.write + files.read)
 *   code N    N x run_code("1+1")
 *   create N  N x (create -> commands.run("true") -> kill), from the
 *             template NODE_BENCH_TEMPLATE
 * Each request is answered with one line: the N latencies in microseconds.
 * usage: node_bench_c   (started by node_bench.mjs)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "bench.h"

static asb_client *c;
static asb_sandbox *sb;

static int one(const char *op, char *payload, const asb_sandbox_options *so) {
  if (strcmp(op, "run") == 0) {
    asb_command_result *r = NULL;
    int rc = asb_commands_run(&r, sb, "true", NULL);
    asb_command_result_free(r);
    return rc;
  }
  if (strcmp(op, "files") == 0) {
    int rc = asb_files_write(NULL, sb, "/tmp/node-bench-c", payload, 4096, NULL);
    if (rc) return rc;
    char *d = NULL;
    size_t n = 0;
    rc = asb_files_read(&d, &n, sb, "/tmp/node-bench-c", NULL);
    asb_free(d);
    return rc || n != 4096 ? -1 : 0;
  }
  if (strcmp(op, "code") == 0) {
    asb_execution *e = NULL;
    int rc = asb_code_run(&e, sb, "1+1", NULL);
    asb_execution_free(e);
    return rc;
  }
  if (strcmp(op, "create") == 0) {
    asb_sandbox *s = NULL;
    int rc = asb_sandbox_create(&s, c, so);
    if (rc) return rc;
    asb_command_result *r = NULL;
    rc = asb_commands_run(&r, s, "true", NULL);
    asb_command_result_free(r);
    int k = asb_sandbox_kill(s, NULL);
    asb_sandbox_free(s);
    return rc ? rc : k;
  }
  return ASB_EINVAL;
}

int main(void) {
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = getenv("NODE_BENCH_TEMPLATE");
  const char *id = getenv("NODE_BENCH_SANDBOX");
  if (asb_client_new(&c, NULL) || !id || asb_sandbox_connect(&sb, c, id, 0, NULL)) {
    fprintf(stderr, "node_bench_c: %s\n", asb_error_last()->message);
    return 1;
  }
  char payload[4096];
  memset(payload, 'c', sizeof payload);
  printf("ready\n");
  fflush(stdout);
  char line[128], op[32];
  int n;
  while (fgets(line, sizeof line, stdin)) {
    if (sscanf(line, "%31s %d", op, &n) != 2 || n <= 0) break;
    for (int i = 0; i < n; i++) {
      double t0 = bench_now();
      int rc = one(op, payload, &so);
      if (rc) {
        fprintf(stderr, "node_bench_c: %s: %s\n", op, asb_error_last()->message);
        return 1;
      }
      printf("%s%.1f", i ? " " : "", (bench_now() - t0) * 1e6);
    }
    printf("\n");
    fflush(stdout);
  }
  asb_sandbox_free(sb); /* the sandbox is node_bench.mjs's */
  asb_client_free(c);
  return 0;
}
