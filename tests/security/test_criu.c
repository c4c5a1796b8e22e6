/* security.criu: an adversarial review of --pause-criu. criu dumps a
 * hostile sandbox's processes as root and restores them as root; each test
 * plays one attack from inside the sandbox (its root, in its own user and
 * mount namespaces) and checks that the host, the engine's state dir and
 * the checkpoint stay out of its reach:
 * - ghost files: a deleted-but-open file is recreated by criu at restore,
 *   as root, at its dumped path; a sandbox that replaces the file's dir by
 *   a symlink (absolute or relative) to a host dir must not get a file
 *   made there (criu resolves that path in its own mount namespace, the
 *   host's): the engine refuses such a checkpoint (the sandbox runs on);
 * - a plain ghost (a setuid file of the sandbox's root, deleted, held
 *   open) is restored as the sandbox's own (its host uid, never host
 *   root's), and no ghost is left in its tree;
 * - the images: root's, 0700, no group or other access while paused; no
 *   restored process holds an fd, cwd or root of the state dir;
 * - a deleted unix socket bound through such a symlink: criu binds it
 *   again in the sandbox's own mount namespace (nothing on the host);
 * - its own mounts and namespaces: it can make none (no CAP_SYS_ADMIN,
 *   seccomp), and a restored process keeps its capabilities, ids,
 *   no_new_privs and seccomp filter;
 * - a process the sandbox keeps ptrace-stopped makes the dump fail or
 *   succeed, never hang: the pause answers and the sandbox works;
 * - its user namespace's owner, and so whose inotify count its instances
 *   take: the slot uid's when booted and once restored (our criu's
 *   --userns-owner, which the engine gives the slot uid), never host
 *   root's.
 * Skips (77, saying why) only when no criu binary is found: $ASB_CRIU,
 * else /var/cache/agent-sandbox/criu/bin/criu. Runs as root; the engine
 * fixture cleans up also when a check fails.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/inotify.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "criu_fixture.h"

static engine_fixture F;
static asb_client *C;

static long sbx_post(const char *id, const char *action, const char *json) {
  return engine_sandbox_post(&F, id, action, json, 300);
}

static char *run_root(asb_sandbox *sb, const char *cmd) {
  return asbt_run_as(sb, "root", cmd);
}

/* Starts cmd as the sandbox's root and waits until it has written
 * /tmp/ready: what it wrote (malloc'd), or NULL. */
static char *start_ready(asb_sandbox *sb, const char *cmd) {
  if (criu_fixture_spawn(sb, "root", cmd) != ASB_OK) {
    fprintf(stderr, "start: %s\n", asb_error_last()->message);
    return NULL;
  }
  return asbt_wait_file(sb, "/tmp/ready", 0);
}

/* A python3 holder: body (python, os, time and socket imported), then
 * its pid to /tmp/ready, then it sleeps on. */
#define HOLDER(body)                                  \
  "python3 -c \"import os, time, socket\n" body       \
  "open('/tmp/ready', 'w').write(str(os.getpid()))\n" \
  "while True: time.sleep(0.2)\""

/* The host pid of the sandbox's process whose pid inside is `inner` (its
 * uid in the sandbox's range), or 0. */
static pid_t host_pid(unsigned long base, long inner) {
  DIR *d = opendir("/proc");
  pid_t found = 0;
  for (int pid; !found && (pid = asbt_next_uid_pid(d, base));) {
    char p[64], line[512];
    snprintf(p, sizeof p, "/proc/%d/status", pid);
    FILE *f = fopen(p, "r");
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "NSpid:", 6)) {
        char *last = strrchr(line, '\t');
        if (last && atol(last + 1) == inner) found = (pid_t)pid;
      }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return found;
}

/* The link at p, "p -> target" in out, if its target starts with prefix. */
static void link_names(const char *p, const char *prefix, char *out, size_t len) {
  char l[PATH_MAX];
  ssize_t n = readlink(p, l, sizeof l - 1);
  if (n > 0 && (l[n] = 0, !strncmp(l, prefix, strlen(prefix))))
    snprintf(out, len, "%s -> %s", p, l);
}

/* fds, cwd, root and exe links of every process in the sandbox's range
 * that name `prefix`: the first one in out ("" if none). */
static void links_to(unsigned long base, const char *prefix, char *out, size_t len) {
  out[0] = 0;
  DIR *d = opendir("/proc");
  for (int pid; !out[0] && (pid = asbt_next_uid_pid(d, base));) {
    char p[300];
    static const char *const one[] = {"cwd", "root", "exe"};
    for (size_t i = 0; i < 3 && !out[0]; i++) {
      snprintf(p, sizeof p, "/proc/%d/%s", pid, one[i]);
      link_names(p, prefix, out, len);
    }
    snprintf(p, sizeof p, "/proc/%d/fd", pid);
    DIR *fd = opendir(p);
    struct dirent *fe;
    while (fd && !out[0] && (fe = readdir(fd))) {
      char q[600];
      snprintf(q, sizeof q, "%s/%s", p, fe->d_name);
      link_names(q, prefix, out, len);
    }
    if (fd) closedir(fd);
  }
  if (d) closedir(d);
}

/* From *fd on (below 64), the next fd of host process hp that is a
 * regular file of `size` bytes: 1 (*fd it, *fs its stat), 0 if none. */
static int next_held(pid_t hp, int *fd, off_t size, struct stat *fs) {
  for (char p[64]; *fd < 64; ++*fd) {
    snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)hp, *fd);
    if (stat(p, fs) == 0 && S_ISREG(fs->st_mode) && fs->st_size == size) return 1;
  }
  return 0;
}

/* The pause of a sandbox that plays an attack: it answers (204, taken,
 * then resumed; or 500, refused: the sandbox runs on), never hangs. */
static long pause_answers(const char *what, const char *id) {
  long st = sbx_post(id, "pause", "{}");
  fprintf(stderr, "%s: pause answered %ld\n", what, st);
  CHECK(st == 204 || st == 500);
  if (st == 204) CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  return st;
}

/* The sandbox still runs commands (as root). */
static void still_works(asb_sandbox *sb) {
  char *ok = run_root(sb, "echo ok");
  CHECK_STR(ok, "ok\n");
  free(ok);
}

/* Attack: the held file's dir, after its unlink, a symlink to a host dir
 * (`target`, absolute or relative): criu would make the ghost there (as
 * the sandbox's root: a dir anyone may write to takes it). The pause must not create anything in
 * the host dir: it is refused (the sandbox runs on) or, if it is taken, the restore makes no file
 * there and the process's fd is not of the host dir. */
static void ghost_symlink(const char *what, int relative, int sock) {
  char host[] = "/tmp/asb-criusec-XXXXXX";
  REQUIRE(mkdtemp(host) != NULL);
  /* a dir anyone may write to, as the host's /tmp, /var/tmp, /dev/shm are:
   * criu makes the ghost as the sandbox's root (its host uid) */
  chmod(host, 01777);
  struct stat hs;
  REQUIRE(stat(host, &hs) == 0);
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(in >= 0);
  REQUIRE(inotify_add_watch(in, host, IN_CREATE | IN_MOVED_TO) >= 0);
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  char target[200];
  if (relative)
    snprintf(target, sizeof target, "../../../../../../../../../../../../..%s", host);
  else
    snprintf(target, sizeof target, "%s", host);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           HOLDER("os.makedirs('/tmp/d', exist_ok=True)\n"
                  "%s"
                  "os.unlink('/tmp/d/f'); os.rmdir('/tmp/d'); os.symlink('%s', '/tmp/d')\n"),
           sock ? "f = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); f.bind('/tmp/d/f'); "
                  "f.listen(1)\n"
                : "f = open('/tmp/d/f', 'w'); f.write('x' * 100); f.flush()\n"
                  "os.chmod('/tmp/d/f', 0o4755)\n",
           target);
  char *ready = start_ready(sb, cmd);
  REQUIRE(ready != NULL);
  unsigned long base = criu_fixture_host_uid(&F, id);
  long st = pause_answers(what, id);
  char ev[4096];
  ssize_t n = read(in, ev, sizeof ev);
  if (n > 0) {
    const struct inotify_event *e = (const void *)ev;
    fprintf(stderr, "%s: made in the host dir %s: %s\n", what, host, e->len ? e->name : "?");
  }
  CHECK(n <= 0); /* nothing made in the host's dir */
  pid_t hp = host_pid(base, atol(ready));
  if (st == 500) CHECK(hp > 0); /* refused: the holder runs on */
  struct stat fs;
  for (int fd = 0; hp > 0 && next_held(hp, &fd, 100, &fs); fd++)
    CHECK(fs.st_dev != hs.st_dev); /* not a file of the host's dir */
  still_works(sb);
  free(ready);
  close(in);
  DIR *d = opendir(host);
  struct dirent *de;
  char p[400];
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, ".."))) {
      snprintf(p, sizeof p, "%s/%s", host, de->d_name);
      unlink(p);
      rmdir(p);
    }
  if (d) closedir(d);
  rmdir(host);
  asbt_kill(sb);
}

TEST(ghost_through_an_absolute_symlink_lands_nowhere_on_the_host) {
  ghost_symlink("absolute", 0, 0);
}

TEST(ghost_through_a_relative_symlink_lands_nowhere_on_the_host) {
  ghost_symlink("relative", 1, 0);
}

/* The same with a unix socket bound to that path, then unlinked: criu
 * binds it again at restore. */
TEST(deleted_socket_through_a_symlink_lands_nowhere_on_the_host) {
  ghost_symlink("socket", 0, 1);
}

/* A plain ghost: a setuid file of the sandbox's root, deleted and held
 * open (and one whose dir is gone too: criu makes it in the parent; and a
 * deleted, mapped file of /dev/shm, as a POSIX semaphore is: no reason to
 * refuse either). Restored, the held file is the sandbox's (its host uid), never
 * host root's; no ghost is left in its tree. The images while paused are
 * root's with no group or other access; no restored process holds
 * anything of the state dir. */
TEST(ghost_is_the_sandboxs_own_and_images_out_of_reach) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  char *ready = start_ready(
      sb, HOLDER("f = open('/tmp/g', 'w'); f.write('y' * 100); f.flush()\n"
                 "os.chmod('/tmp/g', 0o4755); os.unlink('/tmp/g')\n"
                 "os.makedirs('/tmp/gone'); h = open('/tmp/gone/h', 'w')\n"
                 "os.unlink('/tmp/gone/h'); os.rmdir('/tmp/gone')\n"
                 "import mmap\n"
                 "try:\n"
                 "  s = os.open('/dev/shm/sem.x', os.O_CREAT | os.O_RDWR, 0o600)\n"
                 "  os.ftruncate(s, 4096); m = mmap.mmap(s, 4096); os.close(s)\n"
                 "  os.unlink('/dev/shm/sem.x'); m[0] = 7; open('/tmp/shm', 'w').write('mapped')\n"
                 "except OSError: pass\n"));
  REQUIRE(ready != NULL);
  unsigned long base = criu_fixture_host_uid(&F, id);
  REQUIRE(base > 0);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  char ck[300], p[700];
  snprintf(ck, sizeof ck, "%s/sandboxes/%s/checkpoint", F.state, id);
  struct stat cs;
  CHECK(stat(ck, &cs) == 0 && cs.st_uid == 0 && (cs.st_mode & 077) == 0);
  DIR *d = opendir(ck);
  struct dirent *de;
  int files = 0;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", ck, de->d_name);
    struct stat fs;
    CHECK(lstat(p, &fs) == 0 && fs.st_uid == 0 && !(fs.st_mode & 022));
    files++;
  }
  if (d) closedir(d);
  CHECK(files > 3);
  /* the group read the restore gives them (to the sandbox's gid) reaches
   * nothing: on the way to them a dir no "other" (the sandbox's uids) may
   * search, root's */
  int closed = 0;
  const char *const way[] = {"", "/sandboxes", "/sandboxes/"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s%s%s", F.state, way[i], i == 2 ? id : "");
    struct stat ws;
    if (stat(p, &ws) == 0 && ws.st_uid == 0 && !(ws.st_mode & 0001) &&
        (ws.st_gid == 0 || !(ws.st_mode & 0010)))
      closed = 1;
  }
  CHECK(closed);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  char *shm = run_root(sb, "cat /tmp/shm 2>/dev/null; echo");
  fprintf(stderr, "a deleted /dev/shm file: %s", shm[1] ? shm : "none (no /dev/shm)\n");
  free(shm);
  pid_t hp = host_pid(base, atol(ready));
  CHECK(hp > 0);
  int held = 0;
  struct stat fs;
  for (int fd = 0; hp > 0 && next_held(hp, &fd, 100, &fs); fd++) {
    held = 1;
    fprintf(stderr, "ghost restored: uid %u mode %o\n", (unsigned)fs.st_uid,
            (unsigned)fs.st_mode & 07777);
    CHECK(fs.st_uid == base); /* the sandbox's root, not the host's */
    CHECK(fs.st_nlink == 0);  /* deleted again */
  }
  CHECK(held);
  /* its user namespace: criu makes it again as the slot uid
   * (--userns-owner), so the slot uid owns it, as a booted one (the kernel
   * charges its per-user counts to the owner at the host level; see
   * restored_user_namespace_is_the_slot_uids_and_so_its_counts) */
  if (hp > 0) {
    snprintf(p, sizeof p, "/proc/%d/ns/user", (int)hp);
    int ns = open(p, O_RDONLY | O_CLOEXEC);
    uid_t owner = (uid_t)-1;
    if (ns >= 0 && ioctl(ns, NS_GET_OWNER_UID, &owner) == 0)
      fprintf(stderr, "restored user namespace owned by host uid %u (the slot's: %lu)\n",
              (unsigned)owner, base);
    CHECK(owner == (uid_t)base);
    if (ns >= 0) close(ns);
  }
  char *left = run_root(sb, "ls -a /tmp | grep -c 'ghost\\|link_remap' || true");
  CHECK_STR(left, "0\n");
  free(left);
  char found[PATH_MAX + 400];
  links_to(base, F.state, found, sizeof found);
  if (found[0]) fprintf(stderr, "restored process holds %s\n", found);
  CHECK(!found[0]);
  free(ready);
  asbt_kill(sb);
}

/* What a process of the sandbox's status says of its privileges (its
 * capability sets, no_new_privs, seccomp mode and filters). */
static void privs(pid_t pid, char *out, size_t len) {
  char p[64], line[256];
  snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
  FILE *f = fopen(p, "r");
  size_t o = 0;
  out[0] = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Cap", 3) || !strncmp(line, "NoNewPrivs", 10) ||
        !strncmp(line, "Seccomp", 7) || !strncmp(line, "Uid", 3) || !strncmp(line, "Gid", 3))
      o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s", line);
  if (f) fclose(f);
}

/* Mounts and namespaces of its own: the sandbox's root has no
 * CAP_SYS_ADMIN and its seccomp filter refuses unshare, so it has none to
 * give criu (a tmpfs, a bind over /proc, a nested user namespace). A
 * restore must not lift that: a process's capabilities, no_new_privs,
 * seccomp filter and ids are the same after it, and mount and unshare
 * still fail. */
TEST(restore_keeps_its_privileges_and_filter) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  const char *try_ =
      "mkdir -p /mnt/t; mount -t tmpfs none /mnt/t 2>/dev/null; echo mount $?; "
      "unshare -Urm true 2>/dev/null; echo unshare $?";
  char *m = run_root(sb, try_);
  CHECK_STR(m, "mount 32\nunshare 1\n");
  free(m);
  char *ready = start_ready(sb, HOLDER(""));
  REQUIRE(ready != NULL);
  unsigned long base = criu_fixture_host_uid(&F, id);
  pid_t hp = host_pid(base, atol(ready));
  REQUIRE(hp > 0);
  char before[2048], after[2048];
  privs(hp, before, sizeof before);
  CHECK(strstr(before, "Seccomp:\t2") != NULL);
  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  hp = host_pid(base, atol(ready));
  CHECK(hp > 0);
  if (hp > 0) {
    privs(hp, after, sizeof after);
    CHECK_STR(after, before);
  }
  m = run_root(sb, try_);
  CHECK_STR(m, "mount 32\nunshare 1\n");
  free(m);
  free(ready);
  asbt_kill(sb);
}

/* A process the sandbox keeps traced and stopped (a child that asked to
 * be traced): the pause answers (criu cannot seize a traced task: the
 * dump fails and the sandbox runs on, or it is taken), never hangs. */
TEST(ptraced_process_does_not_hang_the_pause) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  char *ready = start_ready(sb,
                            "python3 -c \"import os, time, signal, ctypes\n"
                            "libc = ctypes.CDLL(None, use_errno=True)\n"
                            "pid = os.fork()\n"
                            "if pid == 0:\n"
                            "  libc.ptrace(0, 0, 0, 0); os.kill(os.getpid(), signal.SIGSTOP)\n"
                            "  while True: time.sleep(1)\n"
                            "os.waitpid(pid, os.WUNTRACED)\n"
                            "open('/tmp/ready', 'w').write(str(pid))\n"
                            "while True: time.sleep(0.2)\"");
  REQUIRE(ready != NULL);
  pause_answers("traced", id);
  still_works(sb);
  free(ready);
  asbt_kill(sb);
}

/* ---- the restored user namespace's owner ------------------------------- */

/* How many inotify instances a host process of `uid` may still open (the
 * kernel's count for that uid at the host level, against
 * fs.inotify.max_user_instances): a child that takes that uid alone opens
 * them until EMFILE, then exits (they go with it). -1 on a failure, -2 if
 * the fd limit, not the count, stopped it. */
static long inotify_room(uid_t uid) {
  int pfd[2];
  if (pipe(pfd) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    long n = -1;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 && setresuid(uid, uid, uid) == 0) {
      n = 0;
      while (n < 100000 && inotify_init1(IN_CLOEXEC) >= 0) n++;
      if (errno != EMFILE)
        n = -1;
      else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)n + 16 >= rl.rlim_cur)
        n = -2;
    }
    ssize_t w = write(pfd[1], &n, sizeof n);
    _exit(w == (ssize_t)sizeof n ? 0 : 1);
  }
  close(pfd[1]);
  long n = -1;
  if (pid < 0 || read(pfd[0], &n, sizeof n) != (ssize_t)sizeof n) n = -1;
  close(pfd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return n;
}

/* The owner (host uid) of host process hp's user namespace, or -1. */
static long ns_owner(pid_t hp) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/ns/user", (int)hp);
  int ns = open(p, O_RDONLY | O_CLOEXEC);
  uid_t owner = (uid_t)-1;
  long r = ns >= 0 && ioctl(ns, NS_GET_OWNER_UID, &owner) == 0 ? (long)owner : -1;
  if (ns >= 0) close(ns);
  return r;
}

/* Host process hp's cgroups (every hierarchy, the host's view) into out
 * ("" if unreadable). */
static void cgroup_of(pid_t hp, char *out, size_t len) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/cgroup", (int)hp);
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, out, len - 1) : -1;
  out[n > 0 ? n : 0] = 0;
  if (fd >= 0) close(fd);
}

/* Who pays for the restored sandbox's per-user counts. The kernel charges
 * what a user namespace's users hold (inotify instances here) to its
 * owner at the host level too, against that uid's limit (128 instances
 * here): a booted sandbox's namespace is owned by its slot's host uid, so
 * its instances are that uid's (measured: a host process of the slot uid
 * has 8 fewer while the sandbox holds 8). Stock criu made the namespace
 * again as root, so a restored sandbox's instances were host root's (a
 * denial of service of host root's inotify, not played: it would take the
 * shared host's root). Our criu takes the slot uid as its euid for that
 * clone (--userns-owner, scripts/criu/restore-userns-owner.patch): the
 * restored namespace is the slot uid's again, and the 8 its process still
 * holds come back to the slot uid's room when it closes them. A fork (a
 * restore into a slot of its own) is owned by the fork's slot uid. */
TEST(restored_user_namespace_is_the_slot_uids_and_so_its_counts) {
  char id[64];
  asb_sandbox *sb = criu_fixture_sandbox(C, id, 0, 0);
  REQUIRE(sb != NULL);
  uid_t base = (uid_t)criu_fixture_host_uid(&F, id);
  REQUIRE(base > 0);
  long n0 = inotify_room(base);
  CHECK_RC(criu_fixture_spawn(sb, NULL,
                              "python3 -c \"import ctypes, os, time\n"
                              "libc = ctypes.CDLL(None, use_errno=True)\n"
                              "fds = [libc.inotify_init1(0) for i in range(8)]\n"
                              "assert min(fds) >= 0\n"
                              "open('/tmp/held.new', 'w').write(str(os.getpid()))\n"
                              "os.rename('/tmp/held.new', '/tmp/held')\n"
                              "while not os.path.exists('/tmp/release'): time.sleep(0.05)\n"
                              "for f in fds: os.close(f)\n"
                              "open('/tmp/released', 'w').write('1')\n"
                              "while True: time.sleep(1)\""),
           ASB_OK);
  char *held = asbt_wait_file(sb, "/tmp/held", 0);
  REQUIRE(held != NULL);
  pid_t hp = host_pid(base, atol(held));
  CHECK(hp > 0);
  long n1 = inotify_room(base);
  fprintf(stderr, "booted: namespace owner %ld (slot %u); slot uid's room %ld, %ld with 8 held\n",
          hp > 0 ? ns_owner(hp) : -1, (unsigned)base, n0, n1);
  CHECK(n0 > 8 && n1 >= 0);
  CHECK_INT(n0 - n1, 8); /* the slot uid's */
  if (hp > 0) CHECK_INT(ns_owner(hp), (long)base);
  char cg0[2048], cg1[2048];
  cgroup_of(hp, cg0, sizeof cg0);
  fprintf(stderr, "booted: cgroups %s", cg0);
  CHECK(strstr(cg0, id) != NULL); /* the sandbox's own */

  CHECK_INT(sbx_post(id, "pause", "{}"), 204);
  CHECK_INT(sbx_post(id, "connect", "{\"timeout\": 300}"), 201);
  hp = host_pid(base, atol(held));
  CHECK(hp > 0); /* the same process, restored with its 8 */
  long n2 = inotify_room(base);
  /* criu still puts it back into its cgroup (--userns-owner changes only
   * who owns the namespace) */
  cgroup_of(hp, cg1, sizeof cg1);
  CHECK_STR(cg1, cg0);
  CHECK_RC(asb_files_write(NULL, sb, "/tmp/release", "", 0, NULL), ASB_OK);
  char *released = asbt_wait_file(sb, "/tmp/released", 0);
  CHECK(released != NULL);
  long n3 = inotify_room(base);
  long owner = hp > 0 ? ns_owner(hp) : -1;
  fprintf(stderr,
          "restored: namespace owner %ld; slot uid's room %ld with the 8 held, %ld closed\n", owner,
          n2, n3);
  CHECK(n2 >= 0 && n3 >= 0);
  CHECK_INT(owner, (long)base); /* the slot uid's, as booted: not host root's */
  CHECK_INT(n3 - n2, 8);        /* so the 8 it held were the slot uid's */

  /* a fork is a restore of the same images into a slot of its own: its
   * namespace is the fork's slot uid's (not the parent's, not root's) */
  char p[128], fid[64], *b = NULL;
  snprintf(p, sizeof p, "/sandboxes/%s/fork", id);
  CHECK_INT(engine_api(&F, "POST", p, "{}", &b), 201);
  const char *k = b ? strstr(b, "\"sandboxID\":\"") : NULL;
  snprintf(fid, sizeof fid, "%.*s", k ? (int)strcspn(k + 13, "\"") : 0, k ? k + 13 : "");
  free(b);
  uid_t fbase = fid[0] ? (uid_t)criu_fixture_host_uid(&F, fid) : 0;
  CHECK(fbase > 0 && fbase != base);
  pid_t fp = fbase > 0 ? host_pid(fbase, atol(held)) : 0;
  CHECK(fp > 0); /* the held process, in the fork */
  long fowner = fp > 0 ? ns_owner(fp) : -1;
  fprintf(stderr, "fork: namespace owner %ld (its slot %u)\n", fowner, (unsigned)fbase);
  CHECK_INT(fowner, (long)fbase);
  if (fid[0]) {
    snprintf(p, sizeof p, "/sandboxes/%s", fid);
    CHECK_INT(engine_api(&F, "DELETE", p, NULL, NULL), 204);
  }
  free(held);
  free(released);
  asbt_kill(sb);
}

int main(void) {
  int rc = criu_fixture_start(&F, &C, "security.criu", "sec-criu");
  if (rc) return rc;
  RUN(ghost_through_an_absolute_symlink_lands_nowhere_on_the_host);
  RUN(ghost_through_a_relative_symlink_lands_nowhere_on_the_host);
  RUN(deleted_socket_through_a_symlink_lands_nowhere_on_the_host);
  RUN(ghost_is_the_sandboxs_own_and_images_out_of_reach);
  RUN(restore_keeps_its_privileges_and_filter);
  RUN(ptraced_process_does_not_hang_the_pause);
  RUN(restored_user_namespace_is_the_slot_uids_and_so_its_counts);
  criu_fixture_stop(&F, C);
  TEST_MAIN_END();
}
