/* Volumes: make one, write a file into it without a sandbox, mount it in a
 * sandbox that appends to the file, read the result back after the sandbox
 * is gone, list, delete; the sandbox's info names its mounts, and a volume
 * object made from the volume's id and token alone (E2B's new Volume(id,
 * name, token)) reads the file without the API key. The engine keeps
 * volumes in its state dir.
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
  snprintf(name, sizeof name, "example-%d", (int)getpid());

  asb_volume *v = NULL;
  if (asb_volumes_create(&v, client, name, 64, NULL)) return fail("create");
  printf("volume %s (%s), %d MiB\n", asb_volume_name(v), asb_volume_id(v), asb_volume_size_mb(v));

  /* owned by uid 1000, the sandboxes' "user", so it may append to it */
  asb_volume_write_options wo = ASB_VOLUME_WRITE_OPTIONS_INIT;
  wo.uid = wo.gid = 1000;
  wo.force = 1;
  if (asb_volume_make_dir(NULL, v, "/notes", &wo) ||
      asb_volume_write_file(NULL, v, "/notes/log.txt", "from the host\n", 14, &wo))
    return fail("write");

  char mount[128];
  snprintf(mount, sizeof mount, "/mnt/data=%s", name);
  const char *mounts[] = {mount, NULL};
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.volume_mounts = mounts;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, client, &o)) return fail("sandbox");
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, "echo from the sandbox >> /mnt/data/notes/log.txt", NULL))
    return fail("run");
  asb_command_result_free(r);
  asb_sandbox_info *info = NULL; /* E2B's SandboxInfo.volumeMounts */
  if (asb_sandbox_get_info(&info, sb, NULL)) return fail("info");
  for (size_t i = 0; i < asb_sandbox_info_volume_mount_count(info); i++)
    printf("mounted %s at %s\n", asb_sandbox_info_volume_mount_name(info, i),
           asb_sandbox_info_volume_mount_path(info, i));
  asb_sandbox_info_free(info);
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);

  char *data = NULL;
  size_t len = 0;
  if (asb_volume_read_file(&data, &len, v, "/notes/log.txt", NULL)) return fail("read");
  printf("log.txt:\n%.*s", (int)len, data);
  int ok = strcmp(data, "from the host\nfrom the sandbox\n") == 0;
  asb_free(data);

  /* from its id and token alone: no API call; its file calls need only the token */
  asb_volume *by_token = NULL;
  if (asb_volume_from_token(&by_token, client, asb_volume_id(v), NULL, asb_volume_token(v)))
    return fail("from_token");
  if (asb_volume_read_file(&data, &len, by_token, "/notes/log.txt", NULL))
    return fail("read by token");
  printf("by token: %zu bytes\n", len);
  asb_free(data);
  asb_volume_free(by_token);

  asb_volume_entry_list *l = NULL;
  if (asb_volume_entries_list(&l, v, "/", 2, NULL)) return fail("list");
  for (size_t i = 0; i < asb_volume_entry_list_count(l); i++) {
    const asb_volume_entry *e = asb_volume_entry_list_get(l, i);
    printf("%-10s %04o %d:%d %s\n", asb_volume_entry_type(e), asb_volume_entry_mode(e),
           asb_volume_entry_uid(e), asb_volume_entry_gid(e), asb_volume_entry_path(e));
  }
  asb_volume_entry_list_free(l);

  if (asb_volumes_delete(client, asb_volume_id(v), NULL)) return fail("delete");
  asb_volume_free(v);
  asb_client_free(client);
  return ok ? 0 : 1;
}
