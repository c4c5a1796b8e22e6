/* Hardening applied to every process of a sandbox (init and asbe_sandbox_exec
 * children): a reduced capability bounding set, no_new_privs, and a seccomp
 * deny-list (libseccomp, default allow, EPERM for the calls below) plus a
 * small hand-written filter for personality(2) arguments, socket families and
 * syscalls newer than the installed libseccomp knows.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iso_int.h"
#include "util/util.h"

/* What root inside keeps: normal admin work in its own userns. */
static const int k_keep[] = {
    CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FOWNER,           CAP_FSETID,  CAP_KILL,       CAP_SETGID,
    CAP_SETUID, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_SYS_CHROOT, CAP_SETFCAP};

static const char *const k_deny[] = {"mount",
                                     "umount",
                                     "umount2",
                                     "pivot_root",
                                     "unshare",
                                     "setns",
                                     "bpf",
                                     "perf_event_open",
                                     "keyctl",
                                     "add_key",
                                     "request_key",
                                     "ptrace",
                                     "process_vm_readv",
                                     "process_vm_writev",
                                     "kcmp",
                                     "kexec_load",
                                     "kexec_file_load",
                                     "init_module",
                                     "finit_module",
                                     "delete_module",
                                     "create_module",
                                     "fsopen",
                                     "fsmount",
                                     "fsconfig",
                                     "fspick",
                                     "move_mount",
                                     "open_tree",
                                     "mount_setattr",
                                     "open_by_handle_at",
                                     "name_to_handle_at",
                                     "userfaultfd",
                                     "swapon",
                                     "swapoff",
                                     "reboot",
                                     "syslog",
                                     "acct",
                                     "settimeofday",
                                     "clock_settime",
                                     "clock_adjtime",
                                     "adjtimex",
                                     "stime",
                                     "iopl",
                                     "ioperm",
                                     "lookup_dcookie",
                                     "quotactl",
                                     "quotactl_fd",
                                     "nfsservctl",
                                     "io_uring_setup",
                                     "io_uring_enter",
                                     "io_uring_register",
                                     "vhangup",
                                     "uselib",
                                     "_sysctl",
                                     "get_kernel_syms",
                                     "query_module"};

static const unsigned long k_ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                           CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                           CLONE_NEWNET};

/* ---- tiny BPF assembler for the hand-written filter ---------------------- */

enum { L_NONE = -1 };
typedef struct ins {
  uint16_t code;
  uint32_t k;
  int jt, jf; /* label ids for jumps */
  int label;  /* label defined at this instruction, or L_NONE */
} ins;

typedef struct prog {
  ins v[160];
  int n;
  int labels[48];
} prog;

static void emit(prog *p, uint16_t code, uint32_t k, int jt, int jf) {
  p->v[p->n++] = (ins){code, k, jt, jf, L_NONE};
}

static void label(prog *p, int l) {
  p->labels[l] = p->n;
}

static int assemble(const prog *p, struct sock_fprog *out) {
  struct sock_filter *f = calloc((size_t)p->n, sizeof *f);
  if (!f) return -ENOMEM;
  for (int i = 0; i < p->n; i++) {
    const ins *x = &p->v[i];
    f[i].code = x->code;
    f[i].k = x->k;
    if (x->code == (BPF_JMP | BPF_JA)) {
      f[i].k = (uint32_t)(p->labels[x->jt] - i - 1);
    } else if (BPF_CLASS(x->code) == BPF_JMP) {
      int t = p->labels[x->jt] - i - 1, e = x->jf == L_NONE ? 0 : p->labels[x->jf] - i - 1;
      if (t < 0 || t > 255 || e < 0 || e > 255) {
        free(f);
        return -EINVAL;
      }
      f[i].jt = (uint8_t)t;
      f[i].jf = (uint8_t)e;
    }
  }
  out->filter = f;
  out->len = (unsigned short)p->n;
  return 0;
}

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define NATIVE_PERSONALITY 135
#define NATIVE_SOCKET 41
#define NATIVE_SOCKETPAIR 53
#define COMPAT_ARCH AUDIT_ARCH_I386
#define COMPAT_PERSONALITY 136
#define COMPAT_SOCKET 359
#define COMPAT_SOCKETPAIR 360
#define COMPAT_SOCKETCALL 102
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define NATIVE_PERSONALITY 92
#define NATIVE_SOCKET 198
#define NATIVE_SOCKETPAIR 199
#endif

/* Socket families a sandbox may create: unix, IPv4, IPv6 (its own network
 * namespace, loopback only) and netlink for NETLINK_ROUTE (ip, getifaddrs,
 * getaddrinfo's AI_ADDRCONFIG) and NETLINK_SOCK_DIAG (ss). Everything else
 * gets EAFNOSUPPORT (EPROTONOSUPPORT for the other netlink protocols), as if
 * the kernel did not have it: AF_VSOCK above all, which is not network
 * namespaced (a VM's host agent listens on it), and AF_PACKET (raw frames on
 * a loopback-only namespace are of no use; CAP_NET_RAW stays for raw IP
 * sockets, ping), netlink's generic, uevent, audit, netfilter, xfrm...
 * families, AF_ALG, AF_KEY, AF_TIPC, AF_RDS, AF_XDP, bluetooth, CAN... The
 * family is an int argument, so its low 32 bits are what the kernel uses. */
static const uint32_t k_families[] = {1 /* AF_UNIX */, 2 /* AF_INET */, 10 /* AF_INET6 */};
#define FAMILY_NETLINK 16
static const uint32_t k_netlink[] = {0 /* NETLINK_ROUTE */, 4 /* NETLINK_SOCK_DIAG */};
/* socketcall(2) (i386) hides its arguments in memory a filter cannot read:
 * its SYS_SOCKET and SYS_SOCKETPAIR calls get ENOSYS; socket(2) and
 * socketpair(2) themselves (i386 numbers 359, 360) are filtered as above. */
#define SOCKETCALL_SOCKET 1
#define SOCKETCALL_SOCKETPAIR 8

/* Syscalls numbered >= 424 share one number on every architecture. */
static const struct {
  uint32_t nr;
  int err;
} k_new[] = {{425, EPERM} /* io_uring_setup */,
             {428, EPERM} /* open_tree */,
             {429, EPERM} /* move_mount */,
             {430, EPERM} /* fsopen */,
             {431, EPERM} /* fsconfig */,
             {432, EPERM} /* fsmount */,
             {433, EPERM} /* fspick */,
             {435, ENOSYS} /* clone3 */,
             {442, EPERM} /* mount_setattr */,
             {443, EPERM} /* quotactl_fd */,
             {467, EPERM} /* open_tree_attr */};

/* The prefix; where it allows a call it jumps to its end, where the
 * libseccomp program is appended. */
static int build_prefix(struct sock_fprog *out) {
#ifdef NATIVE_ARCH
  enum {
    NATIVE,
    COMPAT,
    COMPAT_NR,
    COMMON,
    PERS,
    SOCK,
    NETLINK,
    SOCKPAIR,
    SOCKETCALL,
    NOFAMILY,
    NOPROTO,
    NOSYS,
    ALLOW,
    RET_BASE
  };
  prog p;
  memset(&p, 0, sizeof p);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
#ifdef COMPAT_ARCH
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, NATIVE, COMPAT);
  label(&p, COMPAT);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, COMPAT_ARCH, COMPAT_NR, ALLOW);
#else
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, NATIVE, ALLOW);
#endif
  label(&p, NATIVE);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
#ifdef X32_BIT
  emit(&p, BPF_ALU | BPF_AND | BPF_K, ~X32_BIT, 0, 0);
#endif
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, NATIVE_PERSONALITY, PERS, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, NATIVE_SOCKET, SOCK, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, NATIVE_SOCKETPAIR, SOCKPAIR, COMMON);
#ifdef COMPAT_ARCH
  label(&p, COMPAT_NR);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, COMPAT_PERSONALITY, PERS, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, COMPAT_SOCKET, SOCK, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, COMPAT_SOCKETPAIR, SOCKPAIR, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, COMPAT_SOCKETCALL, SOCKETCALL, COMMON);
#endif
  label(&p, COMMON);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_new); i++)
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, k_new[i].nr, RET_BASE + (int)i, L_NONE);
  emit(&p, BPF_JMP | BPF_JA, 0, ALLOW, L_NONE);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_new); i++) {
    label(&p, RET_BASE + (int)i);
    emit(&p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t)k_new[i].err, 0, 0);
  }
  /* personality: allow PER_LINUX (0), PER_LINUX32 (8), their UNAME26
   * variants and the 0xffffffff query; anything else (ADDR_NO_RANDOMIZE,
   * READ_IMPLIES_EXEC...) gets EPERM */
  label(&p, PERS);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]), 0, 0);
  static const uint32_t ok[] = {0, 8, 0x20000, 0x20008, 0xffffffffu};
  for (size_t i = 0; i < ASBI_ARRAY_LEN(ok); i++)
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, ok[i], ALLOW, L_NONE);
  emit(&p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM, 0, 0);
  /* socket(family, type, protocol): see k_families */
  label(&p, SOCK);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]), 0, 0);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_families); i++)
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, k_families[i], ALLOW, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, FAMILY_NETLINK, NETLINK, NOFAMILY);
  label(&p, NETLINK);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2]), 0, 0);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_netlink); i++)
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, k_netlink[i], ALLOW, L_NONE);
  emit(&p, BPF_JMP | BPF_JA, 0, NOPROTO, L_NONE);
  /* socketpair: only unix sockets come in pairs anyway */
  label(&p, SOCKPAIR);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]), 0, 0);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1 /* AF_UNIX */, ALLOW, NOFAMILY);
#ifdef COMPAT_ARCH
  label(&p, SOCKETCALL);
  emit(&p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]), 0, 0);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, SOCKETCALL_SOCKET, NOSYS, L_NONE);
  emit(&p, BPF_JMP | BPF_JEQ | BPF_K, SOCKETCALL_SOCKETPAIR, NOSYS, ALLOW);
#else
  label(&p, SOCKETCALL);
#endif
  label(&p, NOSYS);
  emit(&p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS, 0, 0);
  label(&p, NOFAMILY);
  emit(&p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT, 0, 0);
  label(&p, NOPROTO);
  emit(&p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPROTONOSUPPORT, 0, 0);
  label(&p, ALLOW); /* = the first instruction after the prefix */
  return assemble(&p, out);
#else
  out->filter = NULL;
  out->len = 0;
  return 0;
#endif
}

static int export_bpf(scmp_filter_ctx c, struct sock_fprog *out) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0) return -errno;
  int r = seccomp_export_bpf(c, pfd[1]);
  close(pfd[1]);
  if (r < 0) {
    close(pfd[0]);
    return r;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    if (n == cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t k = read(pfd[0], buf + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(pfd[0]);
  if (!buf) return -ENOMEM;
  out->filter = (struct sock_filter *)buf;
  out->len = (unsigned short)(n / sizeof(struct sock_filter));
  return 0;
}

int asbe__secure_init(asbe_secure *s) {
  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_keep); i++) s->keep_caps |= 1ull << k_keep[i];
  char buf[16];
  s->last_cap = 40;
  if (asbe__read_small("/proc/sys/kernel/cap_last_cap", buf, sizeof buf) > 0)
    s->last_cap = atoi(buf);
  if (s->last_cap > 63) s->last_cap = 63;

  scmp_filter_ctx c = seccomp_init(SCMP_ACT_ALLOW);
  if (!c) return asbe__fail(-ENOMEM, "seccomp_init");
  int r = 0;
#if defined(__x86_64__)
  seccomp_arch_add(c, SCMP_ARCH_X86);
  seccomp_arch_add(c, SCMP_ARCH_X32);
#endif
  seccomp_attr_set(c, SCMP_FLTATR_CTL_NNP, 0);
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_deny) && r == 0; i++) {
    int nr = seccomp_syscall_resolve_name(k_deny[i]);
    if (nr == __NR_SCMP_ERROR) continue; /* unknown here: extra filter */
    r = seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (r == -EDOM || r == -EOPNOTSUPP) r = 0; /* not on this arch */
    if (r < 0) r = asbe__fail(r, "seccomp rule %s", k_deny[i]);
  }
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_ns_flags) && r == 0; i++) {
    r = seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, k_ns_flags[i], k_ns_flags[i]));
    if (r < 0) r = asbe__fail(r, "seccomp clone rule");
  }
  if (r == 0) {
    int nr = seccomp_syscall_resolve_name("clone3");
    if (nr != __NR_SCMP_ERROR) {
      r = seccomp_rule_add(c, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
      if (r < 0) r = asbe__fail(r, "seccomp clone3 rule");
    }
  }
  struct sock_fprog main = {0, NULL}, prefix = {0, NULL};
  if (r == 0 && (r = export_bpf(c, &main)) < 0) r = asbe__fail(r, "seccomp export");
  seccomp_release(c);
  if (r == 0 && (r = build_prefix(&prefix)) < 0) r = asbe__fail(r, "seccomp prefix");
  if (r == 0) {
    size_t n = (size_t)prefix.len + main.len;
    s->prog.filter = calloc(n, sizeof(struct sock_filter));
    if (!s->prog.filter || n > BPF_MAXINSNS) {
      r = asbe__fail(s->prog.filter ? -E2BIG : -ENOMEM, "seccomp program");
    } else {
      if (prefix.len)
        memcpy(s->prog.filter, prefix.filter, prefix.len * sizeof(struct sock_filter));
      memcpy(s->prog.filter + prefix.len, main.filter, main.len * sizeof(struct sock_filter));
      s->prog.len = (unsigned short)n;
    }
  }
  free(main.filter);
  free(prefix.filter);
  if (r < 0) asbe__secure_free(s);
  return r;
}

void asbe__secure_free(asbe_secure *s) {
  free(s->prog.filter);
  s->prog.filter = NULL;
  s->prog.len = 0;
}

int asbe__secure_bounding(const asbe_secure *s) {
  for (int c = 0; c <= s->last_cap; c++) {
    if (s->keep_caps & (1ull << c)) continue;
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) return -errno;
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  return 0;
}

int asbe__secure_finish(const asbe_secure *s, const char **what) {
  if (geteuid() == 0) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    d[0].effective = d[0].permitted = (uint32_t)s->keep_caps;
    d[1].effective = d[1].permitted = (uint32_t)(s->keep_caps >> 32);
    if (syscall(SYS_capset, &hdr, d) < 0) {
      *what = "capset";
      return -errno;
    }
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    *what = "no_new_privs";
    return -errno;
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &s->prog) < 0) {
    *what = "seccomp";
    return -errno;
  }
  return 0;
}

/* ---- resource limits ------------------------------------------------------ */

static const struct {
  int res;
  rlim_t soft, hard;
} k_rlimits[] = {{RLIMIT_NOFILE, ASBE_NOFILE_SOFT, ASBE_NOFILE_HARD},
                 {RLIMIT_CORE, 0, 0},
                 {RLIMIT_RTPRIO, 0, 0},
                 {RLIMIT_NICE, 0, 0},
                 {RLIMIT_MEMLOCK, 8u << 20, 8u << 20},
                 {RLIMIT_MSGQUEUE, 819200, 819200}};

int asbe__rlimits_set(int agent) {
  for (size_t i = 0; i < ASBI_ARRAY_LEN(k_rlimits); i++) {
    struct rlimit want = {k_rlimits[i].soft, k_rlimits[i].hard}, cur;
    if (agent && k_rlimits[i].res == RLIMIT_NOFILE)
      want.rlim_cur = want.rlim_max = ASBE_NOFILE_AGENT;
    if (prlimit(0, k_rlimits[i].res, NULL, &cur) < 0) return -errno;
    if (want.rlim_max > cur.rlim_max) want.rlim_max = cur.rlim_max;
    if (want.rlim_cur > want.rlim_max) want.rlim_cur = want.rlim_max;
    if (prlimit(0, k_rlimits[i].res, &want, NULL) < 0) return -errno;
  }
  return 0;
}
