/* The exec service of asb-init: a small process inside the sandbox, already
 * in the workload cgroups and under the sandbox's seccomp filter, that forks
 * commands for the engine. It listens on a SOCK_SEQPACKET unix socket
 * (ASB_EXEC_SOCK, mode 0600) and serves only peers outside the sandbox's pid
 * namespace (SO_PEERCRED pid 0), i.e. the engine.
 *
 * Request: one message = asb_exec_req + cwd (cwd_len bytes) + argc
 * NUL-terminated args + envc NUL-terminated "K=V" strings, with SCM_RIGHTS
 * fds for the streams flagged in `fds` (in order 0, 1, 2; others get
 * /dev/null). Replies: STARTED (+ a pidfd of the process, SCM_RIGHTS) or
 * FAILED (err = errno of the exec), then EXITED (status = wait status) when
 * the process ends; then the service closes the connection.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_EXEC_PROTO_H
#define ASB_EXEC_PROTO_H

#include <signal.h>
#include <stdint.h>

#define ASB_EXEC_SOCK "/run/asb/.exec.sock"

/* Sent to asb-init (its pidfd) to start its on-demand aux agent (-a N -d):
 * the code interpreter of templates that do not start it at create. Blocked
 * and read through asb-init's signalfd, so an asb-init without an aux agent,
 * or an older one, takes no action (the init of a pid namespace gets only
 * signals it handles). */
#define ASB_INIT_AUX_SIGNAL (SIGRTMIN + 1)
#define ASB_EXEC_MAGIC 0x41534258u /* "ASBX" */
#define ASB_EXEC_MAX 65536

enum { ASB_EXEC_STARTED = 1, ASB_EXEC_FAILED = 2, ASB_EXEC_EXITED = 3 };

typedef struct asb_exec_req {
  uint32_t magic;
  uint32_t uid, gid;
  uint32_t fds; /* bit i: an fd for stream i follows (SCM_RIGHTS) */
  uint32_t argc, envc, cwd_len, reserved;
} asb_exec_req;

typedef struct asb_exec_rep {
  int32_t type;
  int32_t err;
  int32_t pid;    /* inside the sandbox */
  int32_t status; /* EXITED: wait status */
} asb_exec_rep;

#endif
