/* Git helpers (git.h): each call is one bash script around the sandbox's
 * git, run with asb_commands_run, whose output is read back (the parsers
 * are in proto/gitout.c). E2B's SDKs do the same client-side in each
 * language; here it is written once for every binding.
 *
 * Credentials never appear in a script: the script reads them from its
 * stdin (asb_command_options.stdin_data) into two exported variables that
 * only git and the one-shot credential helper given with -c see.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/cmdargs.h"
#include "proto/gitout.h"
#include "util/util.h"
#include "envd.h"

ASBI_DEFINE_OPTIONS_INIT(asb_git_options, ASB_GIT_OPTIONS_VERSION, ASB_GIT_OPTIONS_INIT)

struct asb_git_status {
  asbi_git_status s;
};

struct asb_git_branch_list {
  char **names;
  size_t n;
  long current;
};

/* The helper git asks for the credentials; it answers "get" from the
 * variables the script exported, and ignores "store"/"erase". */
#define CRED_HELPER                                                            \
  "!f() { test \"$1\" = get || exit 0; printf 'username=%s\\npassword=%s\\n' " \
  "\"$ASB_GIT_USERNAME\" \"$ASB_GIT_PASSWORD\"; }; f"
#define CRED_READ                                                      \
  "IFS= read -r ASB_GIT_USERNAME && IFS= read -r ASB_GIT_PASSWORD && " \
  "export ASB_GIT_USERNAME ASB_GIT_PASSWORD && "

typedef struct git_run {
  asbi_buf sh;    /* the script */
  asbi_buf input; /* its stdin: the credentials, or nothing */
  int oom;
} git_run;

static void put(git_run *g, const char *s) {
  if (asbi_buf_puts(&g->sh, s)) g->oom = 1;
}

/* One shell word, quoted. */
static void word(git_run *g, const char *s) {
  if (asbi_buf_putc(&g->sh, ' ') || asbi_shell_quote(&g->sh, s)) g->oom = 1;
}

static void words(git_run *g, const char *const *v) {
  for (; v && *v; v++) word(g, *v);
}

/* "git [-c credential helper] [-C repo]". */
static void git(git_run *g, const char *repo, int creds) {
  put(g, "git");
  if (creds) {
    put(g, " -c credential.helper=");
    put(g, " -c");
    word(g, "credential.helper=" CRED_HELPER);
  }
  if (repo) {
    put(g, " -C");
    word(g, repo);
  }
}

static void git_run_free(git_run *g) {
  asbi_buf_free(&g->sh);
  asbi_buf_free(&g->input);
}

/* ---- checks ------------------------------------------------------------------ */

static int need(const char *s, const char *what, const char *name) {
  if (!s || !*s) return asbi_err(ASB_EINVAL, "%s: %s is required", what, name);
  if (!asbi_utf8_valid(s, strlen(s)))
    return asbi_err(ASB_EINVAL, "%s: %s is not valid UTF-8", what, name);
  return ASB_OK;
}

/* A name git takes as a word of its own (a branch, a remote, a key, a
 * ref): one that starts with '-' would be read as an option. */
static int name_ok(const char *s, const char *what, const char *name) {
  int rc = need(s, what, name);
  if (rc) return rc;
  if (s[0] == '-') return asbi_err(ASB_EINVAL, "%s: %s must not start with '-'", what, name);
  return ASB_OK;
}

static int opt_name_ok(const char *s, const char *what, const char *name) {
  return s ? name_ok(s, what, name) : ASB_OK;
}

/* Credentials: both or neither (a username alone is sent as is, and the
 * remote then asks for the password: ASB_EGITAUTH). They travel as lines
 * of the script's stdin, so no newline may be in them. */
static int creds_ok(const asb_git_options *o, const char *action, int *use) {
  *use = 0;
  if (o->password && *o->password && !(o->username && *o->username))
    return asbi_err(ASB_EINVAL, "Username is required when using a password or token for git %s.",
                    action);
  if (!(o->username && *o->username && o->password && *o->password)) return ASB_OK;
  if (strpbrk(o->username, "\r\n") || strpbrk(o->password, "\r\n"))
    return asbi_err(ASB_EINVAL, "git %s: credentials must not contain line breaks", action);
  *use = 1;
  return ASB_OK;
}

static int creds_input(git_run *g, const char *user, const char *pass) {
  if (asbi_buf_puts(&g->input, user) || asbi_buf_putc(&g->input, '\n') ||
      asbi_buf_puts(&g->input, pass) || asbi_buf_putc(&g->input, '\n'))
    return asbi_oom();
  return ASB_OK;
}

static int tri(int v, int dflt) {
  return v > 0 ? 1 : v < 0 ? 0 : dflt;
}

/* ---- running -------------------------------------------------------------- */

enum { CLASSIFY_NONE = 0, CLASSIFY_AUTH = 1, CLASSIFY_UPSTREAM = 2 };

/* "…: <git's stderr>", trimmed and cut to fit a message. */
static void failure_message(const asb_command_result *r, const char *what) {
  size_t el = 0, ol = 0;
  const char *e = asb_command_result_stderr(r, &el);
  if (!el) e = asb_command_result_stdout(r, &ol), el = ol;
  while (el && (e[el - 1] == '\n' || e[el - 1] == '\r' || e[el - 1] == ' ')) el--;
  while (el && (*e == '\n' || *e == ' ')) e++, el--;
  if (el > 600) e += el - 600, el = 600;
  asbi_err(ASB_ECOMMANDEXIT, "%s failed (exit code %d)%s%.*s", what,
           asb_command_result_exit_code(r), el ? ": " : "", (int)el, e ? e : "");
}

static int classify(asb_command_result *r, int how, const char *action, int missing_password) {
  size_t ol = 0, el = 0;
  const char *out = asb_command_result_stdout(r, &ol);
  const char *err = asb_command_result_stderr(r, &el);
  if ((how & CLASSIFY_AUTH) && (asbi_git_auth_failure(err, el) || asbi_git_auth_failure(out, ol))) {
    if (missing_password)
      return asbi_err(ASB_EGITAUTH, "Git %s requires a password/token for private repositories.",
                      action);
    return asbi_err(ASB_EGITAUTH, "Git %s requires credentials for private repositories.", action);
  }
  if ((how & CLASSIFY_UPSTREAM) &&
      (asbi_git_missing_upstream(err, el) || asbi_git_missing_upstream(out, ol))) {
    if (strcmp(action, "push") == 0)
      return asbi_err(ASB_EGITUPSTREAM,
                      "Git push failed because no upstream branch is configured. Set "
                      "upstream once (set_upstream, with a remote and optionally a "
                      "branch), or pass remote and branch explicitly.");
    return asbi_err(ASB_EGITUPSTREAM,
                    "Git pull failed because no upstream branch is configured. Pass "
                    "remote and branch explicitly, or set upstream once (push with "
                    "set_upstream, or run: git branch --set-upstream-to=origin/<branch> "
                    "<branch>).");
  }
  return ASB_ECOMMANDEXIT;
}

/* Run the script. ASB_OK with *res set; ASB_ECOMMANDEXIT (or what classify
 * makes of it) with *res set; or another error with *res NULL. */
static int run(asb_command_result **res, asb_sandbox *sb, git_run *g, const asb_git_options *o,
               const char *what, int how, const char *action, int missing_password) {
  *res = NULL;
  if (g->oom) return asbi_oom();
  /* GIT_TERMINAL_PROMPT=0 first, unless the caller sets it. */
  size_t ne = 0;
  int has_prompt = 0;
  for (const char *const *e = o->envs; e && *e; e++, ne++)
    if (strncmp(*e, "GIT_TERMINAL_PROMPT=", 20) == 0) has_prompt = 1;
  const char **envs = calloc(ne + 2, sizeof *envs);
  if (!envs) return asbi_oom();
  size_t k = 0;
  if (!has_prompt) envs[k++] = "GIT_TERMINAL_PROMPT=0";
  for (size_t i = 0; i < ne; i++) envs[k++] = o->envs[i];
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  co.envs = envs;
  co.user = o->user;
  co.cwd = o->cwd;
  co.timeout_ms = o->timeout_ms;
  co.request_timeout_ms = o->request_timeout_ms;
  co.cancel = o->cancel;
  co.kill_on_cancel = 1; /* a cancelled helper leaves no git running */
  if (g->input.len) {
    co.stdin_data = g->input.data;
    co.stdin_len = g->input.len;
  }
  int rc = asb_commands_run(res, sb, g->sh.data, &co);
  free(envs);
  if (rc == ASB_ECOMMANDEXIT && *res) {
    failure_message(*res, what);
    rc = classify(*res, how, action, missing_password);
  } else if (rc != ASB_OK) {
    asbi_err_prefix("%s", what);
  }
  return rc;
}

/* For the calls whose result is the command's: hand it out or free it. */
static int finish(asb_command_result **out, asb_command_result *res, int rc) {
  if (out)
    *out = res;
  else
    asb_command_result_free(res);
  return rc;
}

#define GIT_PROLOGUE(o, what)                                        \
  ASBI_SANDBOX_CALL(sb);                                             \
  if (out) *out = NULL;                                              \
  if (!sb) return asbi_err(ASB_EINVAL, "%s: no sandbox", what);      \
  ASBI_CHECK_VERSION(o, ASB_GIT_OPTIONS_VERSION, "asb_git_options"); \
  asb_git_options dflt_ = ASB_GIT_OPTIONS_INIT;                      \
  if (!(o)) (o) = &dflt_;                                            \
  git_run g;                                                         \
  memset(&g, 0, sizeof g)

/* Run a script whose result is the caller's. */
static int run_out(asb_command_result **out, asb_sandbox *sb, git_run *g, const asb_git_options *o,
                   const char *what, int how, const char *action, int missing_password) {
  asb_command_result *res = NULL;
  int rc = run(&res, sb, g, o, what, how, action, missing_password);
  git_run_free(g);
  return finish(out, res, rc);
}

/* ---- repositories ------------------------------------------------------------ */

int asb_git_clone(asb_command_result **out, asb_sandbox *sb, const char *url, const char *path,
                  const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.clone");
  int rc = need(url, "git.clone", "url");
  if (rc) return rc;
  if (path && !*path) path = NULL;
  if ((rc = opt_name_ok(o->branch, "git.clone", "branch"))) return rc;
  int creds;
  if ((rc = creds_ok(o, "clone", &creds))) return rc;
  if (creds && !asbi_git_url_is_http(url))
    return asbi_err(ASB_EINVAL, "Only http(s) Git URLs support username/password credentials.");
  char *dir = NULL;
  if (creds && o->store_credentials) {
    dir = path ? asbi_strdup(path) : asbi_git_dir_from_url(url);
    if (!dir)
      return asbi_err(ASB_EINVAL,
                      "git.clone: a destination path is needed to store "
                      "credentials (none can be derived from the URL)");
  }
  if (creds) {
    put(&g, CRED_READ);
    rc = creds_input(&g, o->username, o->password);
  }
  git(&g, NULL, creds);
  put(&g, " clone");
  if (o->branch) {
    put(&g, " --branch");
    word(&g, o->branch);
    put(&g, " --single-branch");
  }
  if (o->depth > 0) {
    char d[32];
    snprintf(d, sizeof d, " --depth %d", o->depth);
    put(&g, d);
  }
  put(&g, " --");
  word(&g, url);
  if (path) word(&g, path);
  if (dir) {
    /* The clone's own store, read by later fetches in it (git runs its
     * helpers at the work tree's top, so the relative file is the
     * clone's); the credentials go in through git credential approve's
     * stdin, from the exported variables. */
    put(&g, " && git -C");
    word(&g, dir);
    put(&g, " config --local credential.helper 'store --file=.git/credentials'");
    put(&g, " && printf 'url=%s\\nusername=%s\\npassword=%s\\n\\n'");
    word(&g, url);
    put(&g, " \"$ASB_GIT_USERNAME\" \"$ASB_GIT_PASSWORD\" | git -C");
    word(&g, dir);
    put(&g, " credential approve");
    free(dir);
  }
  if (rc) {
    git_run_free(&g);
    return rc;
  }
  return run_out(out, sb, &g, o, "git.clone", CLASSIFY_AUTH, "clone",
                 o->username && *o->username && !(o->password && *o->password));
}

int asb_git_init(asb_command_result **out, asb_sandbox *sb, const char *path,
                 const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.init");
  int rc = need(path, "git.init", "path");
  if (rc) return rc;
  if ((rc = opt_name_ok(o->initial_branch, "git.init", "initial_branch"))) return rc;
  git(&g, NULL, 0);
  put(&g, " init");
  if (o->initial_branch && *o->initial_branch) {
    put(&g, " --initial-branch");
    word(&g, o->initial_branch);
  }
  if (o->bare) put(&g, " --bare");
  put(&g, " --");
  word(&g, path);
  return run_out(out, sb, &g, o, "git.init", CLASSIFY_NONE, "init", 0);
}

/* ---- remotes ----------------------------------------------------------------------- */

int asb_git_remote_add(asb_command_result **out, asb_sandbox *sb, const char *path,
                       const char *name, const char *url, const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.remote_add");
  int rc = need(path, "git.remote_add", "path");
  if (rc) return rc;
  if (!name || !*name || !url || !*url)
    return asbi_err(ASB_EINVAL, "Both remote name and URL are required to add a git remote.");
  if ((rc = name_ok(name, "git.remote_add", "name")) || (rc = need(url, "git.remote_add", "url")))
    return rc;
  if (o->overwrite) put(&g, "{ ");
  git(&g, path, 0);
  put(&g, " remote add");
  put(&g, " --");
  word(&g, name);
  word(&g, url);
  if (o->overwrite) {
    /* git remote add fails when the remote exists: then set its URL. */
    put(&g, " || ");
    git(&g, path, 0);
    put(&g, " remote set-url --");
    word(&g, name);
    word(&g, url);
    put(&g, "; }");
  }
  if (o->fetch) {
    put(&g, " && ");
    git(&g, path, 0);
    put(&g, " fetch --");
    word(&g, name);
  }
  return run_out(out, sb, &g, o, "git.remote_add", CLASSIFY_NONE, "remote add", 0);
}

/* Run a script that prints one value: *value gets its first line (NULL
 * when empty, or when git exits with absent_code: "not there"). */
static int run_value(char **value, asb_sandbox *sb, git_run *g, const asb_git_options *o,
                     const char *what, int absent_code) {
  asb_command_result *res = NULL;
  int rc = run(&res, sb, g, o, what, CLASSIFY_NONE, what, 0);
  git_run_free(g);
  if (rc == ASB_ECOMMANDEXIT && res && asb_command_result_exit_code(res) == absent_code) {
    size_t el = 0;
    asb_command_result_stderr(res, &el);
    if (absent_code != 1 || el == 0) { /* exit 1 with a message is a failure */
      asb_command_result_free(res);
      return ASB_OK;
    }
  }
  if (rc) {
    asb_command_result_free(res);
    return rc;
  }
  size_t n = 0;
  const char *s = asb_command_result_stdout(res, &n);
  size_t l = 0;
  while (l < n && s[l] != '\n' && s[l] != '\r') l++;
  if (l > 0) {
    *value = malloc(l + 1);
    if (!*value) {
      asb_command_result_free(res);
      return asbi_oom();
    }
    memcpy(*value, s, l);
    (*value)[l] = 0;
  }
  asb_command_result_free(res);
  return ASB_OK;
}

int asb_git_remote_get(char **url, asb_sandbox *sb, const char *path, const char *name,
                       const asb_git_options *o) {
  asb_command_result **out = NULL;
  GIT_PROLOGUE(o, "git.remote_get");
  if (!url) return asbi_err(ASB_EINVAL, "git.remote_get: no output");
  *url = NULL;
  int rc = need(path, "git.remote_get", "path");
  if (rc) return rc;
  if (!name || !*name) return asbi_err(ASB_EINVAL, "Remote name is required.");
  if ((rc = name_ok(name, "git.remote_get", "name"))) return rc;
  git(&g, path, 0);
  put(&g, " remote get-url --");
  word(&g, name);
  /* git remote get-url exits 2 for a remote that does not exist */
  return run_value(url, sb, &g, o, "git.remote_get", 2);
}

/* ---- status --------------------------------------------------------------------------- */

int asb_git_status_read(asb_git_status **out, asb_sandbox *sb, const char *path,
                        const asb_git_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!out) return asbi_err(ASB_EINVAL, "git.status: no output");
  *out = NULL;
  if (!sb) return asbi_err(ASB_EINVAL, "git.status: no sandbox");
  ASBI_CHECK_VERSION(o, ASB_GIT_OPTIONS_VERSION, "asb_git_options");
  asb_git_options d = ASB_GIT_OPTIONS_INIT;
  if (!o) o = &d;
  int rc = need(path, "git.status", "path");
  if (rc) return rc;
  git_run g;
  memset(&g, 0, sizeof g);
  git(&g, path, 0);
  put(&g, " status --porcelain=v2 --branch -z");
  asb_command_result *res = NULL;
  rc = run(&res, sb, &g, o, "git.status", CLASSIFY_NONE, "status", 0);
  git_run_free(&g);
  if (rc) {
    asb_command_result_free(res);
    return rc;
  }
  asb_git_status *s = calloc(1, sizeof *s);
  if (!s) {
    asb_command_result_free(res);
    return asbi_oom();
  }
  size_t n = 0;
  const char *text = asb_command_result_stdout(res, &n);
  int pr = asbi_git_parse_status(text, n, &s->s);
  asb_command_result_free(res);
  if (pr) {
    free(s);
    return pr == -2 ? asbi_oom()
                    : asbi_err(ASB_EPROTOCOL, "git.status: git's output is not porcelain v2");
  }
  *out = s;
  return ASB_OK;
}

static const asbi_git_file *file_at(const asb_git_status *s, size_t i) {
  return s && i < s->s.n ? &s->s.files[i] : NULL;
}

const char *asb_git_status_current_branch(const asb_git_status *s) {
  return s && !s->s.detached ? s->s.branch : NULL;
}
const char *asb_git_status_upstream(const asb_git_status *s) {
  return s ? s->s.upstream : NULL;
}
long asb_git_status_ahead(const asb_git_status *s) {
  return s ? s->s.ahead : 0;
}
long asb_git_status_behind(const asb_git_status *s) {
  return s ? s->s.behind : 0;
}
int asb_git_status_detached(const asb_git_status *s) {
  return s ? s->s.detached : 0;
}
size_t asb_git_status_files_count(const asb_git_status *s) {
  return s ? s->s.n : 0;
}
const char *asb_git_status_file_name(const asb_git_status *s, size_t i) {
  const asbi_git_file *f = file_at(s, i);
  return f ? f->name : NULL;
}
const char *asb_git_status_file_status(const asb_git_status *s, size_t i) {
  const asbi_git_file *f = file_at(s, i);
  return f ? f->status : NULL;
}
const char *asb_git_status_file_index_status(const asb_git_status *s, size_t i) {
  const asbi_git_file *f = file_at(s, i);
  return f ? f->index : NULL;
}
const char *asb_git_status_file_worktree_status(const asb_git_status *s, size_t i) {
  const asbi_git_file *f = file_at(s, i);
  return f ? f->worktree : NULL;
}
int asb_git_status_file_staged(const asb_git_status *s, size_t i) {
  const asbi_git_file *f = file_at(s, i);
  return f ? f->staged : 0;
}
const char *asb_git_status_file_renamed_from(const asb_git_status *s, size_t i) {
  const asbi_git_file *f = file_at(s, i);
  return f ? f->renamed_from : NULL;
}
void asb_git_status_free(asb_git_status *s) {
  if (!s) return;
  asbi_git_status_clear(&s->s);
  free(s);
}

/* ---- branches --------------------------------------------------------------------------- */

int asb_git_branches_list(asb_git_branch_list **out, asb_sandbox *sb, const char *path,
                          const asb_git_options *o) {
  ASBI_SANDBOX_CALL(sb);
  if (!out) return asbi_err(ASB_EINVAL, "git.branches: no output");
  *out = NULL;
  if (!sb) return asbi_err(ASB_EINVAL, "git.branches: no sandbox");
  ASBI_CHECK_VERSION(o, ASB_GIT_OPTIONS_VERSION, "asb_git_options");
  asb_git_options d = ASB_GIT_OPTIONS_INIT;
  if (!o) o = &d;
  int rc = need(path, "git.branches", "path");
  if (rc) return rc;
  git_run g;
  memset(&g, 0, sizeof g);
  git(&g, path, 0);
  put(&g, " branch --format='%(HEAD)%(refname:short)'");
  asb_command_result *res = NULL;
  rc = run(&res, sb, &g, o, "git.branches", CLASSIFY_NONE, "branch", 0);
  git_run_free(&g);
  if (rc) {
    asb_command_result_free(res);
    return rc;
  }
  asb_git_branch_list *l = calloc(1, sizeof *l);
  if (!l) {
    asb_command_result_free(res);
    return asbi_oom();
  }
  size_t n = 0;
  const char *text = asb_command_result_stdout(res, &n);
  int pr = asbi_git_parse_branches(text, n, &l->names, &l->n, &l->current);
  asb_command_result_free(res);
  if (pr) {
    free(l);
    return pr == -2 ? asbi_oom()
                    : asbi_err(ASB_EPROTOCOL, "git.branches: unexpected output from git");
  }
  *out = l;
  return ASB_OK;
}

size_t asb_git_branch_list_count(const asb_git_branch_list *l) {
  return l ? l->n : 0;
}
const char *asb_git_branch_list_get(const asb_git_branch_list *l, size_t i) {
  return l && i < l->n ? l->names[i] : NULL;
}
const char *asb_git_branch_list_current(const asb_git_branch_list *l) {
  return l && l->current >= 0 ? l->names[l->current] : NULL;
}
void asb_git_branch_list_free(asb_git_branch_list *l) {
  if (!l) return;
  asbi_git_names_free(l->names, l->n);
  free(l);
}

static int branch_cmd(asb_command_result **out, asb_sandbox *sb, const char *path,
                      const char *branch, const asb_git_options *o, const char *what,
                      const char *sub) {
  GIT_PROLOGUE(o, what);
  int rc = need(path, what, "path");
  if (rc || (rc = name_ok(branch, what, "branch"))) return rc;
  git(&g, path, 0);
  put(&g, sub);
  word(&g, branch);
  return run_out(out, sb, &g, o, what, CLASSIFY_NONE, what, 0);
}

int asb_git_branch_create(asb_command_result **out, asb_sandbox *sb, const char *path,
                          const char *branch, const asb_git_options *o) {
  return branch_cmd(out, sb, path, branch, o, "git.branch_create", " checkout -b");
}

int asb_git_branch_checkout(asb_command_result **out, asb_sandbox *sb, const char *path,
                            const char *branch, const asb_git_options *o) {
  return branch_cmd(out, sb, path, branch, o, "git.branch_checkout", " checkout");
}

int asb_git_branch_delete(asb_command_result **out, asb_sandbox *sb, const char *path,
                          const char *branch, const asb_git_options *o) {
  return branch_cmd(out, sb, path, branch, o, "git.branch_delete",
                    o && o->version && o->force ? " branch -D" : " branch -d");
}

/* ---- changes --------------------------------------------------------------------------------- */

int asb_git_add(asb_command_result **out, asb_sandbox *sb, const char *path,
                const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.add");
  int rc = need(path, "git.add", "path");
  if (rc) return rc;
  git(&g, path, 0);
  put(&g, " add");
  if (o->paths && o->paths[0]) {
    put(&g, " --");
    words(&g, o->paths);
  } else {
    put(&g, tri(o->all, 1) ? " -A" : " .");
  }
  return run_out(out, sb, &g, o, "git.add", CLASSIFY_NONE, "add", 0);
}

int asb_git_commit(asb_command_result **out, asb_sandbox *sb, const char *path, const char *message,
                   const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.commit");
  int rc = need(path, "git.commit", "path");
  if (rc || (rc = need(message, "git.commit", "message"))) return rc;
  put(&g, "git");
  if (o->author_name && *o->author_name) {
    put(&g, " -c");
    asbi_buf kv = ASBI_BUF_INIT;
    if (asbi_buf_printf(&kv, "user.name=%s", o->author_name)) g.oom = 1;
    word(&g, kv.data ? kv.data : "");
    asbi_buf_free(&kv);
  }
  if (o->author_email && *o->author_email) {
    put(&g, " -c");
    asbi_buf kv = ASBI_BUF_INIT;
    if (asbi_buf_printf(&kv, "user.email=%s", o->author_email)) g.oom = 1;
    word(&g, kv.data ? kv.data : "");
    asbi_buf_free(&kv);
  }
  put(&g, " -C");
  word(&g, path);
  put(&g, " commit -m");
  word(&g, message);
  if (o->allow_empty) put(&g, " --allow-empty");
  return run_out(out, sb, &g, o, "git.commit", CLASSIFY_NONE, "commit", 0);
}

int asb_git_reset(asb_command_result **out, asb_sandbox *sb, const char *path,
                  const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.reset");
  int rc = need(path, "git.reset", "path");
  if (rc) return rc;
  static const char *const modes[] = {"soft", "mixed", "hard", "merge", "keep", NULL};
  const char *mode = o->mode && *o->mode ? o->mode : NULL;
  if (mode) {
    int ok = 0;
    for (size_t i = 0; modes[i]; i++) ok |= strcmp(modes[i], mode) == 0;
    if (!ok)
      return asbi_err(ASB_EINVAL, "Reset mode must be one of soft, mixed, hard, merge, keep.");
  }
  if ((rc = opt_name_ok(o->target && *o->target ? o->target : NULL, "git.reset", "target")))
    return rc;
  git(&g, path, 0);
  put(&g, " reset");
  if (mode) {
    put(&g, " --");
    put(&g, mode);
  }
  if (o->target && *o->target) word(&g, o->target);
  if (o->paths && o->paths[0]) {
    put(&g, " --");
    words(&g, o->paths);
  }
  return run_out(out, sb, &g, o, "git.reset", CLASSIFY_NONE, "reset", 0);
}

int asb_git_restore(asb_command_result **out, asb_sandbox *sb, const char *path,
                    const char *const *paths, const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.restore");
  int rc = need(path, "git.restore", "path");
  if (rc) return rc;
  if (!paths || !paths[0]) return asbi_err(ASB_EINVAL, "At least one path is required.");
  /* E2B's defaults: neither given = the work tree; staged alone = the
   * index only; worktree alone = not the index. */
  int staged = o->staged, worktree = o->worktree;
  int st, wt;
  if (!staged && !worktree) {
    st = 0;
    wt = 1;
  } else if (staged > 0 && !worktree) {
    st = 1;
    wt = 0;
  } else if (!staged) {
    st = 0;
    wt = worktree > 0;
  } else {
    st = staged > 0;
    wt = worktree > 0;
  }
  if (!st && !wt) return asbi_err(ASB_EINVAL, "At least one of staged or worktree must be true.");
  if ((rc = opt_name_ok(o->source && *o->source ? o->source : NULL, "git.restore", "source")))
    return rc;
  git(&g, path, 0);
  put(&g, " restore");
  if (wt) put(&g, " --worktree");
  if (st) put(&g, " --staged");
  if (o->source && *o->source) {
    put(&g, " --source");
    word(&g, o->source);
  }
  put(&g, " --");
  words(&g, paths);
  return run_out(out, sb, &g, o, "git.restore", CLASSIFY_NONE, "restore", 0);
}

/* ---- syncing -----------------------------------------------------------------------------------
 */

static int sync_cmd(asb_command_result **out, asb_sandbox *sb, const char *path,
                    const asb_git_options *o, int push) {
  const char *what = push ? "git.push" : "git.pull";
  const char *action = push ? "push" : "pull";
  GIT_PROLOGUE(o, what);
  int rc = need(path, what, "path");
  if (rc) return rc;
  const char *remote = o->remote && *o->remote ? o->remote : NULL;
  const char *branch = o->branch && *o->branch ? o->branch : NULL;
  if ((rc = opt_name_ok(remote, what, "remote")) || (rc = opt_name_ok(branch, what, "branch")))
    return rc;
  int creds;
  if ((rc = creds_ok(o, action, &creds))) return rc;
  /* The credentials are read first, so the script has taken its input
   * before anything can end it. */
  if (creds) {
    put(&g, CRED_READ);
    if ((rc = creds_input(&g, o->username, o->password))) {
      git_run_free(&g);
      return rc;
    }
  }
  if (!push && !remote && !branch) {
    /* A pull with nothing named needs an upstream: say so before git
     * asks the remote anything. */
    git(&g, path, 0);
    put(&g,
        " rev-parse --abbrev-ref --symbolic-full-name '@{u}' >/dev/null 2>&1 || "
        "{ echo 'agent-sandbox: the branch has no upstream branch' >&2; exit 1; }; ");
  }
  git(&g, path, creds);
  put(&g, push ? " push" : " pull");
  if (push && remote && tri(o->set_upstream, 1)) put(&g, " --set-upstream");
  if (remote) word(&g, remote);
  if (branch) word(&g, branch);
  return run_out(out, sb, &g, o, what, CLASSIFY_AUTH | CLASSIFY_UPSTREAM, action,
                 o->username && *o->username && !(o->password && *o->password));
}

int asb_git_push(asb_command_result **out, asb_sandbox *sb, const char *path,
                 const asb_git_options *o) {
  return sync_cmd(out, sb, path, o, 1);
}

int asb_git_pull(asb_command_result **out, asb_sandbox *sb, const char *path,
                 const asb_git_options *o) {
  return sync_cmd(out, sb, path, o, 0);
}

/* ---- configuration
 * ------------------------------------------------------------------------------- */

/* The --scope flag, and the repository it needs (local only). */
static int scope_of(const asb_git_options *o, const char *path, const char **flag,
                    const char **repo) {
  const char *s = o->scope && *o->scope ? o->scope : "global";
  while (*s == ' ' || *s == '\t') s++;
  size_t l = strlen(s);
  while (l && (s[l - 1] == ' ' || s[l - 1] == '\t')) l--;
  *repo = NULL;
  if (l == 6 && strncasecmp(s, "global", 6) == 0) {
    *flag = " --global";
  } else if (l == 6 && strncasecmp(s, "system", 6) == 0) {
    *flag = " --system";
  } else if (l == 5 && strncasecmp(s, "local", 5) == 0) {
    if (!path || !*path)
      return asbi_err(ASB_EINVAL, "Repository path is required when scope is local.");
    *flag = " --local";
    *repo = path;
  } else {
    return asbi_err(ASB_EINVAL, "Git config scope must be one of: global, local, system.");
  }
  return ASB_OK;
}

static void config_set_cmd(git_run *g, const char *flag, const char *repo, const char *key,
                           const char *value) {
  git(g, repo, 0);
  put(g, " config");
  put(g, flag);
  word(g, key);
  word(g, value);
}

int asb_git_config_set(asb_command_result **out, asb_sandbox *sb, const char *path, const char *key,
                       const char *value, const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.config_set");
  if (!key || !*key) return asbi_err(ASB_EINVAL, "Git config key is required.");
  int rc = name_ok(key, "git.config_set", "key");
  if (rc) return rc;
  if (!value || !asbi_utf8_valid(value, strlen(value)))
    return asbi_err(ASB_EINVAL, "git.config_set: value is required");
  const char *flag, *repo;
  if ((rc = scope_of(o, path, &flag, &repo))) return rc;
  config_set_cmd(&g, flag, repo, key, value);
  return run_out(out, sb, &g, o, "git.config_set", CLASSIFY_NONE, "config", 0);
}

int asb_git_config_get(char **value, asb_sandbox *sb, const char *path, const char *key,
                       const asb_git_options *o) {
  asb_command_result **out = NULL;
  GIT_PROLOGUE(o, "git.config_get");
  if (!value) return asbi_err(ASB_EINVAL, "git.config_get: no output");
  *value = NULL;
  if (!key || !*key) return asbi_err(ASB_EINVAL, "Git config key is required.");
  int rc = name_ok(key, "git.config_get", "key");
  if (rc) return rc;
  const char *flag, *repo;
  if ((rc = scope_of(o, path, &flag, &repo))) return rc;
  git(&g, repo, 0);
  put(&g, " config");
  put(&g, flag);
  put(&g, " --get");
  word(&g, key);
  /* git config --get exits 1, silently, for a key that is not set */
  return run_value(value, sb, &g, o, "git.config_get", 1);
}

int asb_git_configure_user(asb_command_result **out, asb_sandbox *sb, const char *path,
                           const char *name, const char *email, const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.configure_user");
  if (!name || !*name || !email || !*email)
    return asbi_err(ASB_EINVAL, "Both name and email are required.");
  const char *flag, *repo;
  int rc = scope_of(o, path, &flag, &repo);
  if (rc) return rc;
  config_set_cmd(&g, flag, repo, "user.name", name);
  put(&g, " && ");
  config_set_cmd(&g, flag, repo, "user.email", email);
  return run_out(out, sb, &g, o, "git.configure_user", CLASSIFY_NONE, "config", 0);
}

int asb_git_dangerously_authenticate(asb_command_result **out, asb_sandbox *sb,
                                     const char *username, const char *password,
                                     const asb_git_options *o) {
  GIT_PROLOGUE(o, "git.dangerously_authenticate");
  if (!username || !*username || !password || !*password)
    return asbi_err(ASB_EINVAL, "Both username and password are required to authenticate git.");
  if (strpbrk(username, "\r\n") || strpbrk(password, "\r\n"))
    return asbi_err(ASB_EINVAL,
                    "git.dangerously_authenticate: credentials must not "
                    "contain line breaks");
  const char *host = o->host && *o->host ? o->host : "github.com";
  const char *proto = o->protocol && *o->protocol ? o->protocol : "https";
  if (strpbrk(host, "\r\n") || strpbrk(proto, "\r\n"))
    return asbi_err(ASB_EINVAL,
                    "git.dangerously_authenticate: host and protocol must not "
                    "contain line breaks");
  int rc = creds_input(&g, username, password);
  if (rc) {
    git_run_free(&g);
    return rc;
  }
  put(&g, CRED_READ);
  put(&g,
      "git config --global credential.helper store && "
      "printf 'protocol=%s\\nhost=%s\\nusername=%s\\npassword=%s\\n\\n'");
  word(&g, proto);
  word(&g, host);
  put(&g, " \"$ASB_GIT_USERNAME\" \"$ASB_GIT_PASSWORD\" | git credential approve");
  return run_out(out, sb, &g, o, "git.dangerously_authenticate", CLASSIFY_NONE, "authenticate", 0);
}
