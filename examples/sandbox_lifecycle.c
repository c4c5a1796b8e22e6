/* Sandbox lifecycle: metadata, listing, lifetime, pause and resume (with
 * memory, its swap figures under the engine's --pause-swap, and without
 * memory: the files kept, the sandbox booted again), connect
 * from a second handle, metrics, info, kill.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

int main(void) {
  asb_client *client = NULL;
  if (asb_client_new(&client, NULL)) return 1;
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  const char *meta[] = {"app=example", NULL};
  o.metadata = meta;
  o.timeout_ms = 120000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &o)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  asb_sandbox_list_options lo = ASB_SANDBOX_LIST_OPTIONS_INIT;
  lo.metadata = meta;
  asb_sandbox_page *page = NULL;
  if (asb_sandbox_list(&page, client, &lo) == ASB_OK) {
    printf("sandboxes with app=example: %zu\n", asb_sandbox_page_count(page));
    asb_sandbox_page_free(page);
  }
  asb_sandbox_set_timeout(sb, 600000, NULL); /* 10 minutes from now */
  asb_files_write(NULL, sb, "/home/user/state", "kept", 4, NULL);
  printf("pause: %d\n", asb_sandbox_pause(sb, NULL));
  printf("running while paused: %d\n", asb_sandbox_is_running(sb, NULL));
  asb_sandbox_info *info = NULL;
  /* With the engine's --pause-swap a memory pause frees the RAM: where it
   * went (-1: no such figures, e.g. an engine without the option). */
  if (asb_sandbox_get_info(&info, sb, NULL) == ASB_OK) {
    if (asb_sandbox_info_swapped_bytes(info) >= 0)
      printf("pause mode %s: %lld bytes swapped out, %lld of %lld left in RAM\n",
             asb_sandbox_info_pause_mode(info), (long long)asb_sandbox_info_swapped_bytes(info),
             (long long)asb_sandbox_info_resident_bytes(info),
             (long long)asb_sandbox_info_resident_before_bytes(info));
    else
      printf("pause mode %s: RAM kept (no --pause-swap)\n", asb_sandbox_info_pause_mode(info));
    asb_sandbox_info_free(info);
  }
  asb_sandbox *again = NULL; /* e.g. in another process, from the id */
  if (asb_sandbox_connect(&again, client, asb_sandbox_id(sb), 60000, NULL) == ASB_OK) {
    char *d = NULL;
    size_t n = 0;
    asb_files_read(&d, &n, again, "/home/user/state", NULL);
    printf("after resume: %.*s\n", (int)n, d);
    asb_free(d);
    asb_sandbox_free(again);
  }
  /* Pause without memory: every process stops and its memory is freed,
   * the files stay; resume boots it again. */
  printf("pause without memory: %d\n", asb_sandbox_pause_memory(sb, 0, NULL));
  if (asb_sandbox_get_info(&info, sb, NULL) == ASB_OK) {
    printf("pause mode: %s\n", asb_sandbox_info_pause_mode(info));
    asb_sandbox_info_free(info);
  }
  if (asb_sandbox_resume(sb, 60000, NULL) == ASB_OK) {
    char *d = NULL;
    size_t n = 0;
    asb_files_read(&d, &n, sb, "/home/user/state", NULL);
    printf("after the boot: %.*s\n", (int)n, d);
    asb_free(d);
  }
  if (asb_sandbox_get_info(&info, sb, NULL) == ASB_OK) {
    printf("%s: %s, template %s, %d CPU, %d MiB, ends at %lld\n", asb_sandbox_info_id(info),
           asb_sandbox_info_state(info), asb_sandbox_info_template_id(info),
           asb_sandbox_info_cpu_count(info), asb_sandbox_info_memory_mb(info),
           (long long)asb_sandbox_info_end_at(info));
    asb_sandbox_info_free(info);
  }
  asb_metrics *m = NULL;
  if (asb_sandbox_get_metrics(&m, sb, 0, 0, NULL) == ASB_OK && asb_metrics_count(m)) {
    size_t last = asb_metrics_count(m) - 1;
    printf("memory used: %lld bytes\n", (long long)asb_metrics_mem_used(m, last));
  }
  asb_metrics_free(m);
  asb_sandbox_kill(sb, NULL);
  if (asb_sandbox_get_info(&info, sb, NULL) == ASB_ESANDBOXGONE)
    printf("gone: %s\n", asb_error_last()->reason);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
