/* cgroups behind one interface: v1 controllers (this machine) and pure v2.
 *
 * Layout, per hierarchy:   <mount>/<engine's own cgroup>/<name>/<id>
 * and, where the hierarchy carries memory or pids ("split"), two children:
 *   <id>/agent     asb-init + the agent, with their own small limits
 *   <id>/workload  the user's processes, with the user's limits
 * CPU quota applies to <id> (the whole sandbox). Freeze and kill use the v2
 * core files (cgroup.freeze/cgroup.kill, also present in the controller-less
 * cgroup2 mount of a hybrid host) or else the v1 freezer.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/buf.h"
#include "util/util.h"

static const struct {
  unsigned bit;
  const char *name;
} k_ctrls[] = {{ASBE_CG_MEMORY, "memory"},
               {ASBE_CG_PIDS, "pids"},
               {ASBE_CG_CPU, "cpu"},
               {ASBE_CG_CPUACCT, "cpuacct"},
               {ASBE_CG_FREEZER, "freezer"}};

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* 1 if the comma-separated list has the word. */
static int has_word(const char *list, const char *w) {
  size_t n = strlen(w);
  for (const char *p = list; p && *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && !strncmp(p, w, n)) return 1;
    p = c ? c + 1 : NULL;
  }
  return 0;
}

typedef struct mnt {
  char *point, *root, *opts;
  int v2;
} mnt;

/* Unescapes mountinfo's octal escapes in place. */
static void unescape(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] && p[3]) {
      *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
      p += 3;
    } else {
      *o++ = *p;
    }
  }
  *o = '\0';
}

static int read_mounts(mnt **out, int *n) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return -errno;
  char *line = NULL;
  size_t cap = 0;
  mnt *v = NULL;
  int cnt = 0;
  while (getline(&line, &cap, f) > 0) {
    char *sep = strstr(line, " - ");
    if (!sep) continue;
    char fstype[32], src[256], super[512];
    if (sscanf(sep + 3, "%31s %255s %511s", fstype, src, super) != 3) continue;
    int v2 = !strcmp(fstype, "cgroup2");
    if (!v2 && strcmp(fstype, "cgroup")) continue;
    char root[PATH_MAX], point[PATH_MAX];
    if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2) continue;
    unescape(root);
    unescape(point);
    mnt *nv = realloc(v, sizeof *v * (size_t)(cnt + 1));
    if (!nv) break;
    v = nv;
    v[cnt].point = strdup(point);
    v[cnt].root = strdup(root);
    v[cnt].opts = strdup(super);
    v[cnt].v2 = v2;
    cnt++;
  }
  free(line);
  fclose(f);
  *out = v;
  *n = cnt;
  return 0;
}

static void free_mounts(mnt *v, int n) {
  for (int i = 0; i < n; i++) {
    free(v[i].point);
    free(v[i].root);
    free(v[i].opts);
  }
  free(v);
}

/* Host path of cgroup `cgpath` (from /proc/self/cgroup) on mount m. */
static char *cg_fs_path(const mnt *m, const char *cgpath) {
  size_t rl = strlen(m->root);
  const char *rel = cgpath;
  if (strcmp(m->root, "/") != 0) {
    if (strncmp(cgpath, m->root, rl) != 0) return NULL;
    rel = cgpath + rl;
  }
  while (*rel == '/') rel++;
  return *rel ? asbe__strfmt("%s/%s", m->point, rel) : strdup(m->point);
}

static int v2_enable(const char *dir, unsigned ctrl) {
  char buf[128] = "";
  for (size_t i = 0; i < 3; i++)
    if (ctrl & k_ctrls[i].bit) {
      strcat(buf, "+");
      strcat(buf, k_ctrls[i].name);
      strcat(buf, " ");
    }
  if (!buf[0]) return 0;
  char *p = asbe__strfmt("%s/cgroup.subtree_control", dir);
  int r = p ? asbe__write_str(p, buf) : -ENOMEM;
  free(p);
  return r;
}

/* Every process of every sandbox also takes one of the host's pids
 * (kernel.pid_max: 32768 on hosts without systemd's 4194304) and threads
 * (kernel.threads-max): about 25 sandboxes at a pids.max of 1024 plus the
 * agent's 256 would leave the host none, its root included. The engine's own
 * dir caps all of its sandboxes together below both, keeping an eighth (at
 * least 4096) for everything else. Best effort: the sandboxes' own limits
 * hold without it. */
static void cap_all_pids(const asbe_cg_hier *h) {
  if (!(h->ctrl & ASBE_CG_PIDS)) return;
  char buf[32];
  unsigned long long pm = 0, tm = 0;
  if (asbe__read_small("/proc/sys/kernel/pid_max", buf, sizeof buf) > 0)
    pm = strtoull(buf, NULL, 10);
  if (asbe__read_small("/proc/sys/kernel/threads-max", buf, sizeof buf) > 0)
    tm = strtoull(buf, NULL, 10);
  unsigned long long m = pm && tm ? (pm < tm ? pm : tm) : (pm ? pm : tm);
  unsigned long long reserve = m / 8 > 4096 ? m / 8 : 4096;
  if (m <= 2 * reserve) return;
  snprintf(buf, sizeof buf, "%llu", m - reserve);
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/pids.max", h->base);
  asbe__write_str(p, buf);
}

static int rank(const asbe_cg_hier *h) {
  if (h->v2) return 99;
  for (size_t k = 0; k < ASBI_ARRAY_LEN(k_ctrls); k++)
    if (h->ctrl & k_ctrls[k].bit) return (int)k;
  return 98;
}

int asbe__cg_open(asbe_cg *cg, const char *name, int v2_split) {
  memset(cg, 0, sizeof *cg);
  mnt *mounts = NULL;
  int nm = 0;
  asbi_buf info = ASBI_BUF_INIT, env = ASBI_BUF_INIT;
  int r = read_mounts(&mounts, &nm);
  if (r < 0) return asbe__fail(r, "read /proc/self/mountinfo");
  FILE *f = fopen("/proc/self/cgroup", "re");
  if (!f) {
    r = asbe__failerr("open /proc/self/cgroup");
    free_mounts(mounts, nm);
    return r;
  }
  char line[PATH_MAX + 128];
  char v2path[PATH_MAX] = "";
  int have_v2 = 0;
  unsigned want = ASBE_CG_MEMORY | ASBE_CG_PIDS | ASBE_CG_CPU | ASBE_CG_CPUACCT;
  /* v1 hierarchies first */
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c1 = *c2 = '\0';
    const char *ctrls = c1 + 1, *path = c2 + 1;
    if (!strcmp(line, "0") && !*ctrls) {
      snprintf(v2path, sizeof v2path, "%s", path);
      have_v2 = 1;
      continue;
    }
    unsigned bits = 0;
    for (size_t i = 0; i < ASBI_ARRAY_LEN(k_ctrls); i++)
      if (has_word(ctrls, k_ctrls[i].name)) bits |= k_ctrls[i].bit;
    /* freezer only matters if there is no cgroup2 mount; decided below */
    if (!(bits & (want | ASBE_CG_FREEZER))) continue;
    const mnt *m = NULL;
    for (int i = 0; i < nm && !m; i++) {
      if (mounts[i].v2) continue;
      int all = 1;
      for (size_t k = 0; k < ASBI_ARRAY_LEN(k_ctrls); k++)
        if ((bits & k_ctrls[k].bit) && !has_word(mounts[i].opts, k_ctrls[k].name)) all = 0;
      if (all) m = &mounts[i];
    }
    if (!m || cg->n >= ASBE_CG_MAX) continue;
    char *own = cg_fs_path(m, path);
    if (!own) continue;
    asbe_cg_hier *h = &cg->h[cg->n++];
    h->v2 = 0;
    h->ctrl = bits & (want | ASBE_CG_FREEZER);
    h->split = (bits & (ASBE_CG_MEMORY | ASBE_CG_PIDS)) != 0;
    for (size_t k = 0; k < ASBI_ARRAY_LEN(k_ctrls); k++)
      if (h->ctrl & k_ctrls[k].bit) {
        snprintf(h->name, sizeof h->name, "%s", k_ctrls[k].name);
        break;
      }
    h->base = asbe__strfmt("%s/%s", own, name);
    free(own);
    cg->have |= h->ctrl;
  }
  fclose(f);

  /* cgroup2: core files always; controllers v1 did not provide */
  const mnt *m2 = NULL;
  for (int i = 0; i < nm && !m2; i++)
    if (mounts[i].v2) m2 = &mounts[i];
  if (have_v2 && m2 && cg->n < ASBE_CG_MAX) {
    char *own = cg_fs_path(m2, v2path);
    char ctl[256] = "";
    if (own) {
      char *p = asbe__strfmt("%s/cgroup.controllers", own);
      if (p) asbe__read_small(p, ctl, sizeof ctl);
      free(p);
      ctl[strcspn(ctl, "\n")] = '\0';
      for (char *s = ctl; *s; s++)
        if (*s == ' ') *s = ',';
      asbe_cg_hier *h = &cg->h[cg->n++];
      h->v2 = 1;
      h->ctrl = ASBE_CG_CORE;
      for (size_t k = 0; k < 3; k++)
        if (!(cg->have & k_ctrls[k].bit) && has_word(ctl, k_ctrls[k].name))
          h->ctrl |= k_ctrls[k].bit;
      h->split = v2_split || (h->ctrl & (ASBE_CG_MEMORY | ASBE_CG_PIDS)) != 0;
      snprintf(h->name, sizeof h->name, "unified");
      h->base = asbe__strfmt("%s/%s", own, name);
      cg->have |= h->ctrl;
      cg->v2_mount = strdup(m2->point);
      cg->v2_opts = strdup(m2->opts);
      /* pure v2: enable our controllers below our own cgroup */
      unsigned c = h->ctrl & (ASBE_CG_MEMORY | ASBE_CG_PIDS | ASBE_CG_CPU);
      if (c) {
        int er = v2_enable(own, c);
        if (er == -EBUSY) {
          /* "no internal processes": move this process into a leaf */
          char *leaf = asbe__strfmt("%s/%s.engine", own, name);
          char *procs = asbe__strfmt("%s/%s.engine/cgroup.procs", own, name);
          char pid[32];
          snprintf(pid, sizeof pid, "%d", (int)getpid());
          if (leaf && procs && (mkdir(leaf, 0755) == 0 || errno == EEXIST))
            asbe__write_str(procs, pid);
          free(leaf);
          free(procs);
          er = v2_enable(own, c);
        }
        if (er < 0) {
          r = asbe__fail(er, "enable cgroup v2 controllers in %s", own);
          free(own);
          goto fail;
        }
      }
    }
    free(own);
  }
  free_mounts(mounts, nm);
  mounts = NULL;

  /* v1 freezer only if there is no cgroup2 for freeze/kill */
  if (cg->have & ASBE_CG_CORE) {
    for (int i = 0; i < cg->n; i++) {
      if (!(cg->h[i].ctrl & ASBE_CG_FREEZER)) continue;
      cg->h[i].ctrl &= ~(unsigned)ASBE_CG_FREEZER;
      if (!cg->h[i].ctrl) {
        free(cg->h[i].base);
        cg->h[i] = cg->h[--cg->n];
        i--;
      }
    }
    cg->have &= ~(unsigned)ASBE_CG_FREEZER;
  }
  /* a stable order: memory, pids, cpu, cpuacct, freezer, unified */
  for (int i = 1; i < cg->n; i++)
    for (int j = i; j > 0 && rank(&cg->h[j]) < rank(&cg->h[j - 1]); j--) {
      asbe_cg_hier t = cg->h[j];
      cg->h[j] = cg->h[j - 1];
      cg->h[j - 1] = t;
    }
  unsigned need = ASBE_CG_MEMORY | ASBE_CG_PIDS | ASBE_CG_CPU;
  if ((cg->have & need) != need || !(cg->have & (ASBE_CG_CORE | ASBE_CG_FREEZER))) {
    r = asbe__fail(-ENOTSUP,
                   "cgroups: need memory, pids, cpu and freezer (v1) or "
                   "cgroup2 (have mask 0x%x)",
                   cg->have);
    goto fail;
  }
  for (int i = 0; i < cg->n; i++) {
    asbe_cg_hier *h = &cg->h[i];
    if (!h->base) {
      r = asbe__fail(-ENOMEM, "cgroup path");
      goto fail;
    }
    if (mkdir(h->base, 0755) < 0 && errno != EEXIST) {
      r = asbe__failerr("mkdir %s", h->base);
      goto fail;
    }
    cap_all_pids(h);
    if (h->v2) {
      int er = v2_enable(h->base, h->ctrl & (ASBE_CG_MEMORY | ASBE_CG_PIDS | ASBE_CG_CPU));
      if (er < 0) {
        r = asbe__fail(er, "enable controllers in %s", h->base);
        goto fail;
      }
    }
    asbi_buf_printf(&info, "%s%s v%d%s:", i ? "; " : "", h->name, h->v2 ? 2 : 1,
                    h->split ? " split" : "");
    for (size_t k = 0; k < ASBI_ARRAY_LEN(k_ctrls); k++)
      if (h->ctrl & k_ctrls[k].bit) asbi_buf_printf(&info, " %s", k_ctrls[k].name);
    if (h->ctrl & ASBE_CG_CORE) asbi_buf_puts(&info, " core(kill,freeze)");
    asbi_buf_printf(&info, " at %s", h->base);
    if (h->split) asbi_buf_printf(&env, "%s/run/asb/cgroup/%s", env.len ? ":" : "", h->name);
  }
  cg->info = asbi_buf_detach(&info, NULL);
  cg->workload_env = asbi_buf_detach(&env, NULL);
  return 0;
fail:
  if (mounts) free_mounts(mounts, nm);
  asbi_buf_free(&info);
  asbi_buf_free(&env);
  asbe__cg_close(cg);
  return r;
}

void asbe__cg_close(asbe_cg *cg) {
  for (int i = 0; i < cg->n; i++)
    if (cg->h[i].base) rmdir(cg->h[i].base); /* fine to fail: not empty */
  asbe__cg_free(cg);
}

int asbe__cg_copy(const asbe_cg *src, asbe_cg *dst) {
  memset(dst, 0, sizeof *dst);
  dst->n = src->n;
  dst->have = src->have;
  dst->owner = src->owner;
  dst->swap_block = src->swap_block;
  for (int i = 0; i < src->n; i++) {
    dst->h[i] = src->h[i];
    dst->h[i].base = strdup(src->h[i].base);
    if (!dst->h[i].base) {
      asbe__cg_free(dst);
      return -ENOMEM;
    }
  }
  return 0;
}

void asbe__cg_rebase(asbe_cg *cg, const char *name, const char *sb_path, const char *id) {
  size_t pl = strlen(sb_path), il = strlen(id);
  if (pl <= il + 1 || strcmp(sb_path + pl - il, id) || sb_path[pl - il - 1] != '/') return;
  for (int i = 0; i < cg->n; i++) {
    if (strcmp(cg->h[i].name, name)) continue;
    char *b = strndup(sb_path, pl - il - 1);
    if (!b) return;
    free(cg->h[i].base);
    cg->h[i].base = b;
  }
}

void asbe__cg_free(asbe_cg *cg) {
  for (int i = 0; i < cg->n; i++) free(cg->h[i].base);
  free(cg->info);
  free(cg->workload_env);
  free(cg->v2_mount);
  free(cg->v2_opts);
  memset(cg, 0, sizeof *cg);
}

int asbe__cg_favor_dynmods(asbe_cg *cg) {
  if (!cg->v2_mount || !cg->v2_opts) return -ENOTSUP;
  if (has_word(cg->v2_opts, "favordynmods")) return 0;
  /* keep the superblock's other options (nsdelegate, ...): a remount
   * applies exactly the options it is given */
  asbi_buf o = ASBI_BUF_INIT;
  for (char *p = cg->v2_opts; p && *p;) {
    char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (!(len == 2 && (!strncmp(p, "rw", 2) || !strncmp(p, "ro", 2))))
      asbi_buf_printf(&o, "%s%.*s", o.len ? "," : "", (int)len, p);
    p = c ? c + 1 : NULL;
  }
  asbi_buf_printf(&o, "%sfavordynmods", o.len ? "," : "");
  int r = o.data && mount("none", cg->v2_mount, NULL, MS_REMOUNT | MS_RELATIME, o.data) == 0
              ? 0
              : -errno;
  asbi_buf_free(&o);
  return r;
}

int asbe__cg_path(const asbe_cg *cg, int i, const char *id, int which, char *buf, size_t len) {
  const asbe_cg_hier *h = &cg->h[i];
  const char *sub = "";
  if (h->split && which == ASBE_CGW_AGENT) sub = "/agent";
  if (h->split && which == ASBE_CGW_WORKLOAD) sub = "/workload";
  if ((size_t)snprintf(buf, len, "%s/%s%s", h->base, id, sub) >= len) return -ENAMETOOLONG;
  return 0;
}

static int wfile(const char *dir, const char *file, const char *val) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  int r = asbe__write_str(p, val);
  if (r < 0) return asbe__fail(r, "write %s=%s", p, val);
  return 0;
}

static int chown_file(const char *dir, const char *file, uid_t uid) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  if (chown(p, uid, uid) < 0 && errno != ENOENT) return asbe__failerr("chown %s", p);
  return 0;
}

static int exists(const char *dir, const char *file) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return access(p, F_OK) == 0;
}

/* Memory + pids limits of one split child dir. */
static int set_limits(const asbe_cg_hier *h, const char *dir, uint64_t mem, uint64_t pids) {
  char v[32];
  int r;
  if ((h->ctrl & ASBE_CG_MEMORY) && mem) {
    snprintf(v, sizeof v, "%llu", (unsigned long long)mem);
    if (h->v2) {
      if ((r = wfile(dir, "memory.max", v)) < 0) return r;
      if (exists(dir, "memory.swap.max") && (r = wfile(dir, "memory.swap.max", "0")) < 0) return r;
    } else {
      if ((r = wfile(dir, "memory.limit_in_bytes", v)) < 0) return r;
      if (exists(dir, "memory.memsw.limit_in_bytes") &&
          (r = wfile(dir, "memory.memsw.limit_in_bytes", v)) < 0)
        return r;
    }
  }
  if ((h->ctrl & ASBE_CG_PIDS) && pids) {
    snprintf(v, sizeof v, "%llu", (unsigned long long)pids);
    if ((r = wfile(dir, "pids.max", v)) < 0) return r;
  }
  return 0;
}

int asbe__cg_create(const asbe_cg *cg, const char *id, const asbe_cg_limits *lim, uid_t host_uid) {
  char sb[PATH_MAX], d[PATH_MAX];
  int r;
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    asbe__cg_path(cg, i, id, ASBE_CGW_SB, sb, sizeof sb);
    int mk = mkdir(sb, 0755);
    if (mk < 0 && errno == ENOENT) {
      /* the engine's dir went (removed by hand, or by an engine that ran
       * from another cgroup): make it again */
      if (mkdir(h->base, 0755) < 0 && errno != EEXIST) return asbe__failerr("mkdir %s", h->base);
      cap_all_pids(h);
      asbe__cg_swap_base(cg);
      if (h->v2 &&
          (r = v2_enable(h->base, h->ctrl & (ASBE_CG_MEMORY | ASBE_CG_PIDS | ASBE_CG_CPU))) < 0)
        return asbe__fail(r, "enable controllers in %s", h->base);
      mk = mkdir(sb, 0755);
    }
    if (mk < 0) return asbe__failerr("mkdir %s", sb);
    /* whose it is, for the reaper of any engine using this cgroup name;
     * cgroupfs without xattrs (v1 before 5.x without the xattr option)
     * leaves it unmarked: no reaper then takes it for litter */
    if (cg->owner && setxattr(sb, ASBE_CG_OWNER_XATTR, cg->owner, strlen(cg->owner), 0) < 0 &&
        errno != EOPNOTSUPP && errno != ENOTSUP)
      return asbe__failerr("mark %s", sb);
    if ((h->ctrl & ASBE_CG_CPU) && lim->cpu_millicores) {
      char v[64];
      if (h->v2) {
        snprintf(v, sizeof v, "%llu 100000", (unsigned long long)lim->cpu_millicores * 100);
        if ((r = wfile(sb, "cpu.max", v)) < 0) return r;
      } else {
        char per[32] = "100000";
        snprintf(d, sizeof d, "%s/cpu.cfs_period_us", sb);
        asbe__read_small(d, per, sizeof per);
        unsigned long long period = strtoull(per, NULL, 10);
        if (!period) period = 100000;
        snprintf(v, sizeof v, "%llu", (unsigned long long)lim->cpu_millicores * period / 1000);
        if ((r = wfile(sb, "cpu.cfs_quota_us", v)) < 0) return r;
      }
    }
    if (!h->split) continue;
    for (int w = ASBE_CGW_AGENT; w <= ASBE_CGW_WORKLOAD; w++) {
      asbe__cg_path(cg, i, id, w, d, sizeof d);
      if (mkdir(d, 0755) < 0) return asbe__failerr("mkdir %s", d);
      if (!h->v2) {
        r = w == ASBE_CGW_AGENT ? set_limits(h, d, lim->agent_memory_bytes, lim->agent_pids_max)
                                : set_limits(h, d, lim->memory_bytes, lim->pids_max);
        if (r < 0) return r;
      }
    }
    /* root inside may move processes into the workload, nothing else */
    asbe__cg_path(cg, i, id, ASBE_CGW_WORKLOAD, d, sizeof d);
    if ((r = chown_file(d, "cgroup.procs", host_uid)) < 0) return r;
    if (!h->v2 && (r = chown_file(d, "tasks", host_uid)) < 0) return r;
    /* v2 also checks write access to the common ancestor's cgroup.procs */
    if (h->v2 && (r = chown_file(sb, "cgroup.procs", host_uid)) < 0) return r;
  }
  return 0;
}

int asbe__cg_finish(const asbe_cg *cg, const char *id, const asbe_cg_limits *lim) {
  char sb[PATH_MAX], d[PATH_MAX];
  int r;
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    if (!h->v2 || !h->split) continue;
    asbe__cg_path(cg, i, id, ASBE_CGW_SB, sb, sizeof sb);
    r = v2_enable(sb, h->ctrl & (ASBE_CG_MEMORY | ASBE_CG_PIDS));
    if (r < 0) return asbe__fail(r, "enable controllers in %s", sb);
    asbe__cg_path(cg, i, id, ASBE_CGW_AGENT, d, sizeof d);
    if ((r = set_limits(h, d, lim->agent_memory_bytes, lim->agent_pids_max)) < 0) return r;
    asbe__cg_path(cg, i, id, ASBE_CGW_WORKLOAD, d, sizeof d);
    if ((r = set_limits(h, d, lim->memory_bytes, lim->pids_max)) < 0) return r;
  }
  return 0;
}

int asbe__cg_enter(const asbe_cg *cg, const char *id, pid_t pid, int which) {
  char d[PATH_MAX], v[32];
  snprintf(v, sizeof v, "%d", (int)pid);
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    if (which == ASBE_CGW_AGENT && !h->split) continue; /* already in <id> */
    asbe__cg_path(cg, i, id, which, d, sizeof d);
    int r = wfile(d, "cgroup.procs", v);
    if (r < 0) return r;
  }
  return 0;
}

static const asbe_cg_hier *find(const asbe_cg *cg, unsigned ctrl, int *idx) {
  for (int i = 0; i < cg->n; i++)
    if (cg->h[i].ctrl & ctrl) {
      if (idx) *idx = i;
      return &cg->h[i];
    }
  return NULL;
}

int asbe__cg_freeze(const asbe_cg *cg, const char *id, int freeze) {
  char sb[PATH_MAX], p[PATH_MAX], buf[512];
  int i;
  const asbe_cg_hier *h = find(cg, ASBE_CG_CORE, &i);
  int v2 = h != NULL;
  if (!h) h = find(cg, ASBE_CG_FREEZER, &i);
  if (!h) return asbe__fail(-ENOTSUP, "no freezer");
  asbe__cg_path(cg, i, id, ASBE_CGW_SB, sb, sizeof sb);
  int r = v2 ? wfile(sb, "cgroup.freeze", freeze ? "1" : "0")
             : wfile(sb, "freezer.state", freeze ? "FROZEN" : "THAWED");
  if (r < 0) return r;
  /* wait until the kernel reports the state (up to 10 s) */
  snprintf(p, sizeof p, "%s/%s", sb, v2 ? "cgroup.events" : "freezer.state");
  for (int t = 0; t < 10000; t += 2) {
    if (asbe__read_small(p, buf, sizeof buf) < 0) break;
    int done = v2 ? (strstr(buf, freeze ? "frozen 1" : "frozen 0") != NULL)
                  : !strncmp(buf, freeze ? "FROZEN" : "THAWED", 6);
    if (done) return 0;
    sleep_ms(2);
  }
  return asbe__fail(-ETIMEDOUT, "%s %s", freeze ? "freeze" : "thaw", sb);
}

/* ---- swap of paused sandboxes (the engine's --pause-swap) ---- */

void asbe__cg_swap_base(const asbe_cg *cg) {
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    if (h->v2 || !(h->ctrl & ASBE_CG_MEMORY)) continue;
    char p[PATH_MAX], parent[PATH_MAX], v[32] = "";
    snprintf(p, sizeof p, "%s/memory.swappiness", h->base);
    if (cg->swap_block) {
      asbe__write_str(p, "0");
      continue;
    }
    /* off: what the engine's own cgroup has, should an earlier run have
     * left 0 (new sandbox cgroups inherit the dir's value) */
    snprintf(parent, sizeof parent, "%s", h->base);
    char *slash = strrchr(parent, '/');
    if (!slash) continue;
    snprintf(slash, sizeof parent - (size_t)(slash - parent), "/memory.swappiness");
    char cur[32] = "";
    if (asbe__read_small(p, cur, sizeof cur) > 0 && atoi(cur) == 0 &&
        asbe__read_small(parent, v, sizeof v) > 0 && atoi(v) != 0) {
      v[strcspn(v, "\n")] = '\0';
      asbe__write_str(p, v);
    }
  }
}

static uint64_t swap_used(const asbe_cg_hier *h, const char *sb);
static uint64_t anon_used(const asbe_cg_hier *h, const char *sb);
static uint64_t read_u64(const char *dir, const char *file);

/* cgroup v2: memory.reclaim on <id> in steps of what is still resident,
 * until its anon+shmem is (nearly) out or a step moves nothing. The
 * swappiness argument (Linux >= 6.13; v1's per-cgroup value, as below)
 * makes it swap even where vm.swappiness is 0; older kernels refuse it and
 * get the plain form. A step's progress is memory.current's, a page
 * counter the kernel updates as each page goes; memory.stat's anon and
 * shmem (the step's size) are per-cpu figures flushed lazily, which can
 * be seconds old right after a reclaim (v1's total_swap lagged so: see
 * swap_used), and would read as no progress. */
static void v2_reclaim(const char *sb) {
  const asbe_cg_hier h = {.v2 = 1, .ctrl = ASBE_CG_MEMORY};
  char p[PATH_MAX], req[64];
  snprintf(p, sizeof p, "%s/memory.reclaim", sb);
  int plain = 0;
  for (int round = 0; round < 16; round++) {
    uint64_t left = anon_used(&h, sb), resident = read_u64(sb, "memory.current");
    if (left < (1u << 20)) return;
    snprintf(req, sizeof req, plain ? "%llu" : "%llu swappiness=100", (unsigned long long)left);
    int r = asbe__write_str(p, req);
    if (r == -EINVAL && !plain) {
      plain = 1;
      continue;
    }
    /* -EAGAIN: it reclaimed less than asked; the next round sees how much */
    if (r < 0 && r != -EAGAIN) return;
    if (read_u64(sb, "memory.current") >= resident) return; /* no progress */
  }
}

int asbe__cg_swap(const asbe_cg *cg, const char *id, int out, uint64_t *moved) {
  char sb[PATH_MAX], d[PATH_MAX];
  int r;
  if (moved) *moved = 0;
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    if (!(h->ctrl & ASBE_CG_MEMORY)) continue;
    asbe__cg_path(cg, i, id, ASBE_CGW_SB, sb, sizeof sb);
    uint64_t before = swap_used(h, sb);
    /* the limits live in agent/ and workload/ when split; v1 swappiness is
     * per cgroup (each lruvec's own counts), so all three */
    for (int w = h->split ? ASBE_CGW_WORKLOAD : ASBE_CGW_SB; w >= ASBE_CGW_SB; w--) {
      asbe__cg_path(cg, i, id, w, d, sizeof d);
      const char *knob = h->v2 ? "memory.swap.max" : "memory.swappiness";
      if (h->v2 && w == ASBE_CGW_SB && h->split) continue; /* the children limit it */
      /* no swap accounting (cgroup.memory=noswap, v2): nothing to allow or
       * forbid per cgroup */
      if (!exists(d, knob)) {
        if (out) return asbe__fail(-ENOTSUP, "%s/%s: no swap accounting here", d, knob);
        continue;
      }
      /* forbidding on v1 without swap_block: the engine dir's value, what
       * a new sandbox cgroup inherits */
      char base_val[32] = "0";
      if (!out && !h->v2 && !cg->swap_block) {
        char bp[PATH_MAX];
        snprintf(bp, sizeof bp, "%s/memory.swappiness", h->base);
        if (asbe__read_small(bp, base_val, sizeof base_val) <= 0) continue;
        base_val[strcspn(base_val, "\n")] = '\0';
      }
      if ((r = wfile(d, knob, out ? (h->v2 ? "max" : "100") : base_val)) < 0) return r;
    }
    if (!out) continue;
    if (h->v2) {
      v2_reclaim(sb);
    } else {
      /* v1: reclaims the whole subtree, retrying until a pass frees
       * nothing (what is left: kernel memory, pages swap cannot take) */
      snprintf(d, sizeof d, "%s/memory.force_empty", sb);
      if ((r = asbe__write_str(d, "1")) < 0 && r != -EBUSY && r != -EINTR)
        return asbe__fail(r, "write %s", d);
    }
    uint64_t after = swap_used(h, sb);
    if (moved && after > before) *moved += after - before;
  }
  return 0;
}

/* Asks the kernel to read back, asynchronously, the swapped-out pages of
 * one process: MADV_WILLNEED on its private writable mappings (heap,
 * stacks, anonymous and copy-on-write memory), through its pidfd. The
 * sandbox is frozen, so the pid is the one cgroup.procs listed (a frozen
 * task cannot exit unless killed from outside; should the pid have been
 * reused, the advice only reads pages in). /proc/<pid>/maps is the
 * kernel's text, not a path in the sandbox's tree. */
static void prefetch_pid(pid_t pid) {
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) return;
  char p[64], line[512];
  snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(p, "re");
  struct iovec iov[256];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || hi <= lo) continue;
    if (perms[1] != 'w' || perms[3] != 'p') continue;
    iov[n].iov_base = (void *)lo;
    iov[n].iov_len = hi - lo;
    if (++n == (int)(sizeof iov / sizeof *iov)) {
      syscall(SYS_process_madvise, pidfd, iov, (size_t)n, MADV_WILLNEED, 0u);
      n = 0;
    }
  }
  if (n) syscall(SYS_process_madvise, pidfd, iov, (size_t)n, MADV_WILLNEED, 0u);
  if (f) fclose(f);
  close(pidfd);
}

int asbe__cg_prefetch(const asbe_cg *cg, const char *id) {
  char d[PATH_MAX], p[PATH_MAX];
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    if (!(h->ctrl & ASBE_CG_MEMORY)) continue;
    for (int w = ASBE_CGW_SB; w <= (h->split ? ASBE_CGW_WORKLOAD : ASBE_CGW_SB); w++) {
      asbe__cg_path(cg, i, id, w, d, sizeof d);
      snprintf(p, sizeof p, "%s/cgroup.procs", d);
      FILE *f = fopen(p, "re");
      int pid;
      while (f && fscanf(f, "%d", &pid) == 1)
        if (pid > 0) prefetch_pid(pid);
      if (f) fclose(f);
    }
    return 0; /* one memory hierarchy has every process */
  }
  return 0;
}

/* Kills the pids listed in dir/cgroup.procs. Returns how many were listed. */
static int kill_listed(const char *dir) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/cgroup.procs", dir);
  FILE *f = fopen(p, "re");
  if (!f) return 0;
  int n = 0, pid;
  while (fscanf(f, "%d", &pid) == 1) {
    if (pid > 0) kill(pid, SIGKILL);
    n++;
  }
  fclose(f);
  return n;
}

void asbe__cg_kill(const asbe_cg *cg, const char *id) {
  char sb[PATH_MAX], d[PATH_MAX];
  int i;
  if (find(cg, ASBE_CG_CORE, &i)) {
    asbe__cg_path(cg, i, id, ASBE_CGW_SB, sb, sizeof sb);
    snprintf(d, sizeof d, "%s/cgroup.kill", sb);
    if (asbe__write_str(d, "1") == 0) return;
  }
  for (i = 0; i < cg->n; i++)
    for (int w = ASBE_CGW_SB; w <= (cg->h[i].split ? ASBE_CGW_WORKLOAD : ASBE_CGW_SB); w++) {
      asbe__cg_path(cg, i, id, w, d, sizeof d);
      kill_listed(d);
    }
}

int asbe__cg_destroy(const asbe_cg *cg, const char *id, int timeout_ms) {
  char d[PATH_MAX];
  int waited = 0, delay = 1, killed = 0;
  for (;;) {
    int busy = 0;
    for (int i = 0; i < cg->n; i++) {
      for (int w = cg->h[i].split ? ASBE_CGW_WORKLOAD : ASBE_CGW_SB; w >= ASBE_CGW_SB; w--) {
        asbe__cg_path(cg, i, id, w, d, sizeof d);
        if (rmdir(d) < 0 && errno != ENOENT) {
          if (errno != EBUSY && errno != ENOTEMPTY) return asbe__failerr("rmdir %s", d);
          busy = 1;
        }
      }
    }
    if (!busy) return 0;
    if (waited >= timeout_ms) return asbe__fail(-EBUSY, "cgroups of %s still busy", id);
    if (!killed || waited > 50) {
      asbe__cg_kill(cg, id);
      killed = 1;
    }
    sleep_ms(delay);
    waited += delay;
    if (delay < 20) delay *= 2;
  }
}

int asbe__cg_exists(const asbe_cg *cg, const char *id) {
  char d[PATH_MAX];
  for (int i = 0; i < cg->n; i++) {
    asbe__cg_path(cg, i, id, ASBE_CGW_SB, d, sizeof d);
    if (access(d, F_OK) == 0) return 1;
  }
  return 0;
}

int asbe__cg_owned(const asbe_cg *cg, int i, const char *id, char *other, size_t olen) {
  char d[PATH_MAX], v[PATH_MAX];
  if (other && olen) other[0] = '\0';
  if (asbe__cg_path(cg, i, id, ASBE_CGW_SB, d, sizeof d) < 0) return 0;
  ssize_t n = getxattr(d, ASBE_CG_OWNER_XATTR, v, sizeof v - 1);
  if (n < 0) return 0;
  v[n] = '\0';
  if (cg->owner && !strcmp(v, cg->owner)) return 1;
  if (other && olen) snprintf(other, olen, "%s", v);
  return -1;
}

static uint64_t read_u64(const char *dir, const char *file) {
  char p[PATH_MAX], buf[64];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  if (asbe__read_small(p, buf, sizeof buf) <= 0) return 0;
  if (!strncmp(buf, "max", 3)) return 0;
  return strtoull(buf, NULL, 10);
}

/* Value of "key N" in a flat-keyed file. */
static uint64_t read_key(const char *dir, const char *file, const char *key) {
  char p[PATH_MAX], buf[4096];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  if (asbe__read_small(p, buf, sizeof buf) <= 0) return 0;
  size_t kl = strlen(key);
  for (char *l = buf; l && *l;) {
    if (!strncmp(l, key, kl) && l[kl] == ' ') return strtoull(l + kl + 1, NULL, 10);
    l = strchr(l, '\n');
    if (l) l++;
  }
  return 0;
}

/* v2's memory.swap.current is a page counter, exact when read. v1's
 * memory.stat total_swap is not: the kernel flushes the per-cpu statistics
 * of memory.stat lazily (seen on 6.18: a read right after force_empty
 * showed 106 of the 262 MiB it had just swapped out, the rest ~2 s later).
 * memsw (memory + swap) and memory are page counters, updated together
 * when a page leaves for swap, so their difference is the swap in use at
 * once; total_swap only where the kernel has no memsw (swapaccount=0). */
static uint64_t swap_used(const asbe_cg_hier *h, const char *sb) {
  if (h->v2) return read_u64(sb, "memory.swap.current");
  if (!exists(sb, "memory.memsw.usage_in_bytes")) return read_key(sb, "memory.stat", "total_swap");
  uint64_t mem = read_u64(sb, "memory.usage_in_bytes");
  uint64_t memsw = read_u64(sb, "memory.memsw.usage_in_bytes");
  return memsw > mem ? memsw - mem : 0;
}

static uint64_t anon_used(const asbe_cg_hier *h, const char *sb) {
  return h->v2 ? read_key(sb, "memory.stat", "anon") + read_key(sb, "memory.stat", "shmem")
               : read_key(sb, "memory.stat", "total_rss") +
                     read_key(sb, "memory.stat", "total_shmem");
}

int asbe__cg_stats(const asbe_cg *cg, const char *id, asbe_stats *st) {
  char sb[PATH_MAX], ag[PATH_MAX], wl[PATH_MAX];
  memset(st, 0, sizeof *st);
  for (int i = 0; i < cg->n; i++) {
    const asbe_cg_hier *h = &cg->h[i];
    asbe__cg_path(cg, i, id, ASBE_CGW_SB, sb, sizeof sb);
    asbe__cg_path(cg, i, id, ASBE_CGW_AGENT, ag, sizeof ag);
    asbe__cg_path(cg, i, id, ASBE_CGW_WORKLOAD, wl, sizeof wl);
    if (access(sb, F_OK) < 0) return asbe__failerr("cgroup %s", sb);
    if (h->ctrl & ASBE_CG_MEMORY) {
      if (h->v2) {
        st->memory_bytes = read_u64(sb, "memory.current");
        st->memory_limit_bytes = read_u64(wl, "memory.max");
        st->oom_kills = read_key(wl, "memory.events", "oom_kill");
        st->agent_oom_kills = read_key(ag, "memory.events", "oom_kill");
        st->swap_bytes = swap_used(h, sb);
        st->anon_bytes = anon_used(h, sb);
      } else {
        st->memory_bytes = read_u64(sb, "memory.usage_in_bytes");
        st->memory_limit_bytes = read_u64(wl, "memory.limit_in_bytes");
        if (st->memory_limit_bytes >= (1ull << 62)) st->memory_limit_bytes = 0;
        st->oom_kills = read_key(wl, "memory.oom_control", "oom_kill");
        st->agent_oom_kills = read_key(ag, "memory.oom_control", "oom_kill");
        st->swap_bytes = swap_used(h, sb);
        st->anon_bytes = anon_used(h, sb);
      }
    }
    if (h->ctrl & ASBE_CG_PIDS) st->pids_current = read_u64(sb, "pids.current");
    if (h->ctrl & ASBE_CG_CPUACCT)
      st->cpu_usage_ns = read_u64(sb, "cpuacct.usage");
    else if (h->v2 && (h->ctrl & ASBE_CG_CPU))
      st->cpu_usage_ns = read_key(sb, "cpu.stat", "usage_usec") * 1000;
    if (h->ctrl & ASBE_CG_CORE) st->frozen = read_key(sb, "cgroup.events", "frozen") != 0;
    if (h->ctrl & ASBE_CG_FREEZER) {
      char p[PATH_MAX], buf[32];
      snprintf(p, sizeof p, "%s/freezer.state", sb);
      if (asbe__read_small(p, buf, sizeof buf) > 0) st->frozen = !strncmp(buf, "FROZEN", 6);
    }
  }
  /* cpu usage without cpuacct on v1 is unavailable: leave 0 */
  return 0;
}
