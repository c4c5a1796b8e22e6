/* A sandbox's on-disk record (<dir>/state: what adopt and the reaper read
 * after a restart), and whether the init a record or a handle names is
 * still alive. Below sandbox.c, exec.c and slot.c, which all ask.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/buf.h"

/* The host's boot id (a UUID, new at every boot) into out. 0 or -errno. */
static int host_boot_id(char out[40]) {
  char buf[64];
  ssize_t n = asbe__read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf);
  if (n <= 0) return n < 0 ? (int)n : -EIO;
  buf[strcspn(buf, "\n")] = '\0';
  if (strlen(buf) != 36) return -EIO;
  memcpy(out, buf, 37);
  return 0;
}

int asbe__rec_write(const asbe_sandbox *sb, const char *status) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "id=%s\nstatus=%s\nslot=%u\nhost_uid=%u\npid=%d\nstarttime=%llu\n", sb->id,
                  status, sb->slot, (unsigned)sb->host_uid, (int)sb->pid,
                  (unsigned long long)sb->starttime);
  asbi_buf_printf(&b, "engine_pid=%d\ncreated=%lld\n", (int)getpid(), (long long)time(NULL));
  char boot[40];
  if (host_boot_id(boot) == 0) asbi_buf_printf(&b, "boot_id=%s\n", boot);
  asbi_buf_printf(&b, "run_dev=%llu\nlog=%llu:%llu\n", (unsigned long long)sb->run_dev,
                  (unsigned long long)sb->log_dev, (unsigned long long)sb->log_ino);
  const asbe_cg *cg = &sb->cg;
  for (int i = 0; i < cg->n; i++) {
    char d[PATH_MAX];
    asbe__cg_path(cg, i, sb->id, ASBE_CGW_SB, d, sizeof d);
    asbi_buf_printf(&b, "cgroup.%s=%s\n", cg->h[i].name, d);
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/state", sb->dir);
  int r = b.data ? asbe__write_file_atomic(path, b.data, b.len, 0600) : -ENOMEM;
  asbi_buf_free(&b);
  return r < 0 ? asbe__fail(r, "write %s", path) : 0;
}

int asbe__rec_read(const char *dir, asbe__rec *r) {
  char path[PATH_MAX], buf[8192];
  memset(r, 0, sizeof *r);
  snprintf(path, sizeof path, "%s/state", dir);
  ssize_t n = asbe__read_small(path, buf, sizeof buf);
  if (n < 0) return (int)n;
  for (char *l = buf; l && *l;) {
    char *nl = strchr(l, '\n');
    if (nl) *nl = '\0';
    char *eq = strchr(l, '=');
    if (eq) {
      *eq = '\0';
      const char *v = eq + 1;
      if (!strcmp(l, "status"))
        snprintf(r->status, sizeof r->status, "%s", v);
      else if (!strcmp(l, "boot_id"))
        snprintf(r->boot_id, sizeof r->boot_id, "%s", v);
      else if (!strcmp(l, "slot"))
        r->slot = (uint32_t)strtoul(v, NULL, 10);
      else if (!strcmp(l, "pid"))
        r->pid = (pid_t)atoi(v);
      else if (!strcmp(l, "starttime"))
        r->start = strtoull(v, NULL, 10);
      else if (!strcmp(l, "run_dev"))
        r->run_dev = strtoull(v, NULL, 10);
      else if (!strcmp(l, "log")) {
        char *end = NULL;
        r->log_dev = strtoull(v, &end, 10);
        r->log_ino = end && *end == ':' ? strtoull(end + 1, NULL, 10) : 0;
      } else if (!strncmp(l, "cgroup.", 7) && r->ncg < ASBE_CG_MAX) {
        snprintf(r->cg_name[r->ncg], sizeof r->cg_name[0], "%s", l + 7);
        snprintf(r->cg_path[r->ncg], sizeof r->cg_path[0], "%s", v);
        r->ncg++;
      }
    }
    l = nl ? nl + 1 : NULL;
  }
  /* the id is the dir's name (what its cgroups are named after) */
  const char *base = strrchr(dir, '/');
  snprintf(r->id, sizeof r->id, "%s", base ? base + 1 : dir);
  return 0;
}

/* 1 if pid's cgroup, in some hierarchy, is at or below a dir named rc's
 * id whose path a recorded cgroup path ends with. /proc/<pid>/cgroup says
 * "N:controllers:/rel/path"; the recorded paths are the hierarchies' mount
 * points plus such a path, as the engine saw them from its own cgroup
 * namespace, which is the one this reads in. */
static int in_sandbox_cgroup(const asbe__rec *rc, pid_t pid) {
  char path[64], buf[8192];
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
  ssize_t n = asbe__read_small(path, buf, sizeof buf);
  size_t il = strlen(rc->id);
  if (n <= 0 || !il) return 0;
  for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char *rel = strchr(l, ':');
    rel = rel ? strchr(rel + 1, ':') : NULL;
    if (!rel || rel[1] != '/') continue;
    rel++;
    /* the component "/<id>", then its end: "/rel/.../<id>" is the prefix */
    for (char *c = strchr(rel, '/'); c; c = strchr(c + 1, '/')) {
      if (strncmp(c + 1, rc->id, il) || (c[1 + il] && c[1 + il] != '/')) continue;
      size_t pl = (size_t)(c + 1 + il - rel);
      for (int i = 0; i < rc->ncg; i++) {
        size_t cl = strlen(rc->cg_path[i]);
        if (cl > pl && !strncmp(rc->cg_path[i] + cl - pl, rel, pl)) return 1;
      }
    }
  }
  return 0;
}

int asbe__rec_other_boot(const asbe__rec *rc) {
  char boot[40];
  return rc->boot_id[0] && host_boot_id(boot) == 0 && strcmp(boot, rc->boot_id) != 0;
}

int asbe__rec_is_init(const asbe__rec *rc, pid_t pid) {
  char boot[40];
  if (pid <= 0 || !rc->start) return 0;
  if (rc->boot_id[0] && (host_boot_id(boot) != 0 || strcmp(boot, rc->boot_id) != 0)) return 0;
  return asbe__proc_starttime(pid) == rc->start && in_sandbox_cgroup(rc, pid);
}

int asbe__rec_alive(const char *dir) {
  asbe__rec rc;
  return asbe__rec_read(dir, &rc) == 0 && !strcmp(rc.status, "running") &&
         asbe__rec_is_init(&rc, rc.pid);
}

int asbe__rec_paused(const char *dir) {
  asbe__rec rc;
  return asbe__rec_read(dir, &rc) == 0 && !strcmp(rc.status, "paused");
}

int asbe_sandbox_alive(asbe_sandbox *sb) {
  if (!sb || sb->dead || sb->pidfd < 0) return 0;
  return !asbe__wait_readable(sb->pidfd, 0);
}
