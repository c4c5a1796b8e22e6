/* The writable layer: a per-sandbox ext4 image (sparse file in the sandbox's
 * state dir) on a loop device, mounted with fsmount(2) as a DETACHED mount
 * that is only ever attached inside the sandbox's mount namespace. The loop
 * device has LO_FLAGS_AUTOCLEAR, so it goes away with the last mount; an
 * engine crash (fds closed) leaks neither mounts nor loop devices.
 *
 * Images are cloned from a golden image made once per size by mkfs.ext4 (no
 * journal, lazy inode tables, sparse: ~150-250 KiB of data), and a pool of
 * ready, already-mounted images is kept by a background thread so that
 * create only renames a file and hands over a mount fd.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/util.h"

typedef struct pool_entry {
  char *path;
  int mfd;
  uint64_t bytes;
} pool_entry;

struct asbe_pool {
  pthread_t thr;
  pthread_cond_t cv;
  int started, stop;
  pool_entry *v;
  size_t n, cap;
};

#define MIN_DISK (16ull << 20)

static int golden_path(asbe_engine *e, uint64_t bytes, char *buf, size_t len) {
  if ((size_t)snprintf(buf, len, "%s/golden-%llu.img", e->pool_dir, (unsigned long long)bytes) >=
      len)
    return -ENAMETOOLONG;
  return 0;
}

static const char *mkfs_path(void) {
  static const char *const cands[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/sbin/mke2fs",
                                      "/sbin/mke2fs"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(cands); i++)
    if (access(cands[i], X_OK) == 0) return cands[i];
  return "mkfs.ext4";
}

static int ensure_golden(asbe_engine *e, uint64_t bytes, char *path, size_t len) {
  int r = golden_path(e, bytes, path, len);
  if (r < 0) return asbe__fail(r, "golden image path");
  if (access(path, F_OK) == 0) return 0;
  char tmp[PATH_MAX];
  char rnd[17];
  asbi_random_hex(rnd, 16);
  snprintf(tmp, sizeof tmp, "%s/tmp-%s.img", e->pool_dir, rnd);
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return asbe__failerr("create %s", tmp);
  if (ftruncate(fd, (off_t)bytes) < 0) {
    r = asbe__failerr("truncate %s", tmp);
    close(fd);
    unlink(tmp);
    return r;
  }
  close(fd);
  const char *mkfs = mkfs_path();
  const char *argv[] = {mkfs,
                        "-q",
                        "-F",
                        "-t",
                        "ext4",
                        "-b",
                        "4096",
                        "-m",
                        "0",
                        "-O",
                        "^has_journal,^resize_inode",
                        "-E",
                        "lazy_itable_init=1,nodiscard,root_owner=0:0",
                        "-L",
                        "asb-disk",
                        tmp,
                        NULL};
  r = asbe__run_capture(argv, NULL);
  if (r != 0) {
    unlink(tmp);
    return asbe__fail(r < 0 ? r : -EIO, "%s (exit %d) for a %llu-byte image", mkfs, r,
                      (unsigned long long)bytes);
  }
  if (rename(tmp, path) < 0) {
    r = asbe__failerr("rename %s", tmp);
    unlink(tmp);
    return r;
  }
  return 0;
}

/* Copies only the allocated extents of src (a sparse image). */
static int sparse_copy(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return asbe__failerr("open %s", src);
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    int r = asbe__failerr("create %s", dst);
    close(in);
    return r;
  }
  struct stat st;
  int r = 0;
  if (fstat(in, &st) < 0) r = asbe__failerr("stat %s", src);
  off_t pos = 0;
  uint64_t copied = 0, budget = (uint64_t)st.st_blocks * 512 + (8u << 20);
  while (r == 0 && pos < st.st_size) {
    off_t d = lseek(in, pos, SEEK_DATA);
    if (d < 0) {
      if (errno != ENXIO) r = asbe__failerr("SEEK_DATA %s", src);
      break;
    }
    off_t h = lseek(in, d, SEEK_HOLE);
    if (h < 0) h = st.st_size;
    loff_t io = d, oo = d;
    size_t left = (size_t)(h - d);
    copied += left;
    if (copied > budget) {
      /* SEEK_DATA unsupported here: refuse to write the whole image */
      r = asbe__fail(-EOPNOTSUPP, "sparse copy of %s", src);
      break;
    }
    while (left) {
      ssize_t n = copy_file_range(in, &io, out, &oo, left, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        r = asbe__failerr("copy %s", src);
        break;
      }
      left -= (size_t)n;
    }
    pos = h;
  }
  if (r == 0 && ftruncate(out, st.st_size) < 0) r = asbe__failerr("truncate %s", dst);
  close(in);
  close(out);
  if (r < 0) unlink(dst);
  return r;
}

/* Loop devices are a machine-wide pool: LOOP_CTL_GET_FREE names a free one
 * but does not reserve it, so concurrent attachers (this engine's creates and
 * its pool thread, other engines, losetup, systemd...) all get the same
 * number and all but one fail LOOP_CONFIGURE with EBUSY. Attachers take an
 * exclusive flock on /dev/loop-control for GET_FREE + LOOP_CONFIGURE, as
 * systemd's loop-util does: every engine (each attach opens its own
 * descriptor, so threads of one process too) and systemd wait for each other
 * instead of racing. A program that does not lock can still take the device
 * we were given; then we ask again (after a short pause if it is the same
 * device, someone holding it open exclusively). The machine is out of loop
 * devices when LOOP_CTL_GET_FREE itself fails (it makes new ones up to the
 * loop module's max_loop, or the minor numbers); LOOP_ATTEMPTS only stops a
 * program that keeps taking every device we are given. */
#define LOOP_ATTEMPTS 200

static void pause_ms(int ms) {
  struct timespec ts = {0, (long)ms * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

/* Attaches path to a free loop device (AUTOCLEAR, direct I/O). Returns the
 * open loop fd; keep it open until the filesystem holds the device. */
static int loop_attach_mode(const char *path, char *dev, size_t devlen, int ro) {
  int bfd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (bfd < 0) return asbe__failerr("open %s", path);
  int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) {
    int r = asbe__failerr("open /dev/loop-control");
    close(bfd);
    return r;
  }
  int r = 0;
  while (flock(ctl, LOCK_EX) < 0)
    if (errno != EINTR) {
      r = asbe__failerr("lock /dev/loop-control");
      close(ctl);
      close(bfd);
      return r;
    }
  int last = -1, same = 0, attempt = 0;
  for (; attempt < LOOP_ATTEMPTS; attempt++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    if (n < 0) {
      r = asbe__failerr("no free loop device (LOOP_CTL_GET_FREE; the loop module's max_loop?)");
      break;
    }
    if (n == last && same < 5)
      same++;
    else if (n != last)
      same = 0;
    if (same) pause_ms(1 << same); /* 2..32 ms: it is held open exclusively */
    last = n;
    snprintf(dev, devlen, "/dev/loop%d", n);
    int lfd = open(dev, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (lfd < 0) {
      if (errno == ENOENT || errno == ENXIO) continue; /* removed meanwhile */
      r = asbe__failerr("open %s", dev);
      break;
    }
    struct loop_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (uint32_t)bfd;
    cfg.block_size = 4096;
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO | (ro ? LO_FLAGS_READ_ONLY : 0);
    int ok = ioctl(lfd, LOOP_CONFIGURE, &cfg);
    if (ok < 0 && errno == EINVAL) {
      /* no O_DIRECT on this fs */
      cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | (ro ? LO_FLAGS_READ_ONLY : 0);
      ok = ioctl(lfd, LOOP_CONFIGURE, &cfg);
    }
    if (ok == 0) {
      close(ctl); /* unlocks */
      close(bfd);
      return lfd;
    }
    int err = errno;
    close(lfd);
    if (err == EBUSY) continue; /* taken by a program that does not lock */
    r = asbe__fail(-err, "LOOP_CONFIGURE %s", dev);
    break;
  }
  if (attempt == LOOP_ATTEMPTS)
    r = asbe__fail(-EBUSY, "no loop device: %d free ones were taken by others first", attempt);
  close(ctl);
  close(bfd);
  return r;
}

static int loop_attach(const char *path, char *dev, size_t devlen) {
  return loop_attach_mode(path, dev, devlen, 0);
}

static int fsmount_ext4_mode(const char *dev, int ro) {
  int fs = fsopen("ext4", FSOPEN_CLOEXEC);
  if (fs < 0) return asbe__failerr("fsopen ext4");
  int r = 0;
  if (fsconfig(fs, FSCONFIG_SET_STRING, "source", dev, 0) < 0 ||
      (!ro && fsconfig(fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL, 0) < 0) ||
      (ro && fsconfig(fs, FSCONFIG_SET_FLAG, "ro", NULL, 0) < 0) ||
      fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    r = asbe__failerr("mount ext4 %s", dev);
  int m = r < 0 ? r
                : fsmount(fs, FSMOUNT_CLOEXEC,
                          MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | (ro ? MOUNT_ATTR_RDONLY : 0));
  if (m < 0 && r == 0) r = asbe__failerr("fsmount %s", dev);
  close(fs);
  return r < 0 ? r : m;
}

static int fsmount_ext4(const char *dev) {
  return fsmount_ext4_mode(dev, 0);
}

int asbe__disk_mount_ro(const char *path, int *mfd) {
  char dev[64];
  int lfd = loop_attach_mode(path, dev, sizeof dev, 1);
  if (lfd < 0) return lfd;
  int m = fsmount_ext4_mode(dev, 1);
  close(lfd); /* the mount holds the device now; without one, autoclear */
  if (m < 0) return m;
  *mfd = m;
  return 0;
}

int asbe__disk_mount_live(asbe_sandbox *sb, int *mfd) {
  if (!sb->run_dev || major(sb->run_dev) != 7 /* loop */)
    return asbe__fail(-ENOTSUP, "sandbox %s has no disk image writable layer (tmpfs?)", sb->id);
  /* The loop device of that st_dev: its backing file must be this
   * sandbox's image (a device number alone could name another's). */
  char sys[128], back[PATH_MAX], img[PATH_MAX], dev[64];
  snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u/loop/backing_file", major(sb->run_dev),
           minor(sb->run_dev));
  if (asbe__read_small(sys, back, sizeof back) <= 0)
    return asbe__failerr("sandbox %s: no loop device %u:%u", sb->id, major(sb->run_dev),
                         minor(sb->run_dev));
  back[strcspn(back, "\n")] = '\0';
  snprintf(img, sizeof img, "%s/disk.img", sb->dir);
  if (strcmp(back, img) != 0)
    return asbe__fail(-ESTALE, "sandbox %s: loop device %u:%u is not its image", sb->id,
                      major(sb->run_dev), minor(sb->run_dev));
  snprintf(dev, sizeof dev, "/dev/loop%u", minor(sb->run_dev));
  struct stat st;
  if (stat(dev, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != sb->run_dev)
    return asbe__fail(-ESTALE, "sandbox %s: %s is not device %u:%u", sb->id, dev,
                      major(sb->run_dev), minor(sb->run_dev));
  /* Read-write superblock flags as the sandbox's mount has them (a
   * read-only request for a superblock in use read-write is EBUSY); the
   * mount itself is read-only. */
  int m = fsmount_ext4_mode(dev, 0);
  if (m < 0) return m;
  struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY};
  if (fstat(m, &st) < 0 || st.st_dev != sb->run_dev ||
      mount_setattr(m, "", AT_EMPTY_PATH, &ma, sizeof ma) < 0) {
    int r = asbe__fail(errno ? -errno : -ESTALE, "sandbox %s: second mount of its layer", sb->id);
    close(m);
    return r;
  }
  *mfd = m;
  return 0;
}

int asbe__disk_mount_rw(const char *path, int *mfd) {
  char dev[64];
  int lfd = loop_attach(path, dev, sizeof dev);
  if (lfd < 0) return lfd;
  int m = fsmount_ext4(dev);
  close(lfd); /* the mount holds the device now; without one, autoclear */
  if (m < 0) return m;
  *mfd = m;
  return 0;
}

/* New image at dst, attached and mounted: returns the mount fd. */
static int make_image(asbe_engine *e, uint64_t bytes, const char *dst) {
  char golden[PATH_MAX], dev[64];
  int r = ensure_golden(e, bytes, golden, sizeof golden);
  if (r < 0) return r;
  if ((r = sparse_copy(golden, dst)) < 0) return r;
  int lfd = loop_attach(dst, dev, sizeof dev);
  if (lfd < 0) {
    unlink(dst);
    return lfd;
  }
  int m = fsmount_ext4(dev);
  close(lfd); /* with a mount the fs holds the device; without, autoclear */
  if (m < 0) {
    unlink(dst);
    return m;
  }
  /* the layout the sandbox needs, made ahead (create only chowns it) */
  static const char *const dirs[] = {"upper", "work", "run"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(dirs); i++)
    if (mkdirat(m, dirs[i], 0755) < 0 && errno != EEXIST) {
      int r = asbe__failerr("mkdir %s on %s", dirs[i], dst);
      close(m);
      unlink(dst);
      return r;
    }
  return m;
}

static uint64_t norm_bytes(uint64_t b) {
  if (!b) b = 1ull << 30;
  if (b < MIN_DISK) b = MIN_DISK;
  return (b + 4095) & ~4095ull;
}

int asbe__disk_take(asbe_engine *e, uint64_t bytes, const char *dst, int *mfd) {
  bytes = norm_bytes(bytes);
  asbe_pool *p = e->pool;
  if (p) {
    pool_entry got = {NULL, -1, 0};
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < p->n; i++)
      if (p->v[i].bytes == bytes) {
        got = p->v[i];
        p->v[i] = p->v[--p->n];
        break;
      }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&e->lock);
    if (got.path) {
      int ok = rename(got.path, dst) == 0;
      if (!ok) { /* someone removed it: drop the entry, make a fresh one */
        close(got.mfd);
        unlink(got.path);
      }
      free(got.path);
      if (ok) {
        *mfd = got.mfd;
        return 0;
      }
    }
  }
  int m = make_image(e, bytes, dst);
  if (m < 0) return m;
  *mfd = m;
  return 0;
}

int asbe__disk_tmpfs(uint64_t bytes, int *mfd) {
  char sz[32];
  snprintf(sz, sizeof sz, "%llu", (unsigned long long)norm_bytes(bytes));
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return asbe__failerr("fsopen tmpfs");
  int r = 0;
  if (fsconfig(fs, FSCONFIG_SET_STRING, "size", sz, 0) < 0 ||
      fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
      fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    r = asbe__failerr("tmpfs");
  int m = r < 0 ? r : fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID);
  if (m < 0 && r == 0) r = asbe__failerr("fsmount tmpfs");
  close(fs);
  if (r < 0) return r;
  *mfd = m;
  return 0;
}

/* ---- pool ---------------------------------------------------------------- */

static size_t count_locked(asbe_pool *p, uint64_t bytes) {
  size_t c = 0;
  for (size_t i = 0; i < p->n; i++) c += p->v[i].bytes == bytes;
  return c;
}

/* Makes one pooled image (no lock held) and adds it. */
static int pool_add_one(asbe_engine *e, uint64_t bytes) {
  char path[PATH_MAX], rnd[17];
  asbi_random_hex(rnd, 16);
  snprintf(path, sizeof path, "%s/img-%s.img", e->pool_dir, rnd);
  int m = make_image(e, bytes, path);
  if (m < 0) return m;
  asbe_pool *p = e->pool;
  pthread_mutex_lock(&e->lock);
  if (p->n == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 8;
    pool_entry *nv = realloc(p->v, nc * sizeof *nv);
    if (!nv) {
      pthread_mutex_unlock(&e->lock);
      close(m);
      unlink(path);
      return asbe__fail(-ENOMEM, "pool");
    }
    p->v = nv;
    p->cap = nc;
  }
  p->v[p->n].path = strdup(path);
  p->v[p->n].mfd = m;
  p->v[p->n].bytes = bytes;
  p->n++;
  pthread_mutex_unlock(&e->lock);
  return 0;
}

static void *pool_main(void *arg) {
  asbe_engine *e = arg;
  asbe_pool *p = e->pool;
  int failures = 0;
  pthread_mutex_lock(&e->lock);
  while (!p->stop) {
    if (count_locked(p, e->pool_bytes) >= e->pool_target || failures > 3) {
      pthread_cond_wait(&p->cv, &e->lock);
      failures = 0;
      continue;
    }
    pthread_mutex_unlock(&e->lock);
    if (pool_add_one(e, e->pool_bytes) < 0) failures++;
    pthread_mutex_lock(&e->lock);
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

static int pool_init(asbe_engine *e) {
  if (e->pool) return 0;
  asbe_pool *p = calloc(1, sizeof *p);
  if (!p) return asbe__fail(-ENOMEM, "pool");
  pthread_cond_init(&p->cv, NULL);
  e->pool = p;
  return 0;
}

int asbe__pool_start(asbe_engine *e) {
  int r = pool_init(e);
  if (r < 0) return r;
  if (!e->pool_bytes || !e->pool_target) return 0;
  e->pool_bytes = norm_bytes(e->pool_bytes);
  /* make the golden image now so the first creates are not slowed */
  char golden[PATH_MAX];
  if ((r = ensure_golden(e, e->pool_bytes, golden, sizeof golden)) < 0) return r;
  r = pthread_create(&e->pool->thr, NULL, pool_main, e);
  if (r) return asbe__fail(-r, "pool thread");
  e->pool->started = 1;
  return 0;
}

void asbe__pool_stop(asbe_engine *e) {
  asbe_pool *p = e->pool;
  if (!p) return;
  if (p->started) {
    pthread_mutex_lock(&e->lock);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&e->lock);
    pthread_join(p->thr, NULL);
  }
  for (size_t i = 0; i < p->n; i++) {
    close(p->v[i].mfd);
    unlink(p->v[i].path);
    free(p->v[i].path);
  }
  free(p->v);
  pthread_cond_destroy(&p->cv);
  free(p);
  e->pool = NULL;
}

int asbe__pool_fill(asbe_engine *e, uint64_t bytes, unsigned n) {
  int r = pool_init(e);
  if (r < 0) return r;
  bytes = norm_bytes(bytes);
  for (;;) {
    pthread_mutex_lock(&e->lock);
    size_t have = count_locked(e->pool, bytes);
    pthread_mutex_unlock(&e->lock);
    if (have >= n) return 0;
    if ((r = pool_add_one(e, bytes)) < 0) return r;
  }
}

int asbe__pool_holds(asbe_engine *e, const char *path) {
  asbe_pool *p = e->pool;
  if (!p) return 0;
  int found = 0;
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < p->n && !found; i++) found = !strcmp(p->v[i].path, path);
  pthread_mutex_unlock(&e->lock);
  return found;
}

/* ---- loop device scan (reaper, tests) ------------------------------------ */

static int scan_loops(const char *dir, int detach, int (*skip)(const char *path, void *ctx),
                      void *ctx) {
  DIR *d = opendir("/sys/block");
  if (!d) return 0;
  size_t dl = strlen(dir);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4)) continue;
    char p[PATH_MAX], back[PATH_MAX];
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
    if (asbe__read_small(p, back, sizeof back) <= 0) continue;
    back[strcspn(back, "\n")] = '\0';
    if (strncmp(back, dir, dl) != 0 || back[dl] != '/') continue;
    char *del = strstr(back, " (deleted)");
    if (del) *del = '\0';
    if (skip && skip(back, ctx)) continue;
    n++;
    if (!detach) continue;
    snprintf(p, sizeof p, "/dev/%s", de->d_name);
    int fd = open(p, O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    /* on a busy device this turns on autoclear (lazy detach) */
    ioctl(fd, LOOP_CLR_FD, 0);
    close(fd);
  }
  closedir(d);
  return n;
}

int asbe__loop_detach_under(const char *dir, int (*skip)(const char *path, void *ctx), void *ctx) {
  return scan_loops(dir, 1, skip, ctx);
}

int asbe__loop_count_under(const char *dir) {
  return scan_loops(dir, 0, NULL, NULL);
}

/* ---- volumes ------------------------------------------------------------- */

/* A volume is an ext4 image (with a journal: its data outlives sandboxes
 * and engines) on a loop device, mounted detached like a writable layer.
 * Only one filesystem may ever be mounted from one image: a second loop
 * device over the same file would be a second superblock writing the same
 * blocks. So an image some loop device already backs (sandboxes of an
 * engine that was restarted still have it mounted) is mounted again from
 * that device, which gives the same superblock. */

int asbe__volume_image(asbe_engine *e, const char *path) {
  size_t sl = strlen(e->state_dir);
  return !strncmp(path, e->state_dir, sl) && !strncmp(path + sl, "/volumes/", 9);
}

/* The open loop device backing the file st names, or -1 (none). Holding it
 * open keeps autoclear from detaching it. */
static int loop_of(const struct stat *st, char *dev, size_t devlen) {
  DIR *d = opendir("/sys/block");
  if (!d) return -1;
  struct dirent *de;
  int found = -1;
  while (found < 0 && (de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4)) continue;
    char p[PATH_MAX], back[PATH_MAX];
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
    if (asbe__read_small(p, back, sizeof back) <= 0) continue;
    snprintf(dev, devlen, "/dev/%s", de->d_name);
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    struct loop_info64 li;
    if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0 && li.lo_inode == st->st_ino &&
        li.lo_device == st->st_dev)
      found = fd;
    else
      close(fd);
  }
  closedir(d);
  return found;
}

static int make_volume_image(const char *image, uint64_t bytes) {
  char tmp[PATH_MAX];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.new", image) >= sizeof tmp)
    return asbe__fail(-ENAMETOOLONG, "volume image path");
  int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return asbe__failerr("create %s", tmp);
  int r = 0;
  if (ftruncate(fd, (off_t)bytes) < 0) r = asbe__failerr("truncate %s", tmp);
  close(fd);
  if (r < 0) {
    unlink(tmp);
    return r;
  }
  /* root dir owned by uid 1000, E2B's default sandbox user ("user"), so that
   * user can write into a fresh volume; root inside can anyway */
  const char *argv[] = {mkfs_path(),
                        "-q",
                        "-F",
                        "-t",
                        "ext4",
                        "-b",
                        "4096",
                        "-m",
                        "0",
                        "-E",
                        "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=1000:1000",
                        "-L",
                        "asb-volume",
                        tmp,
                        NULL};
  r = asbe__run_capture(argv, NULL);
  if (r != 0) {
    unlink(tmp);
    return asbe__fail(r < 0 ? r : -EIO, "%s (exit %d) for a %llu-byte volume", argv[0], r,
                      (unsigned long long)bytes);
  }
  if (rename(tmp, image) < 0) {
    r = asbe__failerr("rename %s", tmp);
    unlink(tmp);
    return r;
  }
  return 0;
}

int asbe_volume_open(const char *image, uint64_t bytes, int create, int *mfd) {
  asbe__clear_error();
  *mfd = -1;
  if (create) {
    if (bytes < MIN_DISK)
      return asbe__fail(-EINVAL, "a volume needs at least %llu bytes",
                        (unsigned long long)MIN_DISK);
    int r = make_volume_image(image, (bytes + 4095) & ~4095ull);
    if (r < 0) return r;
  }
  struct stat st;
  if (stat(image, &st) < 0) return asbe__failerr("volume image %s", image);
  char dev[64];
  int lfd = loop_of(&st, dev, sizeof dev);
  if (lfd < 0) lfd = loop_attach(image, dev, sizeof dev);
  if (lfd < 0) return lfd;
  int m = fsmount_ext4(dev);
  close(lfd);
  if (m < 0) return m;
  if (create) {
    /* mkfs's lost+found: not part of what a user put in the volume */
    unlinkat(m, "lost+found", AT_REMOVEDIR);
  }
  *mfd = m;
  return 0;
}

int asbe_volume_busy(const char *image) {
  struct stat st;
  if (stat(image, &st) < 0) return 0;
  char dev[64];
  int fd = loop_of(&st, dev, sizeof dev);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}
