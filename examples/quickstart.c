/* Quickstart: create a sandbox, run a command, write and read a file, kill
 * it. With nothing configured it uses the local engine (started on demand,
 * as root); set E2B_API_KEY (and E2B_DOMAIN or E2B_API_URL) to use a remote
 * E2B-compatible engine instead.
 *
 * Build: cc quickstart.c $(pkg-config --cflags --libs agentsandbox)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what) {
  const asb_error *e = asb_error_last();
  fprintf(stderr, "%s failed: %s (%s)\n", what, e->message, asb_status_name(e->code));
  return 1;
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sandbox = NULL;
  asb_command_result *result = NULL;
  char *content = NULL;
  size_t len = 0;
  int rc = 1;

  if (asb_client_new(&client, NULL) != ASB_OK) return fail("asb_client_new");
  if (asb_sandbox_create(&sandbox, client, NULL) != ASB_OK) {
    rc = fail("asb_sandbox_create");
    goto out;
  }
  printf("sandbox %s (envd %s)\n", asb_sandbox_id(sandbox), asb_sandbox_envd_version(sandbox));

  if (asb_commands_run(&result, sandbox, "echo 'Hello from sandbox!'", NULL) != ASB_OK) {
    rc = fail("asb_commands_run");
    goto out;
  }
  printf("stdout: %s", asb_command_result_stdout(result, NULL));
  printf("exit code: %d\n", asb_command_result_exit_code(result));

  if (asb_files_write(NULL, sandbox, "/tmp/data.txt", "content", 7, NULL) != ASB_OK ||
      asb_files_read(&content, &len, sandbox, "/tmp/data.txt", NULL) != ASB_OK) {
    rc = fail("asb_files_write/read");
    goto out;
  }
  printf("file: %.*s\n", (int)len, content);

  char url[256];
  if (asb_sandbox_get_url(url, sizeof url, sandbox, 3000) == ASB_OK)
    printf("port 3000 would be at %s\n", url);
  rc = 0;
out:
  if (sandbox && asb_sandbox_kill(sandbox, NULL) == ASB_OK)
    printf("killed %s\n", asb_sandbox_id(sandbox));
  asb_free(content);
  asb_command_result_free(result);
  asb_sandbox_free(sandbox);
  asb_client_free(client);
  return rc;
}
