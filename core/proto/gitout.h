/* What git prints, read for the git helpers (core/client/git.c): the
 * status of a work tree (`git status --porcelain=v2 --branch -z`), the
 * branch list (`git branch --format='%(HEAD)%(refname:short)'`), and the
 * messages that tell an authentication failure or a missing upstream from
 * other failures. Internal.
 *
 * Status labels are E2B's (its SDKs' git helpers): "conflict", "renamed",
 * "copied", "deleted", "added", "modified", "typechange", "untracked",
 * "unknown"; the index and work-tree letters are porcelain v1's (' ' for
 * unchanged, where v2 prints '.').
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_GITOUT_H
#define ASB_PROTO_GITOUT_H

#include <stddef.h>

typedef struct asbi_git_file {
  char *name;         /* path relative to the repository's root */
  char *renamed_from; /* a rename's or copy's origin, else NULL */
  const char *status; /* one of the labels above (static) */
  char index[2];      /* one letter and NUL */
  char worktree[2];
  int staged;
} asbi_git_file;

typedef struct asbi_git_status {
  char *branch;   /* NULL when detached (or unknown) */
  char *upstream; /* NULL without one */
  long ahead, behind;
  int detached;
  size_t n;
  asbi_git_file *files;
} asbi_git_status;

/* Parse `git status --porcelain=v2 --branch -z` output (not necessarily
 * NUL-terminated). 0, -1 (not porcelain v2: *st is cleared), -2 (memory).
 * Lines it does not know ("# stash", "! ignored") are skipped. */
int asbi_git_parse_status(const char *out, size_t len, asbi_git_status *st);
void asbi_git_status_clear(asbi_git_status *st);

/* Parse `git branch --format='%(HEAD)%(refname:short)'` output: one line
 * per branch, '*' first for the checked-out one, ' ' otherwise; lines
 * naming no branch ("(HEAD detached at ...)") are skipped. *names gets a
 * malloc'd array of *n malloc'd names, *current the index of the
 * checked-out one or -1. 0, -1 (malformed: nothing is returned), -2
 * (memory). */
int asbi_git_parse_branches(const char *out, size_t len, char ***names, size_t *n, long *current);
void asbi_git_names_free(char **names, size_t n);

/* 1 when git's output (stderr and stdout; case ignored) says the
 * credentials were missing or refused, as E2B's SDKs detect it. */
int asbi_git_auth_failure(const char *out, size_t len);
/* 1 when it says the branch has no upstream to push to or pull from. */
int asbi_git_missing_upstream(const char *out, size_t len);

/* The directory `git clone URL` makes for an http(s) URL (its last path
 * segment without ".git"), malloc'd; NULL for other URLs, or when that
 * is empty, "." or "..". */
char *asbi_git_dir_from_url(const char *url);

/* 1 when url is http:// or https:// (case ignored). */
int asbi_git_url_is_http(const char *url);

#endif
