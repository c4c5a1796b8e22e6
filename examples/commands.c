/* Commands: streaming output, exit codes, background processes with stdin,
 * reattaching, listing and killing.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>

static int print_chunk(const char *data, size_t len, void *userdata) {
  fprintf(stdout, "[%s] %.*s", (const char *)userdata, (int)len, data);
  return 0;
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL;
  if (asb_client_new(&client, NULL) || asb_sandbox_create(&sb, client, NULL)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  /* Streaming, with a non-zero exit. */
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.on_stdout = print_chunk;
  o.on_stderr = print_chunk;
  o.userdata = "out";
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, sb, "for i in 1 2 3; do echo line $i; sleep 0.1; done; exit 4", &o);
  printf("rc=%s exit=%d\n", asb_status_name(rc), asb_command_result_exit_code(r));
  asb_command_result_free(r);

  /* A background process fed through stdin. */
  asb_command_options bg = ASB_COMMAND_OPTIONS_INIT;
  bg.stdin_enabled = 1;
  bg.tag = "upper";
  asb_process *p = NULL;
  if (asb_commands_start(&p, sb, "tr a-z A-Z", &bg) == ASB_OK) {
    asb_process_send_stdin(p, "hello from stdin\n", 17, NULL);
    asb_process_close_stdin(p, NULL);
    asb_process_wait(&r, p, NULL);
    printf("background: %s", asb_command_result_stdout(r, NULL));
    asb_command_result_free(r);
    asb_process_free(p);
  }

  /* Start, disconnect, list, reattach, kill. */
  if (asb_commands_start(&p, sb, "sleep 60", NULL) == ASB_OK) {
    unsigned pid = asb_process_pid(p);
    asb_process_free(p); /* the command keeps running */
    asb_process_list *l = NULL;
    if (asb_commands_list(&l, sb, NULL) == ASB_OK) {
      for (size_t i = 0; i < asb_process_list_count(l); i++)
        printf("running: pid %u\n", asb_process_info_pid(asb_process_list_get(l, i)));
      asb_process_list_free(l);
    }
    asb_commands_kill(sb, pid, NULL);
  }
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
