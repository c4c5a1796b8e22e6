/*
 * agent-sandbox — commands and processes inside a sandbox.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Commands run as `/bin/bash -l -c <cmd>` as the sandbox's default user (or
 * the one you name), in its home directory unless you give a cwd. Three
 * timeouts apply, each in its own field: the command's lifetime
 * (timeout_ms, enforced inside the sandbox, which kills the command on
 * time even when no client is connected), the request's (request_timeout_ms,
 * bounding how long starting may take), and the sandbox's own lifetime
 * (set at create; see sandbox.h).
 */
#ifndef AGENTSANDBOX_COMMANDS_H
#define AGENTSANDBOX_COMMANDS_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

/* Version 2 appended stdin_data, stdin_len and kill_on_cancel; version 1
 * structs are still accepted (those fields then read as 0/NULL). */
#define ASB_COMMAND_OPTIONS_VERSION 2

typedef struct asb_command_options {
  unsigned int version;    /* ASB_COMMAND_OPTIONS_VERSION */
  const char *const *envs; /* "KEY=VALUE" strings, NULL-ended */
  const char *cwd;         /* NULL = the user's home (relative: under it) */
  const char *user;        /* NULL = the sandbox's default user */
  long timeout_ms;         /* command lifetime: 0 = 60000, negative = none */
  long request_timeout_ms; /* starting: 0 = client default, negative = none */
  int stdin_enabled;       /* keep stdin open for send_stdin */
  const char *tag;         /* optional tag to find the process by */
  asb_data_fn on_stdout;   /* optional: output as it arrives */
  asb_data_fn on_stderr;
  void *userdata;     /* passed to the callbacks */
  int discard_output; /* don't keep output in the result */
  asb_cancel *cancel; /* cancels the call (not the command, unless
                         kill_on_cancel) */
  /* version 2 */
  const void *stdin_data; /* written to stdin once the command runs,
                             stdin then closed (stdin_enabled is
                             implied); NULL = nothing */
  size_t stdin_len;
  int kill_on_cancel; /* a cancelled asb_commands_run (or a cancel
                         during asb_commands_start) kills the command:
                         starting is then not cut short, the kill
                         follows it */
} asb_command_options;

#define ASB_COMMAND_OPTIONS_INIT                                              \
  {                                                                           \
    ASB_COMMAND_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, \
        NULL, 0, NULL, NULL, 0, 0                                             \
  }

ASB_API(int)
asb_command_options_init(asb_command_options *opts, unsigned int version);

/* Run cmd to completion, streaming its output to the callbacks. *out is set
 * (to be freed with asb_command_result_free) when the command ran: the call
 * returns ASB_OK for exit code 0 and ASB_ECOMMANDEXIT otherwise. Other
 * errors: ASB_ETIMEOUT (command killed at its timeout), ASB_EINVAL (bad cwd,
 * bad user), ASB_ECANCELED, ASB_EUSER, transport errors. Cancelling the call
 * does not kill the command unless kill_on_cancel; asb_commands_kill does.
 * stdin_data is written before the wait; if that fails the command is
 * killed (it would wait for its input forever). */
ASB_API(int)
asb_commands_run(asb_command_result **out, asb_sandbox *sandbox,
                 const char *cmd, const asb_command_options *opts);

/* Start cmd in the background. Returns once the command is running (its pid
 * known) and stdin_data was written. Its output is delivered to the
 * callbacks during asb_process_wait (or read with asb_process_read); the
 * command keeps running if the handle is freed or disconnected. */
ASB_API(int)
asb_commands_start(asb_process **out, asb_sandbox *sandbox, const char *cmd,
                   const asb_command_options *opts);

/* Attach to a running process by pid (its output from now on); the options'
 * callbacks, timeout and cancel are used, the rest ignored. ASB_ENOTFOUND if
 * no such process. */
ASB_API(int)
asb_commands_connect(asb_process **out, asb_sandbox *sandbox, unsigned int pid,
                     const asb_command_options *opts);

/* Kill (SIGKILL) a process and its process group. ASB_ENOTFOUND if none. */
ASB_API(int)
asb_commands_kill(asb_sandbox *sandbox, unsigned int pid,
                  const asb_call_options *call);
/* Send SIGTERM (ASB_SIGNAL_TERM) or SIGKILL (ASB_SIGNAL_KILL). */
#define ASB_SIGNAL_TERM 15
#define ASB_SIGNAL_KILL 9
ASB_API(int)
asb_commands_signal(asb_sandbox *sandbox, unsigned int pid, int signal,
                    const asb_call_options *call);
/* Write to a process's stdin (it must have been started with
 * stdin_enabled). */
ASB_API(int)
asb_commands_send_stdin(asb_sandbox *sandbox, unsigned int pid,
                        const void *data, size_t len,
                        const asb_call_options *call);
ASB_API(int)
asb_commands_close_stdin(asb_sandbox *sandbox, unsigned int pid,
                         const asb_call_options *call);

/* ---- the running processes of a sandbox --------------------------------- */
ASB_API(int)
asb_commands_list(asb_process_list **out, asb_sandbox *sandbox,
                  const asb_call_options *call);
ASB_API(size_t) asb_process_list_count(const asb_process_list *list);
/* Owned by the list; NULL if i is out of range. */
ASB_API(const asb_process_info *)
asb_process_list_get(const asb_process_list *list, size_t i);
ASB_API(void) asb_process_list_free(asb_process_list *list);

ASB_API(unsigned int) asb_process_info_pid(const asb_process_info *info);
ASB_API(const char *) asb_process_info_tag(const asb_process_info *info);
ASB_API(const char *) asb_process_info_cmd(const asb_process_info *info);
/* NULL-ended argument vector (without cmd). */
ASB_API(const char *const *)
asb_process_info_args(const asb_process_info *info);
/* NULL-ended "KEY=VALUE" strings given at start. */
ASB_API(const char *const *)
asb_process_info_envs(const asb_process_info *info);
ASB_API(const char *) asb_process_info_cwd(const asb_process_info *info);

/* ---- process handles ---------------------------------------------------- */
ASB_API(unsigned int) asb_process_pid(const asb_process *process);

/* Wait for the process to end, delivering its output to the callbacks given
 * when it was started or connected. *out may be NULL if you need no result.
 * Returns like asb_commands_run. call->timeout_ms bounds this wait only: on
 * ASB_ETIMEOUT the process runs on and you may wait again. */
ASB_API(int)
asb_process_wait(asb_command_result **out, asb_process *process,
                 const asb_call_options *call);
/* Where a chunk of asb_process_read came from. */
typedef enum asb_output_kind {
  ASB_OUTPUT_STDOUT = 1,
  ASB_OUTPUT_STDERR = 2,
  ASB_OUTPUT_PTY = 3
} asb_output_kind;

/* Pull the next chunk of output instead of waiting with callbacks (for a
 * runtime that reads at its own pace: an iterator, an event loop). Returns
 * 1 with *kind (an asb_output_kind), *data and *len set (owned by the
 * handle, valid until its next call; the callbacks, if any, get it too),
 * 0 once the process ended (asb_process_wait then returns its result at
 * once), or a negative asb_status. call->timeout_ms bounds this wait
 * (ASB_ETIMEOUT: the process runs on). */
ASB_API(int)
asb_process_read(int *kind, const char **data, size_t *len,
                 asb_process *process, const asb_call_options *call);
ASB_API(int)
asb_process_kill(asb_process *process, const asb_call_options *call);
ASB_API(int)
asb_process_send_stdin(asb_process *process, const void *data, size_t len,
                       const asb_call_options *call);
ASB_API(int)
asb_process_close_stdin(asb_process *process, const asb_call_options *call);
/* The next three never block and may be called from any thread, also while
 * another thread waits on the process (docs/abi.md, Lifecycle). */
/* Make a wait in progress return ASB_ECANCELED at once, and later waits
 * too; no output callback starts after it returned (one already running
 * finishes). The process keeps running. */
ASB_API(void) asb_process_stop(asb_process *process);
/* Stop (as above) and release the connection (now, or when a wait in
 * progress returns); the process keeps running (reattach with
 * asb_commands_connect). */
ASB_API(void) asb_process_disconnect(asb_process *process);
/* Disconnect, cancel every call in flight on the handle, and release it: its
 * memory goes when the last of those calls has returned. Accepts NULL. */
ASB_API(void) asb_process_free(asb_process *process);

/* ---- results --------------------------------------------------------------
 */
/* All output the command wrote (unless discard_output), not NUL-terminated
 * in general but always followed by a NUL for convenience. */
ASB_API(const char *)
asb_command_result_stdout(const asb_command_result *r, size_t *len);
ASB_API(const char *)
asb_command_result_stderr(const asb_command_result *r, size_t *len);
ASB_API(int) asb_command_result_exit_code(const asb_command_result *r);
/* The sandbox's description of an abnormal end (e.g. "signal: killed"),
 * or NULL. */
ASB_API(const char *) asb_command_result_error(const asb_command_result *r);
ASB_API(void) asb_command_result_free(asb_command_result *r);

ASB_END_DECL

#endif /* AGENTSANDBOX_COMMANDS_H */
