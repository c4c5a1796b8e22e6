/* Unit tests for core/proto/ignore: .dockerignore patterns with Docker's
 * rules (moby's patternmatcher: its documented examples and its own
 * tests' cases, checked by hand against `docker build`'s behaviour).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>

#include "proto/ignore.h"
#include "testing.h"

/* 1/0 for path against the .dockerignore text */
static int ign(const char *text, const char *path) {
  asbi_ignore *ig = asbi_ignore_new();
  char err[256] = "";
  int rc = asbi_ignore_add_text(ig, text, strlen(text), err, sizeof err);
  if (rc) fprintf(stderr, "%s: %s\n", text, err);
  int m = rc ? -1 : asbi_ignore_match(ig, path);
  asbi_ignore_free(ig);
  return m;
}

TEST(patterns) {
  /* '*' and '?' stay within one level; "*.md" only at the top */
  CHECK_INT(ign("*.md", "README.md"), 1);
  CHECK_INT(ign("*.md", "docs/README.md"), 0);
  CHECK_INT(ign("*/temp*", "somedir/temporary.txt"), 1);
  CHECK_INT(ign("*/temp*", "somedir/sub/temporary.txt"), 0);
  CHECK_INT(ign("*/*/temp*", "a/b/temp"), 1);
  CHECK_INT(ign("temp?", "temp1"), 1);
  CHECK_INT(ign("temp?", "temp12"), 0);
  CHECK_INT(ign("a?b", "a/b"), 0);
  /* '**': any number of directories, zero included */
  CHECK_INT(ign("**/*.go", "main.go"), 1);
  CHECK_INT(ign("**/*.go", "a/b/c/main.go"), 1);
  CHECK_INT(ign("**/*.go", "main.got"), 0);
  CHECK_INT(ign("a/**/b", "a/b"), 1);
  CHECK_INT(ign("a/**/b", "a/x/y/b"), 1);
  CHECK_INT(ign("a/**", "a/x/y"), 1);
  CHECK_INT(ign("**", "anything/at/all"), 1);
  /* a pattern takes what is beneath the directory it names */
  CHECK_INT(ign("node_modules", "node_modules/x/index.js"), 1);
  CHECK_INT(ign("node_modules", "src/node_modules/x.js"), 0);
  CHECK_INT(ign("**/node_modules", "src/node_modules/x.js"), 1);
  CHECK_INT(ign("build", "builder.c"), 0);
  /* leading '/', cleaning, spaces, comments, blank lines */
  CHECK_INT(ign("/secret.txt", "secret.txt"), 1);
  CHECK_INT(ign("/secret.txt", "sub/secret.txt"), 0);
  CHECK_INT(ign("  ./a//b/../c/  ", "a/c"), 1);
  CHECK_INT(ign("# secret.txt\n\n   \n", "secret.txt"), 0);
  CHECK_INT(ign("\r\nsecret.txt\r\n", "secret.txt"), 1);
  /* '!' exceptions: the last matching pattern decides */
  CHECK_INT(ign("*.md\n!README.md", "README.md"), 0);
  CHECK_INT(ign("*.md\n!README.md", "CHANGES.md"), 1);
  CHECK_INT(ign("!README.md\n*.md", "README.md"), 1);
  CHECK_INT(ign("docs\n!docs/keep", "docs/keep/x.txt"), 0);
  CHECK_INT(ign("docs\n!docs/keep", "docs/other.txt"), 1);
  CHECK_INT(ign("**/*.log\n! keep.log", "keep.log"), 0);
  /* classes and quoting */
  CHECK_INT(ign("file[0-9].txt", "file7.txt"), 1);
  CHECK_INT(ign("file[0-9].txt", "filex.txt"), 0);
  CHECK_INT(ign("file[^0-9].txt", "filex.txt"), 1);
  CHECK_INT(ign("file[^0-9].txt", "file7.txt"), 0);
  CHECK_INT(ign("a[^x]b", "a/b"), 0);
  CHECK_INT(ign("x[]a]", "x]"), 1);
  CHECK_INT(ign("x[a-]", "x-"), 1);
  CHECK_INT(ign("x[[:]", "x:"), 1);
  CHECK_INT(ign("x[[:]", "x["), 1);
  CHECK_INT(ign("\\*star", "*star"), 1);
  CHECK_INT(ign("\\*star", "xstar"), 0);
  CHECK_INT(ign("a.b", "axb"), 0);
  CHECK_INT(ign("(x)|y+{1}$^", "(x)|y+{1}$^"), 1);
  /* the context itself is never left out */
  CHECK_INT(ign("**", "."), 0);
  CHECK_INT(ign("*", "./a"), 1);
}

TEST(errors_and_counts) {
  asbi_ignore *ig = asbi_ignore_new();
  char err[256] = "";
  CHECK_INT(asbi_ignore_add_text(ig, "ok\n# c\n\nfile[0-9", 17, err, sizeof err), -1);
  CHECK(strstr(err, "line 4") && strstr(err, "unclosed '['"));
  CHECK_INT(asbi_ignore_add(ig, "trailing\\", err, sizeof err), -1);
  CHECK(strstr(err, "at the end"));
  CHECK_INT(asbi_ignore_add(ig, "z[b-a]", err, sizeof err), -1);
  CHECK_INT((int)asbi_ignore_count(ig), 1);
  CHECK_INT(asbi_ignore_has_exceptions(ig), 0);
  CHECK_INT(asbi_ignore_add(ig, "!ok/keep", err, sizeof err), 0);
  CHECK_INT(asbi_ignore_has_exceptions(ig), 1);
  CHECK_INT(asbi_ignore_match(ig, "ok/x"), 1);
  CHECK_INT(asbi_ignore_match(ig, "ok/keep"), 0);
  asbi_ignore_free(ig);
  CHECK_INT(asbi_ignore_match(NULL, "x"), 0);
}

int main(void) {
  RUN(patterns);
  RUN(errors_and_counts);
  TEST_MAIN_END();
}
