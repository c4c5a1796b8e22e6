/* .dockerignore patterns (ignore.c): which files of a build context are
 * left out, with Docker's rules (those of moby's patternmatcher, which
 * `docker build` applies to its context and E2B's SDKs to the files of
 * COPY steps):
 *   - one pattern per line; blank lines and lines starting with '#' are
 *     skipped; spaces around a pattern are trimmed;
 *   - a pattern is a path relative to the context: a leading '/' is
 *     dropped, the path cleaned ("a//b/./c/" = "a/b/c", "a/../b" = "b");
 *   - '*' is any run of characters but '/', '?' one such character,
 *     '[a-z]' / '[^a-z]' a class, '\' quotes the next character, and '**'
 *     any number of directories (zero included): "**" + "/x" matches x
 *     at every depth, "*.md" only at the top;
 *   - a pattern matches a path or any directory above it ("build"
 *     leaves out build/ and all it holds);
 *   - '!' in front re-includes what matches; the last matching pattern
 *     decides ("*.md" then "!README.md" keeps README.md).
 * Written here because no Debian C library implements Docker's rules
 * (fnmatch has no '**' and no exceptions); the matching itself is POSIX
 * regex (libc), as moby compiles each pattern to a regular expression.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_IGNORE_H
#define ASB_PROTO_IGNORE_H

#include <stddef.h>

typedef struct asbi_ignore asbi_ignore;

/* A new, empty set (it ignores nothing), NULL when out of memory. */
asbi_ignore *asbi_ignore_new(void);
void asbi_ignore_free(asbi_ignore *ig);
/* Adds one pattern (a .dockerignore line: comments and blank lines are
 * accepted and do nothing). 0, or -1 with why in err (a pattern that is
 * not valid: an unclosed '[', a '\' at the end; or out of memory). */
int asbi_ignore_add(asbi_ignore *ig, const char *pattern, char *err, size_t errlen);
/* Adds every line of a .dockerignore file's text (len bytes; NUL bytes
 * end a line). 0, or -1 with the line's number and why in err. */
int asbi_ignore_add_text(asbi_ignore *ig, const char *text, size_t len, char *err, size_t errlen);
/* How many patterns (comments and blank lines not counted) the set has. */
size_t asbi_ignore_count(const asbi_ignore *ig);
/* 1 if the set has '!' patterns (then a left-out directory may still hold
 * files that are not: a walk must look inside it). */
int asbi_ignore_has_exceptions(const asbi_ignore *ig);
/* 1 if path (relative to the context, '/'-separated, no leading "./") is
 * left out, else 0. */
int asbi_ignore_match(const asbi_ignore *ig, const char *path);

#endif
