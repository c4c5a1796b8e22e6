/* A client in E2B debug mode whose sandbox URL is `url` (a standalone envd,
 * code interpreter or command server), and a sandbox handle on it, as the
 * SDKs' debug mode does (token may be NULL). 0 or -1.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_TEST_DEBUG_CLIENT_H
#define ASB_TEST_DEBUG_CLIENT_H

#include <agentsandbox.h>

static inline int asbt_debug_connect(const char *url, const char *token, asb_client **client,
                                     asb_sandbox **sb) {
  asb_client_options o = ASB_CLIENT_OPTIONS_INIT;
  o.debug = 1;
  o.sandbox_url = url;
  if (asb_client_new(client, &o) != ASB_OK) return -1;
  asb_sandbox_attach_options a = ASB_SANDBOX_ATTACH_OPTIONS_INIT;
  a.envd_access_token = token;
  if (asb_sandbox_attach(sb, *client, "debugsandbox", &a) != ASB_OK) {
    asb_client_free(*client);
    *client = NULL;
    return -1;
  }
  return 0;
}

#endif
