/* engine.sandbox: sandboxes from base and busybox, checked from inside:
 * identity, namespaces, filesystem view, the agent, exec and sockets.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "testing.h"

static asbt_env env;

TEST(base_identity_and_namespaces) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-base", env.base);
  REQUIRE(sb != NULL);
  uid_t hu = asbe_sandbox_host_uid(sb);
  CHECK(hu >= 100000);
  CHECK_INT((hu - 100000) % 65536, 0);
  /* uid 0 inside is host_uid outside */
  char want[64];
  snprintf(want, sizeof want, "0 %u 65536", (unsigned)hu);
  CHECK(asbt_sh_eq(sb, 0, "id -u; id -un", "0\nroot"));
  CHECK(asbt_sh_eq(sb, 0, "tr -s ' ' < /proc/self/uid_map | sed 's/^ //'", want));
  struct stat st;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d", (int)asbe_sandbox_pid(sb));
  CHECK(stat(path, &st) == 0 && st.st_uid == hu);
  /* hostname = id */
  CHECK(asbt_sh_eq(sb, 0, "hostname; cat /etc/hostname", "sbx-base\nsbx-base"));
  CHECK(asbt_sh_eq(sb, 0, "grep -c sbx-base /etc/hosts", "1"));
  /* pid 1 is asb-init; only the sandbox's processes are visible */
  CHECK(asbt_sh_eq(sb, 0, "tr '\\0' ' ' < /proc/1/cmdline | cut -d' ' -f1", "asb-init"));
  char *out = NULL;
  CHECK_INT(asbt_sh(sb, 0, "ls -d /proc/[0-9]* | wc -l", &out), 0);
  /* init, exec service, agent, sh, ls, wc (+2 slack); the host has 100+ */
  CHECK(out && atoi(out) <= 8);
  free(out);
  /* only loopback, and it is up */
  CHECK(asbt_sh_eq(sb, 0, "ls /sys/class/net", "lo"));
  CHECK(asbt_sh_eq(sb, 0, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", "lo"));
  CHECK(asbt_sh_eq(sb, 0, "cat /sys/class/net/lo/operstate", "unknown"));
  CHECK(asbt_sh_eq(
      sb, 0,
      "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print('ok')\"",
      "ok"));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

TEST(base_filesystem_view) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-fs", env.base);
  REQUIRE(sb != NULL);
  /* bash, python3 and node from the host's /usr run */
  CHECK(asbt_sh_eq(sb, 0, "bash -c 'echo ${BASH_VERSINFO[0]} | grep -c .'", "1"));
  CHECK(asbt_sh_eq(sb, 0, "python3 -c 'print(6*7)'", "42"));
  if (access("/usr/bin/node", X_OK) == 0)
    CHECK(asbt_sh_eq(sb, 1000, "node -e 'console.log(6*7)'", "42"));
  else
    printf("  note: no /usr/bin/node on this host, node not checked\n");
  CHECK(asbt_sh_eq(sb, 0, "awk 'BEGIN{print 1+1}'", "2"));
  /* /usr read-only, agent dir read-only */
  char *out = NULL;
  CHECK(asbt_sh(sb, 0, "touch /usr/x", &out) != 0);
  CHECK(out && strstr(out, "Read-only file system"));
  free(out);
  CHECK(asbt_sh(sb, 0, "touch /.asb/x", NULL) != 0);
  CHECK(asbt_sh(sb, 0, "touch /sys/x", NULL) != 0);
  /* host files are not visible */
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd,
           "test ! -e '%s' && test ! -e /var/lib/dpkg && test ! -e /work && "
           "test ! -e /etc/machine-id && test ! -e /root/.pyenv && echo hidden",
           env.state);
  CHECK(asbt_sh_eq(sb, 0, cmd, "hidden"));
  CHECK(asbt_sh_eq(sb, 0, "ls /home", "user"));
  /* accounts: root and user */
  CHECK(
      asbt_sh_eq(sb, 1000, "id -u; id -un; echo $HOME; pwd", "1000\nuser\n/home/user\n/home/user"));
  CHECK(asbt_sh_eq(sb, 0, "getent passwd user | cut -d: -f6,7", "/home/user:/bin/bash"));
  CHECK(asbt_sh_eq(sb, 0, "stat -c '%U %a' /home/user /root /tmp /var/tmp",
                   "user 755\nroot 700\nroot 1777\nroot 1777"));
  /* writes land on the writable layer, owned by root/user inside and by the
   * shifted uids on the host */
  CHECK(asbt_sh_eq(sb, 1000, "echo hi > ~/f && cat ~/f && stat -c %U ~/f", "hi\nuser"));
  CHECK(asbt_sh_eq(sb, 0, "echo x > /etc/newfile && echo y > /tmp/t && cat /etc/newfile", "x"));
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/root/home/user/f", (int)asbe_sandbox_pid(sb));
  struct stat st;
  CHECK(stat(path, &st) == 0 && st.st_uid == asbe_sandbox_host_uid(sb) + 1000);
  /* /dev: the basics, a PTY, shm; no tty (no process here has a host
   * terminal, and /dev/tty would be the opener's) */
  CHECK(asbt_sh_eq(sb, 1000, "ls /dev | tr '\\n' ' '",
                   "fd full null ptmx pts random shm stderr stdin stdout urandom zero "));
  CHECK(
      asbt_sh_eq(sb, 1000, "head -c 4 /dev/zero | wc -c; echo x > /dev/null && echo ok", "4\nok"));
  CHECK(asbt_sh_eq(sb, 1000, "python3 -c 'import os,pty; m,s=pty.openpty(); print(os.ttyname(s))'",
                   "/dev/pts/0"));
  CHECK(asbt_sh_eq(sb, 1000, "echo s > /dev/shm/x && cat /dev/shm/x", "s"));
  CHECK(asbt_sh_eq(sb, 0, "test -d /proc/self/fd && echo ok", "ok"));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

/* 1 if the agent log of sb contains text. */
static int agent_log_has(asbe_sandbox *sb, const char *text) {
  int fd = asbe_sandbox_agent_log(sb);
  if (fd < 0) return 0;
  char buf[65536];
  size_t got = 0;
  for (ssize_t n; got + 1 < sizeof buf && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0;)
    got += (size_t)n;
  close(fd);
  buf[got] = '\0';
  return strstr(buf, text) != NULL;
}

TEST(agent_and_sockets) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-agent", env.base);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  char buf[512];
  CHECK(asbt_agent(sb, "uid", buf, sizeof buf) == 0 && !strcmp(buf, "0"));
  CHECK(asbt_agent(sb, "hostname", buf, sizeof buf) == 0 && !strcmp(buf, "sbx-agent"));
  CHECK(asbt_agent(sb, "env ASB_SANDBOX_ID", buf, sizeof buf) == 0 && !strcmp(buf, "sbx-agent"));
  CHECK(asbt_agent(sb, "env ASB_RUN_DIR", buf, sizeof buf) == 0 && !strcmp(buf, "/run/asb"));
  CHECK(asbt_agent(sb, "env ASB_WORKLOAD_CGROUPS", buf, sizeof buf) == 0 &&
        !strcmp(buf, asbe_engine_workload_cgroups(env.e)));
  /* the agent's cgroup is "agent", the cgroup namespace root is the sandbox */
  CHECK(asbt_agent(sb, "cgroup", buf, sizeof buf) == 0 && strstr(buf, ":memory:/agent"));
  /* its log goes to the agent log, which no path inside names */
  CHECK(agent_log_has(sb, "asbt-agent") && agent_log_has(sb, "listening"));
  CHECK(asbt_sh_eq(sb, 0, "ls /run/asb/agent.log 2>/dev/null | wc -l", "0"));
  CHECK(asbe_sandbox_connect_unix(sb, "../x") < 0);
  CHECK(asbe_sandbox_connect_unix(sb, "nosuch.sock") < 0);
  /* TCP into the sandbox's netns: the agent listens on 127.0.0.1:8080 */
  int s = asbe_sandbox_connect_tcp(sb, 8080);
  CHECK(s >= 0);
  if (s >= 0) {
    CHECK(write(s, "ping\n", 5) == 5);
    size_t got = 0;
    for (ssize_t n; got < 5 && (n = read(s, buf + got, sizeof buf - 1 - got)) > 0;)
      got += (size_t)n;
    buf[got] = '\0';
    CHECK_STR(buf, "pong\n");
    close(s);
  }
  CHECK_INT(asbe_sandbox_connect_tcp(sb, 8081), -ECONNREFUSED);
  /* an agent crash is not a sandbox crash: asb-init restarts it */
  char pid1[32], pid2[32];
  CHECK(asbt_agent(sb, "pid", pid1, sizeof pid1) == 0);
  CHECK(asbt_agent(sb, "exit 3", buf, sizeof buf) == 0);
  CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(asbt_agent(sb, "pid", pid2, sizeof pid2) == 0 && strcmp(pid1, pid2) != 0);
  CHECK(asbe_sandbox_alive(sb));
  CHECK(agent_log_has(sb, "agent exited with 3"));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

TEST(busybox_sandbox) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-bb", env.busybox);
  REQUIRE(sb != NULL);
  CHECK(asbt_sh_eq(sb, 0, "id -u; hostname", "0\nsbx-bb"));
  CHECK(asbt_sh_eq(sb, 1000, "id -un; echo $HOME", "user\n/home/user"));
  CHECK(asbt_sh_eq(sb, 0, "test ! -e /usr/lib/x86_64-linux-gnu && test ! -e /lib64 && echo bare",
                   "bare"));
  CHECK(asbt_sh_eq(sb, 0, "cat /proc/1/comm", "asb-init"));
  CHECK(asbt_sh_eq(sb, 0, "ls /sys/class/net", "lo"));
  /* the dynamically linked agent runs from /.asb */
  CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(asbt_sh_eq(sb, 0, "ls /.asb/lib | grep -c ld-linux", "1"));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

TEST(exec_options) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-exec", env.busybox);
  REQUIRE(sb != NULL);
  /* stdin, exit code, cwd, environment */
  const char *cat[] = {"cat", NULL};
  char *out = NULL, *err = NULL;
  int st = asbe_sandbox_run(sb, cat, 1000, "hello\n", &out, &err, 1024, 30000);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK_STR(out, "hello\n");
  free(out);
  free(err);
  const char *fail[] = {"sh", "-c", "echo oops >&2; exit 7", NULL};
  st = asbe_sandbox_run(sb, fail, 0, NULL, &out, &err, 1024, 30000);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
  CHECK_STR(err, "oops\n");
  free(out);
  free(err);
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  const char *pwd[] = {"sh", "-c", "pwd; echo $FOO", NULL};
  const char *envp[] = {"PATH=/bin", "FOO=bar", NULL};
  o.argv = pwd;
  o.envp = envp;
  o.cwd = "/tmp";
  o.pipes = ASBE_PIPE_STDOUT;
  o.stdin_fd = o.stderr_fd = -1;
  asbe_proc *p = NULL;
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  char buf[256] = "";
  size_t got = 0;
  for (ssize_t n; (n = read(asbe_proc_stdout(p), buf + got, sizeof buf - 1 - got)) > 0;)
    got += (size_t)n;
  buf[got] = '\0';
  CHECK_STR(buf, "/tmp\nbar\n");
  CHECK(asbe_proc_wait(p, 30000, &st) == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  asbe_proc_free(p);
  /* a missing program or cwd fails at exec time with ENOENT */
  const char *nope[] = {"no-such-program", NULL};
  o.argv = nope;
  o.envp = NULL;
  CHECK_INT(asbe_sandbox_exec(sb, &o, &p), -ENOENT);
  o.argv = pwd;
  o.cwd = "/no/such/dir";
  CHECK_INT(asbe_sandbox_exec(sb, &o, &p), -ENOENT);
  /* signals and timeouts */
  const char *slp[] = {"sleep", "60", NULL};
  o.argv = slp;
  o.cwd = NULL;
  o.pipes = 0;
  o.stdout_fd = -1;
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  CHECK_INT(asbe_proc_wait(p, 50, &st), -ETIMEDOUT);
  CHECK_INT(asbe_proc_signal(p, SIGKILL), 0);
  CHECK(asbe_proc_wait(p, 30000, &st) == 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  asbe_proc_free(p);
  st = asbe_sandbox_run(sb, slp, 0, NULL, NULL, NULL, 0, 200);
  CHECK_INT(st, -ETIMEDOUT);
  /* a process left running when its handle is freed is reaped by the sandbox */
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  asbe_proc_free(p);
  int children = asbt_count_children();
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  CHECK(asbt_count_children() < children);
  asbe_sandbox_release(sb);
}

TEST(exec_service_and_fallback) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-svc", env.busybox);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  /* wait for the exec service, then commands are its children */
  char sock[128];
  snprintf(sock, sizeof sock, "/proc/%d/root/run/asb/.exec.sock", (int)asbe_sandbox_pid(sb));
  WAIT_UNTIL(access(sock, F_OK) == 0, ASBT_DEADLINE_MS);
  CHECK(access(sock, F_OK) == 0);
  const char *check =
      "grep -E '^(PPid|NoNewPrivs|Seccomp|CapBnd):' /proc/$$/status | tr '\\t' ' ';"
      "grep -E ':(memory|pids):' /proc/$$/cgroup | cut -d: -f3";
  char *out = NULL;
  CHECK_INT(asbt_sh(sb, 0, check, &out), 0);
  CHECK(out && !strstr(out, "PPid: 0\n")); /* forked inside the sandbox */
  CHECK(out && strstr(out, "NoNewPrivs: 1\nSeccomp: 2\n/workload\n/workload"));
  char *svc = out;
  /* without the service (socket gone) exec still works, through setns */
  CHECK_INT(asbt_sh(sb, 0, "rm /run/asb/.exec.sock", NULL), 0);
  CHECK_INT(asbt_sh(sb, 0, check, &out), 0);
  CHECK(out && strstr(out, "PPid: 0\n")); /* a child of the engine */
  /* the same confinement either way */
  CHECK(out &&
        strstr(out, "CapBnd: 00000000800425fb\nNoNewPrivs: 1\nSeccomp: 2\n/workload\n/workload"));
  CHECK(svc && strstr(svc, "CapBnd: 00000000800425fb"));
  free(out);
  free(svc);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

TEST(tmpfs_and_layers) {
  /* a second layer on top of busybox */
  char top[PATH_MAX];
  snprintf(top, sizeof top, "%s/top-layer", env.root);
  REQUIRE(mkdir(top, 0755) == 0);
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/etc", top);
  REQUIRE(mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/etc/motd", top);
  FILE *f = fopen(p, "w");
  REQUIRE(f != NULL);
  fputs("from the top layer\n", f);
  fclose(f);
  asbe_template *t = asbe_template_new();
  char bbroot[PATH_MAX];
  snprintf(bbroot, sizeof bbroot, "%s/tmpl-busybox/rootfs", env.root);
  REQUIRE(asbe_template_add_layer(t, bbroot) == 0);
  REQUIRE(asbe_template_add_layer(t, top) == 0);
  asbe_sandbox_spec s;
  asbt_spec(&s, "sbx-tmpfs", t);
  s.disk_tmpfs = 1;
  s.disk_bytes = 32ull << 20;
  asbe_sandbox *sb = NULL;
  CHECK(asbe_sandbox_create(env.e, &s, &sb) == 0);
  if (sb) {
    CHECK(asbt_sh_eq(sb, 0, "cat /etc/motd; stat -c %U /etc/motd", "from the top layer\nroot"));
    CHECK(asbt_sh_eq(sb, 0, "test -x /bin/busybox && echo ok", "ok"));
    CHECK(asbt_sh_eq(sb, 0, "df -k / | tail -1 | awk '{print ($2 <= 32768)}'", "1"));
    CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
    CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
    asbe_sandbox_release(sb);
  }
  asbe_template_free(t);
}

/* The engine is multi-threaded: other threads starting and ending while
 * sandboxes are cloned must not trip the child (glibc's per-thread state is
 * stale in a raw clone). */
static volatile int churn_stop;
static void *churn_one(void *arg) {
  return arg;
}
static void *churn(void *arg) {
  (void)arg;
  while (!churn_stop) {
    pthread_t t;
    if (pthread_create(&t, NULL, churn_one, NULL) == 0) pthread_join(t, NULL);
  }
  return NULL;
}

TEST(create_while_threads_come_and_go) {
  pthread_t th;
  churn_stop = 0;
  REQUIRE(pthread_create(&th, NULL, churn, NULL) == 0);
  for (int i = 0; i < 15; i++) {
    char id[32];
    snprintf(id, sizeof id, "sbx-churn-%d", i);
    asbe_sandbox *sb = asbt_create(&env, id, env.busybox);
    CHECK(sb != NULL);
    if (!sb) continue;
    if (i % 5 == 0) CHECK(asbt_sh_eq(sb, 1000, "id -u", "1000"));
    CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
    asbe_sandbox_release(sb);
  }
  churn_stop = 1;
  pthread_join(th, NULL);
}

TEST(create_is_transactional) {
  /* the disk pool refills after the last test's creates; its images hold
   * fds: count once it is full, not while it fills */
  WAIT_UNTIL(asbt_pool_settled(&env), ASBT_DEADLINE_MS);
  CHECK(asbt_pool_settled(&env));
  int fds = asbt_count_fds(), mounts = asbt_count_mounts(), cgs = asbt_count_cgroups(&env);
  int loops = asbt_count_loops(&env), kids = asbt_count_children();
  asbe_sandbox *sb = NULL;
  asbe_sandbox_spec s;
  asbt_spec(&s, "bad id!", env.busybox);
  CHECK_INT(asbe_sandbox_create(env.e, &s, &sb), -EINVAL);
  /* a layer that vanished after the template was made: fails after clone */
  char gone[PATH_MAX];
  snprintf(gone, sizeof gone, "%s/gone-layer", env.root);
  REQUIRE(mkdir(gone, 0755) == 0);
  asbe_template *t = asbe_template_new();
  REQUIRE(asbe_template_add_layer(t, gone) == 0);
  rmdir(gone);
  asbt_spec(&s, "sbx-bad", t);
  int r = asbe_sandbox_create(env.e, &s, &sb);
  CHECK(r < 0 && sb == NULL);
  CHECK(strstr(asbe_errmsg(), "gone-layer") != NULL);
  asbe_template_free(t);
  /* an agent dir binary that cannot run: the sandbox still starts (init) */
  /* a duplicate id fails and leaves the first one alone */
  asbe_sandbox *a = asbt_create(&env, "sbx-dup", env.busybox);
  REQUIRE(a != NULL);
  asbt_spec(&s, "sbx-dup", env.busybox);
  CHECK_INT(asbe_sandbox_create(env.e, &s, &sb), -EEXIST);
  CHECK(asbt_sh_eq(a, 0, "echo alive", "alive"));
  CHECK_INT(asbe_sandbox_kill(a, 1), 0);
  asbe_sandbox_release(a);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/sandboxes/sbx-bad", env.state);
  CHECK(access(dir, F_OK) < 0);
  WAIT_UNTIL(asbt_pool_settled(&env) && asbt_count_fds() == fds, ASBT_DEADLINE_MS);
  CHECK_INT(asbt_count_fds(), fds);
  CHECK_INT(asbt_count_mounts(), mounts);
  CHECK_INT(asbt_count_cgroups(&env), cgs);
  CHECK_INT(asbt_count_loops(&env), loops);
  CHECK_INT(asbt_count_children(), kids);
}

/* A base template prepared by an older engine (stamp v1: no sudo, no
 * python) is rebuilt at the next prepare; the old tree is kept aside (a
 * running sandbox may have it mounted), not removed. */
TEST(old_base_is_rebuilt) {
  char dir[] = "/tmp/asbt-oldbase-XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL);
  char p[512], cmd[600];
  snprintf(p, sizeof p, "%s/rootfs", dir);
  REQUIRE(mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/rootfs/marker", dir);
  FILE *f = fopen(p, "w");
  REQUIRE(f != NULL);
  fclose(f);
  snprintf(p, sizeof p, "%s/rootfs.stamp", dir);
  f = fopen(p, "w");
  REQUIRE(f != NULL);
  fputs("asb base template v1\n", f);
  fclose(f);
  CHECK_INT(asbe_template_prepare_base(dir), 0);
  char stamp[64] = "";
  f = fopen(p, "r");
  if (f) {
    if (!fgets(stamp, sizeof stamp, f)) stamp[0] = 0;
    fclose(f);
  }
  CHECK_STR(stamp, "asb base template v5\n");
  snprintf(p, sizeof p, "%s/rootfs/opt/agent-sandbox/bin/sudo", dir);
  struct stat st;
  CHECK(lstat(p, &st) == 0);
  /* glibc resolves *.localhost (sandbox to sandbox URLs) through
   * nss-myhostname, before DNS (absent with --no-network) */
  {
    char np[PATH_MAX], text[1024];
    snprintf(np, sizeof np, "%s/rootfs/etc/nsswitch.conf", dir);
    CHECK(asbt_read_text(np, text, sizeof text) >= 0);
    CHECK(strstr(text, "\nhosts:          files myhostname dns\n") != NULL);
  }
  /* the homes' ~/.bash_logout runs no clear_console (a process per `exit`) */
  if (access("/etc/skel/.bash_logout", F_OK) == 0) {
    static const char *const homes[] = {"root", "home/user"};
    for (int i = 0; i < 2; i++) {
      char lp[PATH_MAX], text[4096];
      snprintf(lp, sizeof lp, "%s/rootfs/%s/.bash_logout", dir, homes[i]);
      CHECK(asbt_read_text(lp, text, sizeof text) >= 0);
      CHECK(strstr(text, "bash_logout") != NULL);
      CHECK(strstr(text, "clear_console") == NULL);
    }
  }
  snprintf(p, sizeof p, "%s/rootfs/marker", dir);
  CHECK(lstat(p, &st) != 0);
  snprintf(p, sizeof p, "%s/rootfs.v1.%d/marker", dir, (int)getpid());
  CHECK(lstat(p, &st) == 0);
  CHECK_INT(asbe_template_prepare_base(dir), 0); /* current: nothing to do */
  snprintf(p, sizeof p, "%s/rootfs/opt/agent-sandbox/bin/sudo", dir);
  CHECK(lstat(p, &st) == 0);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK_INT(system(cmd), 0);
}

int main(void) {
  if (asbt_setup(&env, 2) < 0) return 1;
  RUN(old_base_is_rebuilt);
  RUN(base_identity_and_namespaces);
  RUN(base_filesystem_view);
  RUN(agent_and_sockets);
  RUN(busybox_sandbox);
  RUN(exec_options);
  RUN(exec_service_and_fallback);
  RUN(tmpfs_and_layers);
  RUN(create_while_threads_come_and_go);
  RUN(create_is_transactional);
  asbt_teardown(&env);
  TEST_MAIN_END();
}
