/* Code interpreter: state across runs, streamed output, rich results,
 * errors, contexts.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

static int on_stdout(const char *d, size_t n, void *ud) {
  (void)ud;
  printf("stdout: %.*s", (int)n, d);
  return 0;
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL;
  asb_sandbox_options so = ASB_SANDBOX_OPTIONS_INIT;
  so.template_id = "code-interpreter-v1";
  if (asb_client_new(&client, NULL) || asb_sandbox_create(&sb, client, &so)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  int rc = 0;
  asb_execution *ex = NULL;
  asb_code_options o = ASB_CODE_OPTIONS_INIT;
  o.on_stdout = on_stdout;
  if (asb_code_run(&ex, sb, "x = 2 ** 10\nprint('computing')\nx", &o) == ASB_OK) {
    printf("result: %s\n", asb_execution_text(ex));
    asb_execution_free(ex);
  } else {
    fprintf(stderr, "run_code: %s\n", asb_error_last()->message);
    rc = 1;
  }
  if (asb_code_run(&ex, sb, "x + 1", NULL) == ASB_OK) { /* state persists */
    printf("x + 1 = %s\n", asb_execution_text(ex));
    asb_execution_free(ex);
  }
  if (asb_code_run(&ex, sb, "1 / 0", NULL) == ASB_OK) {
    printf("error: %s: %s\n", asb_execution_error_name(ex), asb_execution_error_value(ex));
    asb_execution_free(ex);
  }
  asb_code_context *ctx = NULL;
  if (asb_code_context_create(&ctx, sb, "python", "/tmp", NULL) == ASB_OK) {
    asb_code_options in_ctx = ASB_CODE_OPTIONS_INIT;
    in_ctx.context_id = asb_code_context_id(ctx);
    if (asb_code_run(&ex, sb, "import os; os.getcwd()", &in_ctx) == ASB_OK) {
      printf("context cwd: %s\n", asb_execution_text(ex));
      asb_execution_free(ex);
    }
    asb_code_context_remove(sb, asb_code_context_id(ctx), NULL);
    asb_code_context_free(ctx);
  }
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return rc;
}
