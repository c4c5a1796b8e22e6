/* Reading git's output for the git helpers (gitout.h).
 * Hand-written: libgit2 would read the repository itself, but the helpers
 * run git inside the sandbox and only see what it prints; no Debian
 * library parses porcelain output.
 * SPDX-License-Identifier: Apache-2.0 */
#include "gitout.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char *dupn(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void asbi_git_status_clear(asbi_git_status *st) {
  if (!st) return;
  free(st->branch);
  free(st->upstream);
  for (size_t i = 0; i < st->n; i++) {
    free(st->files[i].name);
    free(st->files[i].renamed_from);
  }
  free(st->files);
  memset(st, 0, sizeof *st);
}

/* E2B's label for an entry's two letters (its precedence). */
static const char *label(char x, char y) {
  if (x == 'U' || y == 'U') return "conflict";
  if (x == 'R' || y == 'R') return "renamed";
  if (x == 'C' || y == 'C') return "copied";
  if (x == 'D' || y == 'D') return "deleted";
  if (x == 'A' || y == 'A') return "added";
  if (x == 'M' || y == 'M') return "modified";
  if (x == 'T' || y == 'T') return "typechange";
  if (x == '?' || y == '?') return "untracked";
  return "unknown";
}

/* XY letters of changed entries ("?" only comes as a "? path" record) */
static int valid_letter(char c) {
  return c == '.' || (c && strchr("MTADRCU", c) != NULL);
}

/* The text after `fields` space-separated fields of rec (the path), or
 * NULL when rec has fewer. */
static const char *after_fields(const char *rec, int fields) {
  const char *p = rec;
  for (int i = 0; i < fields; i++) {
    p = strchr(p, ' ');
    if (!p) return NULL;
    p++;
  }
  return p;
}

static int add_file(asbi_git_status *st, size_t *cap, const char *name, const char *from, char x,
                    char y, const char *status) {
  if (st->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    asbi_git_file *f = realloc(st->files, nc * sizeof *f);
    if (!f) return -2;
    st->files = f;
    *cap = nc;
  }
  asbi_git_file *f = &st->files[st->n];
  memset(f, 0, sizeof *f);
  f->name = strdup(name);
  f->renamed_from = from ? strdup(from) : NULL;
  if (!f->name || (from && !f->renamed_from)) {
    free(f->name);
    free(f->renamed_from);
    return -2;
  }
  f->index[0] = x == '.' ? ' ' : x;
  f->worktree[0] = y == '.' ? ' ' : y;
  f->status = status;
  f->staged = f->index[0] != ' ' && f->index[0] != '?';
  st->n++;
  return 0;
}

static int parse_header(asbi_git_status *st, const char *rec) {
  const char *v;
  if (strncmp(rec, "# branch.head ", 14) == 0) {
    v = rec + 14;
    free(st->branch);
    st->branch = NULL;
    if (strcmp(v, "(detached)") == 0) {
      st->detached = 1;
    } else if (*v) {
      st->detached = 0;
      if (!(st->branch = strdup(v))) return -2;
    }
  } else if (strncmp(rec, "# branch.upstream ", 18) == 0) {
    v = rec + 18;
    free(st->upstream);
    st->upstream = NULL;
    if (*v && !(st->upstream = strdup(v))) return -2;
  } else if (strncmp(rec, "# branch.ab ", 12) == 0) {
    char *end;
    v = rec + 12;
    if (*v != '+') return -1;
    long a = strtol(v + 1, &end, 10);
    if (end == v + 1 || strncmp(end, " -", 2) != 0) return -1;
    v = end + 2;
    long b = strtol(v, &end, 10);
    if (end == v || *end || a < 0 || b < 0) return -1;
    st->ahead = a;
    st->behind = b;
  }
  return 0; /* other headers (branch.oid, stash) say nothing we report */
}

int asbi_git_parse_status(const char *out, size_t len, asbi_git_status *st) {
  memset(st, 0, sizeof *st);
  char *buf = dupn(out ? out : "", out ? len : 0);
  if (!buf) return -2;
  size_t cap = 0;
  int rc = 0;
  char *p = buf, *end = buf + (out ? len : 0);
  while (rc == 0 && p < end) {
    char *rec = p;
    size_t rl = strlen(rec); /* records end at a NUL (or the buffer's end) */
    p += rl + 1;
    if (rl == 0) continue;
    if (rl < 2 || rec[1] != ' ') {
      rc = -1;
      break;
    }
    const char *path;
    switch (rec[0]) {
      case '#':
        rc = parse_header(st, rec);
        break;
      case '1': /* 1 XY sub mH mI mW hH hI path */
      case '2': /* 2 XY sub mH mI mW hH hI Xscore path NUL origPath */
      case 'u': /* u XY sub m1 m2 m3 mW h1 h2 h3 path */
        if (rl < 5 || rec[4] != ' ' || !valid_letter(rec[2]) || !valid_letter(rec[3])) {
          rc = -1;
          break;
        }
        path = after_fields(rec, rec[0] == '1' ? 8 : rec[0] == '2' ? 9 : 10);
        if (!path || !*path) {
          rc = -1;
          break;
        }
        if (rec[0] == '2') {
          if (p >= end) { /* the origin is the next record */
            rc = -1;
            break;
          }
          const char *from = p;
          p += strlen(from) + 1;
          rc = add_file(st, &cap, path, from, rec[2], rec[3], label(rec[2], rec[3]));
        } else {
          rc = add_file(st, &cap, path, NULL, rec[2], rec[3],
                        rec[0] == 'u' ? "conflict" : label(rec[2], rec[3]));
        }
        break;
      case '?':
        if (!rec[2]) { /* "? " names no file */
          rc = -1;
          break;
        }
        rc = add_file(st, &cap, rec + 2, NULL, '?', '?', "untracked");
        break;
      case '!':
        break; /* ignored files (only with --ignored) */
      default:
        rc = -1;
    }
  }
  free(buf);
  if (rc) asbi_git_status_clear(st);
  return rc;
}

void asbi_git_names_free(char **names, size_t n) {
  if (!names) return;
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

int asbi_git_parse_branches(const char *out, size_t len, char ***names, size_t *n, long *current) {
  *names = NULL;
  *n = 0;
  *current = -1;
  char **v = NULL;
  size_t cnt = 0, cap = 0;
  long cur = -1;
  const char *p = out ? out : "", *end = p + (out ? len : 0);
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    size_t ll = (size_t)(le - p);
    if (ll && p[ll - 1] == '\r') ll--;
    if (ll > 0) {
      if ((p[0] != '*' && p[0] != ' ') || ll < 2 || memchr(p, 0, ll)) {
        asbi_git_names_free(v, cnt);
        return -1;
      }
      if (p[1] != '(') { /* "(HEAD detached at ...)", "(no branch)" */
        if (cnt == cap) {
          size_t nc = cap ? cap * 2 : 8;
          char **nv = realloc(v, nc * sizeof *nv);
          if (!nv) {
            asbi_git_names_free(v, cnt);
            return -2;
          }
          v = nv;
          cap = nc;
        }
        if (!(v[cnt] = dupn(p + 1, ll - 1))) {
          asbi_git_names_free(v, cnt);
          return -2;
        }
        if (p[0] == '*') cur = (long)cnt;
        cnt++;
      }
    }
    p = le + (nl ? 1 : 0);
  }
  *names = v;
  *n = cnt;
  *current = cur;
  return 0;
}

/* Case-insensitive search for any of the snippets in the first len bytes. */
static int has_any(const char *out, size_t len, const char *const *snips) {
  if (!out) return 0;
  char *low = malloc(len + 1);
  if (!low) return 0;
  for (size_t i = 0; i < len; i++) low[i] = out[i] ? (char)tolower((unsigned char)out[i]) : ' ';
  low[len] = 0;
  int hit = 0;
  for (size_t i = 0; snips[i] && !hit; i++) hit = strstr(low, snips[i]) != NULL;
  free(low);
  return hit;
}

int asbi_git_auth_failure(const char *out, size_t len) {
  static const char *const snips[] = {"authentication failed",   "terminal prompts disabled",
                                      "could not read username", "invalid username or password",
                                      "access denied",           "permission denied",
                                      "not authorized",          NULL};
  return has_any(out, len, snips);
}

int asbi_git_missing_upstream(const char *out, size_t len) {
  static const char *const snips[] = {"has no upstream branch",
                                      "no upstream branch",
                                      "no upstream configured",
                                      "no tracking information",
                                      "set the remote as upstream",
                                      "set the upstream branch",
                                      "please specify which branch you want to merge with",
                                      NULL};
  return has_any(out, len, snips);
}

int asbi_git_url_is_http(const char *url) {
  return url && (strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0);
}

char *asbi_git_dir_from_url(const char *url) {
  if (!asbi_git_url_is_http(url)) return NULL;
  const char *s = strstr(url, "://") + 3;
  const char *path = strchr(s, '/');
  if (!path) return NULL;
  size_t pl = strcspn(path, "?#");
  while (pl > 0 && path[pl - 1] == '/') pl--;
  if (pl == 0) return NULL;
  const char *seg = path + pl;
  while (seg > path && seg[-1] != '/') seg--;
  size_t sl = (size_t)(path + pl - seg);
  if (sl > 4 && strncmp(seg + sl - 4, ".git", 4) == 0) sl -= 4;
  /* "." and ".." are no directory of a clone's own */
  if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
    return NULL;
  return dupn(seg, sl);
}
