/* Files: write, read, list, stat, rename, remove, watch, signed URLs.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <string.h>

static int on_event(asb_fs_event_type type, const char *name, const asb_entry *e, void *ud) {
  (void)e;
  (void)ud;
  printf("event %d on %s\n", (int)type, name);
  return 0;
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL;
  if (asb_client_new(&client, NULL) || asb_sandbox_create(&sb, client, NULL)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  asb_watch_options wo = ASB_WATCH_OPTIONS_INIT;
  wo.recursive = 1;
  wo.on_event = on_event;
  asb_watch *w = NULL;
  asb_files_make_dir(sb, "/home/user/project", NULL);
  asb_files_watch_dir(&w, sb, "/home/user/project", &wo);

  asb_files_write(NULL, sb, "/home/user/project/a.txt", "alpha", 5, NULL);
  asb_write_entry many[] = {{"/home/user/project/b.txt", "beta", 4},
                            {"/home/user/project/sub/c.txt", "gamma", 5}};
  asb_files_write_many(NULL, sb, many, 2, NULL);

  char *data = NULL;
  size_t len = 0;
  if (asb_files_read(&data, &len, sb, "project/a.txt", NULL) == ASB_OK)
    printf("read back: %.*s\n", (int)len, data);
  asb_free(data);

  asb_entry_list *l = NULL;
  if (asb_files_list(&l, sb, "/home/user/project", 2, NULL) == ASB_OK) {
    for (size_t i = 0; i < asb_entry_list_count(l); i++) {
      const asb_entry *e = asb_entry_list_get(l, i);
      printf("%s %8lld %s\n", asb_entry_permissions(e), (long long)asb_entry_size(e),
             asb_entry_path(e));
    }
    asb_entry_list_free(l);
  }
  asb_files_rename(NULL, sb, "/home/user/project/a.txt", "/home/user/project/A.txt", NULL);
  printf("exists a.txt: %d, A.txt: %d\n", asb_files_exists(sb, "project/a.txt", NULL),
         asb_files_exists(sb, "project/A.txt", NULL));
  asb_files_remove(sb, "/home/user/project/sub", NULL);

  asb_watch_wait(w, 500);
  asb_watch_free(w);

  /* A polling watch: the sandbox keeps the events, and a poll has every
   * change made before it, at once. */
  wo.polling = 1;
  if (asb_files_watch_dir(&w, sb, "/home/user/project", &wo) == ASB_OK) {
    asb_files_write(NULL, sb, "/home/user/project/d.txt", "delta", 5, NULL);
    printf("polled %d events\n", asb_watch_poll(w, NULL));
    asb_watch_free(w);
  }

  char *url = NULL;
  if (asb_files_download_url(&url, sb, "/home/user/project/b.txt", NULL, 300) == ASB_OK)
    printf("download for 5 minutes: %s\n", url);
  asb_free(url);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return 0;
}
