/* Secrets: store an API key, rotate it, list the secrets page by page,
 * give a sandbox an egress rule that sends the key as a header to one host
 * (the engine's egress proxy puts the value in; the sandbox never sees
 * it), delete it. Sends no request to that host itself.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, asb_error_last()->message);
  return 1;
}

int main(void) {
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL)) return fail("client");
  char name[64];
  snprintf(name, sizeof name, "example-key-%d", (int)getpid());

  const char *md[] = {"owner=examples", NULL};
  asb_secret *s = NULL;
  if (asb_secrets_create(&s, client, name, "sk-example-value", md, NULL)) return fail("create");
  printf("secret %s (%s) version %d\n", asb_secret_name(s), asb_secret_id(s),
         asb_secret_version(s));
  asb_secret_free(s);
  if (asb_secrets_update(&s, client, name, "sk-example-value-2", NULL, NULL)) return fail("update");
  printf("rotated to version %d\n", asb_secret_version(s));
  asb_secret_free(s);

  char next[128] = "";
  int listed = 0;
  do {
    asb_secret_page *p = NULL;
    if (asb_secrets_list(&p, client, 50, next, NULL)) return fail("list");
    for (size_t i = 0; i < asb_secret_page_count(p); i++)
      listed += !strcmp(asb_secret_name(asb_secret_page_get(p, i)), name);
    const char *nt = asb_secret_page_next_token(p);
    snprintf(next, sizeof next, "%s", nt ? nt : "");
    asb_secret_page_free(p);
  } while (*next);
  printf("listed %d\n", listed);

  /* requests to api.example.com get "Authorization: Bearer <value>" */
  char net[512];
  snprintf(net, sizeof net,
           "{\"rules\": {\"api.example.com\": [{\"transform\": {\"headers\":"
           " {\"Authorization\": \"Bearer ${e2b.secrets.%s}\"}}}]}}",
           name);
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.network_json = net;
  o.timeout_ms = 60000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &o)) return fail("sandbox");
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, "env", NULL)) return fail("run");
  printf("value in the sandbox: %s\n",
         strstr(asb_command_result_stdout(r, NULL), "sk-example") ? "yes" : "no");
  asb_command_result_free(r);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);

  if (asb_secrets_delete(client, name, NULL)) return fail("delete");
  printf("deleted: %s\n", asb_secrets_get(&s, client, name, NULL) == ASB_ENOTFOUND ? "yes" : "no");
  asb_client_free(client);
  return 0;
}
