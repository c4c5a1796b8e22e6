/* The git helpers (git.h) against the sandbox's real git on a real engine,
 * with remotes inside the sandbox only (no network): a bare repository
 * reached by path, and one served over HTTP with basic auth by git
 * http-backend behind a small Python server on the sandbox's loopback.
 * The server also looks, at every request, through every process's
 * command line in the sandbox for the password: credentials must never be
 * on one. Runs as root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_sandbox *SB;

#define D "/tmp/gt"
#define PASSWORD "s3cret-pw-Zq7"

/* Run cmd in the sandbox (stdin: in, or nothing); its stdout (malloc'd)
 * when it exits 0, else NULL. */
static char *sh_in(const char *cmd, const char *in) {
  asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
  if (in) {
    co.stdin_data = in;
    co.stdin_len = strlen(in);
  }
  asb_command_result *r = NULL;
  int rc = asb_commands_run(&r, SB, cmd, &co);
  char *out = NULL;
  if (rc == ASB_OK) {
    size_t n = 0;
    const char *s = asb_command_result_stdout(r, &n);
    out = malloc(n + 1);
    if (out) {
      memcpy(out, s ? s : "", n);
      out[n] = 0;
    }
  } else {
    fprintf(stderr, "  (%s: %s)\n", cmd, asb_error_last()->message);
  }
  asb_command_result_free(r);
  return out;
}
static char *sh(const char *cmd) {
  return sh_in(cmd, NULL);
}
static int sh_ok(const char *cmd) {
  char *o = sh(cmd);
  free(o);
  return o != NULL;
}

static const asb_git_options *opts_local(asb_git_options *o) {
  asb_git_options d = ASB_GIT_OPTIONS_INIT;
  *o = d;
  return o;
}

TEST(a_repository_from_init_to_push_and_clone) {
  asb_git_options o;
  REQUIRE(sh_ok("rm -rf " D " && mkdir -p " D));
  opts_local(&o);
  o.bare = 1;
  o.initial_branch = "main";
  REQUIRE_RC(asb_git_init(NULL, SB, D "/remote.git", &o), ASB_OK);
  opts_local(&o);
  o.initial_branch = "main";
  REQUIRE_RC(asb_git_init(NULL, SB, D "/repo", &o), ASB_OK);
  /* identity for the later commits of this user (global scope, default) */
  REQUIRE_RC(asb_git_configure_user(NULL, SB, NULL, "Sandbox Bot", "bot@example.com", NULL),
             ASB_OK);
  char *v = NULL;
  REQUIRE_RC(asb_git_config_get(&v, SB, NULL, "user.email", NULL), ASB_OK);
  CHECK_STR(v, "bot@example.com");
  asb_free(v);
  v = (char *)1;
  CHECK_RC(asb_git_config_get(&v, SB, NULL, "asbtest.unset", NULL), ASB_OK);
  CHECK(v == NULL);
  opts_local(&o);
  o.scope = "local";
  CHECK_RC(asb_git_config_set(NULL, SB, NULL, "pull.rebase", "false", &o), ASB_EINVAL);
  CHECK_RC(asb_git_config_set(NULL, SB, D "/repo", "pull.rebase", "false", &o), ASB_OK);
  REQUIRE_RC(asb_git_config_get(&v, SB, D "/repo", "pull.rebase", &o), ASB_OK);
  CHECK_STR(v, "false");
  asb_free(v);

  REQUIRE(sh_ok("printf 'hello\\n' > " D "/repo/README.md && printf 'x\\n' > " D
                "/repo/'two words.txt'"));
  asb_git_status *st = NULL;
  REQUIRE_RC(asb_git_status_read(&st, SB, D "/repo", NULL), ASB_OK);
  CHECK_STR(asb_git_status_current_branch(st), "main");
  CHECK(asb_git_status_upstream(st) == NULL);
  CHECK_INT(asb_git_status_files_count(st), 2);
  for (size_t i = 0; i < asb_git_status_files_count(st); i++) {
    CHECK_STR(asb_git_status_file_status(st, i), "untracked");
    CHECK_INT(asb_git_status_file_staged(st, i), 0);
  }
  CHECK(asb_git_status_file_name(st, 2) == NULL); /* past the end */
  asb_git_status_free(st);

  opts_local(&o);
  const char *const only[] = {"README.md", NULL};
  o.paths = only;
  REQUIRE_RC(asb_git_add(NULL, SB, D "/repo", &o), ASB_OK);
  REQUIRE_RC(asb_git_status_read(&st, SB, D "/repo", NULL), ASB_OK);
  int staged = 0, untracked = 0;
  for (size_t i = 0; i < asb_git_status_files_count(st); i++) {
    const char *name = asb_git_status_file_name(st, i);
    if (strcmp(name, "README.md") == 0) {
      CHECK_STR(asb_git_status_file_status(st, i), "added");
      CHECK_STR(asb_git_status_file_index_status(st, i), "A");
      staged += asb_git_status_file_staged(st, i);
    } else {
      CHECK_STR(name, "two words.txt");
      untracked++;
    }
  }
  CHECK_INT(staged, 1);
  CHECK_INT(untracked, 1);
  asb_git_status_free(st);
  REQUIRE_RC(asb_git_add(NULL, SB, D "/repo", NULL), ASB_OK); /* everything */
  opts_local(&o);
  o.author_name = "Other Author";
  o.author_email = "other@example.com";
  asb_command_result *r = NULL;
  REQUIRE_RC(asb_git_commit(&r, SB, D "/repo", "Initial commit", &o), ASB_OK);
  CHECK(r != NULL && asb_command_result_exit_code(r) == 0);
  asb_command_result_free(r);
  char *who = sh("git -C " D "/repo log -1 --format='%an <%ae>|%s'");
  CHECK_STR(who, "Other Author <other@example.com>|Initial commit\n");
  free(who);
  /* nothing to commit: git's failure, with its result */
  r = NULL;
  CHECK_RC(asb_git_commit(&r, SB, D "/repo", "empty", NULL), ASB_ECOMMANDEXIT);
  CHECK(r != NULL && asb_command_result_exit_code(r) != 0);
  asb_command_result_free(r);
  opts_local(&o);
  o.allow_empty = 1;
  CHECK_RC(asb_git_commit(NULL, SB, D "/repo", "empty", &o), ASB_OK);

  /* remotes */
  REQUIRE_RC(asb_git_remote_add(NULL, SB, D "/repo", "origin", D "/remote.git", NULL), ASB_OK);
  CHECK_RC(asb_git_remote_add(NULL, SB, D "/repo", "origin", D "/elsewhere.git", NULL),
           ASB_ECOMMANDEXIT);
  opts_local(&o);
  o.overwrite = 1;
  CHECK_RC(asb_git_remote_add(NULL, SB, D "/repo", "origin", D "/remote.git", &o), ASB_OK);
  char *url = NULL;
  REQUIRE_RC(asb_git_remote_get(&url, SB, D "/repo", "origin", NULL), ASB_OK);
  CHECK_STR(url, D "/remote.git");
  asb_free(url);
  url = (char *)1;
  CHECK_RC(asb_git_remote_get(&url, SB, D "/repo", "nope", NULL), ASB_OK);
  CHECK(url == NULL);

  /* a push naming nothing on a branch without upstream */
  CHECK_RC(asb_git_push(NULL, SB, D "/repo", NULL), ASB_EGITUPSTREAM);
  CHECK_RC(asb_git_pull(NULL, SB, D "/repo", NULL), ASB_EGITUPSTREAM);
  opts_local(&o);
  o.remote = "origin";
  o.branch = "main";
  REQUIRE_RC(asb_git_push(NULL, SB, D "/repo", &o), ASB_OK);
  REQUIRE_RC(asb_git_status_read(&st, SB, D "/repo", NULL), ASB_OK);
  CHECK_STR(asb_git_status_upstream(st), "origin/main");
  CHECK_INT(asb_git_status_ahead(st), 0);
  CHECK_INT(asb_git_status_files_count(st), 0);
  asb_git_status_free(st);

  /* a clone gets it; a commit there comes back with pull */
  REQUIRE_RC(asb_git_clone(NULL, SB, D "/remote.git", D "/clone", NULL), ASB_OK);
  REQUIRE(sh_ok("printf 'more\\n' >> " D "/clone/README.md"));
  REQUIRE_RC(asb_git_add(NULL, SB, D "/clone", NULL), ASB_OK);
  REQUIRE_RC(asb_git_commit(NULL, SB, D "/clone", "More", NULL), ASB_OK);
  REQUIRE_RC(asb_git_push(NULL, SB, D "/clone", NULL), ASB_OK); /* has an upstream */
  REQUIRE_RC(asb_git_pull(NULL, SB, D "/repo", NULL), ASB_OK);
  char *txt = sh("cat " D "/repo/README.md");
  CHECK_STR(txt, "hello\nmore\n");
  free(txt);
  opts_local(&o);
  o.depth = 1;
  o.branch = "main";
  REQUIRE_RC(asb_git_clone(NULL, SB, "file://" D "/remote.git", D "/shallow", &o), ASB_OK);
  txt = sh("git -C " D "/shallow rev-list --count HEAD");
  CHECK_STR(txt, "1\n");
  free(txt);
}

TEST(branches_reset_and_restore) {
  const char *repo = D "/repo";
  REQUIRE_RC(asb_git_branch_create(NULL, SB, repo, "topic", NULL), ASB_OK);
  asb_git_branch_list *bl = NULL;
  REQUIRE_RC(asb_git_branches_list(&bl, SB, repo, NULL), ASB_OK);
  CHECK_INT(asb_git_branch_list_count(bl), 2);
  CHECK_STR(asb_git_branch_list_current(bl), "topic");
  CHECK_STR(asb_git_branch_list_get(bl, 0), "main");
  CHECK(asb_git_branch_list_get(bl, 2) == NULL);
  asb_git_branch_list_free(bl);
  /* no upstream for topic, and git's own message for it */
  CHECK_RC(asb_git_pull(NULL, SB, repo, NULL), ASB_EGITUPSTREAM);
  CHECK_RC(asb_git_push(NULL, SB, repo, NULL), ASB_EGITUPSTREAM);
  REQUIRE_RC(asb_git_branch_checkout(NULL, SB, repo, "main", NULL), ASB_OK);
  REQUIRE_RC(asb_git_branch_delete(NULL, SB, repo, "topic", NULL), ASB_OK);
  CHECK_RC(asb_git_branch_delete(NULL, SB, repo, "topic", NULL), ASB_ECOMMANDEXIT);
  /* option-looking names never reach git */
  CHECK_RC(asb_git_branch_create(NULL, SB, repo, "--orphan", NULL), ASB_EINVAL);

  /* restore: the work tree by default; staged: the index only */
  REQUIRE(sh_ok("printf 'changed\\n' > " D "/repo/README.md"));
  const char *const readme[] = {"README.md", NULL};
  REQUIRE_RC(asb_git_restore(NULL, SB, repo, readme, NULL), ASB_OK);
  char *txt = sh("cat " D "/repo/README.md");
  CHECK_STR(txt, "hello\nmore\n");
  free(txt);
  REQUIRE(sh_ok("printf 'staged\\n' > " D "/repo/README.md && git -C " D "/repo add README.md"));
  asb_git_options o = ASB_GIT_OPTIONS_INIT;
  o.staged = 1;
  REQUIRE_RC(asb_git_restore(NULL, SB, repo, readme, &o), ASB_OK);
  asb_git_status *st = NULL;
  REQUIRE_RC(asb_git_status_read(&st, SB, repo, NULL), ASB_OK);
  REQUIRE(asb_git_status_files_count(st) == 1);
  CHECK_STR(asb_git_status_file_status(st, 0), "modified");
  CHECK_INT(asb_git_status_file_staged(st, 0), 0);
  CHECK_STR(asb_git_status_file_worktree_status(st, 0), "M");
  asb_git_status_free(st);
  o.staged = -1;
  o.worktree = -1;
  CHECK_RC(asb_git_restore(NULL, SB, repo, readme, &o), ASB_EINVAL);
  /* reset --hard to the commit before the last */
  asb_git_options ro = ASB_GIT_OPTIONS_INIT;
  ro.mode = "hard";
  ro.target = "HEAD~1";
  REQUIRE_RC(asb_git_reset(NULL, SB, repo, &ro), ASB_OK);
  txt = sh("cat " D "/repo/README.md");
  CHECK_STR(txt, "hello\n");
  free(txt);
  ro.mode = "bogus";
  CHECK_RC(asb_git_reset(NULL, SB, repo, &ro), ASB_EINVAL);
  CHECK(strstr(asb_error_last()->message, "soft, mixed, hard, merge, keep") != NULL);
}

/* git http-backend behind basic auth ("bot" / PASSWORD), on a free port of
 * the sandbox's loopback; every request also checks every process's
 * command line for the password and notes a hit in D/leak. */
static const char SERVER_PY[] =
    "import base64, http.server, os, subprocess, sys\n"
    "PW = sys.stdin.readline().strip().encode()\n"
    "WANT = 'Basic ' + base64.b64encode(b'bot:' + PW).decode()\n"
    "def leaks():\n"
    "    for p in os.listdir('/proc'):\n"
    "        try:\n"
    "            if p.isdigit() and PW in open('/proc/%s/cmdline' % p, 'rb').read():\n"
    "                open('" D
    "/leak', 'a').write(p + '\\n')\n"
    "        except OSError:\n"
    "            pass\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def go(self):\n"
    "        leaks()\n"
    "        if self.headers.get('Authorization') != WANT:\n"
    "            self.send_response(401)\n"
    "            self.send_header('WWW-Authenticate', 'Basic realm=\"t\"')\n"
    "            self.send_header('Content-Length', '0')\n"
    "            self.end_headers()\n"
    "            return\n"
    "        path, _, query = self.path.partition('?')\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        body = self.rfile.read(n) if n else b''\n"
    "        env = dict(os.environ, GIT_PROJECT_ROOT='" D
    "/srv', GIT_HTTP_EXPORT_ALL='1',\n"
    "                   PATH_INFO=path, QUERY_STRING=query, REQUEST_METHOD=self.command,\n"
    "                   CONTENT_TYPE=self.headers.get('Content-Type', ''),\n"
    "                   CONTENT_LENGTH=str(len(body)), REMOTE_USER='bot',\n"
    "                   HTTP_CONTENT_ENCODING=self.headers.get('Content-Encoding', ''))\n"
    "        out = subprocess.run(['git', 'http-backend'], input=body, env=env,\n"
    "                             capture_output=True).stdout\n"
    "        head, _, rest = out.partition(b'\\r\\n\\r\\n')\n"
    "        status = 200\n"
    "        hdrs = []\n"
    "        for line in head.decode().split('\\r\\n'):\n"
    "            k, _, v = line.partition(': ')\n"
    "            if k.lower() == 'status':\n"
    "                status = int(v.split()[0])\n"
    "            elif k:\n"
    "                hdrs.append((k, v))\n"
    "        self.send_response(status)\n"
    "        for k, v in hdrs:\n"
    "            self.send_header(k, v)\n"
    "        self.send_header('Content-Length', str(len(rest)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(rest)\n"
    "    do_GET = go\n"
    "    do_POST = go\n"
    "    def log_message(self, *a):\n"
    "        pass\n"
    "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
    "open('" D
    "/port.tmp', 'w').write(str(s.server_address[1]))\n"
    "os.rename('" D "/port.tmp', '" D
    "/port')\n"
    "s.serve_forever()\n";

static int port_known(int *port) {
  char *p = sh("cat " D "/port 2>/dev/null || true");
  *port = p ? atoi(p) : 0;
  free(p);
  return *port > 0;
}

TEST(credentials_reach_git_and_nothing_else) {
  REQUIRE(sh_ok("mkdir -p " D "/srv && git clone -q --bare " D "/remote.git " D
                "/srv/r.git && git -C " D "/srv/r.git config http.receivepack true && "
                "rm -f " D "/port " D "/leak"));
  char *wrote = sh_in("cat > " D "/srv.py", SERVER_PY);
  REQUIRE(wrote != NULL);
  free(wrote);
  asb_process *srv = NULL;
  asb_command_options so = ASB_COMMAND_OPTIONS_INIT;
  so.stdin_data = PASSWORD "\n"; /* not on its own command line either */
  so.stdin_len = strlen(PASSWORD) + 1;
  so.timeout_ms = -1;
  REQUIRE_RC(asb_commands_start(&srv, SB, "exec python3 " D "/srv.py", &so), ASB_OK);
  int port = 0;
  WAIT_UNTIL(port_known(&port), ASBT_DEADLINE_MS);
  if (port <= 0) {
    ASBT_FAIL("the HTTP git server did not start");
    asb_process_kill(srv, NULL);
    asb_process_free(srv);
    return;
  }
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/r.git", port);

  /* no credentials, a wrong password: refused, told apart */
  asb_command_result *r = NULL;
  CHECK_RC(asb_git_clone(&r, SB, url, D "/h0", NULL), ASB_EGITAUTH);
  CHECK(r != NULL);
  asb_command_result_free(r);
  asb_git_options o = ASB_GIT_OPTIONS_INIT;
  o.username = "bot";
  o.password = "wrong";
  CHECK_RC(asb_git_clone(NULL, SB, url, D "/h1", &o), ASB_EGITAUTH);
  /* a password without a username, one with a line break */
  o.username = NULL;
  CHECK_RC(asb_git_clone(NULL, SB, url, D "/h1", &o), ASB_EINVAL);
  o.username = "bot";
  o.password = "a\nb";
  CHECK_RC(asb_git_clone(NULL, SB, url, D "/h1", &o), ASB_EINVAL);

  /* the right ones: cloned, and kept nowhere */
  o.password = PASSWORD;
  REQUIRE_RC(asb_git_clone(NULL, SB, url, D "/h2", &o), ASB_OK);
  CHECK(sh_ok("test -f " D "/h2/README.md && ! grep -rqs '" PASSWORD "' " D
              "/h2/.git ~/.gitconfig ~/.git-credentials"));
  /* a pull needs them again */
  CHECK_RC(asb_git_pull(NULL, SB, D "/h2", NULL), ASB_EGITAUTH);
  REQUIRE_RC(asb_git_pull(NULL, SB, D "/h2", &o), ASB_OK);
  /* and a push */
  REQUIRE(sh_ok("printf 'pushed\\n' > " D "/h2/p.txt"));
  REQUIRE_RC(asb_git_add(NULL, SB, D "/h2", NULL), ASB_OK);
  REQUIRE_RC(asb_git_commit(NULL, SB, D "/h2", "over http", NULL), ASB_OK);
  CHECK_RC(asb_git_push(NULL, SB, D "/h2", NULL), ASB_EGITAUTH);
  REQUIRE_RC(asb_git_push(NULL, SB, D "/h2", &o), ASB_OK);
  char *log = sh("git -C " D "/srv/r.git log -1 --format=%s");
  CHECK_STR(log, "over http\n");
  free(log);

  /* stored on request: in the clone's own 0600 file, used by later calls */
  o.store_credentials = 1;
  REQUIRE_RC(asb_git_clone(NULL, SB, url, D "/h3", &o), ASB_OK);
  char *mode =
      sh("stat -c %a " D "/h3/.git/credentials && ! grep -qs '" PASSWORD "' " D "/h3/.git/config");
  CHECK_STR(mode, "600\n");
  free(mode);
  CHECK_RC(asb_git_pull(NULL, SB, D "/h3", NULL), ASB_OK);

  /* the user's credential store, for a host */
  asb_git_options ho = ASB_GIT_OPTIONS_INIT;
  ho.protocol = "http";
  char hostport[64];
  snprintf(hostport, sizeof hostport, "127.0.0.1:%d", port);
  ho.host = hostport;
  REQUIRE_RC(asb_git_dangerously_authenticate(NULL, SB, "bot", PASSWORD, &ho), ASB_OK);
  CHECK_RC(asb_git_clone(NULL, SB, url, D "/h4", NULL), ASB_OK);
  CHECK(sh_ok("git config --global --unset credential.helper; rm -f ~/.git-credentials"));

  /* never on any command line while git ran */
  char *leak = sh("cat " D "/leak 2>/dev/null || true");
  CHECK_STR(leak, "");
  free(leak);
  asb_process_kill(srv, NULL);
  asb_process_free(srv);
}

/* A command that ends before the library closed its stdin (the git
 * helpers' scripts read their two lines and may be done by then) is no
 * failure of the run: envd answering "no such process" to the close
 * meant the command was over. */
TEST(a_command_may_end_before_its_stdin_is_closed) {
  for (int i = 0; i < 20; i++) {
    asb_command_options co = ASB_COMMAND_OPTIONS_INIT;
    co.stdin_data = "x\n";
    co.stdin_len = 2;
    asb_command_result *r = NULL;
    CHECK_RC(asb_commands_run(&r, SB, "exit 3", &co), ASB_ECOMMANDEXIT);
    CHECK(r != NULL && asb_command_result_exit_code(r) == 3);
    asb_command_result_free(r);
  }
}

int main(void) {
  if (engine_fixture_start(&F, "git") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  asb_client *c = NULL;
  if (engine_fixture_client(&F, &c) != ASB_OK || asb_sandbox_create(&SB, c, NULL) != ASB_OK) {
    fprintf(stderr, "cannot create a sandbox: %s\n", asb_error_last()->message);
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(a_command_may_end_before_its_stdin_is_closed);
  RUN(a_repository_from_init_to_push_and_clone);
  RUN(branches_reset_and_restore);
  RUN(credentials_reach_git_and_nothing_else);
  asb_sandbox_kill(SB, NULL);
  asb_sandbox_free(SB);
  asb_client_free(c);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
