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

int asbe__rec_write(const asbe_sandbox *sb, const char *status) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "id=%s\nstatus=%s\nslot=%u\nhost_uid=%u\npid=%d\nstarttime=%llu\n", sb->id,
                  status, sb->slot, (unsigned)sb->host_uid, (int)sb->pid,
                  (unsigned long long)sb->starttime);
  asbi_buf_printf(&b, "engine_pid=%d\ncreated=%lld\n", (int)getpid(), (long long)time(NULL));
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
  return 0;
}

int asbe__rec_alive(const char *dir) {
  asbe__rec rc;
  return asbe__rec_read(dir, &rc) == 0 && !strcmp(rc.status, "running") && rc.pid > 0 &&
         asbe__proc_starttime(rc.pid) == rc.start;
}

int asbe__rec_paused(const char *dir) {
  asbe__rec rc;
  return asbe__rec_read(dir, &rc) == 0 && !strcmp(rc.status, "paused");
}

int asbe_sandbox_alive(asbe_sandbox *sb) {
  if (!sb || sb->dead || sb->pidfd < 0) return 0;
  return !asbe__wait_readable(sb->pidfd, 0);
}
