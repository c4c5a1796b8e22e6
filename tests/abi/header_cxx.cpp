// The umbrella header must be usable from C++ (extern "C", no C-only
// constructs). SPDX-License-Identifier: Apache-2.0
#include <agentsandbox.h>

int main() {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  (void)o;
  const asb_error *e = asb_error_last();
  return (e && asb_version_number() == ASB_VERSION_NUMBER) ? 0 : 1;
}
