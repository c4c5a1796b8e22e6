/* A template with a ready check and no start command (E2B's setReadyCmd
 * alone; docs/templates.md): build examples/templates/ready-check, then
 * create from it twice. Its check passes with APP_TOKEN among the
 * create's envs (create returns once it has); without one it never
 * passes and create fails with ASB_ETEMPLATE, the sandbox removed.
 *
 *   ready_check [template-dir]   (default examples/templates/ready-check)
 *
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what) {
  const asb_error *e = asb_error_last();
  fprintf(stderr, "%s: %s (%s)\n", what, e->message, asb_status_name(e->code));
  return 1;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "examples/templates/ready-check";
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL) != ASB_OK) return fail("client");
  asb_template *t = NULL;
  if (asb_templates_build(&t, client, dir, NULL) != ASB_OK) return fail("build");
  printf("template %s: %s\n", asb_template_name(t), asb_template_cached(t) ? "cached" : "built");

  /* With a token: the check passes, create returns a ready sandbox. */
  const char *envs[] = {"APP_TOKEN=example-token", NULL};
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = asb_template_name(t);
  so.envs = envs;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &so) != ASB_OK) return fail("create with a token");
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, "cat /srv/app-motd; echo \"$APP_TOKEN\"", NULL) != ASB_OK)
    return fail("run");
  printf("ready: %s", asb_command_result_stdout(r, NULL));
  asb_command_result_free(r);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);

  /* Without one: the check never passes within its 2 s, create fails. */
  so.envs = NULL;
  sb = NULL;
  int rc = asb_sandbox_create(&sb, client, &so);
  const asb_error *e = asb_error_last();
  printf("without a token: %s\n", asb_status_name(rc));
  if (rc == ASB_ETEMPLATE) printf("  %.*s\n", (int)strcspn(e->message, ";"), e->message);
  asb_sandbox_free(sb);
  asb_template_free(t);
  asb_client_free(client);
  return rc == ASB_ETEMPLATE ? 0 : 1;
}
