/* --pause-swap: the engine's swap file (swap.h). A sandbox paused with
 * memory is frozen and then reclaimed (asbe_sandbox_swap_out): its pages
 * go here, and fault back in after the thaw. Running sandboxes never swap
 * (asbe_engine_config.swap_block). The file is <state>/pause.swap, root's,
 * 0600, in the 0700 state dir: it holds sandbox memory.
 * SPDX-License-Identifier: Apache-2.0 */
#include "swap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/swap.h>
#include <unistd.h>

#include "engine.h"
#include "util/log.h"
#include "util/util.h"

#define SWAP_FILE "pause.swap"

int swap_parse_size(const char *text, uint64_t *bytes) {
  char *end = NULL;
  if (!text || !*text || *text == '-') return -1;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text) return -1;
  unsigned shift = 0;
  if (*end) {
    switch (*end) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        return -1;
    }
    end++;
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
  }
  if (v > (UINT64_MAX >> shift)) return -1;
  v <<= shift;
  if (v < (1ull << 20)) return -1;
  *bytes = v;
  return 0;
}

/* /proc/swaps writes a path's spaces, tabs, newlines and backslashes as
 * octal escapes (\040); undone in place. */
static void unescape(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
        p[3] <= '7') {
      *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
      p += 3;
    } else {
      *o++ = *p;
    }
  }
  *o = 0;
}

/* Our file's line in /proc/swaps: 1 with its size and use (bytes), 0 if it
 * is not active. */
static int active(const char *path, uint64_t *size, uint64_t *used) {
  FILE *f = fopen("/proc/swaps", "re");
  if (!f) return 0;
  char line[4400], name[4200];
  unsigned long long sz, us;
  int found = 0;
  if (!fgets(line, sizeof line, f)) line[0] = 0; /* the header */
  while (!found && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%4199s %*s %llu %llu", name, &sz, &us) != 3) continue;
    unescape(name);
    if (strcmp(name, path)) continue;
    found = 1;
    if (size) *size = (uint64_t)sz << 10;
    if (used) *used = (uint64_t)us << 10;
  }
  fclose(f);
  return found;
}

/* Filesystems the kernel never swaps to (no bmap / iomap swap support):
 * say so instead of swapon's bare EINVAL. */
static const char *no_swap_fs(long type) {
  switch ((unsigned long)type) {
    case 0x01021994:
      return "tmpfs";
    case 0x858458f6:
      return "ramfs";
    case 0x794c7630:
      return "overlayfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    case 0x2fc12fc1:
      return "zfs";
    case 0x73717368:
      return "squashfs";
    default:
      return NULL;
  }
}

/* The swap area's header, as mkswap writes it (the kernel's union
 * swap_header in <linux/swap.h>, version 1): bootbits, then version,
 * last_page, nr_badpages, uuid, label at byte 1024; "SWAPSPACE2" in the
 * last 10 bytes of the first page. Written here because no library writes
 * one (libblkid only reads them) and running mkswap would be a process and
 * a parse of its output for 20 bytes. */
static int write_header(int fd, uint64_t bytes) {
  long pg = sysconf(_SC_PAGESIZE);
  if (pg < 4096) pg = 4096;
  unsigned char *h = calloc(1, (size_t)pg);
  if (!h) return -ENOMEM;
  uint32_t version = 1, last_page = (uint32_t)(bytes / (uint64_t)pg - 1), bad = 0;
  memcpy(h + 1024, &version, 4);
  memcpy(h + 1028, &last_page, 4);
  memcpy(h + 1032, &bad, 4);
  asbi_random_bytes(h + 1036, 16); /* uuid */
  h[1036 + 6] = (unsigned char)((h[1036 + 6] & 0x0f) | 0x40);
  h[1036 + 8] = (unsigned char)((h[1036 + 8] & 0x3f) | 0x80);
  memcpy(h + 1052, "asb-pause", 9); /* label */
  memcpy(h + pg - 10, "SWAPSPACE2", 10);
  int r = pwrite(fd, h, (size_t)pg, 0) == pg && fsync(fd) == 0 ? 0 : -errno;
  free(h);
  return r;
}

static int make_file(const char *path, uint64_t bytes, eng_err *err) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  struct statfs fs;
  if (statfs(dir, &fs) != 0)
    return eng_err_set(err, ENG_EINTERNAL, NULL, "--pause-swap: %s: %s", dir, strerror(errno));
  const char *bad = no_swap_fs((long)fs.f_type);
  if (bad)
    return eng_err_set(err, ENG_EINVAL, NULL,
                       "--pause-swap: the state dir %s is on %s, which cannot hold a swap "
                       "file; give the engine a --state-dir on ext4, xfs or btrfs",
                       dir, bad);
  uint64_t avail = (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize;
  if (bytes > avail)
    return eng_err_set(err, ENG_EINVAL, NULL,
                       "--pause-swap: %llu MiB do not fit on %s (%llu MiB free)",
                       (unsigned long long)(bytes >> 20), dir, (unsigned long long)(avail >> 20));
  long pg = sysconf(_SC_PAGESIZE);
  if (pg < 4096) pg = 4096;
  bytes -= bytes % (uint64_t)pg;
  unlink(path); /* one an earlier engine left inactive: a fresh file, fresh blocks */
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return eng_err_set(err, ENG_EINTERNAL, NULL, "--pause-swap: create %s: %s", path,
                       strerror(errno));
  int r = 0;
  const char *what = "";
  if (fchown(fd, 0, 0) != 0 || fchmod(fd, 0600) != 0) {
    r = -errno;
    what = "chmod";
  }
  if (!r && (unsigned long)fs.f_type == 0x9123683eUL) { /* btrfs: swap needs no copy-on-write */
    int fl = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
      fl |= FS_NOCOW_FL;
      if (ioctl(fd, FS_IOC_SETFLAGS, &fl) != 0) r = -errno, what = "chattr +C";
    }
  }
  if (!r && fallocate(fd, 0, 0, (off_t)bytes) != 0) {
    r = -errno;
    what = "fallocate";
  }
  if (!r && (r = write_header(fd, bytes)) != 0) what = "write the header";
  close(fd);
  if (r) {
    unlink(path);
    return eng_err_set(err, ENG_EINTERNAL, NULL, "--pause-swap: %s %s: %s%s", what, path,
                       strerror(-r),
                       r == -EOPNOTSUPP ? " (the filesystem cannot preallocate a swap file)" : "");
  }
  if (swapon(path, SWAP_FLAG_DISCARD) != 0 && (errno != EINVAL || swapon(path, 0) != 0)) {
    int en = errno;
    unlink(path);
    return eng_err_set(err, ENG_EINVAL, NULL, "--pause-swap: swapon %s: %s%s", path, strerror(en),
                       en == EINVAL
                           ? " (this filesystem or kernel does not take swap files: CONFIG_SWAP, "
                             "a state dir on ext4/xfs/btrfs)"
                       : en == EPERM ? " (the engine must run as root)"
                                     : "");
  }
  return 0;
}

int swap_open(engine *e, uint64_t bytes, eng_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/" SWAP_FILE, e->state_dir);
  uint64_t size = 0, used = 0;
  int on = active(path, &size, &used);
  if (!bytes) {
    if (on) {
      /* an engine that ran with --pause-swap stopped leaving paused
       * sandboxes (or crashed): their pages come back into RAM */
      asbi_log("%s is still active (%llu MiB in use) but --pause-swap is off: swapping it off",
               path, (unsigned long long)(used >> 20));
      if (swapoff(path) != 0) {
        asbi_log("swapoff %s: %s; it stays active", path, strerror(errno));
        return 0;
      }
    }
    unlink(path);
    return 0;
  }
  if (on) {
    asbi_log(
        "%s: active already (%llu MiB, %llu MiB in use, left by the engine before); "
        "using it%s",
        path, (unsigned long long)(size >> 20), (unsigned long long)(used >> 20),
        size + (1u << 20) < bytes || size > bytes ? " as it is (stop the engine without "
                                                    "paused sandboxes to resize it)"
                                                  : "");
  } else if (make_file(path, bytes, err)) {
    return -1;
  } else {
    active(path, &size, NULL);
    asbi_log("pause swap: %s, %llu MiB, active", path, (unsigned long long)(size >> 20));
  }
  e->swap_path = asbi_strdup(path);
  return 0;
}

void swap_close(engine *e, int keep) {
  if (!e->swap_path) return;
  if (keep) {
    asbi_log(
        "%s stays active: sandboxes left paused have memory in it (the next engine "
        "takes it over)",
        e->swap_path);
  } else if (swapoff(e->swap_path) != 0 && errno != EINVAL) {
    asbi_log("swapoff %s: %s; it stays active", e->swap_path, strerror(errno));
  } else {
    unlink(e->swap_path);
  }
  free(e->swap_path);
  e->swap_path = NULL;
}

uint64_t swap_free_bytes(engine *e) {
  uint64_t size = 0, used = 0;
  if (!e->swap_path || !active(e->swap_path, &size, &used)) return 0;
  return size > used ? size - used : 0;
}
