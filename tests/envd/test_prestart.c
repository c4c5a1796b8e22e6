/* The pre-started login shell (core/envd/prestart.c) against the fresh
 * `bash -l -c CMD`: two envds side by side, one with ASB_PRESTART=0, the
 * same commands on both, the same stdout, stderr and end event. Before each
 * command on the pre-starting envd the test waits until its shell is there
 * and checks that the command ran in it (its start pid), so every
 * comparison is of the two paths. Then what must not take a stale shell:
 * a profile changed by the test and by a command, /init's variables, a
 * profile file created, another cwd.
 *
 * Runs in a private mount namespace where a small /etc/profile,
 * /etc/profile.d and a home for root are bound over the host's (the host's
 * own dotfiles are slow and not ours to edit). Needs root.
 * SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "envd_test.h"
#include "testing.h"

static et_envd A, B; /* A: fresh path only; B: pre-started shells */
static et_conn CA, CB;
static char T[64], home[96], profile[96], profile_d[96];

typedef struct run_out {
  char out[16384], err[4096], end[512];
  size_t nout, nerr;
  int pid;
} run_out;

static int b64v(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* Appends the base64 text s (up to the closing quote) decoded to buf. */
static void b64_append(const char *s, char *buf, size_t cap, size_t *n) {
  unsigned v = 0;
  int bits = 0;
  for (; *s && *s != '"'; s++) {
    int x = b64v((unsigned char)*s);
    if (x < 0) continue;
    v = v << 6 | (unsigned)x;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (*n + 1 < cap) buf[(*n)++] = (char)(v >> bits & 0xff);
    }
  }
  buf[*n] = '\0';
}

/* The messages of a Start stream into o. */
static void parse_stream(const et_resp *r, run_out *o) {
  memset(o, 0, sizeof *o);
  size_t i = 0;
  while (i + 5 <= r->len) {
    const unsigned char *h = (const unsigned char *)r->body + i;
    size_t l = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
    if (i + 5 + l > r->len) break;
    char msg[20000];
    snprintf(msg, sizeof msg, "%.*s", (int)(l < sizeof msg - 1 ? l : sizeof msg - 1),
             r->body + i + 5);
    const char *p;
    if ((p = strstr(msg, "\"start\":{\"pid\":"))) o->pid = atoi(p + 15);
    if ((p = strstr(msg, "\"stdout\":\""))) b64_append(p + 10, o->out, sizeof o->out, &o->nout);
    if ((p = strstr(msg, "\"stderr\":\""))) b64_append(p + 10, o->err, sizeof o->err, &o->nerr);
    if ((p = strstr(msg, "\"end\":"))) snprintf(o->end, sizeof o->end, "%s", p);
    if (h[0] & 2) snprintf(o->end + strlen(o->end), sizeof o->end - strlen(o->end), " / %s", msg);
    i += 5 + l;
  }
}

static void json_str(char *out, size_t n, const char *s) {
  size_t k = 0;
  for (; *s && k + 8 < n; s++) {
    if (*s == '"' || *s == '\\') {
      out[k++] = '\\';
      out[k++] = *s;
    } else if (*s == '\n') {
      out[k++] = '\\';
      out[k++] = 'n';
    } else {
      out[k++] = *s;
    }
  }
  out[k] = '\0';
}

/* commands.run(cmd) as the SDKs send it; extra: more fields of the
 * process ("cwd", "envs") or, starting with '+', of the request */
static int run(et_conn *c, const char *cmd, const char *extra, run_out *o) {
  char q[8192], body[9000];
  json_str(q, sizeof q, cmd);
  int top = extra && extra[0] == '+';
  snprintf(body, sizeof body,
           "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"%s\"]%s}%s}", q,
           extra && !top ? extra : "", top ? extra + 1 : "");
  et_resp r;
  if (et_stream(c, "process.Process/Start", body, NULL, &r) != 0) return -1;
  parse_stream(&r, o);
  et_resp_free(&r);
  return 0;
}

/* The pid of B's waiting shell other than not_pid and not_pid2, once it
 * is there (0 when none came). */
static int waiting_shell2(int not_pid, int not_pid2) {
  int found = 0;
  WAIT_UNTIL(
      ({
        found = 0;
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
          int pid = atoi(de->d_name);
          if (pid <= 0 || pid == not_pid || pid == not_pid2 || et_proc_status(pid, "PPid") != B.pid)
            continue;
          char p[64], cl[512] = {0};
          snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
          int fd = open(p, O_RDONLY);
          ssize_t n = fd >= 0 ? read(fd, cl, sizeof cl - 1) : -1;
          if (fd >= 0) close(fd);
          for (ssize_t i = 0; i < n; i++)
            if (!cl[i]) cl[i] = ' ';
          if (n > 0 && strstr(cl, "__asb_boot")) found = pid;
        }
        if (d) closedir(d);
        found != 0;
      }),
      ASBT_DEADLINE_MS);
  return found;
}

static int waiting_shell(int not_pid) {
  return waiting_shell2(not_pid, 0);
}

static int g_last; /* the last waiting shell B's commands ran in */

/* cmd on A (fresh) and on B (in the waiting shell): the same result. With
 * prime, B first runs one command of the same kind (user, cwd, stdin mode),
 * and waits for the shell started for it. */
static void same_p(const char *cmd, const char *extra, int prime) {
  run_out a, b;
  int old = 0;
  if (prime) {
    /* the shell waiting for the other kind is killed when the thread
     * replaces it, maybe after this looked */
    old = waiting_shell(g_last);
    REQUIRE(run(&CB, "true", extra, &b) == 0);
    g_last = b.pid;
  }
  int w = waiting_shell2(g_last, old);
  REQUIRE(w > 0);
  REQUIRE(run(&CA, cmd, extra, &a) == 0);
  REQUIRE(run(&CB, cmd, extra, &b) == 0);
  CHECK_INT(b.pid, w); /* it ran in the pre-started shell */
  g_last = w;
  CHECK_STR(b.out, a.out);
  CHECK_STR(b.err, a.err);
  CHECK_STR(b.end, a.end);
  if (strcmp(a.out, b.out) || strcmp(a.err, b.err) || strcmp(a.end, b.end))
    printf("  command: %s\n", cmd);
}

static void same(const char *cmd, const char *extra) {
  same_p(cmd, extra, 0);
}

/* cmd on both after a change: B must not use the shell waiting since
 * before it (stale), and both say the same. */
static void same_not_stale(int stale, const char *cmd, const char *extra, const char *want) {
  run_out a, b;
  REQUIRE(run(&CA, cmd, extra, &a) == 0);
  REQUIRE(run(&CB, cmd, extra, &b) == 0);
  CHECK(b.pid != stale);
  g_last = stale; /* killed, maybe not gone yet */
  CHECK_STR(a.out, want);
  CHECK_STR(b.out, a.out);
  CHECK_STR(b.end, a.end);
}

static int write_file(const char *path, const char *s, const char *mode) {
  FILE *f = fopen(path, mode);
  if (!f) return -1;
  fputs(s, f);
  return fclose(f);
}

/* Sends a Start (body: its JSON) on a connection of its own; once its
 * head is read, the process is registered. */
static int start_async(et_conn *s, int port, const char *body) {
  s->fd = -1;
  s->port = port;
  s->have = s->off = 0;
  if (et_connect(s, port) != 0) return -1;
  char head[512];
  size_t n = strlen(body);
  char *env = malloc(n + 5);
  if (!env) return -1;
  env[0] = 0;
  env[1] = (char)(n >> 24);
  env[2] = (char)(n >> 16);
  env[3] = (char)(n >> 8);
  env[4] = (char)n;
  memcpy(env + 5, body, n);
  int hn = snprintf(head, sizeof head,
                    "POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    "application/connect+json\r\nContent-Length: %zu\r\n\r\n",
                    n + 5);
  int rc = et_send(s, head, (size_t)hn) == 0 && et_send(s, env, n + 5) == 0 ? 0 : -1;
  free(env);
  return rc;
}

static int finish_async(et_conn *s, et_resp *r, run_out *o) {
  int rc = et_read_body(s, r, NULL, NULL);
  if (rc == 0) parse_stream(r, o);
  et_resp_free(r);
  et_close(s);
  return rc;
}

TEST(same_as_fresh) {
  run_out o;
  REQUIRE(run(&CB, "true", NULL, &o) == 0); /* the first one starts the first shell */
  g_last = o.pid;
  same("env | LC_ALL=C sort", NULL);
  same(
      "echo \"$0|$BASH_EXECUTION_STRING|$#|$LINENO|$-|$SHLVL|$PWD|$_\"; shopt login_shell; "
      "echo \"$FROM_PROFILE|$PROFILE_PWD|$A_SH\"; type myfn; myfn; echo /proc/self/fd/*",
      NULL);
  same("echo out; echo err >&2; exit 7", NULL);
  same("false", NULL);
  same("printf 'a\\nb\\n\\n'", NULL);
  same("for i in 1 2 3; do echo $i; done\n\n", NULL);
  same("kill -TERM $$", NULL);
  same("kill -KILL $$", NULL);
  /* a syntax error: exit 2 and bash's message, whose prefix is "eval:"
   * instead of "-c:" (docs/envd.md) */
  run_out a, b;
  int w = waiting_shell(g_last);
  REQUIRE(run(&CA, "if then", NULL, &a) == 0);
  REQUIRE(run(&CB, "if then", NULL, &b) == 0);
  CHECK_INT(b.pid, w);
  g_last = w;
  CHECK_STR(b.end, a.end);
  CHECK(strstr(a.err, "/bin/bash: -c: line 1: syntax error near unexpected token `then'") != NULL);
  CHECK(strstr(b.err, "/bin/bash: eval: line 1: syntax error near unexpected token `then'") !=
        NULL);
  same("ulimit -n; cat /proc/self/oom_score_adj; id -u; id -G", NULL);
  /* another stdin mode, another cwd: a shell of their own */
  same_p("cat; echo \"[$?]\"", "+,\"stdin\":false", 1);
  same_p("pwd; echo $PROFILE_PWD; echo $PWD", ",\"cwd\":\"/tmp\"", 1);
  same_p("true", NULL, 1); /* back to the home, stdin piped */
}

TEST(stdin_and_signals) {
  /* stdin piped: SendInput, CloseStdin; then a running command killed */
  for (int k = 0; k < 2; k++) {
    et_conn *c = k ? &CB : &CA;
    int w = k ? waiting_shell(g_last) : 0;
    if (k) REQUIRE(w > 0);
    const char *body[2] = {
        "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"read -r x; echo "
        "\\\"got:$x\\\"; cat\"]},\"tag\":\"in\",\"stdin\":true}",
        "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"sleep 600\"]},\"tag\":"
        "\"sl\"}"};
    const char *sig[2] = {"SIGNAL_SIGKILL", "SIGNAL_SIGTERM"};
    for (int j = 0; j < 2; j++) {
      et_conn s;
      et_resp r, u;
      REQUIRE(start_async(&s, c->port, body[j]) == 0);
      REQUIRE(et_read_head(&s, &r) == 0);
      CHECK_INT(r.status, 200);
      if (j == 0) {
        /* "hello\n", then "more\n" for cat */
        REQUIRE(et_unary(c, "process.Process/SendInput",
                         "{\"process\":{\"tag\":\"in\"},\"input\":{\"stdin\":\"aGVsbG8K\"}}", NULL,
                         &u) == 0);
        CHECK_INT(u.status, 200);
        et_resp_free(&u);
        REQUIRE(et_unary(c, "process.Process/SendInput",
                         "{\"process\":{\"tag\":\"in\"},\"input\":{\"stdin\":\"bW9yZQo=\"}}", NULL,
                         &u) == 0);
        et_resp_free(&u);
        REQUIRE(et_unary(c, "process.Process/CloseStdin", "{\"process\":{\"tag\":\"in\"}}", NULL,
                         &u) == 0);
        CHECK_INT(u.status, 200);
        et_resp_free(&u);
      } else {
        char sj[128];
        snprintf(sj, sizeof sj, "{\"process\":{\"tag\":\"sl\"},\"signal\":\"%s\"}", sig[k]);
        REQUIRE(et_unary(c, "process.Process/SendSignal", sj, NULL, &u) == 0);
        CHECK_INT(u.status, 200);
        et_resp_free(&u);
      }
      run_out o;
      REQUIRE(finish_async(&s, &r, &o) == 0);
      if (k) CHECK_INT(o.pid, w);
      if (j == 0) {
        CHECK_STR(o.out, "got:hello\nmore\n");
        CHECK(strstr(o.end, "\"exit status 0\"") != NULL);
      } else {
        CHECK(strstr(o.end, k ? "signal: terminated" : "signal: killed") != NULL);
      }
      if (k) {
        g_last = w;
        w = waiting_shell(g_last);
        REQUIRE(w > 0);
      }
    }
  }
}

/* The next shell waits for the command that took the last one to be done
 * (its start-up would take the CPUs from the command's end), but not for
 * a command that runs long: a second command meanwhile still finds one. */
TEST(a_long_command_does_not_hold_back_the_next_shell) {
  int w0 = waiting_shell(g_last);
  REQUIRE(w0 > 0);
  et_conn s;
  et_resp r, u;
  REQUIRE(start_async(&s, CB.port,
                      "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"sleep "
                      "600\"]},\"tag\":\"long\"}") == 0);
  REQUIRE(et_read_head(&s, &r) == 0);
  CHECK_INT(r.status, 200);
  CHECK(waiting_shell2(w0, g_last) > 0); /* while the sleep runs */
  REQUIRE(et_unary(&CB, "process.Process/SendSignal",
                   "{\"process\":{\"tag\":\"long\"},\"signal\":\"SIGNAL_SIGKILL\"}", NULL,
                   &u) == 0);
  CHECK_INT(u.status, 200);
  et_resp_free(&u);
  run_out o;
  REQUIRE(finish_async(&s, &r, &o) == 0);
  CHECK(strstr(o.end, "signal: killed") != NULL);
  g_last = w0;
}

TEST(no_stale_shell) {
  char p[160];
  /* the profile changed by the test while a shell waits */
  int w = waiting_shell(g_last);
  REQUIRE(w > 0);
  snprintf(p, sizeof p, "%s/.profile", home);
  REQUIRE(write_file(p, "export ADDED=1\n", "a") == 0);
  same_not_stale(w, "echo \"$ADDED\"", NULL, "1\n");
  /* ... and by a command (the next shell was started while it ran) */
  w = waiting_shell(g_last);
  REQUIRE(w > 0);
  /* it appends only once the next shell is there (a shell started after
   * the append would have read the new profile: not stale) */
  et_conn s;
  et_resp r;
  run_out b;
  REQUIRE(start_async(&s, B.port,
                      "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"read -r "
                      "go; echo 'export ADDED2=2' >> ~/.profile\"]},\"tag\":\"ap\"}") == 0);
  REQUIRE(et_read_head(&s, &r) == 0);
  int w2 = waiting_shell(w);
  REQUIRE(w2 > 0);
  et_resp u;
  REQUIRE(et_unary(&CB, "process.Process/SendInput",
                   "{\"process\":{\"tag\":\"ap\"},\"input\":{\"stdin\":\"Z28K\"}}", NULL, &u) == 0);
  CHECK_INT(u.status, 200);
  et_resp_free(&u);
  REQUIRE(finish_async(&s, &r, &b) == 0);
  CHECK_INT(b.pid, w);
  CHECK(strstr(b.end, "\"exit status 0\"") != NULL);
  same_not_stale(w2, "echo \"$ADDED2\"", NULL, "2\n");
  /* a file in /etc/profile.d */
  w = waiting_shell(g_last);
  REQUIRE(w > 0);
  snprintf(p, sizeof p, "%s/b.sh", profile_d);
  REQUIRE(write_file(p, "B_SH=b\n", "w") == 0);
  same_not_stale(w, "echo \"$B_SH\"", NULL, "b\n");
  /* a startup file that did not exist: ~/.bash_login is read before .profile */
  w = waiting_shell(g_last);
  REQUIRE(w > 0);
  snprintf(p, sizeof p, "%s/.bash_login", home);
  REQUIRE(write_file(p, "LOGIN=l; . ~/.profile\n", "w") == 0);
  same_not_stale(w, "echo \"$LOGIN$ADDED\"", NULL, "l1\n");
  /* /init's variables */
  w = waiting_shell(g_last);
  REQUIRE(w > 0);
  const char *init = "{\"envVars\":{\"FROM_INIT\":\"i\"}}";
  REQUIRE(et_request(&CA, "POST", "/init", "Content-Type: application/json\r\n", init, strlen(init),
                     &r) == 0);
  et_resp_free(&r);
  REQUIRE(et_request(&CB, "POST", "/init", "Content-Type: application/json\r\n", init, strlen(init),
                     &r) == 0);
  CHECK_INT(r.status, 204);
  et_resp_free(&r);
  same_not_stale(w, "echo \"$FROM_INIT\"", NULL, "i\n");
  /* a cwd of its own: the waiting shell is for /root */
  w = waiting_shell(g_last);
  REQUIRE(w > 0);
  same_not_stale(w, "pwd", ",\"cwd\":\"/\"", "/\n");
  /* the request's envs: the fresh path (the profile sees them) */
  w = waiting_shell(g_last);
  REQUIRE(w > 0);
  same_not_stale(w, "echo $FROM_PROFILE", ",\"envs\":{\"FROM_PROFILE\":\"req\"}", "1\n");
}

/* The temporary tree goes also when the test fails early (the binds and
 * envds go with this process's mount namespace and its exit). */
static void remove_tree(void) {
  if (!T[0]) return;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", T);
  if (system(cmd) != 0) { /* nothing more to do */
  }
}

int main(void) {
  if (geteuid() != 0) {
    printf("SKIP: needs root\n");
    return 77;
  }
  if (access("/bin/bash", X_OK) != 0) {
    printf("SKIP: no /bin/bash\n");
    return 77;
  }
  snprintf(T, sizeof T, "/tmp/asb-prestart-XXXXXX");
  if (!mkdtemp(T)) return 1;
  atexit(remove_tree);
  snprintf(home, sizeof home, "%s/root", T);
  snprintf(profile, sizeof profile, "%s/profile", T);
  snprintf(profile_d, sizeof profile_d, "%s/profile.d", T);
  char p[160];
  snprintf(p, sizeof p, "%s/a.sh", profile_d);
  char rc_path[160];
  snprintf(rc_path, sizeof rc_path, "%s/.profile", home);
  int ok = mkdir(home, 0700) == 0 && mkdir(profile_d, 0755) == 0 &&
           write_file(profile,
                      "export FROM_PROFILE=1\nPROFILE_PWD=$PWD\n"
                      "for i in /etc/profile.d/*.sh; do [ -r \"$i\" ] && . \"$i\"; done\n"
                      "unset i\n",
                      "w") == 0 &&
           write_file(p, "A_SH=a\n", "w") == 0 &&
           write_file(rc_path, "myfn() { echo fn; }\ntrue last-arg\n", "w") == 0;
  /* private mounts: the binds vanish with this process */
  ok = ok && unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
       mount(profile, "/etc/profile", NULL, MS_BIND, NULL) == 0 &&
       mount(profile_d, "/etc/profile.d", NULL, MS_BIND, NULL) == 0 &&
       mount(home, "/root", NULL, MS_BIND, NULL) == 0;
  if (!ok) {
    printf("cannot set up the profile and home (%s)\n", strerror(errno));
    return 1;
  }
  const char *args[] = {"--default-user", "root", NULL};
  setenv("ASB_PRESTART", "0", 1);
  int sa = et_start(&A, args);
  unsetenv("ASB_PRESTART");
  int sb = et_start(&B, args);
  if (sa != 0 || sb != 0) {
    if (sa == 0) et_stop(&A);
    if (sb == 0) et_stop(&B);
    printf("cannot start envd\n");
    return 1;
  }
  CA.fd = CB.fd = -1;
  et_connect(&CA, A.port);
  et_connect(&CB, B.port);
  RUN(same_as_fresh);
  RUN(stdin_and_signals);
  RUN(a_long_command_does_not_hold_back_the_next_shell);
  RUN(no_stale_shell);
  et_close(&CA);
  et_close(&CB);
  CHECK_INT(et_stop(&A), 0);
  CHECK_INT(et_stop(&B), 0);
  umount2("/root", MNT_DETACH);
  umount2("/etc/profile.d", MNT_DETACH);
  umount2("/etc/profile", MNT_DETACH);
  TEST_MAIN_END();
}
