/* Sandbox networking (E2B's allowInternetAccess and network): create a
 * sandbox whose egress is off except for an allow-list, read the effective
 * config back, then change it live. No traffic is sent: the addresses are
 * in 198.18.0.0/15 (the benchmarking range, RFC 2544).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

static void show(asb_sandbox *sb, const char *when) {
  asb_sandbox_info *info = NULL;
  if (asb_sandbox_get_info(&info, sb, NULL)) {
    fprintf(stderr, "get_info: %s\n", asb_error_last()->message);
    return;
  }
  int internet = asb_sandbox_info_allow_internet_access(info);
  printf("%s: internet %s, network %s\n", when,
         internet < 0 ? "(not said)"
         : internet   ? "on"
                      : "off",
         asb_sandbox_info_network_json(info) ? asb_sandbox_info_network_json(info) : "(none)");
  for (size_t i = 0; i < asb_sandbox_info_allow_out_count(info); i++)
    printf("  allowOut %s\n", asb_sandbox_info_allow_out_get(info, i));
  for (size_t i = 0; i < asb_sandbox_info_deny_out_count(info); i++)
    printf("  denyOut  %s\n", asb_sandbox_info_deny_out_get(info, i));
  asb_sandbox_info_free(info);
}

int main(void) {
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL)) return 1;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.timeout_ms = 120000;
  o.allow_internet_access = -1; /* as denyOut ["0.0.0.0/0"]; allowOut still applies */
  o.network_json =
      "{\"allowOut\": [\"198.18.0.0/24\", \"example.test\", \"*.example.test\"],"
      " \"denyOut\": [\"198.18.0.66\"]}";
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &o)) {
    fprintf(stderr, "create: %s\n", asb_error_last()->message);
    asb_client_free(client);
    return 1;
  }
  show(sb, "created");
  /* Live: a new allow-list replaces the old one; denyOut, left out, is
   * cleared. */
  int rc = asb_sandbox_update_network(sb, -1, "{\"allowOut\": [\"198.18.1.0/24\"]}", NULL);
  if (rc)
    fprintf(stderr, "update_network: %s\n", asb_error_last()->message);
  else
    show(sb, "updated");
  /* A mistake is caught before anything is sent, naming the member. */
  if (asb_sandbox_update_network(sb, 0, "{\"allowout\": []}", NULL) == ASB_EINVAL)
    printf("refused: %s\n", asb_error_last()->message);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return rc ? 1 : 0;
}
