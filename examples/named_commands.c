/* Named commands: build the c-hello template (template.yaml), start a
 * sandbox from it — create returns once its server answers on port 9000 —
 * and call the commands it serves, including the errors.
 *
 *   named_commands [template-dir]   (default build/examples/templates/c-hello)
 *
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

static int fail(const char *what) {
  const asb_error *e = asb_error_last();
  fprintf(stderr, "%s: %s (%s)\n", what, e->message, asb_status_name(e->code));
  return 1;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "build/examples/templates/c-hello";
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL) != ASB_OK) return fail("client");

  /* 1. Build the template (cached when nothing changed). */
  asb_template *t = NULL;
  if (asb_templates_build(&t, client, dir, NULL) != ASB_OK) return fail("build");
  printf("template %s (%s): %s\n", asb_template_name(t), asb_template_id(t),
         asb_template_cached(t) ? "cached" : "built");

  /* 2. A sandbox from it: its start command runs, its ready check passes. */
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = asb_template_name(t);
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &so) != ASB_OK) return fail("create");
  asb_template_free(t);

  /* 3. What does it serve? */
  asb_named_command_list *list = NULL;
  if (asb_sandbox_commands_list(&list, sb, NULL) != ASB_OK) return fail("list");
  for (size_t i = 0; i < asb_named_command_list_count(list); i++) {
    const asb_named_command *c = asb_named_command_list_get(list, i);
    printf("  %-8s %s (", asb_named_command_name(c), asb_named_command_description(c));
    for (size_t k = 0; k < asb_named_command_arg_count(c); k++)
      printf("%s%s: %s", k ? ", " : "", asb_named_command_arg_name(c, k),
             asb_named_command_arg_type(c, k));
    printf(")\n");
  }
  asb_named_command_list_free(list);

  /* 4. Call them. */
  char *result = NULL;
  if (asb_sandbox_run_command(&result, sb, "hello", "{\"name\":\"Ada\"}", NULL) != ASB_OK)
    return fail("hello");
  printf("hello -> %s\n", result);
  asb_free(result);
  if (asb_sandbox_run_command(&result, sb, "shout", "{\"text\":\"quiet please\"}", NULL) != ASB_OK)
    return fail("shout");
  printf("shout -> %s\n", result);
  asb_free(result);

  /* 5. The errors each have their own code. */
  int rc = asb_sandbox_run_command(&result, sb, "nope", NULL, NULL);
  printf("nope -> %s: %s\n", asb_status_name(rc), asb_error_last()->message);
  rc = asb_sandbox_run_command(&result, sb, "add", "{\"a\":\"one\"}", NULL);
  printf("add(a=\"one\") -> %s: %s\n", asb_status_name(rc), asb_error_last()->message);
  rc = asb_sandbox_run_command(&result, sb, "fail", NULL, NULL);
  printf("fail -> %s, type %s\n", asb_status_name(rc), asb_error_last()->remote_code);

  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
