/* The server SDK's header must compile as strict C89 with every warning an
 * error. SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox/server.h>

static int handler(asb_server_call *call, void *userdata) {
  (void)userdata;
  return asb_server_call_set_result_string(call, "ok");
}

int main(void) {
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  asb_server *s = NULL;
  int rc = asb_server_new(&s, &o);
  if (rc == ASB_OK) rc = asb_server_register(NULL, s, "x", NULL, handler, NULL, NULL);
  asb_server_free(s);
  return rc == ASB_OK ? 0 : 1;
}
