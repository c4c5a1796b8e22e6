/* engine.lifecycle: freeze/thaw, kill leaves nothing, create/kill cycles
 * leak nothing, adopt (after forgetting the handle and after kill -9 of the
 * engine), the reaper, SIGTERM to the init, kept state.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common.h"
#include "testing.h"

static asbt_env env;

static long read_counter(asbe_sandbox *sb) {
  char p[128], buf[32] = "";
  snprintf(p, sizeof p, "/proc/%d/root/tmp/c", (int)asbe_sandbox_pid(sb));
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
  fclose(f);
  return atol(buf);
}

static int slot_claimed(uint32_t slot) {
  char p[128];
  snprintf(p, sizeof p, "/run/agent-sandbox/slots/%u", slot);
  return access(p, F_OK) == 0;
}

TEST(freeze_and_thaw) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-freeze", env.base);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  const char *argv[] = {"sh", "-c",
                        "i=0; while :; do i=$((i+1)); echo $i > /tmp/c; sleep 0.01; done", NULL};
  o.argv = argv;
  o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
  asbe_proc *p = NULL;
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  WAIT_UNTIL(read_counter(sb) >= 3, ASBT_DEADLINE_MS);
  CHECK(read_counter(sb) >= 3);
  CHECK_INT(asbe_sandbox_freeze(sb), 0);
  asbe_stats st;
  CHECK(asbe_sandbox_stats(sb, &st) == 0 && st.frozen == 1);
  long a = read_counter(sb);
  asbt_sleep_ms(300);
  CHECK_INT(read_counter(sb), a);
  /* the agent is paused too: no answer while frozen; exec is refused */
  char buf[64];
  int s = asbe_sandbox_connect_unix(sb, "envd.sock");
  CHECK(s >= 0);
  if (s >= 0) {
    struct timeval tv = {0, 300000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    CHECK(write(s, "ping\n", 5) == 5);
    CHECK(read(s, buf, sizeof buf) < 0);
    close(s);
  }
  asbe_proc *q = NULL;
  CHECK_INT(asbe_sandbox_exec(sb, &o, &q), -EAGAIN);
  CHECK_INT(asbe_sandbox_thaw(sb), 0);
  CHECK(asbe_sandbox_stats(sb, &st) == 0 && st.frozen == 0);
  WAIT_UNTIL(read_counter(sb) > a, ASBT_DEADLINE_MS);
  CHECK(read_counter(sb) > a);
  CHECK(asbt_agent(sb, "ping", buf, sizeof buf) == 0 && !strcmp(buf, "pong"));
  /* a frozen sandbox can be killed without thawing it first */
  CHECK_INT(asbe_sandbox_freeze(sb), 0);
  asbe_proc_free(p);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  CHECK(!asbe_sandbox_alive(sb));
  asbe_sandbox_release(sb);
}

TEST(kill_leaves_nothing) {
  int mounts = asbt_count_mounts(), cgs = asbt_count_cgroups(&env), kids = asbt_count_children();
  asbe_sandbox *sb = asbt_create(&env, "sbx-kill", env.base);
  REQUIRE(sb != NULL);
  uid_t hu = asbe_sandbox_host_uid(sb);
  uint32_t slot = asbe_sandbox_slot(sb);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", asbe_sandbox_dir(sb));
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  /* some processes, including one the engine does not wait for */
  asbe_exec_opts o;
  memset(&o, 0, sizeof o);
  const char *argv[] = {"sh", "-c", "sleep 1000 & sleep 1000 & sleep 1000", NULL};
  o.argv = argv;
  o.uid = 1000;
  o.stdin_fd = o.stdout_fd = o.stderr_fd = -1;
  asbe_proc *p = NULL;
  REQUIRE(asbe_sandbox_exec(sb, &o, &p) == 0);
  CHECK(asbt_sh_eq(sb, 1000, "dd if=/dev/zero of=~/f bs=1M count=4 2>/dev/null; echo ok", "ok"));
  CHECK(asbt_uid_procs(hu) >= 4);
  CHECK_INT(asbt_count_loops(&env), 1);
  CHECK(asbt_count_cgroups(&env) > cgs);
  CHECK(slot_claimed(slot));
  CHECK_INT(asbt_count_mounts(), mounts); /* never a host mount */
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  CHECK_INT(asbe_proc_wait(p, ASBT_DEADLINE_MS, NULL), 0);
  asbe_proc_free(p);
  CHECK_INT(asbt_uid_procs(hu), 0);
  CHECK_INT(asbt_count_mounts(), mounts);
  CHECK_INT(asbt_count_loops(&env), 0);
  CHECK_INT(asbt_count_cgroups(&env), cgs);
  CHECK_INT(asbt_count_children(), kids);
  CHECK(access(dir, F_OK) < 0);
  CHECK(!slot_claimed(slot));
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0); /* idempotent */
  asbe_sandbox_release(sb);
}

TEST(create_kill_cycles_leak_nothing) {
  /* warm up (pool, golden image, lazily made loop devices) */
  asbe_sandbox *sb = asbt_create(&env, "sbx-warm", env.busybox);
  REQUIRE(sb != NULL);
  asbe_sandbox_kill(sb, 1);
  asbe_sandbox_release(sb);
  /* Count once the pool has refilled (its images hold fds), not after a
   * while: on a slow machine the refill outlasts any fixed pause. */
  WAIT_UNTIL(asbt_pool_settled(&env), ASBT_DEADLINE_MS);
  CHECK(asbt_pool_settled(&env));
  int fds = asbt_count_fds(), mounts = asbt_count_mounts(), cgs = asbt_count_cgroups(&env);
  int kids = asbt_count_children(), loops = asbt_count_loops(&env);
  for (int i = 0; i < 50; i++) {
    char id[32];
    snprintf(id, sizeof id, "sbx-cycle-%d", i);
    sb = asbt_create(&env, id, i % 2 ? env.base : env.busybox);
    REQUIRE(sb != NULL);
    if (i % 10 == 0) CHECK(asbt_sh_eq(sb, 0, "echo up", "up"));
    CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
    asbe_sandbox_release(sb);
  }
  WAIT_UNTIL(asbt_pool_settled(&env) && asbt_count_fds() == fds && asbt_count_children() == kids,
             ASBT_DEADLINE_MS);
  CHECK(asbt_pool_settled(&env));
  CHECK_INT(asbt_count_fds(), fds);
  CHECK_INT(asbt_count_mounts(), mounts);
  CHECK_INT(asbt_count_cgroups(&env), cgs);
  CHECK_INT(asbt_count_children(), kids);
  CHECK_INT(asbt_count_loops(&env), loops);
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/sandboxes", env.state);
  DIR *d = opendir(p);
  int left = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) left += de->d_name[0] != '.';
  if (d) closedir(d);
  CHECK_INT(left, 0);
}

TEST(adopt_after_forgetting_the_handle) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-adopt", env.base);
  REQUIRE(sb != NULL);
  pid_t pid = asbe_sandbox_pid(sb);
  uint32_t slot = asbe_sandbox_slot(sb);
  asbe_sandbox_release(sb); /* forget it; it keeps running */
  sb = NULL;
  CHECK_INT(asbe_sandbox_adopt(env.e, "sbx-nope", &sb), -ESRCH);
  REQUIRE(asbe_sandbox_adopt(env.e, "sbx-adopt", &sb) == 0);
  CHECK_INT(asbe_sandbox_pid(sb), pid);
  CHECK_INT(asbe_sandbox_slot(sb), slot);
  CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(asbt_sh_eq(sb, 0, "hostname", "sbx-adopt"));
  asbe_stats st;
  CHECK(asbe_sandbox_stats(sb, &st) == 0 && st.pids_current >= 2);
  int kids = asbt_count_children();
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  CHECK_INT(asbt_count_children(), kids - 1); /* the init was reaped */
  asbe_sandbox_release(sb);
}

/* Hands the state dir to an engine in another process that creates the
 * given sandboxes and is then SIGKILLed; our engine opens again after it
 * (an engine restart). */
static int crashed_engine(const char *const *ids, size_t n) {
  int pfd[2];
  if (pipe(pfd) < 0) return -1;
  asbt_close_engine(&env);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    asbe_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.state_dir = env.state;
    cfg.agent_dir = env.agent_dir;
    cfg.cgroup_name = env.cgname;
    cfg.pool_disk_bytes = 256ull << 20;
    cfg.pool_target = 2;
    asbe_engine *e;
    if (asbe_engine_open(&cfg, &e) < 0) _exit(1);
    for (size_t i = 0; i < n; i++) {
      asbe_sandbox_spec s;
      asbt_spec(&s, ids[i], env.base);
      asbe_sandbox *sb;
      if (asbe_sandbox_create(e, &s, &sb) < 0) {
        fprintf(stderr, "child create: %s\n", asbe_errmsg());
        _exit(2);
      }
    }
    if (write(pfd[1], "r", 1) != 1) _exit(3);
    for (;;) pause();
  }
  close(pfd[1]);
  char c;
  int ok = read(pfd[0], &c, 1) == 1;
  close(pfd[0]);
  kill(pid, SIGKILL); /* the engine dies; its sandboxes do not */
  waitpid(pid, NULL, 0);
  if (asbt_open_engine(&env) < 0) return -1;
  return ok ? 0 : -1;
}

/* What a create an engine died in the middle of leaves: a dir with a disk
 * image and no record (no create of this engine is making it). */
static void half_made_sandbox(char *dir, size_t len) {
  snprintf(dir, len, "%s/sandboxes/sbx-halfmade", env.state);
  CHECK(mkdir(dir, 0700) == 0);
  char img[PATH_MAX + 16];
  snprintf(img, sizeof img, "%s/disk.img", dir);
  int fd = open(img, O_RDWR | O_CREAT, 0600);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
}

static void collect(const char *id, void *ctx) {
  char *buf = ctx;
  strcat(buf, id);
  strcat(buf, " ");
}

TEST(adopt_after_engine_kill9) {
  const char *ids[] = {"sbx-survivor"};
  REQUIRE(crashed_engine(ids, 1) == 0);
  char half[PATH_MAX];
  half_made_sandbox(half, sizeof half);

  char live[256] = "";
  asbe_reap_report rep;
  CHECK_INT(asbe_reap(env.e, collect, live, &rep), 0);
  CHECK(access(half, F_OK) < 0);
  CHECK_STR(live, "sbx-survivor ");
  CHECK_INT(rep.live, 1);
  CHECK_INT(rep.sandboxes, 1); /* the half-made one */
  CHECK_INT(rep.slots, 0);
  asbe_sandbox *sb = NULL;
  REQUIRE(asbe_sandbox_adopt(env.e, "sbx-survivor", &sb) == 0);
  /* its engine is gone but its uid slot is still taken (the init lives) */
  CHECK(slot_claimed(asbe_sandbox_slot(sb)));
  CHECK(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(asbt_sh_eq(sb, 0, "cat /proc/1/comm; hostname", "asb-init\nsbx-survivor"));
  CHECK_INT(asbe_sandbox_freeze(sb), 0);
  CHECK_INT(asbe_sandbox_thaw(sb), 0);
  uint32_t slot = asbe_sandbox_slot(sb);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  CHECK(!slot_claimed(slot));
  asbe_sandbox_release(sb);
  CHECK_INT(asbt_count_loops(&env), 0);
}

/* An engine restarted under another cgroup (here: another cgroup name)
 * still finds, drives and cleans its sandboxes: the record has the paths. */
TEST(adopt_after_engine_moved) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-moved", env.busybox);
  REQUIRE(sb != NULL);
  asbe_sandbox_release(sb);
  asbt_close_engine(&env);
  asbe_engine_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.state_dir = env.state;
  cfg.agent_dir = env.agent_dir;
  char other[80];
  snprintf(other, sizeof other, "%s-moved", env.cgname);
  cfg.cgroup_name = other;
  asbe_engine *e2 = NULL;
  REQUIRE(asbe_engine_open(&cfg, &e2) == 0);
  char live[128] = "";
  asbe_reap_report rep;
  CHECK_INT(asbe_reap(e2, collect, live, &rep), 0);
  CHECK_STR(live, "sbx-moved ");
  CHECK_INT(rep.cgroups, 0);
  REQUIRE(asbe_sandbox_adopt(e2, "sbx-moved", &sb) == 0);
  CHECK(asbt_sh_eq(sb, 0, "hostname", "sbx-moved"));
  CHECK_INT(asbe_sandbox_freeze(sb), 0);
  asbe_stats st;
  CHECK(asbe_sandbox_stats(sb, &st) == 0 && st.frozen == 1 && st.pids_current >= 2);
  CHECK_INT(asbe_sandbox_thaw(sb), 0);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
  /* while e2 runs, no other engine gets the state dir */
  asbe_engine *e3 = NULL;
  CHECK_INT(asbe_engine_open(&cfg, &e3), -EBUSY);
  asbe_engine_close(e2);
  /* its cgroups went, and the old engine's dirs with them */
  CHECK_INT(asbt_count_cgroups(&env), 0);
  /* the first engine comes back (and makes its dirs again) */
  REQUIRE(asbt_open_engine(&env) == 0);
  sb = asbt_create(&env, "sbx-after", env.busybox);
  CHECK(sb != NULL);
  if (sb) {
    asbe_sandbox_kill(sb, 1);
    asbe_sandbox_release(sb);
  }
}

static pid_t recorded_pid(const char *id) {
  char p[PATH_MAX], line[256];
  snprintf(p, sizeof p, "%s/sandboxes/%s/state", env.state, id);
  FILE *f = fopen(p, "r");
  pid_t pid = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "pid=", 4)) pid = atoi(line + 4);
  if (f) fclose(f);
  return pid;
}

static int dead_or_zombie(pid_t pid) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  char st = 'Z';
  if (f) {
    if (fscanf(f, "%*d %*s %c", &st) != 1) st = 'Z';
    fclose(f);
  }
  return st == 'Z';
}

static char *memory_base(void) {
  const char *info = asbe_engine_cgroup_info(env.e);
  const char *m = strstr(info, "memory at ");
  if (!m) return NULL;
  m += 10;
  return strndup(m, strcspn(m, ";"));
}

TEST(reaper_cleans_orphans) {
  int mounts = asbt_count_mounts();
  const char *ids[] = {"sbx-orphan", "sbx-live"};
  REQUIRE(crashed_engine(ids, 2) == 0);
  /* the orphan's init dies too: a dead sandbox nobody cleaned */
  pid_t op = recorded_pid("sbx-orphan");
  REQUIRE(op > 0);
  kill(op, SIGKILL);
  WAIT_UNTIL(dead_or_zombie(op), ASBT_DEADLINE_MS);
  CHECK(dead_or_zombie(op));
  /* more litter: a cgroup of no sandbox (marked as this state dir's), a
   * stale pool image, a loop device; and cgroups of no sandbox that are not
   * ours to reap: another state dir's, and one nobody marked */
  char *mb = memory_base();
  REQUIRE(mb != NULL);
  char fake[PATH_MAX], foreign[PATH_MAX], unmarked[PATH_MAX];
  snprintf(fake, sizeof fake, "%s/fake-orphan", mb);
  snprintf(foreign, sizeof foreign, "%s/fake-foreign", mb);
  snprintf(unmarked, sizeof unmarked, "%s/fake-unmarked", mb);
  free(mb);
  CHECK(mkdir(fake, 0755) == 0 && mkdir(foreign, 0755) == 0 && mkdir(unmarked, 0755) == 0);
  CHECK(setxattr(fake, "trusted.agent-sandbox.owner", env.state, strlen(env.state), 0) == 0);
  CHECK(setxattr(foreign, "trusted.agent-sandbox.owner", "/elsewhere", 10, 0) == 0);
  char img[PATH_MAX];
  snprintf(img, sizeof img, "%s/pool/tmp-litter.img", env.state);
  int fd = open(img, O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  CHECK(ftruncate(fd, 1 << 20) == 0);
  int ctl = open("/dev/loop-control", O_RDWR);
  int n = -1, configured = 0;
  char dev[64];
  /* another user (our pool thread, another engine) may grab the free device
   * first: try again then, like the library does */
  for (int attempt = 0; attempt < 20 && !configured; attempt++) {
    n = ioctl(ctl, LOOP_CTL_GET_FREE);
    snprintf(dev, sizeof dev, "/dev/loop%d", n);
    int lfd = open(dev, O_RDWR);
    struct loop_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (uint32_t)fd;
    configured = lfd >= 0 && ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0; /* no autoclear: it leaks */
    if (lfd >= 0) close(lfd);
  }
  close(ctl);
  CHECK(configured);
  close(fd);
  /* the dead sandbox's loop device went with its mount namespace */
  CHECK_INT(asbt_count_loops(&env), 1);

  char half[PATH_MAX];
  half_made_sandbox(half, sizeof half);

  char live[256] = "";
  asbe_reap_report rep;
  CHECK_INT(asbe_reap(env.e, collect, live, &rep), 0);
  CHECK(access(half, F_OK) < 0);
  printf("  reaped: live %u sandboxes %u cgroups %u loops %u files %u slots %u\n", rep.live,
         rep.sandboxes, rep.cgroups, rep.loops, rep.files, rep.slots);
  CHECK_STR(live, "sbx-live ");
  CHECK_INT(rep.sandboxes, 2); /* the orphan and the half-made one */
  CHECK(rep.cgroups >= 2);     /* the orphan's and the fake one */
  CHECK(rep.loops >= 1);
  CHECK(rep.files >= 1);
  char back[PATH_MAX + 1] = "";
  snprintf(dev, sizeof dev, "/sys/block/loop%d/loop/backing_file", n);
  FILE *bf = fopen(dev, "r");
  if (bf) {
    if (!fgets(back, sizeof back, bf)) back[0] = '\0';
    fclose(bf);
  }
  CHECK(strstr(back, "tmp-litter") == NULL); /* detached */
  CHECK(access(fake, F_OK) < 0);
  CHECK(access(foreign, F_OK) == 0);
  CHECK(access(unmarked, F_OK) == 0);
  rmdir(foreign);
  rmdir(unmarked);
  CHECK(access(img, F_OK) < 0);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/sandboxes/sbx-orphan", env.state);
  CHECK(access(dir, F_OK) < 0);
  CHECK_INT(asbt_count_loops(&env), 1); /* only the live one */
  waitpid(op, NULL, WNOHANG);           /* we are its subreaper */
  asbe_sandbox *sb = NULL;
  REQUIRE(asbe_sandbox_adopt(env.e, "sbx-live", &sb) == 0);
  CHECK_INT(asbe_sandbox_kill(sb, 1), 0);
  asbe_sandbox_release(sb);
  CHECK_INT(asbt_count_loops(&env), 0);
  CHECK_INT(asbt_count_mounts(), mounts);
  /* a second pass finds nothing */
  CHECK_INT(asbe_reap(env.e, NULL, NULL, &rep), 0);
  CHECK_INT(rep.live + rep.sandboxes + rep.cgroups + rep.loops + rep.files, 0);
}

TEST(sigterm_to_init_and_kept_state) {
  asbe_sandbox *sb = asbt_create(&env, "sbx-term", env.busybox);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(asbt_sh_eq(sb, 0, "echo keep > /root/file && echo ok", "ok"));
  /* SIGTERM: the init stops every process and exits */
  CHECK(syscall(SYS_pidfd_send_signal, asbe_sandbox_pidfd(sb), SIGTERM, NULL, 0) == 0);
  WAIT_UNTIL(!asbe_sandbox_alive(sb), ASBT_DEADLINE_MS);
  CHECK(!asbe_sandbox_alive(sb));
  /* keep the state dir: stopped, not reaped, not adoptable */
  CHECK_INT(asbe_sandbox_kill(sb, 0), 0);
  char img[PATH_MAX];
  snprintf(img, sizeof img, "%s/disk.img", asbe_sandbox_dir(sb));
  CHECK(access(img, F_OK) == 0);
  asbe_sandbox_release(sb);
  asbe_reap_report rep;
  CHECK_INT(asbe_reap(env.e, NULL, NULL, &rep), 0);
  CHECK(access(img, F_OK) == 0);
  CHECK_INT(asbe_sandbox_adopt(env.e, "sbx-term", &sb), -ESRCH);
  CHECK_INT(asbe_state_remove(env.e, "sbx-term"), 0);
  CHECK(access(img, F_OK) < 0);
}

/* Pause without memory: stop keeps the writable layer and the uid slot
 * (a reaper pass too: the claim holds without a live init); a create with
 * resume boots it on both (not without one to boot); remove frees
 * both. */
TEST(stop_and_boot_again) {
  int mounts = asbt_count_mounts();
  asbe_sandbox *sb = asbt_create(&env, "sbx-stop", env.base);
  REQUIRE(sb != NULL);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK(asbt_sh_eq(sb, 1000, "echo mine > ~/f && (sleep 1000 >/dev/null 2>&1 &) && echo ok", "ok"));
  uid_t hu = asbe_sandbox_host_uid(sb);
  uint32_t slot = asbe_sandbox_slot(sb);
  CHECK_INT(asbe_sandbox_stop(sb), 0);
  CHECK(!asbe_sandbox_alive(sb));
  CHECK_INT(asbt_uid_procs(hu), 0);
  CHECK_INT(asbt_count_loops(&env), 0);
  CHECK(slot_claimed(slot));
  asbe_sandbox_release(sb);
  asbe_reap_report rep;
  CHECK_INT(asbe_reap(env.e, NULL, NULL, &rep), 0);
  CHECK(slot_claimed(slot));
  CHECK_INT(asbe_sandbox_adopt(env.e, "sbx-stop", &sb), -ESRCH);
  /* a host reboot empties the slot registry: start-up claims it again */
  char claim[128];
  snprintf(claim, sizeof claim, "/run/agent-sandbox/slots/%u", slot);
  CHECK(unlink(claim) == 0);
  CHECK_INT(asbe_paused_hold(env.e, "sbx-stop"), 0);
  CHECK(slot_claimed(slot));
  CHECK_INT(asbe_paused_hold(env.e, "sbx-none"), -ENOENT);
  asbe_sandbox_spec spec;
  asbt_spec(&spec, "sbx-stop", env.base);
  CHECK_INT(asbe_sandbox_create(env.e, &spec, &sb), -EEXIST); /* not a fresh one */
  spec.resume = 1;
  asbt_spec(&spec, "sbx-none", env.base);
  spec.resume = 1;
  CHECK_INT(asbe_sandbox_create(env.e, &spec, &sb), -ENOENT);
  asbt_spec(&spec, "sbx-stop", env.base);
  spec.resume = 1;
  REQUIRE(asbe_sandbox_create(env.e, &spec, &sb) == 0);
  REQUIRE(asbt_wait_agent(sb, ASBT_DEADLINE_MS) == 0);
  CHECK_INT(asbe_sandbox_host_uid(sb), hu);
  CHECK(asbt_sh_eq(sb, 1000, "cat ~/f; pgrep -x sleep || echo none", "mine\nnone"));
  CHECK_INT(asbe_sandbox_stop(sb), 0);
  asbe_sandbox_release(sb);
  CHECK_INT(asbe_paused_remove(env.e, "sbx-stop"), 0);
  CHECK(!slot_claimed(slot));
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/sandboxes/sbx-stop", env.state);
  CHECK(access(dir, F_OK) < 0);
  CHECK_INT(asbt_count_mounts(), mounts);
}

int main(void) {
  /* orphaned inits of "crashed" engines come to us, like to a supervisor */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (asbt_setup(&env, 2) < 0) return 1;
  RUN(freeze_and_thaw);
  RUN(kill_leaves_nothing);
  RUN(create_kill_cycles_leak_nothing);
  RUN(adopt_after_forgetting_the_handle);
  RUN(adopt_after_engine_kill9);
  RUN(adopt_after_engine_moved);
  RUN(reaper_cleans_orphans);
  RUN(sigterm_to_init_and_kept_state);
  RUN(stop_and_boot_again);
  asbt_teardown(&env);
  TEST_MAIN_END();
}
