/* A pty: an interactive bash, driven by keystrokes, resized, ended.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>

static int to_terminal(const char *data, size_t len, void *ud) {
  (void)ud;
  fwrite(data, 1, len, stdout);
  return 0;
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL;
  if (asb_client_new(&client, NULL) || asb_sandbox_create(&sb, client, NULL)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  asb_pty_options o = ASB_PTY_OPTIONS_INIT;
  o.cols = 100;
  o.rows = 30;
  o.on_data = to_terminal;
  asb_process *pty = NULL;
  if (asb_pty_create(&pty, sb, &o) == ASB_OK) {
    unsigned pid = asb_process_pid(pty);
    asb_pty_resize(sb, pid, 120, 40, NULL);
    const char *keys = "stty size; echo $TERM; exit\n";
    asb_pty_send_input(sb, pid, keys, strlen(keys), NULL);
    asb_call_options call = ASB_CALL_OPTIONS_INIT;
    call.timeout_ms = 10000;
    asb_process_wait(NULL, pty, &call);
    asb_process_free(pty);
  }
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
