/* Quickstart: make a client and show what it will talk to.
 * Build: cc quickstart.c $(pkg-config --cflags --libs agentsandbox)
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

int main(void) {
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL) != ASB_OK) {
    const asb_error *e = asb_error_last();
    fprintf(stderr, "asb_client_new: %s (%s)\n", e->message,
            asb_status_name(e->code));
    return 1;
  }
  printf("libagentsandbox %s\n", asb_version(NULL, NULL, NULL));
  printf("control plane: %s\n", asb_client_api_url(client));
  printf("sandbox domain: %s\n", asb_client_domain(client));
  asb_client_free(client);
  return 0;
}
