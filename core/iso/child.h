/* The sandbox init's setup, run in the cloned child before it execs asb-init.
 * Everything it needs is prepared by the parent in an asbe_plan; the child
 * only makes system calls (no malloc, no stdio, no glibc setxid wrappers:
 * the engine may be multi-threaded and the child is a raw clone3() of it,
 * so glibc's view of "other threads" is stale there).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_ISO_CHILD_H
#define ASB_ENGINE_ISO_CHILD_H

#include <stdint.h>

#include "iso_int.h"

#define ASBE_MAX_LAYERS 32
#define ASBE_MAX_BINDS 16
_Static_assert(ASBE_MAX_LAYERS + ASBE_MAX_BINDS + 1 <= ASBE_MAX_FDS,
               "layers, binds and the agent dir must fit one SCM_RIGHTS message");

/* Messages on the parent <-> child SOCK_SEQPACKET socket. */
enum {
  ASBE_MSG_GO = 1,   /* parent: maps written, fds attached (SCM_RIGHTS) */
  ASBE_MSG_CG = 2,   /* child: cgroup namespace made, move me to agent */
  ASBE_MSG_EXEC = 3, /* parent: cgroups and state recorded, exec init */
  ASBE_MSG_ERR = 4   /* child: a step failed (err, what) */
};

typedef struct asbe_msg {
  int32_t type;
  int32_t err;
  char what[120];
} asbe_msg;

typedef struct asbe_plan {
  int sock;
  int wfd;                                 /* writable layer (detached mount, inherited) */
  int logfd;                               /* the agent log (inherited): stdout, stderr */
  int n_layers, n_binds;                   /* fds sent with GO: layers, binds, agent dir */
  char stage[PATH_MAX];                    /* shared empty dir to mount the staging tmpfs on */
  char ovl_opts[4096];                     /* relative to the stage */
  char layer_dir[ASBE_MAX_LAYERS][8];      /* "l0".. */
  char bind_dst[ASBE_MAX_BINDS][PATH_MAX]; /* "r/usr" */
  int n_cg;
  char cg_src[ASBE_CG_MAX][PATH_MAX]; /* host workload cgroup dirs */
  char cg_dst[ASBE_CG_MAX][64];       /* "r/run/asb/cgroup/memory" */
  char hostname[64];
  char hostname_line[66]; /* hostname + "\n" for /etc/hostname */
  char hosts[512];
  char resolv[256];  /* /etc/resolv.conf, "" = the template's own */
  char ca_pem[8192]; /* appended to the CA bundle, "" = none */
  char shm_opts[64];
  char *const *argv;
  char *const *envp;
  const asbe_secure *sec;
} asbe_plan;

__attribute__((noreturn)) void asbe__child_main(const asbe_plan *p);

#endif
