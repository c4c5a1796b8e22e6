/* Snapshots and fork (docs/snapshots.md): a file written, the sandbox's
 * files snapshotted under a name, a new sandbox started from the snapshot,
 * a fork, two forks in one call booted fresh on the files (the fork
 * options: count, keep_processes; each fork's mode), the list, and the
 * snapshot deleted. A snapshot keeps files, not processes: sandboxes from
 * it boot fresh (a fork keeps them on a --pause-criu engine).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

static void show(asb_sandbox *sb, const char *label) {
  asb_command_result *r = NULL;
  if (asb_commands_run(&r, sb, "cat /home/user/state.txt", NULL) == ASB_OK)
    printf("%s: %s", label, asb_command_result_stdout(r, NULL));
  asb_command_result_free(r);
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL, *from = NULL, *fork = NULL;
  char *snap = NULL;
  asb_snapshot_list *l = NULL;
  int rc = asb_client_new(&client, NULL);
  if (!rc) rc = asb_sandbox_create(&sb, client, NULL);
  asb_command_result *r = NULL;
  if (!rc) rc = asb_commands_run(&r, sb, "echo 'at the snapshot' > /home/user/state.txt", NULL);
  asb_command_result_free(r);
  if (!rc) rc = asb_sandbox_snapshot(&snap, sb, "example-snapshot", NULL);
  if (!rc) printf("snapshot %s\n", snap);
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = snap;
  if (!rc) rc = asb_sandbox_create(&from, client, &o);
  if (!rc) show(from, "from the snapshot");
  if (!rc) rc = asb_sandbox_fork(&fork, sb, 60000, NULL);
  if (!rc) show(fork, "the fork");
  if (!rc) printf("its fork mode: %s\n", asb_sandbox_fork_mode(fork));
  asb_fork_options fo = ASB_FORK_OPTIONS_INIT;
  fo.timeout_ms = 60000;
  fo.count = 2;
  fo.keep_processes = 0; /* boot fresh on the files ("files") */
  asb_fork_list *forks = NULL;
  if (!rc) rc = asb_sandbox_fork_many(&forks, sb, &fo, NULL);
  for (size_t i = 0; !rc && i < asb_fork_list_count(forks); i++) {
    asb_sandbox *f = NULL;
    if (asb_fork_list_take(&f, forks, i) != ASB_OK) { /* this fork failed to start */
      printf("fork %zu: %s\n", i, asb_error_last()->message);
      continue;
    }
    printf("fork %zu: %s, mode %s\n", i, asb_sandbox_id(f), asb_sandbox_fork_mode(f));
    asb_sandbox_kill(f, NULL);
    asb_sandbox_free(f);
  }
  asb_fork_list_free(forks);
  if (!rc) rc = asb_snapshots_list(&l, client, asb_sandbox_id(sb), NULL, NULL);
  for (size_t i = 0; !rc && i < asb_snapshot_list_count(l); i++)
    printf("listed %s\n", asb_snapshot_list_get(l, i));
  if (!rc) rc = asb_templates_delete(client, snap, NULL);
  if (rc) fprintf(stderr, "%s\n", asb_error_last()->message);
  asb_snapshot_list_free(l);
  asb_free(snap);
  if (fork) asb_sandbox_kill(fork, NULL);
  if (from) asb_sandbox_kill(from, NULL);
  if (sb) asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(fork);
  asb_sandbox_free(from);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return rc ? 1 : 0;
}
