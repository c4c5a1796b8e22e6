/* agent-sandbox Node binding: git in a sandbox (git.h): sandbox.git, each
 * call the sandbox's own git run as a command by the C library. One entry
 * point, git(sandbox, op, args[], opts, cb): args are the call's positional
 * strings (restore's paths ride in opts.paths), opts the asb_git_options
 * members under their C names (lib/git.js maps E2B's names onto them).
 * A git that fails (ASB_ECOMMANDEXIT, ASB_EGITAUTH, ASB_EGITUPSTREAM)
 * still hands its result to JS, which attaches it to the error.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "anode.h"
#include "events.h"
#include "gen.h"

enum {
  GOP_CLONE = 1,
  GOP_INIT,
  GOP_REMOTE_ADD,
  GOP_REMOTE_GET,
  GOP_STATUS,
  GOP_BRANCHES,
  GOP_BRANCH_CREATE,
  GOP_BRANCH_CHECKOUT,
  GOP_BRANCH_DELETE,
  GOP_ADD,
  GOP_COMMIT,
  GOP_RESET,
  GOP_RESTORE,
  GOP_PUSH,
  GOP_PULL,
  GOP_CONFIG_SET,
  GOP_CONFIG_GET,
  GOP_CONFIGURE_USER,
  GOP_AUTHENTICATE,
  GOP_LAST = GOP_AUTHENTICATE
};

/* the string members of asb_git_options, in this order in git_call.f */
static const char *const k_str[] = {
    "user",           "cwd",    "username",    "password",     "branch",
    "initial_branch", "remote", "author_name", "author_email", "mode",
    "target",         "source", "scope",       "host",         "protocol"};
#define NSTR (sizeof k_str / sizeof k_str[0])
/* the int members (flags and tri-states), in this order in git_call.n */
static const char *const k_int[] = {
    "store_credentials", "depth", "bare",      "set_upstream", "all", "allow_empty", "staged",
    "worktree",          "fetch", "overwrite", "force"};
#define NINT (sizeof k_int / sizeof k_int[0])

typedef struct git_call {
  anode_call base;
  int op;
  asb_sandbox *sb;
  char *a[4]; /* positional strings (NULL: not given) */
  char *f[NSTR];
  int n[NINT];
  char **envs, **paths;
  long timeout_ms, request_timeout_ms;
  void *out; /* asb_command_result, asb_git_status, asb_git_branch_list or char * */
} git_call;

static asb_git_options git_opts(git_call *c) {
  asb_git_options o = ASB_GIT_OPTIONS_INIT;
  o.envs = (const char *const *)c->envs;
  o.user = c->f[0];
  o.cwd = c->f[1];
  o.username = c->f[2];
  o.password = c->f[3];
  o.branch = c->f[4];
  o.initial_branch = c->f[5];
  o.remote = c->f[6];
  o.author_name = c->f[7];
  o.author_email = c->f[8];
  o.mode = c->f[9];
  o.target = c->f[10];
  o.source = c->f[11];
  o.scope = c->f[12];
  o.host = c->f[13];
  o.protocol = c->f[14];
  o.store_credentials = c->n[0];
  o.depth = c->n[1];
  o.bare = c->n[2];
  o.set_upstream = c->n[3];
  o.all = c->n[4];
  o.allow_empty = c->n[5];
  o.staged = c->n[6];
  o.worktree = c->n[7];
  o.fetch = c->n[8];
  o.overwrite = c->n[9];
  o.force = c->n[10];
  o.paths = (const char *const *)c->paths;
  o.timeout_ms = c->timeout_ms;
  o.request_timeout_ms = c->request_timeout_ms;
  o.cancel = c->base.cancel;
  return o;
}

static void w_git(anode_call *base) {
  git_call *c = (git_call *)base;
  asb_git_options o = git_opts(c);
  asb_command_result *r = NULL;
  int rc = ASB_EINVAL;
  switch (c->op) {
    case GOP_CLONE:
      rc = asb_git_clone(&r, c->sb, c->a[0], c->a[1], &o);
      break;
    case GOP_INIT:
      rc = asb_git_init(&r, c->sb, c->a[0], &o);
      break;
    case GOP_REMOTE_ADD:
      rc = asb_git_remote_add(&r, c->sb, c->a[0], c->a[1], c->a[2], &o);
      break;
    case GOP_REMOTE_GET: {
      char *url = NULL;
      rc = asb_git_remote_get(&url, c->sb, c->a[0], c->a[1], &o);
      c->out = url;
      break;
    }
    case GOP_STATUS: {
      asb_git_status *s = NULL;
      rc = asb_git_status_read(&s, c->sb, c->a[0], &o);
      c->out = s;
      break;
    }
    case GOP_BRANCHES: {
      asb_git_branch_list *l = NULL;
      rc = asb_git_branches_list(&l, c->sb, c->a[0], &o);
      c->out = l;
      break;
    }
    case GOP_BRANCH_CREATE:
      rc = asb_git_branch_create(&r, c->sb, c->a[0], c->a[1], &o);
      break;
    case GOP_BRANCH_CHECKOUT:
      rc = asb_git_branch_checkout(&r, c->sb, c->a[0], c->a[1], &o);
      break;
    case GOP_BRANCH_DELETE:
      rc = asb_git_branch_delete(&r, c->sb, c->a[0], c->a[1], &o);
      break;
    case GOP_ADD:
      rc = asb_git_add(&r, c->sb, c->a[0], &o);
      break;
    case GOP_COMMIT:
      rc = asb_git_commit(&r, c->sb, c->a[0], c->a[1], &o);
      break;
    case GOP_RESET:
      rc = asb_git_reset(&r, c->sb, c->a[0], &o);
      break;
    case GOP_RESTORE: {
      /* the paths are the call's own argument here, not opts->paths */
      const char *const *paths = o.paths;
      o.paths = NULL;
      rc = asb_git_restore(&r, c->sb, c->a[0], paths, &o);
      break;
    }
    case GOP_PUSH:
      rc = asb_git_push(&r, c->sb, c->a[0], &o);
      break;
    case GOP_PULL:
      rc = asb_git_pull(&r, c->sb, c->a[0], &o);
      break;
    case GOP_CONFIG_SET:
      rc = asb_git_config_set(&r, c->sb, c->a[0], c->a[1], c->a[2], &o);
      break;
    case GOP_CONFIG_GET: {
      char *v = NULL;
      rc = asb_git_config_get(&v, c->sb, c->a[0], c->a[1], &o);
      c->out = v;
      break;
    }
    case GOP_CONFIGURE_USER:
      rc = asb_git_configure_user(&r, c->sb, c->a[0], c->a[1], c->a[2], &o);
      break;
    case GOP_AUTHENTICATE:
      rc = asb_git_dangerously_authenticate(&r, c->sb, c->a[0], c->a[1], &o);
      break;
  }
  if (r) c->out = r;
  if (rc < 0)
    anode_call_fail(base, rc);
  else
    base->rc = rc;
}

static int git_returns_result(int op) {
  return op != GOP_REMOTE_GET && op != GOP_STATUS && op != GOP_BRANCHES && op != GOP_CONFIG_GET;
}

static napi_value status_value(napi_env env, const asb_git_status *s) {
  napi_value o = anode_obj(env);
  anode_set(env, o, "currentBranch", anode_str(env, asb_git_status_current_branch(s)));
  anode_set(env, o, "upstream", anode_str(env, asb_git_status_upstream(s)));
  anode_set(env, o, "ahead", anode_num(env, (double)asb_git_status_ahead(s)));
  anode_set(env, o, "behind", anode_num(env, (double)asb_git_status_behind(s)));
  anode_set(env, o, "detached", anode_bool(env, asb_git_status_detached(s)));
  size_t n = asb_git_status_files_count(s);
  napi_value files;
  napi_create_array_with_length(env, n, &files);
  for (size_t i = 0; i < n; i++) {
    napi_value f = anode_obj(env);
    const char *st = asb_git_status_file_status(s, i);
    const char *is = asb_git_status_file_index_status(s, i);
    const char *ws = asb_git_status_file_worktree_status(s, i);
    anode_set(env, f, "name", anode_str(env, asb_git_status_file_name(s, i)));
    anode_set(env, f, "status", anode_str(env, st ? st : "unknown"));
    anode_set(env, f, "indexStatus", anode_str(env, is ? is : " "));
    anode_set(env, f, "workingTreeStatus", anode_str(env, ws ? ws : " "));
    anode_set(env, f, "staged", anode_bool(env, asb_git_status_file_staged(s, i)));
    anode_set(env, f, "renamedFrom", anode_str(env, asb_git_status_file_renamed_from(s, i)));
    napi_set_element(env, files, (uint32_t)i, f);
  }
  anode_set(env, o, "fileStatus", files);
  return o;
}

static napi_value r_git(napi_env env, anode_call *base) {
  git_call *c = (git_call *)base;
  if (!c->out) return NULL;
  if (git_returns_result(c->op)) return anode_command_result(env, c->out);
  if (base->rc < 0) return NULL;
  switch (c->op) {
    case GOP_REMOTE_GET:
    case GOP_CONFIG_GET:
      return anode_str(env, c->out);
    case GOP_STATUS:
      return status_value(env, c->out);
    case GOP_BRANCHES: {
      const asb_git_branch_list *l = c->out;
      size_t n = asb_git_branch_list_count(l);
      napi_value o = anode_obj(env), a;
      napi_create_array_with_length(env, n, &a);
      for (size_t i = 0; i < n; i++)
        napi_set_element(env, a, (uint32_t)i, anode_str(env, asb_git_branch_list_get(l, i)));
      anode_set(env, o, "branches", a);
      anode_set(env, o, "currentBranch", anode_str(env, asb_git_branch_list_current(l)));
      return o;
    }
  }
  return NULL;
}

static void c_git(anode_call *base) {
  git_call *c = (git_call *)base;
  if (c->out) {
    if (git_returns_result(c->op))
      asb_command_result_free(c->out);
    else if (c->op == GOP_STATUS)
      asb_git_status_free(c->out);
    else if (c->op == GOP_BRANCHES)
      asb_git_branch_list_free(c->out);
    else
      asb_free(c->out);
    c->out = NULL;
  }
  if (c->a[1] && c->op == GOP_AUTHENTICATE) memset(c->a[1], 0, strlen(c->a[1]));
  for (size_t i = 0; i < 4; i++) {
    free(c->a[i]);
    c->a[i] = NULL;
  }
  for (size_t i = 0; i < NSTR; i++) {
    /* the password is wiped before it goes back to the allocator */
    if (c->f[i] && i == 3) memset(c->f[i], 0, strlen(c->f[i]));
    free(c->f[i]);
    c->f[i] = NULL;
  }
  anode_strv_free(c->envs);
  anode_strv_free(c->paths);
  c->envs = c->paths = NULL;
}

/* git(sandbox, op, args[], opts, cb): args up to 4 strings or null/undefined;
 * opts {envs[] ("K=V"), paths[], timeout_ms, request_timeout_ms, <string
 * members>, <int members>} under asb_git_options' names. */
static napi_value js_git(napi_env env, napi_callback_info info) {
  GEN_ARGS(5);
  git_call *c = (git_call *)anode_call_new(env, sizeof(git_call), argv[4]);
  if (!c) return NULL;
  c->base.cleanup = c_git;
  anode_box *b = anode_box_arg(env, argv[0], BOX_SANDBOX);
  if (!b || anode_call_keep(env, &c->base, argv[0]) != 0) goto bad;
  c->sb = (asb_sandbox *)b->ptr;
  int32_t op = 0;
  napi_get_value_int32(env, argv[1], &op);
  if (op < GOP_CLONE || op > GOP_LAST) {
    anode_throw(env, "ERR_INVALID_ARG_VALUE", "unknown git operation");
    goto bad;
  }
  c->op = op;
  bool is_array = false;
  napi_is_array(env, argv[2], &is_array);
  if (!is_array) {
    anode_throw(env, "ERR_INVALID_ARG_TYPE", "git: args must be an array");
    goto bad;
  }
  uint32_t n = 0;
  napi_get_array_length(env, argv[2], &n);
  for (uint32_t i = 0; i < n && i < 4; i++) {
    napi_value v;
    napi_get_element(env, argv[2], i, &v);
    if (!anode_is_nullish(env, v) && anode_get_string(env, v, &c->a[i])) goto bad;
  }
  napi_value o = argv[3];
  for (size_t i = 0; i < NSTR; i++)
    if (anode_opt_string(env, o, k_str[i], &c->f[i])) goto bad;
  for (size_t i = 0; i < NINT; i++)
    if (anode_opt_int(env, o, k_int[i], &c->n[i])) goto bad;
  if (anode_opt_strv(env, o, "envs", &c->envs) || anode_opt_strv(env, o, "paths", &c->paths) ||
      anode_opt_long(env, o, "timeout_ms", &c->timeout_ms) ||
      anode_opt_long(env, o, "request_timeout_ms", &c->request_timeout_ms))
    goto bad;
  c->base.work = w_git;
  c->base.result = r_git;
  return anode_call_submit(env, &c->base, b);
bad:
  anode_call_discard(env, &c->base);
  return NULL;
}

const anode_fn anode_git_fns[] = {{"git", js_git}, {NULL, NULL}};
