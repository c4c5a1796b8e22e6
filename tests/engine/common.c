/* SPDX-License-Identifier: Apache-2.0 */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int asbt_favor_dynmods;

void asbt_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The root of the last asbt_setup: mounts under it count even in /tmp. */
static char own_root[PATH_MAX];

int asbt_setup(asbt_env *env, unsigned pool_target) {
  memset(env, 0, sizeof *env);
  snprintf(env->root, sizeof env->root, "/tmp/asbt-XXXXXX");
  if (!mkdtemp(env->root)) {
    perror("mkdtemp");
    return -1;
  }
  snprintf(own_root, sizeof own_root, "%s", env->root);
  char base[PATH_MAX], bb[PATH_MAX];
  snprintf(env->state, sizeof env->state, "%s/state", env->root);
  snprintf(env->agent_dir, sizeof env->agent_dir, "%s/agent", env->root);
  snprintf(base, sizeof base, "%s/tmpl-base", env->root);
  snprintf(bb, sizeof bb, "%s/tmpl-busybox", env->root);
  snprintf(env->cgname, sizeof env->cgname, "asbt-%d", (int)getpid());
  const char *bins[] = {ASBT_AGENT};
  if (asbe_agentdir_build(env->agent_dir, ASBT_INIT, bins, 1) < 0 ||
      asbe_template_prepare_base(base) < 0 || asbe_template_prepare_busybox(bb) < 0 ||
      asbe_template_base(base, &env->base) < 0 || asbe_template_busybox(bb, &env->busybox) < 0) {
    fprintf(stderr, "setup: %s\n", asbe_errmsg());
    return -1;
  }
  env->pool_target = pool_target;
  return asbt_open_engine(env);
}

int asbt_open_engine(asbt_env *env) {
  asbe_engine_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.state_dir = env->state;
  cfg.agent_dir = env->agent_dir;
  cfg.cgroup_name = env->cgname;
  cfg.pool_disk_bytes = 256ull << 20;
  cfg.pool_target = env->pool_target;
  cfg.cgroup_favor_dynmods = asbt_favor_dynmods;
  if (asbe_engine_open(&cfg, &env->e) < 0) {
    fprintf(stderr, "engine: %s\n", asbe_errmsg());
    return -1;
  }
  return 0;
}

void asbt_close_engine(asbt_env *env) {
  asbe_engine_close(env->e);
  env->e = NULL;
}

void asbt_teardown(asbt_env *env) {
  if (env->e) {
    asbe_reap_report rep;
    asbe_reap(env->e, NULL, NULL, &rep);
    asbe_engine_close(env->e);
  }
  asbe_template_free(env->base);
  asbe_template_free(env->busybox);
  if (env->root[0]) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", env->root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", env->root);
  }
  memset(env, 0, sizeof *env);
}

static const char *const k_agent_args[] = {"-s", "/run/asb/envd.sock", "-t", "8080", NULL};

void asbt_spec(asbe_sandbox_spec *s, const char *id, const asbe_template *t) {
  static char **argv;
  if (!argv) argv = asbe_agent_argv("asbt-agent", k_agent_args);
  memset(s, 0, sizeof *s);
  s->id = id;
  s->tmpl = t;
  s->memory_bytes = 256ull << 20;
  s->pids_max = 256;
  s->disk_bytes = 256ull << 20;
  s->agent_argv = (const char *const *)argv;
}

asbe_sandbox *asbt_create(asbt_env *env, const char *id, const asbe_template *t) {
  asbe_sandbox_spec s;
  asbt_spec(&s, id, t);
  asbe_sandbox *sb = NULL;
  if (asbe_sandbox_create(env->e, &s, &sb) < 0) {
    fprintf(stderr, "create %s: %s\n", id, asbe_errmsg());
    return NULL;
  }
  return sb;
}

int asbt_sh(asbe_sandbox *sb, uid_t uid, const char *cmd, char **out) {
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  char *o = NULL, *e = NULL;
  int st = asbe_sandbox_run(sb, argv, uid, NULL, &o, &e, 1 << 20, 60000);
  if (st < 0) {
    fprintf(stderr, "run %s: %s\n", cmd, asbe_errmsg());
    free(o);
    free(e);
    if (out) *out = NULL;
    return -1;
  }
  if (out) {
    size_t lo = o ? strlen(o) : 0, le = e ? strlen(e) : 0;
    *out = malloc(lo + le + 1);
    if (*out) {
      memcpy(*out, o ? o : "", lo);
      memcpy(*out + lo, e ? e : "", le + 1);
    }
  }
  free(o);
  free(e);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int asbt_sh_eq(asbe_sandbox *sb, uid_t uid, const char *cmd, const char *expect) {
  char *out = NULL;
  int rc = asbt_sh(sb, uid, cmd, &out);
  int ok = 0;
  if (rc >= 0 && out) {
    size_t n = strlen(out);
    while (n && out[n - 1] == '\n') out[--n] = '\0';
    ok = !strcmp(out, expect);
  }
  if (!ok)
    fprintf(stderr, "  `%s` gave [%s] (rc %d), want [%s]\n", cmd, out ? out : "", rc, expect);
  free(out);
  return ok;
}

int asbt_agent(asbe_sandbox *sb, const char *line, char *buf, size_t len) {
  int s = asbe_sandbox_connect_unix(sb, "envd.sock");
  if (s < 0) return -1;
  struct timeval tv = {10, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char msg[600];
  int n = snprintf(msg, sizeof msg, "%s\n", line);
  if (write(s, msg, (size_t)n) != n) {
    close(s);
    return -1;
  }
  size_t got = 0;
  while (got + 1 < len) {
    ssize_t r = read(s, buf + got, len - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    if (memchr(buf, '\n', got)) break;
  }
  close(s);
  buf[got] = '\0';
  char *nl = strchr(buf, '\n');
  if (!nl) return -1;
  *nl = '\0';
  return 0;
}

int asbt_wait_agent(asbe_sandbox *sb, int timeout_ms) {
  char buf[64];
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long end = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 + timeout_ms;
  for (;;) {
    if (asbt_agent(sb, "ping", buf, sizeof buf) == 0 && !strcmp(buf, "pong")) return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= end) return -1;
    asbt_sleep_ms(5);
  }
}

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

int asbt_count_fds(void) {
  return count_dir("/proc/self/fd") - 1; /* opendir's own */
}

/* The host's mount points, leaving out other tests' scratch mounts under
 * /tmp/ (ctest runs tests in parallel; envd.hostile mounts a tmpfs there)
 * but not this test's own root. */
int asbt_count_mounts(void) {
  FILE *f = fopen("/proc/self/mountinfo", "r");
  if (!f) return -1;
  char line[8192], point[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1) continue;
    if (!strncmp(point, "/tmp/", 5) &&
        !(own_root[0] && !strncmp(point, own_root, strlen(own_root))))
      continue;
    if (!strncmp(point, "/run/netns/", 11)) continue; /* the net.* tests' (iso names none) */
    n++;
  }
  fclose(f);
  return n;
}

int asbt_count_children(void) {
  char path[64], buf[8192];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  int cnt = 0;
  for (char *p = strtok(buf, " \n"); p; p = strtok(NULL, " \n")) cnt++;
  return cnt;
}

int asbt_count_cgroups(asbt_env *env) {
  /* the engine dirs are <hierarchy>/<own cgroup>/<cgname>: find them */
  FILE *f = fopen("/proc/self/mountinfo", "r");
  if (!f) return -1;
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strstr(line, " - cgroup")) continue;
    char point[1024];
    if (sscanf(line, "%*s %*s %*s %*s %1023s", point) != 1) continue;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "find '%s' -type d -path '*/%s/*' 2>/dev/null | wc -l", point,
             env->cgname);
    FILE *p = popen(cmd, "r");
    int k = 0;
    if (p) {
      if (fscanf(p, "%d", &k) != 1) k = 0;
      pclose(p);
    }
    n += k;
  }
  fclose(f);
  return n;
}

int asbt_count_loops(asbt_env *env) {
  DIR *d = opendir("/sys/block");
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4)) continue;
    char p[512], back[PATH_MAX];
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
    FILE *f = fopen(p, "r");
    if (!f) continue;
    char sbx[PATH_MAX];
    snprintf(sbx, sizeof sbx, "%s/sandboxes/", env->state);
    if (fgets(back, sizeof back, f) && !strncmp(back, sbx, strlen(sbx))) n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

static int pool_settled_once(asbt_env *env) {
  char dir[PATH_MAX], want[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/pool", env->state);
  snprintf(want, sizeof want, "%s/img-", dir);
  unsigned imgs = 0, loops = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    imgs += strncmp(de->d_name, "img-", 4) == 0 || strncmp(de->d_name, "tmp-", 4) == 0;
  if (d) closedir(d);
  d = opendir("/sys/block");
  while (d && (de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4)) continue;
    char p[512], back[PATH_MAX];
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
    FILE *f = fopen(p, "r");
    if (!f) continue;
    if (fgets(back, sizeof back, f) && !strncmp(back, want, strlen(want))) loops++;
    fclose(f);
  }
  if (d) closedir(d);
  return imgs == env->pool_target && loops == env->pool_target;
}

int asbt_pool_settled(asbt_env *env) {
  if (!pool_settled_once(env)) return 0;
  asbt_sleep_ms(20);
  return pool_settled_once(env);
}

int asbt_cgroup2(char *point, size_t plen, char *opts, size_t olen) {
  FILE *f = fopen("/proc/self/mountinfo", "r");
  char line[4096];
  int r = -1;
  while (f && r < 0 && fgets(line, sizeof line, f)) {
    char *sep = strstr(line, " - cgroup2 ");
    char pt[1024], so[1024];
    if (!sep || sscanf(line, "%*s %*s %*s %*s %1023s", pt) != 1 ||
        sscanf(sep + 11, "%*s %1023s", so) != 1)
      continue;
    snprintf(point, plen, "%s", pt);
    snprintf(opts, olen, "%s", so);
    r = 0;
  }
  if (f) fclose(f);
  return r;
}

int asbt_cgroup2_restore(const char *point, const char *opts) {
  char o[1024] = "";
  /* drop rw/ro: they are mount flags, not cgroup2 options */
  for (const char *p = opts; *p;) {
    size_t n = strcspn(p, ",");
    if (!(n == 2 && (!strncmp(p, "rw", 2) || !strncmp(p, "ro", 2))))
      snprintf(o + strlen(o), sizeof o - strlen(o), "%s%.*s", o[0] ? "," : "", (int)n, p);
    p += n + (p[n] == ',');
  }
  return mount("none", point, NULL, MS_REMOUNT | MS_RELATIME, o);
}
