/* envd: the child environment, and the pre-started login shell (issue 23):
 * one `bash -l` per envd, already past its profile, waiting for the next
 * `commands.run` of the same user, cwd and stdin mode. Internal; the rules
 * are in docs/envd.md ("The pre-started login shell").
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_PRESTART_H
#define ASB_ENVD_PRESTART_H

#include <cjson/cJSON.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "auth.h"

/* The environment of a process envd starts: PATH (envd's), HOME, USER,
 * LOGNAME (the user's), then the /init variables, then envs (a JSON object
 * of strings, may be NULL); a later one replaces an earlier one of the same
 * name. NULL-terminated, free with envd_strv_free; NULL when out of memory.
 * *path_out (may be NULL) points at the value of PATH inside it. */
char **envd_child_env(const envd_user *u, const cJSON *envs, const char **path_out);

/* Starts the thread that pre-starts shells; off when ASB_PRESTART=0. */
int envd_pre_init(void);
/* Kills the waiting shell and stops the thread. */
void envd_pre_shutdown(void);

/* The command of a Start the pre-started shell can run: cmd "/bin/bash",
 * args exactly ["-l", "-c", CMD], no envs, no pty. CMD, or NULL. */
const char *envd_pre_eligible(const char *cmd, const cJSON *args, const cJSON *envs,
                              const cJSON *pty);

typedef struct envd_pre_proc {
  pid_t pid;
  int fd_in;  /* the stdin pipe's write end, -1 for /dev/null */
  int fd_out; /* read ends, O_NONBLOCK */
  int fd_err;
  int ctl;   /* envd's end of the control pipe */
  int cmdfd; /* the command file (memfd) */
} envd_pre_proc;

/* Takes the waiting shell if it was started for this user, cwd (the path
 * and the inode st describes) and stdin mode, the /init environment has not
 * changed since, none of the startup files changed, and it is alive. 0 and
 * *out (the caller owns the process and the descriptors from now on), or -1.
 * A shell that can no longer be used is killed. Table lock held. */
int envd_pre_take(const envd_user *u, const char *cwd, const struct stat *st, int want_stdin,
                  envd_pre_proc *out);
/* Hands the command to a taken shell and closes ctl and cmdfd. 0, or -1
 * when the shell is gone (its end is reported as any process's). */
int envd_pre_send(envd_pre_proc *pp, const char *cmd);
/* Asks for a shell for the next command like this one (the thread starts it
 * unless one for the same user, cwd and stdin mode is waiting). after > 0:
 * not before envd_pre_release(after), which the caller owes: the command
 * that took the last shell ends first, without a shell's start-up beside it
 * on the CPUs. */
void envd_pre_want(const envd_user *u, const char *cwd, int want_stdin, pid_t after);
/* The command of envd_pre_want's after is done, or has run for
 * ENVD_PRE_HOLD_MS: the next shell may start. */
#define ENVD_PRE_HOLD_MS 20
void envd_pre_release(pid_t pid);
/* The I/O thread reaped pid, which is in no process record. Table lock held. */
void envd_pre_reaped(pid_t pid);

#endif
