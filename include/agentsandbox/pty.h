/*
 * agent-sandbox — interactive terminals (PTYs) inside a sandbox.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * A pty runs `/bin/bash -i -l` with TERM=xterm-256color on a pseudo-terminal
 * of the given size. Its output (one merged stream, terminal escapes
 * included) arrives through on_data during asb_process_wait; the pty is an
 * asb_process, so asb_process_kill/free/disconnect apply to it.
 */
#ifndef AGENTSANDBOX_PTY_H
#define AGENTSANDBOX_PTY_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_PTY_OPTIONS_VERSION 1

typedef struct asb_pty_options {
  unsigned int version;    /* ASB_PTY_OPTIONS_VERSION */
  unsigned int cols;       /* 0 = 80 */
  unsigned int rows;       /* 0 = 24 */
  const char *const *envs; /* "KEY=VALUE", NULL-ended */
  const char *cwd;
  const char *user;
  long timeout_ms; /* pty lifetime: 0 = 60000, negative = none */
  long request_timeout_ms;
  asb_data_fn on_data; /* terminal output */
  void *userdata;
  asb_cancel *cancel;
} asb_pty_options;

#define ASB_PTY_OPTIONS_INIT \
  { ASB_PTY_OPTIONS_VERSION, 0, 0, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL }

ASB_API(int) asb_pty_options_init(asb_pty_options *opts, unsigned int version);

/* Start a shell on a new pty; returns once it runs. */
ASB_API(int)
asb_pty_create(asb_process **out, asb_sandbox *sandbox,
               const asb_pty_options *opts);
/* Type into the pty (keystrokes, including control characters). */
ASB_API(int)
asb_pty_send_input(asb_sandbox *sandbox, unsigned int pid, const void *data,
                   size_t len, const asb_call_options *call);
ASB_API(int)
asb_pty_resize(asb_sandbox *sandbox, unsigned int pid, unsigned int cols,
               unsigned int rows, const asb_call_options *call);
ASB_API(int)
asb_pty_kill(asb_sandbox *sandbox, unsigned int pid,
             const asb_call_options *call);

ASB_END_DECL

#endif /* AGENTSANDBOX_PTY_H */
