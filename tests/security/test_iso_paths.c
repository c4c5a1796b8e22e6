/* security.iso: the isolation runtime never follows a path a sandbox (or a
 * template layer) controls with plain path resolution, bounds its connects
 * to sockets a sandbox controls, and starts every sandbox process in a
 * session of its own. Uses the runtime's API directly (asbe_*) with the
 * stand-in agent, so each attack is played exactly once, deterministically.
 * Runs as root; removes what it made on the host also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "testing.h"

static asbt_env env;
static char BAIT[128]; /* host dir for sockets and files the runtime must not reach */
static char OPEN[128]; /* host dir (0755) for files an unprivileged uid could write
                          (and OPEN/w, 0777, for ones it could create) */

typedef struct bait {
  int fd, type;
  atomic_int accepts, stop;
  pthread_t t;
  char path[256];
} bait;

static void *bait_loop(void *arg) {
  bait *b = arg;
  while (!atomic_load(&b->stop)) {
    struct pollfd p = {b->fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue; /* only to notice stop */
    int c = accept4(b->fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    atomic_fetch_add(&b->accepts, 1);
    close(c);
  }
  return NULL;
}

static int bait_open(bait *b, const char *name, int type) {
  memset(b, 0, sizeof *b);
  b->type = type;
  snprintf(b->path, sizeof b->path, "%s/%s", BAIT, name);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", b->path);
  b->fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  unlink(b->path);
  if (b->fd < 0 || bind(b->fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(b->path, 0600) != 0 ||
      listen(b->fd, 64) != 0 || pthread_create(&b->t, NULL, bait_loop, b) != 0) {
    if (b->fd >= 0) close(b->fd);
    b->fd = -1;
    return -1;
  }
  return 0;
}

static void bait_close(bait *b) {
  if (b->fd < 0) return;
  atomic_store(&b->stop, 1);
  pthread_join(b->t, NULL);
  close(b->fd);
  unlink(b->path);
  b->fd = -1;
}

static int write_file(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  fchmod(fd, mode);
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int dir_entries(const char *path) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", path);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}

/* Fields 6 (session) and 7 (tty_nr) of /proc/<pid>/stat. */
static int proc_session_tty(pid_t pid, long *sid, long *tty) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  return p && sscanf(p + 2, "%*c %*d %*d %ld %ld", sid, tty) == 2 ? 0 : -1;
}

/* ---- sockets of /run/asb -------------------------------------------------------- */

TEST(envd_sock_link_to_a_host_socket) {
  bait b;
  REQUIRE(bait_open(&b, "host.sock", SOCK_STREAM) == 0);
  asbe_sandbox *sb = asbt_create(&env, "iso-link", env.base);
  if (!sb || asbt_wait_agent(sb, ASBT_DEADLINE_MS) != 0) {
    ASBT_FAIL("create");
    bait_close(&b);
    if (sb) asbe_sandbox_kill(sb, 1), asbe_sandbox_release(sb);
    return;
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ln -sfn %s /run/asb/.e && mv -f /run/asb/.e /run/asb/envd.sock",
           b.path);
  CHECK_INT(asbt_sh(sb, 0, cmd, NULL), 0);
  int fd = asbe_sandbox_connect_unix(sb, "envd.sock");
  CHECK(fd < 0);
  if (fd >= 0) close(fd);
  /* .exec.sock too: commands still run (the setns fallback), but never
   * through the host socket */
  bait x;
  REQUIRE(bait_open(&x, "exec.sock", SOCK_SEQPACKET) == 0);
  snprintf(cmd, sizeof cmd, "ln -sfn %s /run/asb/.x && mv -f /run/asb/.x /run/asb/.exec.sock",
           x.path);
  CHECK_INT(asbt_sh(sb, 0, cmd, NULL), 0);
  CHECK(asbt_sh_eq(sb, 0, "echo still-runs", "still-runs"));
  CHECK_INT(atomic_load(&x.accepts), 0);
  /* stats (the disk of /run/asb) still work */
  asbe_stats st;
  CHECK(asbe_sandbox_stats(sb, &st) == 0 && st.disk_total_bytes > 0);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
  CHECK_INT(atomic_load(&b.accepts), 0);
  bait_close(&b);
  bait_close(&x);
}

typedef struct connect_job {
  asbe_sandbox *sb;
  int fd;
  atomic_int done;
} connect_job;

static void *connect_thread(void *arg) {
  connect_job *j = arg;
  j->fd = asbe_sandbox_connect_unix(j->sb, "envd.sock");
  atomic_store(&j->done, 1);
  return NULL;
}

/* envd.sock replaced by a listener whose backlog is full: the connect must
 * give up (it blocked forever before). */
TEST(connect_to_a_full_backlog_ends) {
  asbe_sandbox *sb = asbt_create(&env, "iso-jam", env.base);
  REQUIRE(sb != NULL);
  static const char jam[] =
      "setsid python3 -c '\n"
      "import os, socket, time\n"
      "j = socket.socket(socket.AF_UNIX); j.bind(\"/run/asb/jam.sock\"); j.listen(0)\n"
      "held = []\n"
      "for i in range(4):\n"
      "    c = socket.socket(socket.AF_UNIX); c.setblocking(False)\n"
      "    try: c.connect(\"/run/asb/jam.sock\")\n"
      "    except OSError: pass\n"
      "    held.append(c)\n"
      "os.link(\"/run/asb/jam.sock\", \"/run/asb/.j\"); os.rename(\"/run/asb/.j\", "
      "\"/run/asb/envd.sock\")\n"
      "print(\"jammed\", flush=True)\n"
      "time.sleep(100000)\n"
      "' </dev/null >/tmp/jam.out 2>&1 &\n"
      "while ! grep -q jammed /tmp/jam.out 2>/dev/null; do sleep 0.05; done; echo jammed";
  CHECK(asbt_sh_eq(sb, 0, jam, "jammed"));
  connect_job j = {sb, -1, 0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, connect_thread, &j) == 0);
  for (int waited = 0; !atomic_load(&j.done) && waited < 120000; waited += 20) asbt_sleep_ms(20);
  CHECK(atomic_load(&j.done));
  /* killing the sandbox ends a connect still blocked (the unfixed case) */
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  pthread_join(t, NULL);
  CHECK(j.fd < 0);
  if (j.fd >= 0) close(j.fd);
  asbe_sandbox_release(sb);
}

/* ---- the agent log -------------------------------------------------------------- */

static int log_has(asbe_sandbox *sb, const char *text) {
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

/* The agent log is no file of the sandbox's tree, survives an engine
 * restart (adopt takes it back from the init), and what the sandbox makes of
 * /run/asb/agent.log does not matter. */
TEST(agent_log_is_held_by_fd_across_adopt) {
  asbe_sandbox *sb = asbt_create(&env, "iso-log", env.base);
  REQUIRE(sb != NULL);
  CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(log_has(sb, "listening"));
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "ln -sfn %s/secret /run/asb/agent.log && echo before-restart > /proc/1/fd/1", BAIT);
  CHECK_INT(asbt_sh(sb, 0, cmd, NULL), 0);
  CHECK(log_has(sb, "before-restart"));
  asbe_sandbox_release(sb);
  asbt_close_engine(&env);
  REQUIRE(asbt_open_engine(&env) == 0);
  sb = NULL;
  REQUIRE(asbe_sandbox_adopt(env.e, "iso-log", &sb) == 0);
  CHECK(log_has(sb, "before-restart"));
  CHECK_INT(asbt_sh(sb, 0, "echo after-restart > /proc/1/fd/2", NULL), 0);
  CHECK(log_has(sb, "after-restart"));
  CHECK(!log_has(sb, "HOST-SECRET"));
  /* the recorded writable layer still tells the sandbox's socket */
  CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  CHECK(asbe_sandbox_agent_log(sb) < 0); /* gone with the sandbox */
  asbe_sandbox_release(sb);
}

/* ---- sessions -------------------------------------------------------------------- */

TEST(every_sandbox_process_has_its_own_session) {
  asbe_sandbox *sb = asbt_create(&env, "iso-sess", env.base);
  REQUIRE(sb != NULL);
  long me = getsid(0), sid = 0, tty = -1;
  CHECK(proc_session_tty(asbe_sandbox_pid(sb), &sid, &tty) == 0);
  CHECK(sid != me);
  CHECK_INT(tty, 0);
  /* the setns fallback (no exec service) */
  CHECK_INT(asbt_sh(sb, 0, "rm -f /run/asb/.exec.sock", NULL), 0);
  const char *argv[] = {"/bin/sleep", "60", NULL};
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
  asbe_proc *p = NULL;
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  pid_t pid = asbe_proc_pid(p);
  CHECK(pid > 0 && proc_session_tty(pid, &sid, &tty) == 0);
  CHECK_INT(sid, pid);
  CHECK_INT(tty, 0);
  asbe_proc_signal(p, 9);
  asbe_proc_wait(p, -1, NULL);
  asbe_proc_free(p);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
}

/* ---- template layers with links ------------------------------------------------- */

/* A layer (as a template build exports one) whose /etc/hostname and
 * /etc/hosts, /etc itself, or /run are links to host paths: creating a
 * sandbox from it must change nothing on the host. */
TEST(template_layer_links_stay_inside) {
  char layer[PATH_MAX], p[PATH_MAX], victim[PATH_MAX], created[PATH_MAX], etcdir[PATH_MAX],
      rundir[PATH_MAX];
  snprintf(victim, sizeof victim, "%s/victim", OPEN);
  snprintf(created, sizeof created, "%s/w/created", OPEN); /* w: 0777 */
  snprintf(etcdir, sizeof etcdir, "%s/etc", OPEN);
  snprintf(rundir, sizeof rundir, "%s/run", OPEN);
  REQUIRE(write_file(victim, "original\n", 0666) == 0);
  mkdir(etcdir, 0777);
  chmod(etcdir, 0777);
  mkdir(rundir, 0777);
  chmod(rundir, 0777);
  /* 1: the files */
  snprintf(layer, sizeof layer, "%s/layer-files", env.root);
  snprintf(p, sizeof p, "%s/etc", layer);
  CHECK(mkdir(layer, 0755) == 0 && mkdir(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/etc/hostname", layer);
  CHECK(symlink(created, p) == 0);
  snprintf(p, sizeof p, "%s/etc/hosts", layer);
  CHECK(symlink(victim, p) == 0);
  asbe_template *t = asbe_template_copy(env.busybox);
  REQUIRE(t && asbe_template_add_layer(t, layer) == 0);
  asbe_sandbox *sb = asbt_create(&env, "iso-etc1", t);
  CHECK(sb != NULL);
  CHECK(access(created, F_OK) != 0);
  FILE *f = fopen(victim, "r");
  char line[64] = "";
  if (f) {
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
  }
  CHECK_STR(line, "original\n");
  if (sb) {
    CHECK(asbt_sh_eq(sb, 0, "cat /etc/hostname", "iso-etc1"));
    CHECK(asbt_sh_eq(sb, 0, "grep -c iso-etc1 /etc/hosts", "1"));
    CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
    asbe_sandbox_release(sb);
  }
  asbe_template_free(t);
  /* 2: /etc a link to a host dir */
  snprintf(layer, sizeof layer, "%s/layer-etc", env.root);
  CHECK(mkdir(layer, 0755) == 0);
  snprintf(p, sizeof p, "%s/etc", layer);
  CHECK(symlink(etcdir, p) == 0);
  t = asbe_template_copy(env.busybox);
  REQUIRE(t && asbe_template_add_layer(t, layer) == 0);
  sb = asbt_create(&env, "iso-etc2", t);
  if (sb) {
    asbe_sandbox_kill(sb, 1);
    asbe_sandbox_release(sb);
  }
  CHECK_INT(dir_entries(etcdir), 0);
  asbe_template_free(t);
  /* 3: /run a link to a host dir (a mount point of the sandbox) */
  snprintf(layer, sizeof layer, "%s/layer-run", env.root);
  CHECK(mkdir(layer, 0755) == 0);
  snprintf(p, sizeof p, "%s/run", layer);
  CHECK(symlink(rundir, p) == 0);
  t = asbe_template_copy(env.busybox);
  REQUIRE(t && asbe_template_add_layer(t, layer) == 0);
  asbe_sandbox_spec s;
  asbt_spec(&s, "iso-run", t);
  sb = NULL;
  int rc = asbe_sandbox_create(env.e, &s, &sb);
  if (rc == 0) {
    asbe_sandbox_kill(sb, 1);
    asbe_sandbox_release(sb);
  } else {
    /* refused, saying why */
    if (!strstr(asbe_errmsg(), "/run")) ASBT_FAIL("refused without saying why: %s", asbe_errmsg());
  }
  CHECK_INT(dir_entries(rundir), 0);
  asbe_template_free(t);
}

int main(void) {
  snprintf(BAIT, sizeof BAIT, "/tmp/asb-isobait-%d", (int)getpid());
  snprintf(OPEN, sizeof OPEN, "/tmp/asb-isohost-%d", (int)getpid());
  if (mkdir(BAIT, 0700) != 0) return 1;
  char w[160];
  snprintf(w, sizeof w, "%s/w", OPEN);
  if (mkdir(OPEN, 0755) != 0 || chmod(OPEN, 0755) != 0 || mkdir(w, 0777) != 0 ||
      chmod(w, 0777) != 0) {
    rmdir(BAIT);
    rmdir(w);
    rmdir(OPEN);
    return 1;
  }
  if (asbt_setup(&env, 1) < 0) {
    rmdir(BAIT);
    rmdir(w);
    rmdir(OPEN);
    return 1;
  }
  char secret[200];
  snprintf(secret, sizeof secret, "%s/secret", BAIT);
  write_file(secret, "HOST-SECRET\n", 0600);
  RUN(envd_sock_link_to_a_host_socket);
  RUN(agent_log_is_held_by_fd_across_adopt);
  RUN(every_sandbox_process_has_its_own_session);
  RUN(template_layer_links_stay_inside);
  RUN(connect_to_a_full_backlog_ends);
  asbt_teardown(&env);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", BAIT, OPEN);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s, %s\n", BAIT, OPEN);
  TEST_MAIN_END();
}
