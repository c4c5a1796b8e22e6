/* E2B's Template builder one step per call (docs/reference/template.md,
 * "The builder one step per call"), as E2B's SDKs drive a build: ask for
 * the build, hash a COPY's files, upload them unless the engine has them,
 * start the build with the hash, follow its status. A context directory
 * with one file is made in /tmp; the template is deleted at the end.
 *
 *   template_steps
 *
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what) {
  const asb_error *e = asb_error_last();
  fprintf(stderr, "%s: %s (%s)\n", what, e->message, asb_status_name(e->code));
  return 1;
}

int main(void) {
  char ctx[] = "/tmp/asb-template-steps-XXXXXX", path[128];
  if (!mkdtemp(ctx)) return 1;
  snprintf(path, sizeof path, "%s/motd.txt", ctx);
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  fprintf(f, "built one step at a time\n");
  fclose(f);

  asb_client *client = NULL;
  if (asb_client_new(&client, NULL) != ASB_OK) return fail("client");
  /* 1. the name: a template id, a build id (and its tags) */
  asb_template_build *b = NULL;
  if (asb_templates_request_build(&b, client, "steps-example:v1", NULL) != ASB_OK)
    return fail("request_build");
  char tid[64], bid[64];
  snprintf(tid, sizeof tid, "%s", asb_template_build_template_id(b));
  snprintf(bid, sizeof bid, "%s", asb_template_build_build_id(b));
  printf("template %s, build %s, tag %s\n", tid, bid, asb_template_build_tag(b, 0));
  asb_template_build_free(b);

  /* 2. the COPY's files: their hash, then the upload unless present */
  asb_template_files_options fo = ASB_TEMPLATE_FILES_OPTIONS_INIT;
  fo.context_dir = ctx;
  char *hash = NULL, *url = NULL;
  int present = 0;
  if (asb_templates_files_hash(&hash, "motd.txt", &fo) != ASB_OK) return fail("files_hash");
  if (asb_templates_files_link(&present, &url, client, tid, hash, NULL) != ASB_OK)
    return fail("files_link");
  if (!present && asb_templates_files_upload(NULL, client, url, "motd.txt", &fo) != ASB_OK)
    return fail("files_upload");
  printf("files %.12s...: %s\n", hash, present ? "already there" : "uploaded");
  asb_free(url);

  /* 3. start it: E2B's TemplateBuildStartV2 with the COPY's filesHash */
  char spec[512];
  snprintf(spec, sizeof spec,
           "{\"fromTemplate\": \"base\", \"steps\": ["
           "{\"type\": \"COPY\", \"args\": [\"motd.txt\", \"/etc/motd\", \"\", \"\"], "
           "\"filesHash\": \"%s\"},"
           "{\"type\": \"RUN\", \"args\": [\"cat /etc/motd\"]}]}",
           hash);
  asb_free(hash);
  if (asb_templates_trigger_build(client, tid, bid, spec, NULL) != ASB_OK)
    return fail("trigger_build");

  /* 4. follow it: its status and its log from an offset (100 lines a
   * call), until it has ended and its log is all read */
  int offset = 0, more = 1, ended = 0, ready = 0;
  while (!ended || more) {
    asb_template_build *s = NULL;
    if (asb_templates_build_status(&s, client, tid, bid, offset, NULL) != ASB_OK)
      return fail("build_status");
    size_t n = asb_template_build_log_count(s);
    for (size_t i = 0; i < n; i++) printf("  | %s\n", asb_template_build_log_message(s, i));
    offset += (int)n;
    more = n > 0;
    const char *st = asb_template_build_status(s);
    ready = !strcmp(st, "ready");
    ended = ready || !strcmp(st, "error");
    if (!strcmp(st, "error")) fprintf(stderr, "failed: %s\n", asb_template_build_error(s));
    asb_template_build_free(s);
    if (!ended && !more) {
      struct timespec ts = {0, 200 * 1000000L}; /* the next poll */
      nanosleep(&ts, NULL);
    }
  }
  const char *st = ready ? "ready" : "error";
  printf("build: %s\n", st);
  asb_templates_delete(client, "steps-example", NULL);
  asb_client_free(client);
  unlink(path);
  rmdir(ctx);
  return strcmp(st, "ready") ? 1 : 0;
}
