/* Sessions: name a sandbox, reconnect to it by name (run twice: the second
 * run finds the first one's sandbox), then clean up with `sessions done`.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL;
  if (asb_client_new(&client, NULL)) return 1;
  if (argc > 1 && strcmp(argv[1], "done") == 0) {
    if (asb_session_load(&sb, client, "example", 0, NULL) == ASB_OK) asb_sandbox_kill(sb, NULL);
    asb_session_delete("example");
    printf("session removed\n");
  } else if (asb_session_load(&sb, client, "example", 0, NULL) == ASB_OK) {
    printf("reconnected to %s\n", asb_sandbox_id(sb));
  } else if (asb_sandbox_create(&sb, client, NULL) == ASB_OK &&
             asb_session_save("example", sb, NULL) == ASB_OK) {
    printf("created %s and saved it as 'example'\n", asb_sandbox_id(sb));
  } else {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  asb_session_list *l = NULL;
  if (asb_sessions_list(&l) == ASB_OK) {
    for (size_t i = 0; i < asb_session_list_count(l); i++)
      printf("session %s -> %s\n", asb_session_name(asb_session_list_get(l, i)),
             asb_session_sandbox_id(asb_session_list_get(l, i)));
    asb_session_list_free(l);
  }
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
