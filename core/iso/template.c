/* Templates: read-only lower layers + read-only host binds, and the two
 * built-in ones: "base" (a generated root layer + the host's /usr) and
 * "busybox" (busybox-static with applet links).
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/util.h"

asbe_template *asbe_template_new(void) {
  return calloc(1, sizeof(asbe_template));
}

void asbe_template_free(asbe_template *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n_layers; i++) free(t->layers[i]);
  for (size_t i = 0; i < t->n_binds; i++) {
    free(t->bind_src[i]);
    free(t->bind_dst[i]);
  }
  free(t->layers);
  for (size_t i = 0; i < t->n_binds; i++)
    if (t->bind_fd && t->bind_fd[i] >= 0) close(t->bind_fd[i]);
  free(t->bind_src);
  free(t->bind_dst);
  free(t->bind_fd);
  free(t);
}

static int push(char ***v, size_t n, char *s) {
  if (!s) return -ENOMEM;
  char **nv = realloc(*v, (n + 1) * sizeof *nv);
  if (!nv) {
    free(s);
    return -ENOMEM;
  }
  nv[n] = s;
  *v = nv;
  return 0;
}

int asbe_template_add_layer(asbe_template *t, const char *dir) {
  asbe__clear_error();
  struct stat st;
  if (!dir || dir[0] != '/')
    return asbe__fail(-EINVAL, "layer %s: absolute path needed", dir ? dir : "");
  if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) return asbe__fail(-ENOTDIR, "layer %s", dir);
  int r = push(&t->layers, t->n_layers, strdup(dir));
  if (r < 0) return asbe__fail(r, "layer");
  t->n_layers++;
  return 0;
}

/* One more bind: src (a host dir, or a label when fd >= 0), dst, and fd
 * (-1: bind src read-only; else a mount fd, taken, bound read-write). */
static int push_bind(asbe_template *t, const char *src, const char *dst, int fd) {
  int *nf = realloc(t->bind_fd, (t->n_binds + 1) * sizeof *nf);
  if (!nf) return -ENOMEM;
  t->bind_fd = nf;
  int r = push(&t->bind_src, t->n_binds, strdup(src));
  if (r == 0) {
    r = push(&t->bind_dst, t->n_binds, strdup(dst));
    if (r < 0) free(t->bind_src[t->n_binds]);
  }
  if (r < 0) return r;
  t->bind_fd[t->n_binds++] = fd;
  return 0;
}

int asbe_template_add_bind(asbe_template *t, const char *src, const char *dst) {
  asbe__clear_error();
  struct stat st;
  if (!src || src[0] != '/' || !dst || dst[0] != '/' || strstr(dst, ".."))
    return asbe__fail(-EINVAL, "bind: absolute paths needed");
  if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode)) return asbe__fail(-ENOTDIR, "bind %s", src);
  int r = push_bind(t, src, dst, -1);
  if (r < 0) return asbe__fail(r, "bind");
  return 0;
}

int asbe_template_add_volume(asbe_template *t, int mfd, const char *dst) {
  asbe__clear_error();
  if (mfd < 0 || !dst || dst[0] != '/' || strstr(dst, ".."))
    return asbe__fail(-EINVAL, "volume: a mount fd and an absolute path needed");
  int fd = fcntl(mfd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return asbe__failerr("volume: dup");
  int r = push_bind(t, "(volume)", dst, fd);
  if (r < 0) {
    close(fd);
    return asbe__fail(r, "volume");
  }
  return 0;
}

asbe_template *asbe_template_copy(const asbe_template *src) {
  asbe_template *t = asbe_template_new();
  if (!t) return NULL;
  for (size_t i = 0; i < src->n_layers; i++)
    if (push(&t->layers, t->n_layers, strdup(src->layers[i])) < 0)
      goto fail;
    else
      t->n_layers++;
  for (size_t i = 0; i < src->n_binds; i++) {
    int fd = -1;
    if (src->bind_fd && src->bind_fd[i] >= 0 &&
        (fd = fcntl(src->bind_fd[i], F_DUPFD_CLOEXEC, 3)) < 0)
      goto fail;
    if (push_bind(t, src->bind_src[i], src->bind_dst[i], fd) < 0) {
      if (fd >= 0) close(fd);
      goto fail;
    }
  }
  return t;
fail:
  asbe_template_free(t);
  return NULL;
}

size_t asbe_template_layer_count(const asbe_template *t) {
  return t ? t->n_layers : 0;
}
const char *asbe_template_layer(const asbe_template *t, size_t i) {
  return t && i < t->n_layers ? t->layers[i] : NULL;
}
size_t asbe_template_bind_count(const asbe_template *t) {
  return t ? t->n_binds : 0;
}
const char *asbe_template_bind(const asbe_template *t, size_t i, const char **dst) {
  if (!t || i >= t->n_binds) return NULL;
  if (dst) *dst = t->bind_dst[i];
  return t->bind_src[i];
}

/* ---- building root layers ------------------------------------------------ */

static const char k_group[] =
    "root:x:0:\n"
    "tty:x:5:user\n"
    "sudo:x:27:user\n"
    "users:x:100:user\n"
    "user:x:1000:\n"
    "nogroup:x:65534:\n";

/* hosts: the base's is "files myhostname dns". glibc resolves names only
 * through NSS, and neither files (/etc/hosts has plain localhost) nor dns
 * (the engine's resolver, absent with --no-network) gives the names of
 * RFC 6761's localhost zone, which a sandbox opens other sandboxes' URLs
 * by (https://<port>-<id>.localhost:<engine port>, through its portal on
 * its own loopback: core/engine/portal.c). nss-myhostname (systemd's,
 * Debian's libnss-myhostname, scripts/deps.sh) answers localhost and
 * *.localhost with ::1 and 127.0.0.1 without any network, and the
 * sandbox's hostname with its own addresses; the base's /usr is the
 * host's, so the module is there when the host has it (a host without it:
 * glibc skips the entry, as before). The busybox template has no shared
 * libraries to load it: "files dns" (its names come from the engine's
 * resolver, which answers localhost names itself, with the network on). */
static const char k_nsswitch_fmt[] =
    "passwd:         files\n"
    "group:          files\n"
    "shadow:         files\n"
    "hosts:          %s\n"
    "networks:       files\n"
    "protocols:      files\n"
    "services:       files\n"
    "ethers:         files\n"
    "rpc:            files\n";

static const char k_hosts[] = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";

static int put(const char *root, const char *rel, const char *data, mode_t mode) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  int r = asbe__write_file_atomic(p, data, strlen(data), mode);
  return r < 0 ? asbe__fail(r, "write %s", p) : 0;
}

static int mk(const char *root, const char *rel, mode_t mode, uid_t uid) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  int r = asbe__mkdir_p(p, mode);
  if (r < 0) return asbe__fail(r, "mkdir %s", p);
  if (chmod(p, mode) < 0 || chown(p, uid, uid) < 0) return asbe__failerr("chmod %s", p);
  return 0;
}

static int link_to(const char *root, const char *rel, const char *target) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  unlink(p);
  return symlink(target, p) < 0 ? asbe__failerr("symlink %s", p) : 0;
}

/* Copies host file/tree /<rel> into root/<rel> if the host has it. */
static int copy_host(const char *root, const char *rel) {
  char src[PATH_MAX], dst[PATH_MAX];
  snprintf(src, sizeof src, "/%s", rel);
  snprintf(dst, sizeof dst, "%s/%s", root, rel);
  struct stat st;
  if (lstat(src, &st) < 0) return 0;
  char *slash = strrchr(dst, '/');
  if (slash) {
    *slash = '\0';
    asbe__mkdir_p(dst, 0755);
    *slash = '/';
  }
  int r = asbe__copy_tree(src, dst);
  return r < 0 ? asbe__fail(r, "copy %s", src) : 0;
}

static int chown_tree(const char *path, uid_t uid) {
  const char *cmd[] = {"chown", "-R", "-h", NULL, NULL, NULL};
  char owner[32];
  snprintf(owner, sizeof owner, "%u:%u", (unsigned)uid, (unsigned)uid);
  cmd[3] = owner;
  cmd[4] = path;
  return asbe__run_capture(cmd, NULL) == 0 ? 0 : asbe__fail(-EIO, "chown -R %s", path);
}

/* The parts base and busybox share: accounts, dirs, /etc basics. */
static int common_root(const char *root, const char *shell, const char *nss_hosts) {
  int r;
  char passwd[512], shadow[256], nsswitch[512];
  snprintf(nsswitch, sizeof nsswitch, k_nsswitch_fmt, nss_hosts);
  snprintf(passwd, sizeof passwd,
           "root:x:0:0:root:/root:%s\n"
           "user:x:1000:1000:user:/home/user:%s\n"
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
           shell, shell);
  snprintf(shadow, sizeof shadow,
           "root:*:19000:0:99999:7:::\nuser:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n");
  static const struct {
    const char *rel;
    mode_t mode;
  } dirs[] = {{"etc", 0755},      {"dev", 0755},     {"proc", 0555},    {"sys", 0555},
              {"run", 0755},      {"run/asb", 0755}, {"tmp", 01777},    {"var", 0755},
              {"var/tmp", 01777}, {"var/log", 0755}, {"var/lib", 0755}, {"var/cache", 0755},
              {"home", 0755},     {"root", 0700},    {"mnt", 0755},     {"opt", 0755},
              {"srv", 0755},      {".asb", 0755}};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(dirs); i++)
    if ((r = mk(root, dirs[i].rel, dirs[i].mode, 0)) < 0) return r;
  if ((r = mk(root, "home/user", 0755, 1000)) < 0) return r;
  if ((r = put(root, "etc/passwd", passwd, 0644)) < 0 ||
      (r = put(root, "etc/group", k_group, 0644)) < 0 ||
      (r = put(root, "etc/shadow", shadow, 0640)) < 0 ||
      (r = put(root, "etc/hosts", k_hosts, 0644)) < 0 ||
      (r = put(root, "etc/hostname", "sandbox\n", 0644)) < 0 ||
      (r = put(root, "etc/nsswitch.conf", nsswitch, 0644)) < 0 ||
      (r = put(root, "etc/resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
               0644)) < 0)
    return r;
  return link_to(root, "etc/mtab", "../proc/self/mounts");
}

/* Builds into dir/rootfs.tmp.<pid>, then renames to dir/rootfs and writes
 * dir/rootfs.stamp ("asb <what> template v<version>"); a stamp of this
 * version means done. A stamp of another version (a state dir from an
 * older engine: e.g. a base without sudo and python) rebuilds it: the old
 * tree is renamed aside to rootfs.v<old>.<pid>, not removed, since
 * sandboxes still running on it (adopted ones) have it mounted as their
 * lower layer. */
static int build_once(const char *dir, const char *what, int version,
                      int (*fill)(const char *root)) {
  asbe__clear_error();
  char root[PATH_MAX], tmp[PATH_MAX], stamp[PATH_MAX], want[64], have[64] = "";
  snprintf(root, sizeof root, "%s/rootfs", dir);
  snprintf(stamp, sizeof stamp, "%s/rootfs.stamp", dir);
  snprintf(tmp, sizeof tmp, "%s/rootfs.tmp.%d", dir, (int)getpid());
  snprintf(want, sizeof want, "asb %s template v%d\n", what, version);
  int sfd = open(stamp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  int stale = 0;
  if (sfd >= 0) {
    ssize_t n = read(sfd, have, sizeof have - 1);
    close(sfd);
    have[n > 0 ? n : 0] = '\0';
    if (strcmp(have, want) == 0) return 0;
    stale = 1;
  }
  int r = asbe__mkdir_p(dir, 0755);
  if (r < 0) return asbe__fail(r, "mkdir %s", dir);
  asbe__rm_rf(tmp);
  if ((r = asbe__mkdir_p(tmp, 0755)) < 0) return asbe__fail(r, "mkdir %s", tmp);
  r = fill(tmp);
  if (r == 0 && stale) {
    char aside[PATH_MAX];
    int old = 0;
    sscanf(have, "asb %*s template v%d", &old);
    snprintf(aside, sizeof aside, "%s/rootfs.v%d.%d", dir, old, (int)getpid());
    if (rename(root, aside) < 0 && errno != ENOENT) r = asbe__failerr("rename %s", root);
  } else if (r == 0) {
    asbe__rm_rf(root); /* a half-built one from a crash (no stamp) */
  }
  if (r == 0 && rename(tmp, root) < 0)
    r = errno == ENOTEMPTY || errno == EEXIST ? 0 : asbe__failerr("rename %s", tmp);
  asbe__rm_rf(tmp);
  if (r == 0) {
    r = asbe__write_file_atomic(stamp, want, strlen(want), 0644);
    if (r < 0) r = asbe__fail(r, "write %s", stamp);
  }
  return r;
}

/* What E2B's base has and the host's /usr may not: `sudo` (envd's client
 * of its sudo socket: core/envd/sudo.c; a set-user-ID sudo cannot work
 * under no_new_privs) and `python` (python3). /usr is the host's, bound
 * read-only, so they live in a directory of the base's own, first in the
 * profile's PATH: a host's set-user-ID /usr/bin/sudo, useless inside, must
 * not win. */
#define ASB_BASE_BIN "/opt/agent-sandbox/bin"

/* The base's /etc/profile: Debian's, with bash's $EUID in place of
 * "$(id -u)". Every commands.run is a login shell (bash -l -c), and
 * Debian's profile forks and execs id(1) to learn the uid: a whole second
 * process start per command (issue 23). dash and other shells without
 * EUID still ask id. profile.d is the host's, sourced as before. */
static const char k_profile[] =
    "# /etc/profile of agent-sandbox's base template: Debian's, without a\n"
    "# subprocess per login shell (bash's $EUID instead of $(id -u)).\n"
    "if [ \"${EUID:-$(id -u)}\" -eq 0 ]; then\n"
    "  PATH=\"" ASB_BASE_BIN
    ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\n"
    "else\n"
    "  PATH=\"" ASB_BASE_BIN
    ":/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games\"\n"
    "fi\n"
    "export PATH\n"
    "if [ \"${PS1-}\" ]; then\n"
    "  if [ \"${BASH-}\" ] && [ \"$BASH\" != \"/bin/sh\" ]; then\n"
    "    if [ -f /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi\n"
    "  elif [ \"${EUID:-$(id -u)}\" -eq 0 ]; then\n"
    "    PS1='# '\n"
    "  else\n"
    "    PS1='$ '\n"
    "  fi\n"
    "fi\n"
    "if [ -d /etc/profile.d ]; then\n"
    "  for i in /etc/profile.d/*.sh; do\n"
    "    if [ -r \"$i\" ]; then . \"$i\"; fi\n"
    "  done\n"
    "  unset i\n"
    "fi\n";

/* The homes' ~/.bash_logout: Debian's skel runs clear_console(1) there,
 * a process start (fork, exec, the dynamic loader) every time a command's
 * login shell runs `exit` (issue 23). clear_console only ever clears a
 * Linux virtual console, and a sandbox has none (its terminals are ptys,
 * its commands' output pipes), so the base's homes get the file without
 * it; a host skel without a .bash_logout gets none. */
static const char k_bash_logout[] =
    "# ~/.bash_logout: executed by bash(1) when login shell exits.\n"
    "# agent-sandbox's base: Debian's clears the virtual console here, and a\n"
    "# sandbox has none.\n";

static int fill_base(const char *root) {
  int r = common_root(root, "/bin/bash", "files myhostname dns");
  if (r < 0) return r;
  if ((r = mk(root, "usr", 0755, 0)) < 0) return r;
  static const char *const links[][2] = {{"bin", "usr/bin"},     {"sbin", "usr/sbin"},
                                         {"lib", "usr/lib"},     {"lib64", "usr/lib64"},
                                         {"lib32", "usr/lib32"}, {"libx32", "usr/libx32"}};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(links); i++) {
    char host[PATH_MAX];
    snprintf(host, sizeof host, "/%s", links[i][1]);
    if (i >= 3 && access(host, F_OK) < 0) continue; /* lib64.. only if present */
    if ((r = link_to(root, links[i][0], links[i][1])) < 0) return r;
  }
  static const char *const etc[] = {
      "etc/alternatives",
      "etc/ld.so.cache",
      "etc/ld.so.conf",
      "etc/ld.so.conf.d",
      "etc/profile.d",
      "etc/bash.bashrc",
      "etc/skel",
      "etc/inputrc",
      "etc/localtime",
      "etc/timezone",
      "etc/protocols",
      "etc/services",
      "etc/mime.types",
      "etc/ssl/certs",
      "etc/ssl/openssl.cnf",
      "etc/ca-certificates.conf",
      "etc/environment",
      "etc/login.defs",
      "etc/debian_version",
      "etc/issue",
      "etc/os-release",
      "etc/lsb-release",
      "etc/python3",
      "etc/python3.11",
      "etc/python3.12",
      "etc/gai.conf",
      "etc/host.conf",
      "etc/terminfo",
      "etc/magic",
      "etc/mailcap",
      "etc/matplotlibrc",
      "etc/fonts",
      "etc/R", /* R_HOME/etc links its files here (the code interpreter's R) */
      "etc/java-17-openjdk" /* the JDK's conf/ links here (java.security: the java kernel) */};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(etc); i++)
    if ((r = copy_host(root, etc[i])) < 0) return r;
  if ((r = put(root, "etc/profile", k_profile, 0644)) < 0) return r;
  if (access("/etc/skel/.bash_logout", F_OK) == 0 &&
      (r = put(root, "etc/skel/.bash_logout", k_bash_logout, 0644)) < 0)
    return r;
  /* &PATH[1]: the absolute path without its "/", relative to root */
  if ((r = mk(root, "opt/agent-sandbox", 0755, 0)) < 0 ||
      (r = mk(root, &ASB_BASE_BIN[1], 0755, 0)) < 0 ||
      (r = link_to(root, &ASB_BASE_BIN "/sudo"[1], "/.asb/bin/envd")) < 0)
    return r;
  if (access("/usr/bin/python", F_OK) < 0 && access("/usr/bin/python3", X_OK) == 0 &&
      (r = link_to(root, &ASB_BASE_BIN "/python"[1], "/usr/bin/python3")) < 0)
    return r;
  if (access("/etc/os-release", F_OK) < 0 &&
      (r = link_to(root, "etc/os-release", "../usr/lib/os-release")) < 0)
    return r;
  /* dotfiles for root and user from /etc/skel */
  char skel[PATH_MAX], home[PATH_MAX];
  snprintf(skel, sizeof skel, "%s/etc/skel", root);
  if (access(skel, F_OK) == 0) {
    snprintf(home, sizeof home, "%s/root", root);
    if ((r = asbe__copy_tree(skel, home)) < 0) return asbe__fail(r, "copy skel");
    chmod(home, 0700);
    snprintf(home, sizeof home, "%s/home/user", root);
    if ((r = asbe__copy_tree(skel, home)) < 0) return asbe__fail(r, "copy skel");
    if ((r = chown_tree(home, 1000)) < 0) return r;
  }
  return 0;
}

int asbe_template_prepare_base(const char *dir) {
  /* v2: sudo, python; v3: .bash_logout; v4: /etc/java-17-openjdk;
   * v5: hosts: files myhostname dns */
  return build_once(dir, "base", 5, fill_base);
}

static const char *busybox_path(void) {
  if (access("/bin/busybox", X_OK) == 0) return "/bin/busybox";
  if (access("/usr/bin/busybox", X_OK) == 0) return "/usr/bin/busybox";
  return NULL;
}

static int fill_busybox(const char *root) {
  const char *bb = busybox_path();
  if (!bb) return asbe__fail(-ENOENT, "busybox not found (apt-get install busybox-static)");
  int r = common_root(root, "/bin/sh", "files dns");
  if (r < 0) return r;
  static const char *const dirs[] = {"bin", "sbin", "usr", "usr/bin", "usr/sbin", "lib"};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(dirs); i++)
    if ((r = mk(root, dirs[i], 0755, 0)) < 0) return r;
  char dst[PATH_MAX];
  snprintf(dst, sizeof dst, "%s/bin/busybox", root);
  if ((r = asbe__copy_file(bb, dst, 0755)) < 0) return asbe__fail(r, "copy %s", bb);
  const char *argv[] = {bb, "--list-full", NULL};
  char *list = NULL;
  r = asbe__run_capture(argv, &list);
  if (r != 0 || !list) {
    free(list);
    return asbe__fail(-EIO, "%s --list-full", bb);
  }
  for (char *l = list, *nl; l && *l; l = nl) {
    nl = strchr(l, '\n');
    if (nl) *nl++ = '\0';
    if (!*l || strstr(l, "..") || !strcmp(l, "bin/busybox")) continue;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, l);
    if (symlink("/bin/busybox", p) < 0 && errno != EEXIST) {
      r = asbe__failerr("symlink %s", p);
      break;
    }
  }
  free(list);
  if (r < 0) return r;
  return put(root, "etc/profile",
             "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
             "PS1='\\u@\\h:\\w\\$ '\n",
             0644);
}

int asbe_template_prepare_busybox(const char *dir) {
  return build_once(dir, "busybox", 1, fill_busybox);
}

static int layer_template(const char *dir, int with_usr, asbe_template **out) {
  asbe__clear_error();
  *out = NULL;
  char root[PATH_MAX];
  snprintf(root, sizeof root, "%s/rootfs", dir);
  asbe_template *t = asbe_template_new();
  if (!t) return asbe__fail(-ENOMEM, "template");
  int r = asbe_template_add_layer(t, root);
  if (r == 0 && with_usr) r = asbe_template_add_bind(t, "/usr", "/usr");
  if (r < 0) {
    asbe_template_free(t);
    return r;
  }
  *out = t;
  return 0;
}

int asbe_template_base(const char *dir, asbe_template **out) {
  return layer_template(dir, 1, out);
}

int asbe_template_busybox(const char *dir, asbe_template **out) {
  return layer_template(dir, 0, out);
}
