/* The umbrella header must compile as strict C89 with every warning an
 * error. SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

int main(void) {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  asb_call_options c = ASB_CALL_OPTIONS_INIT;
  (void)o;
  (void)c;
  return asb_version_number() == ASB_VERSION_NUMBER ? 0 : 1;
}
