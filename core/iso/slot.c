/* uid slots: slot N maps uids 0..65535 inside to 100000+N*65536 on the host.
 * A machine-wide registry dir (one file per claimed slot, "pid starttime
 * sandbox-dir" of the engine that claimed it) keeps two sandboxes, even of
 * two engines, from sharing host uids. A claim is stale, and may be taken
 * over, once that engine is gone and the sandbox's record names no live
 * init either.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "iso_int.h"

static void slot_path(asbe_engine *e, uint32_t slot, char *buf, size_t len) {
  snprintf(buf, len, "%s/%u", e->slot_dir, slot);
}

/* Writes the claim in place (taking over a stale one truncates it only if
 * the length differs: truncation makes ext4 flush on close). */
static int write_owner(int fd, pid_t pid, uint64_t start, const char *dir) {
  char buf[PATH_MAX + 64];
  int n = snprintf(buf, sizeof buf, "%10d %20llu %s\n", (int)pid, (unsigned long long)start, dir);
  if (pwrite(fd, buf, (size_t)n, 0) != n) return -EIO;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size != n && ftruncate(fd, n) < 0) return -errno;
  return 0;
}

/* Reads the owner; returns 1 if the claim is stale. */
static int read_owner(int fd, char *dir, size_t dirlen) {
  char buf[PATH_MAX + 64];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (dir && dirlen) dir[0] = '\0';
  struct stat st;
  if (n <= 0) {
    /* being written, or its writer died right after creating it */
    if (fstat(fd, &st) == 0 && time(NULL) - st.st_mtime > 10) return 1;
    return 0;
  }
  buf[n] = '\0';
  int pid = 0;
  unsigned long long start = 0;
  int off = 0;
  if (sscanf(buf, "%d %llu %n", &pid, &start, &off) < 2) return 1;
  if (dir && dirlen) {
    snprintf(dir, dirlen, "%s", buf + off);
    dir[strcspn(dir, "\n")] = '\0';
  }
  if (pid > 0 && asbe__proc_starttime(pid) == start) return 0;
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%s", buf + off);
  d[strcspn(d, "\n")] = '\0';
  /* a paused sandbox (no process, booted again on resume) keeps its
   * slot: its writable layer's files belong to the slot's host uids */
  return !asbe__rec_alive(d) && !asbe__rec_paused(d);
}

/* Opens and locks an existing slot file; -ENOENT if it was replaced. */
static int open_locked(const char *path) {
  for (;;) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -errno;
    if (flock(fd, LOCK_EX) < 0) {
      close(fd);
      return -errno;
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
      return fd;
    close(fd); /* unlinked under us: look again */
    if (access(path, F_OK) < 0) return -ENOENT;
  }
}

int asbe__slot_claim(asbe_engine *e, const char *owner_dir, uint32_t *slot) {
  pid_t me = getpid();
  uint64_t my_start = asbe__proc_starttime(me);
  for (uint32_t tries = 0; tries < e->slot_count; tries++) {
    pthread_mutex_lock(&e->lock);
    uint32_t s = e->slot_first + (e->slot_next++ % e->slot_count);
    pthread_mutex_unlock(&e->lock);
    char path[PATH_MAX];
    slot_path(e, s, path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      flock(fd, LOCK_EX);
      int r = write_owner(fd, me, my_start, owner_dir);
      close(fd);
      if (r < 0) {
        unlink(path);
        return asbe__fail(r, "write %s", path);
      }
      *slot = s;
      return 0;
    }
    if (errno != EEXIST) return asbe__failerr("create %s", path);
    fd = open_locked(path);
    if (fd < 0) continue;
    if (read_owner(fd, NULL, 0)) {
      int r = write_owner(fd, me, my_start, owner_dir);
      close(fd);
      if (r == 0) {
        *slot = s;
        return 0;
      }
      continue;
    }
    close(fd);
  }
  return asbe__fail(-EAGAIN, "no free uid slot in %s", e->slot_dir);
}

void asbe__slot_release(asbe_engine *e, uint32_t slot, const char *owner_dir) {
  char path[PATH_MAX], dir[PATH_MAX];
  slot_path(e, slot, path, sizeof path);
  int fd = open_locked(path);
  if (fd < 0) return;
  read_owner(fd, dir, sizeof dir);
  if (!strcmp(dir, owner_dir)) unlink(path);
  close(fd);
}

int asbe__slot_retake(asbe_engine *e, uint32_t slot, const char *owner_dir) {
  char path[PATH_MAX], dir[PATH_MAX];
  slot_path(e, slot, path, sizeof path);
  pid_t me = getpid();
  uint64_t my_start = asbe__proc_starttime(me);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    flock(fd, LOCK_EX);
  } else {
    if (errno != EEXIST) return asbe__failerr("create %s", path);
    if ((fd = open_locked(path)) < 0) return asbe__fail(fd, "open %s", path);
    int stale = read_owner(fd, dir, sizeof dir);
    if (strcmp(dir, owner_dir) && !stale) {
      close(fd);
      return asbe__fail(-EBUSY, "uid slot %u is held by %s", slot, dir);
    }
  }
  int r = write_owner(fd, me, my_start, owner_dir);
  close(fd);
  return r < 0 ? asbe__fail(r, "write %s", path) : 0;
}

unsigned asbe__slot_reap(asbe_engine *e) {
  DIR *d = opendir(e->slot_dir);
  if (!d) return 0;
  unsigned n = 0;
  size_t sl = strlen(e->state_dir);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char path[PATH_MAX], dir[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", e->slot_dir, de->d_name);
    int fd = open_locked(path);
    if (fd < 0) continue;
    int stale = read_owner(fd, dir, sizeof dir);
    if (stale && !strncmp(dir, e->state_dir, sl) && dir[sl] == '/') {
      unlink(path);
      n++;
    }
    close(fd);
  }
  closedir(d);
  return n;
}
