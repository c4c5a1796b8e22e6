/* Fuzz the readers of git's output (proto/gitout.c) that the git helpers
 * apply to what git printed in a sandbox, which the sandbox controls.
 * Input: byte 0 picks the reader (status, branches, the failure
 * classifiers, the clone directory of a URL); the rest is git's output.
 * Invariants: a parsed status has only known labels, one-letter index and
 * work-tree codes that agree with staged, non-empty names; a branch list
 * has non-empty names without line breaks and a current index inside it;
 * a failed parse returns nothing; a clone directory is one non-empty path
 * segment that is not "." or "..".
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/gitout.h"

static const char *const LABELS[] = {"conflict", "renamed",    "copied",    "deleted", "added",
                                     "modified", "typechange", "untracked", "unknown", NULL};

static int known_label(const char *s) {
  for (size_t i = 0; LABELS[i]; i++)
    if (strcmp(LABELS[i], s) == 0) return 1;
  return 0;
}

static void check_status(const char *d, size_t n) {
  asbi_git_status st;
  int rc = asbi_git_parse_status(d, n, &st);
  FUZZ_CHECK(rc == 0 || rc == -1 || rc == -2);
  if (rc != 0) {
    FUZZ_CHECK(st.n == 0 && st.files == NULL && st.branch == NULL && st.upstream == NULL);
    return;
  }
  FUZZ_CHECK(st.ahead >= 0 && st.behind >= 0);
  FUZZ_CHECK(!(st.detached && st.branch));
  for (size_t i = 0; i < st.n; i++) {
    const asbi_git_file *f = &st.files[i];
    FUZZ_CHECK(f->name && f->name[0]);
    FUZZ_CHECK(f->status && known_label(f->status));
    FUZZ_CHECK(f->index[0] && !f->index[1] && f->worktree[0] && !f->worktree[1]);
    FUZZ_CHECK(strchr(" MTADRCU?", f->index[0]) && strchr(" MTADRCU?", f->worktree[0]));
    FUZZ_CHECK(f->staged == (f->index[0] != ' ' && f->index[0] != '?'));
    if (f->renamed_from) FUZZ_CHECK(strcmp(f->status, "untracked") != 0);
  }
  asbi_git_status_clear(&st);
}

static void check_branches(const char *d, size_t n) {
  char **names = (char **)1;
  size_t cnt = 99;
  long cur = 99;
  int rc = asbi_git_parse_branches(d, n, &names, &cnt, &cur);
  FUZZ_CHECK(rc == 0 || rc == -1 || rc == -2);
  if (rc != 0) {
    FUZZ_CHECK(names == NULL && cnt == 0 && cur == -1);
    return;
  }
  FUZZ_CHECK(cur >= -1 && (cur < 0 || (size_t)cur < cnt));
  FUZZ_CHECK(cnt == 0 || names != NULL);
  for (size_t i = 0; i < cnt; i++) {
    FUZZ_CHECK(names[i] && names[i][0]);
    FUZZ_CHECK(!strpbrk(names[i], "\n"));
  }
  asbi_git_names_free(names, cnt);
}

static void check_url(const char *d, size_t n) {
  char *s = malloc(n + 1);
  FUZZ_CHECK(s != NULL);
  memcpy(s, d, n);
  s[n] = 0;
  char *dir = asbi_git_dir_from_url(s);
  if (dir) {
    FUZZ_CHECK(asbi_git_url_is_http(s));
    FUZZ_CHECK(dir[0] && !strchr(dir, '/'));
    FUZZ_CHECK(strcmp(dir, ".") != 0 && strcmp(dir, "..") != 0);
    FUZZ_CHECK(strlen(dir) < strlen(s));
    free(dir);
  }
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *d = (const char *)data + 1;
  size_t n = size - 1;
  switch (data[0] % 4) {
    case 0:
      check_status(d, n);
      break;
    case 1:
      check_branches(d, n);
      break;
    case 2: {
      int a = asbi_git_auth_failure(d, n), u = asbi_git_missing_upstream(d, n);
      FUZZ_CHECK((a == 0 || a == 1) && (u == 0 || u == 1));
      FUZZ_CHECK(asbi_git_auth_failure(NULL, 0) == 0);
      break;
    }
    default:
      check_url(d, n);
  }
  return 0;
}
