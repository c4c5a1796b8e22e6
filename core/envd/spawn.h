/* envd: starting a child with vfork semantics. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_SPAWN_H
#define ASB_ENVD_SPAWN_H

#include <sys/types.h>

typedef struct envd_spawn {
  const char *path; /* program to execve */
  char *const *argv;
  char *const *envp;
  const char *cwd;
  int fd_in, fd_out, fd_err; /* become 0, 1, 2 (pty: all the slave) */
  int pty;                   /* setsid + controlling terminal */
  /* with extra_fds: these become 3 and 4 (prestart.c's control pipe and
   * command file); without, the child has 0, 1, 2 only */
  int extra_fds;
  int fd_3, fd_4;
  int set_ids; /* switch to uid/gid/groups */
  uid_t uid;
  gid_t gid;
  const gid_t *groups;
  int ngroups;
  char *const *cgroup_procs;            /* "<dir>/cgroup.procs" files to join */
  int oom_score_adj;                    /* written when >= -1000 */
  unsigned long nofile_cur, nofile_max; /* RLIMIT_NOFILE when nofile_max > 0 */
  /* Written to fd 2 when execve fails (the shell's message) */
  const char *msg_noent;
  const char *msg_acces;
  /* results */
  int fail_errno;
  char fail_stage[32];
} envd_spawn;

/* Starts the child; the caller is blocked until it has exec'd or failed.
 * Returns the pid (the caller must reap it even on failure) or -1 with
 * errno when clone itself failed. Calls must be serialised by the caller. On a failure before
 * execve, fail_errno and fail_stage are set. */
pid_t envd_spawn_run(envd_spawn *s);

#endif
