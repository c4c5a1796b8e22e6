// The server SDK's header must compile as C++11 with every warning an error.
// SPDX-License-Identifier: Apache-2.0
#include <agentsandbox/server.h>

int main() {
  asb_server_options o = ASB_SERVER_OPTIONS_INIT;
  asb_server *s = nullptr;
  int rc = asb_server_new(&s, &o);
  asb_server_free(s);
  return rc == ASB_OK && asb_server_error_last() != nullptr ? 0 : 1;
}
