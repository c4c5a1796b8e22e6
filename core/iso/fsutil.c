/* Small file and process helpers of asb_iso.
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/buf.h"

char *asbe__strfmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  return n < 0 ? NULL : s;
}

int asbe__mkdir_p(const char *path, mode_t mode) {
  char tmp[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof tmp) return -ENAMETOOLONG;
  memcpy(tmp, path, n + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST) return -errno;
    *p = '/';
  }
  if (mkdir(tmp, mode) < 0 && errno != EEXIST) return -errno;
  return 0;
}

static int rm_at(int dirfd, const char *name, dev_t dev, int depth) {
  if (depth > 256) return -ELOOP;
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return errno == ENOENT ? 0 : -errno;
  if (!S_ISDIR(st.st_mode)) {
    if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT) return -errno;
    return 0;
  }
  if (st.st_dev != dev) return -EXDEV; /* a mount: never descend */
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -errno;
  DIR *d = fdopendir(fd);
  if (!d) {
    int r = -errno;
    close(fd);
    return r;
  }
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    int r = rm_at(fd, de->d_name, dev, depth + 1);
    if (r < 0 && rc == 0) rc = r;
  }
  closedir(d);
  if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0) rc = -errno;
  return rc;
}

int asbe__rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) < 0) return errno == ENOENT ? 0 : -errno;
  return rm_at(AT_FDCWD, path, st.st_dev, 0);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int asbe__write_file_atomic(const char *path, const char *data, size_t len, mode_t mode) {
  char tmp[PATH_MAX];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= sizeof tmp)
    return -ENAMETOOLONG;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return -errno;
  int r = write_all(fd, data, len);
  if (r == 0 && fchmod(fd, mode) < 0) r = -errno;
  close(fd);
  if (r == 0 && rename(tmp, path) < 0) r = -errno;
  if (r < 0) unlink(tmp);
  return r;
}

int asbe__write_str(const char *path, const char *s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  size_t n = strlen(s);
  ssize_t w = write(fd, s, n);
  int r = w < 0 ? -errno : ((size_t)w == n ? 0 : -EIO);
  close(fd);
  return r;
}

ssize_t asbe__read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = -errno;
      close(fd);
      return e;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  close(fd);
  return (ssize_t)n;
}

int asbe__copy_file(const char *src, const char *dst, mode_t mode) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return -errno;
  struct stat st;
  if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
    int r = S_ISREG(st.st_mode) ? -errno : -EINVAL;
    close(in);
    return r;
  }
  char tmp[PATH_MAX];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%d", dst, (int)getpid()) >= sizeof tmp) {
    close(in);
    return -ENAMETOOLONG;
  }
  int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    int r = -errno;
    close(in);
    return r;
  }
  int r = 0;
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t n = sendfile(out, in, NULL, (size_t)(left > (1 << 30) ? (1 << 30) : left));
    if (n < 0) {
      if (errno == EINTR) continue;
      r = -errno;
      break;
    }
    if (n == 0) break;
    left -= n;
  }
  if (r == 0 && fchmod(out, mode ? mode : (st.st_mode & 07777)) < 0) r = -errno;
  close(out);
  close(in);
  if (r == 0 && rename(tmp, dst) < 0) r = -errno;
  if (r < 0) unlink(tmp);
  return r;
}

int asbe__copy_tree(const char *src, const char *dst) {
  struct stat st;
  if (lstat(src, &st) < 0) return -errno;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(src, target, sizeof target - 1);
    if (n < 0) return -errno;
    target[n] = '\0';
    unlink(dst);
    return symlink(target, dst) < 0 ? -errno : 0;
  }
  if (S_ISREG(st.st_mode)) return asbe__copy_file(src, dst, st.st_mode & 0777);
  if (!S_ISDIR(st.st_mode)) return 0;
  if (mkdir(dst, st.st_mode & 07777) < 0 && errno != EEXIST) return -errno;
  DIR *d = opendir(src);
  if (!d) return -errno;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) && rc == 0) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char *s = asbe__strfmt("%s/%s", src, de->d_name);
    char *t = asbe__strfmt("%s/%s", dst, de->d_name);
    rc = (s && t) ? asbe__copy_tree(s, t) : -ENOMEM;
    free(s);
    free(t);
  }
  closedir(d);
  return rc;
}

int asbe__proc_stat(pid_t pid, pid_t *ppid, uint64_t *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (asbe__read_small(path, buf, sizeof buf) <= 0) return -ESRCH;
  char *p = strrchr(buf, ')'); /* the comm may contain anything but ')' last */
  if (!p || p[1] != ' ') return -EIO;
  p += 2;                                                 /* field 3: state */
  if (*p == 'Z' || *p == 'X' || *p == 'x') return -ESRCH; /* exited */
  for (int field = 3; field < 22; field++) {
    if (field == 4 && ppid) *ppid = (pid_t)atoi(p);
    p = strchr(p, ' ');
    if (!p) return -EIO;
    p++;
  }
  if (start) *start = strtoull(p, NULL, 10);
  return 0;
}

uint64_t asbe__proc_starttime(pid_t pid) {
  uint64_t start = 0;
  return asbe__proc_stat(pid, NULL, &start) == 0 ? start : 0;
}

int asbe__run_capture(const char *const *argv, char **out) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0) return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    int r = -errno;
    close(pfd[0]);
    close(pfd[1]);
    return r;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 2);
    }
    dup2(pfd[1], 1);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  asbi_buf b = ASBI_BUF_INIT;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(pfd[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out) asbi_buf_append(&b, chunk, (size_t)n);
  }
  close(pfd[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (out) *out = asbi_buf_detach(&b, NULL);
  asbi_buf_free(&b);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int asbe__wait_readable(int fd, int timeout_ms) {
  struct pollfd pf = {fd, POLLIN, 0};
  int r;
  do r = poll(&pf, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  return r > 0;
}
