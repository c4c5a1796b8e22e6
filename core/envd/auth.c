/* envd: users and per-thread filesystem credentials.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "auth.h"
#include "util/base64.h"
#include "util/util.h"

/* ---- users ------------------------------------------------------------- */

/* Lookups are cached and dropped whenever /etc/passwd or /etc/group
 * changes (by mtime/size/inode), so a useradd in the sandbox is seen at
 * once while the hot path costs two stat calls. */
#define UCACHE 16
#define NCACHE 64
typedef struct ucache_ent {
  int used;
  envd_user u;
} ucache_ent;
typedef struct ncache_ent {
  int used;
  int is_group;
  unsigned id;
  char name[64];
} ncache_ent;

static struct {
  pthread_mutex_t lock;
  ucache_ent users[UCACHE];
  ncache_ent names[NCACHE];
  unsigned users_next, names_next; /* round-robin replacement */
  struct stat passwd, group;       /* the files the entries came from */
  uint64_t checked_us;             /* last look at them (every 20 ms at most) */
} g_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Called with g_cache.lock held. */
static void cache_validate(void) {
  uint64_t now = asbi_now_us();
  if (g_cache.checked_us && now - g_cache.checked_us < 20000) return;
  g_cache.checked_us = now;
  struct stat a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  stat("/etc/passwd", &a);
  stat("/etc/group", &b);
  if (!same_file(&a, &g_cache.passwd) || !same_file(&b, &g_cache.group)) {
    memset(g_cache.users, 0, sizeof g_cache.users);
    memset(g_cache.names, 0, sizeof g_cache.names);
    g_cache.passwd = a;
    g_cache.group = b;
  }
}

int envd_user_lookup(const char *name, envd_user *out) {
  if (asbi_empty(name) || strlen(name) >= sizeof out->name) return -1;
  pthread_mutex_lock(&g_cache.lock);
  cache_validate();
  for (int i = 0; i < UCACHE; i++) {
    if (g_cache.users[i].used && strcmp(g_cache.users[i].u.name, name) == 0) {
      *out = g_cache.users[i].u;
      pthread_mutex_unlock(&g_cache.lock);
      return 0;
    }
  }
  pthread_mutex_unlock(&g_cache.lock);

  struct passwd pw, *res = NULL;
  char buf[4096];
  if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res) return -1;
  envd_user u;
  memset(&u, 0, sizeof u);
  snprintf(u.name, sizeof u.name, "%s", pw.pw_name);
  u.uid = pw.pw_uid;
  u.gid = pw.pw_gid;
  snprintf(u.home, sizeof u.home, "%s", pw.pw_dir ? pw.pw_dir : "/");
  int ng = (int)ASBI_ARRAY_LEN(u.groups);
  if (getgrouplist(pw.pw_name, pw.pw_gid, u.groups, &ng) < 0)
    ng = (int)ASBI_ARRAY_LEN(u.groups); /* truncated: keep what fits */
  u.ngroups = ng;

  pthread_mutex_lock(&g_cache.lock);
  g_cache.users[g_cache.users_next++ % UCACHE] = (ucache_ent){1, u};
  pthread_mutex_unlock(&g_cache.lock);
  *out = u;
  return 0;
}

static void id_name(int is_group, unsigned id, char *out, size_t n) {
  pthread_mutex_lock(&g_cache.lock);
  cache_validate();
  for (int i = 0; i < NCACHE; i++) {
    if (g_cache.names[i].used && g_cache.names[i].is_group == is_group &&
        g_cache.names[i].id == id) {
      snprintf(out, n, "%s", g_cache.names[i].name);
      pthread_mutex_unlock(&g_cache.lock);
      return;
    }
  }
  pthread_mutex_unlock(&g_cache.lock);
  char buf[4096];
  const char *nm = NULL;
  if (is_group) {
    struct group gr, *res = NULL;
    if (getgrgid_r((gid_t)id, &gr, buf, sizeof buf, &res) == 0 && res) nm = gr.gr_name;
  } else {
    struct passwd pw, *res = NULL;
    if (getpwuid_r((uid_t)id, &pw, buf, sizeof buf, &res) == 0 && res) nm = pw.pw_name;
  }
  ncache_ent e;
  memset(&e, 0, sizeof e);
  e.used = 1;
  e.is_group = is_group;
  e.id = id;
  if (nm)
    snprintf(e.name, sizeof e.name, "%s", nm);
  else
    snprintf(e.name, sizeof e.name, "%u", id);
  snprintf(out, n, "%s", e.name);
  pthread_mutex_lock(&g_cache.lock);
  g_cache.names[g_cache.names_next++ % NCACHE] = e;
  pthread_mutex_unlock(&g_cache.lock);
}

void envd_uid_name(uid_t uid, char *out, size_t n) {
  id_name(0, uid, out, n);
}
void envd_gid_name(gid_t gid, char *out, size_t n) {
  id_name(1, gid, out, n);
}

/* ---- per-thread credentials ---------------------------------------------
 * fsuid/fsgid and (through the raw system call, not glibc's process-wide
 * setgroups) the supplementary groups are attributes of the calling thread
 * on Linux. The kernel checks every path lookup, open, mkdir, rename... of
 * this thread against them, so symlinks and "../" can only reach what the
 * user may reach, and whatever the thread creates is owned by the user. */
static struct {
  pthread_once_t once; /* saves root's groups on the first enter */
  gid_t groups[64];
  int ngroups;
} g_root = {PTHREAD_ONCE_INIT, {0}, -1};

static void save_groups(void) {
  int n = getgroups((int)ASBI_ARRAY_LEN(g_root.groups), g_root.groups);
  g_root.ngroups = n < 0 ? 0 : n;
}

/* What the calling thread currently runs as (-1: root's own, unchanged),
 * so repeated enters for the same user and leaves cost no system call. */
static _Thread_local long t_uid = -1;
static _Thread_local long t_gid = -1;

int envd_creds_enter(const envd_user *u) {
  pthread_once(&g_root.once, save_groups);
  uid_t me = geteuid();
  if (me != 0) {
    if (u->uid == me) return 0; /* non-root envd acting as itself */
    errno = EPERM;
    return -1;
  }
  if (u->uid == 0 && u->gid == 0 && t_uid < 0) return 0; /* root as root */
  if (t_uid == (long)u->uid && t_gid == (long)u->gid) return 0;
  if (syscall(SYS_setgroups, (size_t)u->ngroups, u->groups) != 0) return -1;
  setfsgid(u->gid);
  setfsuid(u->uid);
  if ((uid_t)setfsuid((uid_t)-1) != u->uid || (gid_t)setfsgid((gid_t)-1) != u->gid) {
    t_uid = t_gid = 0;
    envd_creds_leave();
    errno = EPERM;
    return -1;
  }
  t_uid = (long)u->uid;
  t_gid = (long)u->gid;
  return 0;
}

void envd_creds_leave(void) {
  if (t_uid < 0) return;
  pthread_once(&g_root.once, save_groups);
  setfsuid(0);
  setfsgid(getegid());
  syscall(SYS_setgroups, (size_t)g_root.ngroups, g_root.groups);
  t_uid = t_gid = -1;
}
