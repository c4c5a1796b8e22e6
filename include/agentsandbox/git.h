/*
 * agent-sandbox — git in a sandbox.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * The git helpers of E2B's SDKs (sandbox.git), written once here: each call
 * runs the sandbox's own git as a command (asb_commands_run, as the
 * sandbox's default user or opts->user, GIT_TERMINAL_PROMPT=0 so git never
 * waits for a password) and reads what it printed. Paths are the
 * repository's (absolute, or relative to opts->cwd, else the user's home).
 *
 * Results: the calls that change something give the git command's result
 * (*out may be NULL: asb_command_result_free it otherwise). When git fails
 * the call returns ASB_ECOMMANDEXIT with *out set (its stderr says why),
 * or one of two errors E2B's SDKs tell apart, also with *out set:
 *   ASB_EGITAUTH      the remote wanted credentials, or refused them
 *                     (GitAuthException)
 *   ASB_EGITUPSTREAM  push/pull without a remote or branch on a branch
 *                     that has no upstream (GitUpstreamException)
 * Bad arguments are ASB_EINVAL before anything runs.
 *
 * Credentials (opts->username, opts->password) reach git through the
 * command's stdin and a credential helper that lives only for that one git
 * command: they are never on a command line (ps inside the sandbox does not
 * show them), never in the environment envd records for the process
 * (asb_commands_list), and never written to the repository, unless
 * opts->store_credentials asks for it on a clone.
 */
#ifndef AGENTSANDBOX_GIT_H
#define AGENTSANDBOX_GIT_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_GIT_OPTIONS_VERSION 1

/* One options struct for every git call; each field says which calls read
 * it (the others ignore it). Zero/NULL fields are the defaults. Flags
 * marked "tri-state" are 0 = the call's default, > 0 = yes, < 0 = no. */
typedef struct asb_git_options {
  unsigned int version; /* ASB_GIT_OPTIONS_VERSION */
  /* how git runs (all calls) */
  const char *const *envs; /* extra "KEY=VALUE" strings, NULL-ended */
  const char *user;        /* NULL = the sandbox's default user */
  const char *cwd;         /* NULL = the user's home */
  long timeout_ms;         /* git's lifetime: 0 = 60000, negative = none */
  long request_timeout_ms; /* starting it: 0 = client default */
  asb_cancel *cancel;
  /* credentials for HTTP(S) remotes (clone, push, pull) */
  const char *username;
  const char *password;  /* or token; needs username */
  int store_credentials; /* clone: keep them for later fetches, in
                            the clone's .git/credentials (0600) */
  /* clone */
  const char *branch; /* also push, pull: the branch */
  int depth;          /* > 0: a shallow clone of that depth */
  /* init */
  int bare;
  const char *initial_branch;
  /* push, pull */
  const char *remote; /* NULL = git's default (the upstream) */
  int set_upstream;   /* push, tri-state (default yes, when a
                         remote is named) */
  /* add, reset */
  const char *const *paths; /* NULL-ended; add: NULL = everything */
  int all;                  /* add without paths, tri-state: default yes
                               (git add -A), no = git add . */
  /* commit */
  const char *author_name;
  const char *author_email;
  int allow_empty;
  /* reset */
  const char *mode;   /* "soft", "mixed", "hard", "merge", "keep";
                         NULL = git's (mixed) */
  const char *target; /* commit or ref; NULL = HEAD */
  /* restore */
  const char *source; /* commit or ref to restore from */
  int staged;         /* tri-state; see asb_git_restore */
  int worktree;       /* tri-state */
  /* remote add */
  int fetch;     /* fetch the remote once added */
  int overwrite; /* set the URL if the remote exists */
  /* branch delete */
  int force; /* -D instead of -d */
  /* config, configure_user */
  const char *scope; /* "global" (default), "local" (needs the
                        repository path), "system" */
  /* dangerously_authenticate */
  const char *host;     /* NULL = "github.com" */
  const char *protocol; /* NULL = "https" */
} asb_git_options;

#define ASB_GIT_OPTIONS_INIT                                                 \
  {                                                                          \
    ASB_GIT_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, 0,    \
        NULL, 0, 0, NULL, NULL, 0, NULL, 0, NULL, NULL, 0, NULL, NULL, NULL, \
        0, 0, 0, 0, 0, NULL, NULL, NULL                                      \
  }

ASB_API(int) asb_git_options_init(asb_git_options *opts, unsigned int version);

/* ---- repositories -----------------------------------------------------------
 */

/* git clone url [path] (path NULL: git names the directory). Reads
 * username/password/store_credentials, branch (cloned alone), depth.
 * Credentials need an http(s) URL; stored ones need a directory (path, or
 * one derived from the URL). */
ASB_API(int)
asb_git_clone(asb_command_result **out, asb_sandbox *sandbox, const char *url,
              const char *path, const asb_git_options *opts);
/* git init path. Reads bare, initial_branch. */
ASB_API(int)
asb_git_init(asb_command_result **out, asb_sandbox *sandbox, const char *path,
             const asb_git_options *opts);

/* ---- remotes
 * -------------------------------------------------------------------- */
/* git remote add name url (fetch: and fetch it; overwrite: set the URL of
 * an existing remote instead of failing). */
ASB_API(int)
asb_git_remote_add(asb_command_result **out, asb_sandbox *sandbox,
                   const char *path, const char *name, const char *url,
                   const asb_git_options *opts);
/* The URL of remote name: *url (free with asb_free) is NULL when the
 * repository has no such remote. */
ASB_API(int)
asb_git_remote_get(char **url, asb_sandbox *sandbox, const char *path,
                   const char *name, const asb_git_options *opts);

/* ---- status
 * ---------------------------------------------------------------------- */
/* The work tree's state (git status --porcelain=v2 --branch). */
ASB_API(int)
asb_git_status_read(asb_git_status **out, asb_sandbox *sandbox,
                    const char *path, const asb_git_options *opts);
/* The checked-out branch, NULL when HEAD is detached. */
ASB_API(const char *) asb_git_status_current_branch(const asb_git_status *s);
/* Its upstream ("origin/main"), or NULL. */
ASB_API(const char *) asb_git_status_upstream(const asb_git_status *s);
/* Commits ahead of and behind the upstream (0 without one). */
ASB_API(long) asb_git_status_ahead(const asb_git_status *s);
ASB_API(long) asb_git_status_behind(const asb_git_status *s);
ASB_API(int) asb_git_status_detached(const asb_git_status *s);
/* The changed files (untracked ones too): the count, and fields of file i
 * (NULL/0 past the end). */
ASB_API(size_t) asb_git_status_files_count(const asb_git_status *s);
/* Its path from the repository's root. */
ASB_API(const char *)
asb_git_status_file_name(const asb_git_status *s, size_t i);
/* "modified", "added", "deleted", "renamed", "copied", "typechange",
 * "untracked", "conflict" or "unknown". */
ASB_API(const char *)
asb_git_status_file_status(const asb_git_status *s, size_t i);
/* The index's and the work tree's letters, porcelain v1's ("M", "A", "D",
 * "R", "C", "T", "U", "?", " " for unchanged). */
ASB_API(const char *)
asb_git_status_file_index_status(const asb_git_status *s, size_t i);
ASB_API(const char *)
asb_git_status_file_worktree_status(const asb_git_status *s, size_t i);
/* 1 when the change is staged. */
ASB_API(int) asb_git_status_file_staged(const asb_git_status *s, size_t i);
/* A rename's or copy's origin, else NULL. */
ASB_API(const char *)
asb_git_status_file_renamed_from(const asb_git_status *s, size_t i);
ASB_API(void) asb_git_status_free(asb_git_status *s);

/* ---- branches
 * -------------------------------------------------------------------- */
/* The local branches. */
ASB_API(int)
asb_git_branches_list(asb_git_branch_list **out, asb_sandbox *sandbox,
                      const char *path, const asb_git_options *opts);
ASB_API(size_t) asb_git_branch_list_count(const asb_git_branch_list *list);
/* Branch i's name; NULL past the end. */
ASB_API(const char *)
asb_git_branch_list_get(const asb_git_branch_list *list, size_t i);
/* The checked-out branch, NULL when HEAD is detached. */
ASB_API(const char *)
asb_git_branch_list_current(const asb_git_branch_list *list);
ASB_API(void) asb_git_branch_list_free(asb_git_branch_list *list);
/* git checkout -b branch. */
ASB_API(int)
asb_git_branch_create(asb_command_result **out, asb_sandbox *sandbox,
                      const char *path, const char *branch,
                      const asb_git_options *opts);
/* git checkout branch. */
ASB_API(int)
asb_git_branch_checkout(asb_command_result **out, asb_sandbox *sandbox,
                        const char *path, const char *branch,
                        const asb_git_options *opts);
/* git branch -d branch (force: -D). */
ASB_API(int)
asb_git_branch_delete(asb_command_result **out, asb_sandbox *sandbox,
                      const char *path, const char *branch,
                      const asb_git_options *opts);

/* ---- changes
 * ------------------------------------------------------------------------ */
/* Stage paths (opts->paths), or everything (all; default) or the current
 * directory's changes (all < 0). */
ASB_API(int)
asb_git_add(asb_command_result **out, asb_sandbox *sandbox, const char *path,
            const asb_git_options *opts);
/* git commit -m message. Reads author_name, author_email (for this commit
 * only), allow_empty. */
ASB_API(int)
asb_git_commit(asb_command_result **out, asb_sandbox *sandbox, const char *path,
               const char *message, const asb_git_options *opts);
/* git reset [--mode] [target] [-- paths]. An unknown mode is ASB_EINVAL. */
ASB_API(int)
asb_git_reset(asb_command_result **out, asb_sandbox *sandbox, const char *path,
              const asb_git_options *opts);
/* git restore paths (NULL-ended, at least one; "." for all). Neither
 * staged nor worktree given: the work tree; staged alone: the index only;
 * worktree given alone: the work tree and not the index. Both no is
 * ASB_EINVAL. Reads source. */
ASB_API(int)
asb_git_restore(asb_command_result **out, asb_sandbox *sandbox,
                const char *path, const char *const *paths,
                const asb_git_options *opts);

/* ---- syncing
 * -------------------------------------------------------------------------- */
/* git push [--set-upstream] [remote] [branch], with the credentials if
 * given. ASB_EGITUPSTREAM when the branch has no upstream and no remote
 * was named. */
ASB_API(int)
asb_git_push(asb_command_result **out, asb_sandbox *sandbox, const char *path,
             const asb_git_options *opts);
/* git pull [remote] [branch], with the credentials if given. Without a
 * remote or branch the branch needs an upstream (ASB_EGITUPSTREAM). */
ASB_API(int)
asb_git_pull(asb_command_result **out, asb_sandbox *sandbox, const char *path,
             const asb_git_options *opts);

/* ---- configuration
 * ----------------------------------------------------------------------- */
/* git config --<scope> key value; path is the repository (needed for the
 * "local" scope, ignored by the others; may be NULL). */
ASB_API(int)
asb_git_config_set(asb_command_result **out, asb_sandbox *sandbox,
                   const char *path, const char *key, const char *value,
                   const asb_git_options *opts);
/* The value of key in the scope: *value (free with asb_free) is NULL when
 * the key is not set there. */
ASB_API(int)
asb_git_config_get(char **value, asb_sandbox *sandbox, const char *path,
                   const char *key, const asb_git_options *opts);
/* user.name and user.email in the scope. */
ASB_API(int)
asb_git_configure_user(asb_command_result **out, asb_sandbox *sandbox,
                       const char *path, const char *name, const char *email,
                       const asb_git_options *opts);
/* Store credentials for opts->host over opts->protocol in the user's git
 * credential store (credential.helper=store, ~/.git-credentials, plain
 * text): every later git command of that user, and any program running as
 * that user, can use and read them. Prefer per-call credentials. */
ASB_API(int)
asb_git_dangerously_authenticate(asb_command_result **out, asb_sandbox *sandbox,
                                 const char *username, const char *password,
                                 const asb_git_options *opts);

ASB_END_DECL

#endif /* AGENTSANDBOX_GIT_H */
