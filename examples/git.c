/* Git in a sandbox: a repository from init to a push into a bare
 * repository, a clone of it, a commit there pulled back, branches and the
 * work tree's status (git.h). Remotes by path, inside the sandbox; for an
 * http(s) remote set opts.username and opts.password (they never reach a
 * command line).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>

static int check(int rc, const char *what) {
  if (rc != ASB_OK) fprintf(stderr, "%s: %s\n", what, asb_error_last()->message);
  return rc != ASB_OK;
}

int main(void) {
  asb_client *client = NULL;
  asb_sandbox *sb = NULL;
  if (asb_client_new(&client, NULL) || asb_sandbox_create(&sb, client, NULL)) {
    fprintf(stderr, "%s\n", asb_error_last()->message);
    return 1;
  }
  int bad = 0;
  asb_git_options o = ASB_GIT_OPTIONS_INIT;
  o.initial_branch = "main";
  o.bare = 1;
  bad |= check(asb_git_init(NULL, sb, "/tmp/remote.git", &o), "init --bare");
  o.bare = 0;
  bad |= check(asb_git_init(NULL, sb, "/tmp/repo", &o), "init");
  bad |= check(asb_git_configure_user(NULL, sb, NULL, "Example", "example@example.com", NULL),
               "configure_user");
  asb_command_result *r = NULL;
  asb_commands_run(&r, sb, "echo hello > /tmp/repo/README.md", NULL);
  asb_command_result_free(r);
  bad |= check(asb_git_add(NULL, sb, "/tmp/repo", NULL), "add");
  bad |= check(asb_git_commit(NULL, sb, "/tmp/repo", "First commit", NULL), "commit");
  bad |= check(asb_git_remote_add(NULL, sb, "/tmp/repo", "origin", "/tmp/remote.git", NULL),
               "remote_add");
  asb_git_options po = ASB_GIT_OPTIONS_INIT;
  po.remote = "origin";
  po.branch = "main"; /* and --set-upstream: later pushes and pulls name nothing */
  bad |= check(asb_git_push(NULL, sb, "/tmp/repo", &po), "push");

  bad |= check(asb_git_clone(NULL, sb, "/tmp/remote.git", "/tmp/clone", NULL), "clone");
  asb_commands_run(&r, sb, "echo more >> /tmp/clone/README.md", NULL);
  asb_command_result_free(r);
  asb_git_status *st = NULL;
  if (!check(asb_git_status_read(&st, sb, "/tmp/clone", NULL), "status")) {
    printf("clone on %s (upstream %s):", asb_git_status_current_branch(st),
           asb_git_status_upstream(st));
    for (size_t i = 0; i < asb_git_status_files_count(st); i++)
      printf(" %s %s", asb_git_status_file_status(st, i), asb_git_status_file_name(st, i));
    printf("\n");
    asb_git_status_free(st);
  }
  bad |= check(asb_git_add(NULL, sb, "/tmp/clone", NULL), "add");
  bad |= check(asb_git_commit(NULL, sb, "/tmp/clone", "More", NULL), "commit");
  bad |= check(asb_git_push(NULL, sb, "/tmp/clone", NULL), "push");
  bad |= check(asb_git_pull(NULL, sb, "/tmp/repo", NULL), "pull");

  bad |= check(asb_git_branch_create(NULL, sb, "/tmp/repo", "feature", NULL), "branch");
  asb_git_branch_list *bl = NULL;
  if (!check(asb_git_branches_list(&bl, sb, "/tmp/repo", NULL), "branches")) {
    printf("branches:");
    for (size_t i = 0; i < asb_git_branch_list_count(bl); i++)
      printf(" %s", asb_git_branch_list_get(bl, i));
    printf(" (on %s)\n", asb_git_branch_list_current(bl));
    asb_git_branch_list_free(bl);
  }
  /* push on a branch without an upstream, naming no remote */
  int rc = asb_git_push(NULL, sb, "/tmp/repo", NULL);
  printf("push on feature: %s\n", asb_status_name(rc));

  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
  asb_client_free(client);
  return bad || rc != ASB_EGITUPSTREAM;
}
