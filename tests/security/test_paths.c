/* security.paths: a sandbox's root cannot point the engine at the host
 * through paths in its own tree, cannot reach the engine's terminal, and sees
 * nothing of the host or of other sandboxes in /proc and /sys. Each test
 * plays the attack from inside a real sandbox (as its root, or as a template
 * build step) against a real engine and checks that it is blocked; each one
 * failed before its fix (issue 10, findings 1, 2, 3, 4, 7, 11, 16, 17, 18).
 * Runs as root; removes what it made on the host also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;
static char BAIT[128]; /* host dir, 0700: sockets and a secret the engine must not reach */
static char WORK[128]; /* template dirs */
static char OPEN[128]; /* host dir (0755) for files an unprivileged uid could write
                           (and OPEN/w, 0777, for ones it could create) */
static int NDIRS;

#define MARKER "HOST-SIDE-MARKER-d41d8cd9"

/* ---- helpers ------------------------------------------------------------------- */

typedef struct run_res {
  int rc, exit_code;
  char out[16384], err[4096];
} run_res;

static run_res sh(asb_sandbox *sb, const char *user, const char *cmd) {
  static run_res r;
  memset(&r, 0, sizeof r);
  asb_command_options o = ASB_COMMAND_OPTIONS_INIT;
  o.user = user;
  o.timeout_ms = 120000;
  asb_command_result *res = NULL;
  r.rc = asb_commands_run(&res, sb, cmd, &o);
  if (res) {
    r.exit_code = asb_command_result_exit_code(res);
    snprintf(r.out, sizeof r.out, "%s", asb_command_result_stdout(res, NULL));
    snprintf(r.err, sizeof r.err, "%s", asb_command_result_stderr(res, NULL));
    asb_command_result_free(res);
  } else {
    r.exit_code = -1000;
    snprintf(r.err, sizeof r.err, "%s", asb_error_last()->message);
  }
  return r;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One request to the engine on a new connection; the reply (head and body)
 * into out. Returns the HTTP status, or -1 if no complete reply came within
 * timeout_ms. */
static int http(const char *method, const char *path, const char *headers, int timeout_ms,
                char *out, size_t cap) {
  out[0] = '\0';
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)F.port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    if (s >= 0) close(s);
    return -1;
  }
  char req[2048];
  int n = snprintf(req, sizeof req,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sConnection: close\r\n\r\n", method,
                   path, F.port, headers);
  if (send(s, req, (size_t)n, MSG_NOSIGNAL) != n) {
    close(s);
    return -1;
  }
  size_t got = 0;
  uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
  int eof = 0;
  while (!eof) {
    uint64_t now = now_ms();
    if (now >= deadline) break;
    struct pollfd p = {s, POLLIN, 0};
    if (poll(&p, 1, (int)(deadline - now)) <= 0) continue;
    ssize_t k = recv(s, out + got, cap - 1 - got, 0);
    if (k <= 0)
      eof = 1;
    else
      got += (size_t)k;
    if (got + 1 >= cap) eof = 1;
  }
  out[got] = '\0';
  close(s);
  int status = 0;
  if (!eof || sscanf(out, "HTTP/1.%*d %d", &status) != 1) return -1;
  return status;
}

/* A listener on the host, in BAIT (0700, root only), counting connections;
 * a stream one answers each with an HTTP reply carrying MARKER. */
typedef struct bait {
  int fd, type;
  atomic_int accepts;
  atomic_int stop;
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
    if (b->type == SOCK_STREAM) {
      static const char reply[] =
          "HTTP/1.1 200 OK\r\nContent-Length: 25\r\nConnection: close\r\n\r\n" MARKER;
      if (send(c, reply, sizeof reply - 1, MSG_NOSIGNAL) < 0) {
      }
    }
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

static asb_sandbox *make(asb_client *c, const char *tmpl) {
  asb_sandbox_options o = ASB_SANDBOX_OPTIONS_INIT;
  o.template_id = tmpl;
  o.timeout_ms = 600000;
  asb_sandbox *sb = NULL;
  if (asb_sandbox_create(&sb, c, &o) != ASB_OK) {
    fprintf(stderr, "create %s: %s\n", tmpl ? tmpl : "(default)", asb_error_last()->message);
    return NULL;
  }
  return sb;
}

static void drop(asb_sandbox *sb) {
  if (!sb) return;
  asb_sandbox_kill(sb, NULL);
  asb_sandbox_free(sb);
}

static int write_file(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  fchmod(fd, mode);
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static char *read_file(const char *path) {
  static char buf[8192];
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return buf;
}

/* A template dir with template.yaml = yaml and (name, content) files. */
static const char *tdir(const char *yaml, const char *const *files) {
  static char dir[256];
  snprintf(dir, sizeof dir, "%s/t%d", WORK, NDIRS++);
  mkdir(dir, 0755);
  char path[512];
  snprintf(path, sizeof path, "%s/template.yaml", dir);
  write_file(path, yaml, 0644);
  for (const char *const *p = files; p && p[0]; p += 2) {
    snprintf(path, sizeof path, "%s/%s", dir, p[0]);
    write_file(path, p[1], 0644);
  }
  return dir;
}

static asb_template *build(asb_client *c, const char *yaml, const char *const *files) {
  asb_template *t = NULL;
  if (asb_templates_build(&t, c, tdir(yaml, files), NULL) != ASB_OK) {
    fprintf(stderr, "build: %s\n", asb_error_last()->message);
    return NULL;
  }
  return t;
}

/* Fields 6 (session) and 7 (tty_nr) of /proc/<pid>/stat, from the host. */
static int proc_session_tty(pid_t pid, long *sid, long *tty) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  char *st = read_file(path);
  char *p = st ? strrchr(st, ')') : NULL;
  return p && sscanf(p + 2, "%*c %*d %*d %ld %ld", sid, tty) == 2 ? 0 : -1;
}

/* The init pid the engine recorded for a sandbox. */
static pid_t init_pid(const engine_fixture *f, const char *id) {
  char path[512];
  snprintf(path, sizeof path, "%s/sandboxes/%s/state", f->state, id);
  char *rec = read_file(path);
  char *p = rec ? strstr(rec, "\npid=") : NULL;
  return p ? (pid_t)atoi(p + 5) : 0;
}

/* ---- finding 1: envd.sock and .exec.sock replaced by links to host sockets ------- */

/* The template's start command (root inside) replaces envd.sock by a
 * symlink to a root-only host socket after the engine's own talk with envd,
 * so the first request through the router connects anew. Before the fix the
 * engine followed the link on the host, and a request carrying nothing but
 * E2b-Sandbox-Id got the host socket's reply. */
TEST(envd_sock_link_to_a_host_socket) {
  bait b;
  REQUIRE(bait_open(&b, "host.sock", SOCK_STREAM) == 0);
  char yaml[1024];
  snprintf(yaml, sizeof yaml,
           "name: sec-envd-link\nbase: base\n"
           "start: {cmd: 'ln -sfn %s /run/asb/.e && mv -f /run/asb/.e /run/asb/envd.sock && "
           "exec sleep 100000', user: root}\n"
           "ready: {cmd: 'test -L /run/asb/envd.sock', timeout: 60}\n",
           b.path);
  asb_template *t = build(C, yaml, NULL);
  asb_sandbox *sb = t ? make(C, "sec-envd-link") : NULL;
  CHECK(sb != NULL);
  if (sb) {
    char hdr[256], out[8192];
    snprintf(hdr, sizeof hdr, "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 49983\r\n",
             asb_sandbox_id(sb));
    int st = http("GET", "/health", hdr, 30000, out, sizeof out);
    CHECK(strstr(out, MARKER) == NULL);
    CHECK_INT(st, 502); /* the agent is unreachable: its socket is not one */
  }
  CHECK_INT(atomic_load(&b.accepts), 0);
  drop(sb);
  asb_template_free(t);
  bait_close(&b);
}

/* .exec.sock replaced by a link to a host seqpacket socket: the engine's
 * next command for the sandbox (here the code interpreter it starts on the
 * first request for port 49999) must not connect there. */
TEST(exec_sock_link_to_a_host_socket) {
  bait b;
  REQUIRE(bait_open(&b, "exec.sock", SOCK_SEQPACKET) == 0);
  asb_sandbox *sb = make(C, NULL);
  if (!sb) {
    bait_close(&b);
    REQUIRE(sb != NULL);
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "ln -sfn %s /run/asb/.x && mv -f /run/asb/.x /run/asb/.exec.sock && echo ok", b.path);
  run_res r = sh(sb, "root", cmd);
  CHECK_STR(r.out, "ok\n");
  char hdr[256], out[8192];
  snprintf(hdr, sizeof hdr, "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 49999\r\n",
           asb_sandbox_id(sb));
  int st = http("GET", "/health", hdr, 60000, out, sizeof out);
  CHECK(st > 0 && st != 502); /* the interpreter still started (setns fallback) */
  CHECK_INT(atomic_load(&b.accepts), 0);
  drop(sb);
  bait_close(&b);
}

/* ---- finding 7: a sandbox listener that never accepts ------------------------------ */

static const char JAM[] =
    "import os, socket, time\n"
    "def jam(family, addr, path=None):\n"
    "    l = socket.socket(family); l.bind(addr); l.listen(0)\n"
    "    held = []\n"
    "    for i in range(4):\n"
    "        c = socket.socket(family); c.setblocking(False)\n"
    "        try: c.connect(addr)\n"
    "        except OSError: pass\n"
    "        held.append(c)\n"
    "    return l, held\n"
    "u = jam(socket.AF_UNIX, '/run/asb/jam.sock')\n"
    "t = jam(socket.AF_INET, ('127.0.0.1', 9555))\n"
    "os.link('/run/asb/jam.sock', '/run/asb/.j'); os.rename('/run/asb/.j', '/run/asb/envd.sock')\n"
    "open('/tmp/jammed', 'w').close()\n"
    "time.sleep(100000)\n";

/* The start command (root inside) puts a listener whose backlog is full in
 * envd.sock's place, and fills the accept queue of a TCP port: before the
 * fix the engine's connect blocked forever, holding a request thread (for
 * TCP, through every SYN retry). Both requests must now end with 502. */
TEST(full_backlog_listeners_do_not_hang_the_engine) {
  const char *files[] = {"jam.py", JAM, NULL};
  asb_template *t = build(C,
                          "name: sec-jam\nbase: base\nsteps:\n"
                          "  - copy: {src: jam.py, dest: /opt/jam.py}\n"
                          "start: {cmd: 'exec python3 /opt/jam.py', user: root}\n"
                          "ready: {cmd: 'test -f /tmp/jammed', timeout: 60}\n",
                          files);
  asb_sandbox *sb = t ? make(C, "sec-jam") : NULL;
  CHECK(sb != NULL);
  if (sb) {
    char hdr[256], out[8192];
    snprintf(hdr, sizeof hdr, "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 49983\r\n",
             asb_sandbox_id(sb));
    CHECK_INT(http("GET", "/health", hdr, 120000, out, sizeof out), 502);
    snprintf(hdr, sizeof hdr, "E2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 9555\r\n",
             asb_sandbox_id(sb));
    CHECK_INT(http("GET", "/", hdr, 120000, out, sizeof out), 502);
  }
  /* and the engine still serves */
  char key[200], out[8192];
  snprintf(key, sizeof key, "X-API-Key: %s\r\n", F.key);
  CHECK_INT(http("GET", "/sandboxes", key, 30000, out, sizeof out), 200);
  drop(sb);
  asb_template_free(t);
}

/* ---- finding 2: agent.log replaced by a link to a host file ------------------------ */

TEST(agent_log_link_to_a_host_file) {
  char secret[256];
  snprintf(secret, sizeof secret, "%s/secret", BAIT);
  REQUIRE(write_file(secret, MARKER "\n", 0600) == 0);
  asb_sandbox *sb = make(C, NULL);
  if (!sb) {
    unlink(secret);
    REQUIRE(sb != NULL);
  }
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "echo line-from-inside-42 > /proc/1/fd/1; rm -f /run/asb/agent.log; "
           "ln -s %s /run/asb/agent.log; echo ok",
           secret);
  run_res r = sh(sb, "root", cmd);
  CHECK_STR(r.out, "ok\n");
  char path[256], key[200], out[65536];
  snprintf(path, sizeof path, "/sandboxes/%s/logs", asb_sandbox_id(sb));
  snprintf(key, sizeof key, "X-API-Key: %s\r\n", F.key);
  int st = http("GET", path, key, 30000, out, sizeof out);
  CHECK_INT(st, 200);
  CHECK(strstr(out, MARKER) == NULL);
  /* the log still works: what the sandbox's init and agent print */
  CHECK(strstr(out, "line-from-inside-42") != NULL);
  snprintf(path, sizeof path, "/v2/sandboxes/%s/logs?limit=1", asb_sandbox_id(sb));
  CHECK_INT(http("GET", path, key, 30000, out, sizeof out), 200);
  CHECK(strstr(out, MARKER) == NULL);
  drop(sb);
  unlink(secret);
}

/* ---- finding 3: commands in the engine's session ----------------------------------- */

static const char TTY_PROBE[] =
    "import os, fcntl, termios\n"
    "st = open('/proc/self/stat').read()\n"
    "f = st[st.rindex(')') + 2:].split()\n"
    "print('probe pid=%d sid=%s tty_nr=%s' % (os.getpid(), f[3], f[4]))\n"
    "try:\n"
    "    fd = os.open('/dev/tty', os.O_RDWR)\n"
    "    for c in b'echo INJECTED\\n':\n"
    "        fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))\n"
    "    print('probe tiocsti worked')\n"
    "except OSError as e:\n"
    "    print('probe tiocsti failed errno', e.errno)\n";

/* The engine runs on a terminal (a pty made here, its controlling terminal).
 * A build step deletes the exec service's socket so the next steps take the
 * engine's setns fallback, then tries TIOCSTI on /dev/tty. Nothing may
 * arrive in the terminal's input, and no process of a sandbox may have a
 * terminal or share the engine's session; the engine itself drops the
 * terminal at start. */
TEST(no_terminal_and_own_session) {
  int master = -1, slave = -1;
  REQUIRE(openpty(&master, &slave, NULL, NULL, NULL) == 0);
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(slave, F_SETFD, FD_CLOEXEC);
  engine_fixture T;
  asb_client *tc = NULL;
  if (engine_fixture_start_ctty(&T, "sectty", slave) != 0 ||
      engine_fixture_client(&T, &tc) != ASB_OK) {
    ASBT_FAIL("cannot start the engine on a terminal");
    engine_fixture_stop(&T);
    close(master);
    close(slave);
    return;
  }
  /* the engine let go of the terminal */
  long sid = 0, tty = -1, esid = 0;
  CHECK(proc_session_tty(T.pid, &esid, &tty) == 0);
  CHECK_INT(tty, 0);
  const char *files[] = {"probe.py", TTY_PROBE, NULL};
  asb_template *t = build(tc,
                          "name: sec-tty\nbase: base\nsteps:\n"
                          "  - copy: {src: probe.py, dest: /opt/probe.py}\n"
                          "  - run: exec python3 /opt/probe.py\n"
                          "  - run: rm -f /run/asb/.exec.sock\n"
                          "  - run: exec python3 /opt/probe.py\n",
                          files);
  CHECK(t != NULL);
  if (t) {
    const char *log = asb_template_build_log(t);
    CHECK(log && strstr(log, "probe tiocsti worked") == NULL);
    CHECK(log && strstr(log, "probe tiocsti failed") != NULL);
    /* both steps: a session of their own (sid = pid), no terminal */
    int probes = 0;
    for (const char *p = log ? strstr(log, "probe pid=") : NULL; p;
         p = strstr(p + 1, "probe pid=")) {
      int pid = 0, psid = -1, ptty = -1;
      if (sscanf(p, "probe pid=%d sid=%d tty_nr=%d", &pid, &psid, &ptty) == 3) {
        CHECK_INT(psid, pid);
        CHECK_INT(ptty, 0);
        probes++;
      }
    }
    CHECK_INT(probes, 2);
    asb_template_free(t);
  }
  int pending = -1;
  CHECK(ioctl(slave, FIONREAD, &pending) == 0);
  CHECK_INT(pending, 0); /* nothing was typed into the engine's terminal */
  /* a sandbox's init is in a session of its own, without a terminal */
  asb_sandbox *sb = make(tc, NULL);
  CHECK(sb != NULL);
  if (sb) {
    pid_t ip = init_pid(&T, asb_sandbox_id(sb));
    CHECK(ip > 0 && proc_session_tty(ip, &sid, &tty) == 0);
    CHECK(sid != esid);
    CHECK_INT(tty, 0);
  }
  drop(sb);
  asb_client_free(tc);
  engine_fixture_stop(&T);
  close(master);
  close(slave);
}

/* ---- finding 4: /etc/hostname and /etc/hosts links in a template ------------------- */

TEST(template_etc_links_to_host_files) {
  char victim[256], created[256], yaml[1024];
  snprintf(victim, sizeof victim, "%s/victim", OPEN);
  snprintf(created, sizeof created, "%s/w/created", OPEN); /* w: 0777 */
  REQUIRE(write_file(victim, "original\n", 0666) == 0);
  snprintf(yaml, sizeof yaml,
           "name: sec-etc\nbase: base\nsteps:\n"
           "  - run: ln -sfn %s /etc/hostname && ln -sfn %s /etc/hosts\n",
           created, victim);
  asb_template *t = build(C, yaml, NULL);
  CHECK(t != NULL);
  asb_sandbox *sb = t ? make(C, "sec-etc") : NULL;
  CHECK(sb != NULL);
  CHECK(access(created, F_OK) != 0);
  char *v = read_file(victim);
  CHECK(v && !strcmp(v, "original\n"));
  if (sb) {
    /* inside, the files are the sandbox's own */
    char want[128];
    snprintf(want, sizeof want, "%s\n", asb_sandbox_id(sb));
    run_res r = sh(sb, "root", "cat /etc/hostname");
    CHECK_STR(r.out, want);
    r = sh(sb, "root", "grep -c \"$(hostname)\" /etc/hosts");
    CHECK_STR(r.out, "1\n");
  }
  drop(sb);
  asb_template_free(t);
}

/* ---- findings 11, 16, 17: what /sys and /proc show ---------------------------------- */

TEST(sys_and_proc_show_no_host_paths_or_other_sandboxes) {
  asb_sandbox *a = make(C, NULL), *b = make(C, NULL);
  REQUIRE(a && b);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "cat /sys/block/*/loop/backing_file /sys/devices/virtual/block/*/loop/backing_file "
           "2>/dev/null; grep -rlsaF -e '%s' -e '%s' /sys /proc/self/mountinfo /proc/1/mountinfo "
           "/proc/cmdline 2>/dev/null; echo end",
           F.state, asb_sandbox_id(b));
  run_res r = sh(a, "root", cmd);
  CHECK_STR(r.out, "end\n");
  if (strcmp(r.out, "end\n")) fprintf(stderr, "seen inside:\n%s\n", r.out);
  /* /proc/cmdline is not the host's, and the usual masked files are empty */
  char host[4096];
  char *hc = read_file("/proc/cmdline");
  snprintf(host, sizeof host, "%s", hc ? hc : "");
  r = sh(a, "root",
         "for f in /proc/cmdline /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug "
         "/proc/partitions /proc/diskstats; do "
         "printf '%s=%s\\n' $f $(head -c 64 $f 2>/dev/null | wc -c); done");
  CHECK_STR(
      r.out,
      "/proc/cmdline=0\n/proc/kcore=0\n/proc/keys=0\n/proc/timer_list=0\n/proc/sched_debug=0\n"
      "/proc/partitions=0\n/proc/diskstats=0\n");
  r = sh(a, "root", "cat /proc/cmdline");
  CHECK(host[0] && strstr(r.out, host) == NULL);
  /* what a sandbox needs from /proc and /sys still works */
  r = sh(a, "user", "nproc >/dev/null && head -1 /proc/meminfo | cut -d: -f1 && ls /sys/class/net");
  CHECK_STR(r.out, "MemTotal\nlo\n");
  /* boot_id is each sandbox's own random UUID (E2B's tests read it), not
   * the host's, and the sandbox cannot change it */
  char hb[64];
  char *hbr = read_file("/proc/sys/kernel/random/boot_id");
  snprintf(hb, sizeof hb, "%s", hbr ? hbr : "");
  run_res ba = sh(a, "root", "cat /proc/sys/kernel/random/boot_id");
  run_res bb = sh(b, "root", "cat /proc/sys/kernel/random/boot_id");
  CHECK_INT((int)strlen(ba.out), 37);
  CHECK(ba.out[14] == '4' && ba.out[8] == '-' && ba.out[36] == '\n');
  CHECK(hb[0] && strcmp(ba.out, hb) != 0);
  CHECK(strcmp(ba.out, bb.out) != 0);
  r = sh(a, "root",
         "echo 00000000-0000-4000-8000-000000000000 > /proc/sys/kernel/random/boot_id; "
         "umount /proc/sys/kernel/random/boot_id 2>/dev/null; "
         "cat /proc/sys/kernel/random/boot_id; ls -a /dev | grep -c boot");
  char want[64];
  snprintf(want, sizeof want, "%s0\n", ba.out);
  CHECK_STR(r.out, want);
  drop(a);
  drop(b);
}

/* ---- sudo: E2B's base has it; ours is envd's, root inside and no more ------------- */

TEST(sudo_is_root_inside_and_nothing_more) {
  asb_sandbox *a = make(C, NULL);
  REQUIRE(a);
  run_res r = sh(a, "user",
                 "sudo id -u; sudo -u user id -un; sudo sh -c 'exit 7'; echo rc=$?; "
                 "echo piped | sudo cat; sudo -i pwd; sudo -s 'echo' shell; "
                 "X=kept sudo -E sh -c 'echo $X'; X=kept sudo sh -c 'echo ${X:-reset}'; "
                 "sudo sh -c 'kill -TERM $$'; echo sig=$?; sudo no-such-cmd 2>/dev/null; "
                 "echo nf=$?; python -c 'print(6 * 7)'");
  CHECK_STR(r.out, "0\nuser\nrc=7\npiped\n/root\nshell\nkept\nreset\nsig=143\nnf=1\n42\n");
  /* the command is root inside only: envd's user namespace, no_new_privs,
   * no mount, no new namespaces, its own session and no terminal */
  r = sh(a, "user",
         "[ \"$(sudo cat /proc/self/uid_map)\" = \"$(cat /proc/self/uid_map)\" ] && echo same-ns; "
         "sudo grep -c '^NoNewPrivs:.1' /proc/self/status; "
         "sudo mount -t tmpfs none /mnt 2>/dev/null || echo no-mount; "
         "sudo unshare -m true 2>/dev/null || echo no-unshare; "
         "sudo sh -c '[ \"$(ps -o sid= -p $$)\" = \"$(ps -o pid= -p $$)\" ] && echo own-session'; "
         "sudo sh -c 'exec 3</dev/tty' 2>/dev/null || echo no-tty");
  CHECK_STR(r.out, "same-ns\n1\nno-mount\nno-unshare\nown-session\nno-tty\n");
  /* who may: root and the group sudo (the base's user), nobody else; junk
   * on the socket changes nothing */
  r = sh(a, "root",
         "setpriv --reuid=65534 --regid=65534 --clear-groups sudo id -u 2>&1; echo rc=$?; "
         "printf 'junk' | python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
         "s.connect(\"/run/asb/sudo.sock\"); s.sendall(sys.stdin.buffer.read()); "
         "s.shutdown(1); print(len(s.recv(16)))'; sudo -u user id -u");
  CHECK(strstr(r.out, "not in the sudoers file") != NULL);
  CHECK(strstr(r.out, "rc=1\n4\n1000\n") != NULL);
  if (!strstr(r.out, "rc=1\n4\n1000\n")) fprintf(stderr, "seen:\n%s\n%s\n", r.out, r.err);
  drop(a);
}

/* ---- finding 18: set-id files in an exported layer ---------------------------------- */

TEST(no_setid_files_in_layers) {
  asb_template *t =
      build(C,
            "name: sec-suid\nbase: base\nsteps:\n"
            "  - run: mkdir -p /opt/s && cp /usr/bin/id /opt/s/suid && chmod 4755 /opt/s/suid"
            " && cp /usr/bin/id /opt/s/sgid && chmod 2755 /opt/s/sgid"
            " && mkdir /opt/s/dir && chmod 2775 /opt/s/dir\n",
            NULL);
  REQUIRE(t != NULL);
  char layer[512];
  snprintf(layer, sizeof layer, "%s/templates/%s/builds/%s/layer/opt/s", F.state,
           asb_template_id(t), asb_template_build_id(t));
  struct stat st;
  char p[640];
  snprintf(p, sizeof p, "%s/suid", layer);
  CHECK(stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0755);
  snprintf(p, sizeof p, "%s/sgid", layer);
  CHECK(stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0755);
  /* a set-gid directory only makes new files inherit its group: kept */
  snprintf(p, sizeof p, "%s/dir", layer);
  CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 02775);
  asb_sandbox *sb = make(C, "sec-suid");
  CHECK(sb != NULL);
  if (sb) {
    run_res r = sh(sb, "user", "/opt/s/suid -u && stat -c %a /opt/s/suid");
    CHECK_STR(r.out, "1000\n755\n");
  }
  drop(sb);
  asb_template_free(t);
}

int main(void) {
  snprintf(BAIT, sizeof BAIT, "/tmp/asb-bait-%d", (int)getpid());
  snprintf(WORK, sizeof WORK, "/tmp/asb-secwork-%d", (int)getpid());
  snprintf(OPEN, sizeof OPEN, "/tmp/asb-sechost-%d", (int)getpid());
  char w[160];
  snprintf(w, sizeof w, "%s/w", OPEN);
  if (mkdir(BAIT, 0700) != 0 || mkdir(WORK, 0700) != 0 || mkdir(OPEN, 0755) != 0 ||
      chmod(OPEN, 0755) != 0 || mkdir(w, 0777) != 0 || chmod(w, 0777) != 0) {
    fprintf(stderr, "cannot make %s, %s or %s\n", BAIT, WORK, OPEN);
    rmdir(BAIT);
    rmdir(WORK);
    rmdir(w);
    rmdir(OPEN);
    return 1;
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", BAIT, WORK, OPEN);
  if (engine_fixture_start(&F, "secpaths") != 0 || engine_fixture_client(&F, &C) != ASB_OK) {
    fprintf(stderr, "cannot start the engine\n");
    engine_fixture_stop(&F);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s, %s, %s\n", BAIT, WORK, OPEN);
    return 1;
  }
  RUN(envd_sock_link_to_a_host_socket);
  RUN(exec_sock_link_to_a_host_socket);
  RUN(agent_log_link_to_a_host_file);
  RUN(no_terminal_and_own_session);
  RUN(template_etc_links_to_host_files);
  RUN(sys_and_proc_show_no_host_paths_or_other_sandboxes);
  RUN(no_setid_files_in_layers);
  RUN(sudo_is_root_inside_and_nothing_more);
  RUN(full_backlog_listeners_do_not_hang_the_engine);
  asb_client_free(C);
  engine_fixture_stop(&F);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s, %s, %s\n", BAIT, WORK, OPEN);
  TEST_MAIN_END();
}
