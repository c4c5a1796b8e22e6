/*
 * agent-sandbox — every handle type and every callback type of the public
 * ABI, in one place.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * The handles are opaque: you hold pointers to them and reach their contents
 * through functions. Who creates and who frees each one is in docs/abi.md
 * and on its header's reference page. A header needs only this one (and
 * common.h) to name another header's types, so no public header includes
 * another just for a typedef. This header is C89-clean and usable from C++.
 */
#ifndef AGENTSANDBOX_TYPES_H
#define AGENTSANDBOX_TYPES_H

#include "common.h"

ASB_BEGIN_DECL

/* ---- libagentsandbox: handles -------------------------------------------- */

/* A cancellation token (cancel.h). */
typedef struct asb_cancel asb_cancel;
/* Configuration and connection pool (client.h). */
typedef struct asb_client asb_client;
/* One sandbox (sandbox.h) and what the control plane says of it. */
typedef struct asb_sandbox asb_sandbox;
typedef struct asb_sandbox_info asb_sandbox_info;
typedef struct asb_sandbox_page asb_sandbox_page;
typedef struct asb_metrics asb_metrics;
/* A command or pty running in a sandbox, as seen by one client
 * (commands.h, pty.h), the outcome of a finished one, and the list of the
 * running ones. */
typedef struct asb_process asb_process;
typedef struct asb_command_result asb_command_result;
typedef struct asb_process_list asb_process_list;
typedef struct asb_process_info asb_process_info;
/* File information and a directory watch (files.h). */
typedef struct asb_entry asb_entry;
typedef struct asb_entry_list asb_entry_list;
typedef struct asb_watch asb_watch;
/* A file being read one chunk per call (files.h). */
typedef struct asb_file_reader asb_file_reader;
/* Code execution (code.h): one rich result, the outcome of one run, a
 * kernel context and the list of them. */
typedef struct asb_code_result asb_code_result;
typedef struct asb_execution asb_execution;
typedef struct asb_code_context asb_code_context;
typedef struct asb_code_context_list asb_code_context_list;
/* Named sessions (session.h). */
typedef struct asb_session asb_session;
typedef struct asb_session_list asb_session_list;
/* The commands a sandbox's command server lists (named.h). */
typedef struct asb_named_command asb_named_command;
typedef struct asb_named_command_list asb_named_command_list;
/* Templates (template.h). */
typedef struct asb_template asb_template;
typedef struct asb_template_list asb_template_list;
typedef struct asb_template_build asb_template_build;
/* Volumes (volume.h). */
typedef struct asb_volume asb_volume;
typedef struct asb_volume_list asb_volume_list;
typedef struct asb_volume_entry asb_volume_entry;
typedef struct asb_volume_entry_list asb_volume_entry_list;

/* Secrets (secret.h). */
typedef struct asb_secret asb_secret;
typedef struct asb_secret_page asb_secret_page;
/* The ids of snapshots (asb_snapshots_list). */
typedef struct asb_snapshot_list asb_snapshot_list;
typedef struct asb_fork_list asb_fork_list; /* asb_sandbox_fork_many */
/* Git in a sandbox (git.h). */
typedef struct asb_git_status asb_git_status;
typedef struct asb_git_branch_list asb_git_branch_list;
/* agents.h: the coding agents a sandbox's server knows, a session with one,
 * an event of its log, a list of events, the result of a turn. */
typedef struct asb_agent asb_agent;
typedef struct asb_agent_list asb_agent_list;
typedef struct asb_agent_session asb_agent_session;
typedef struct asb_agent_event asb_agent_event;
typedef struct asb_agent_event_list asb_agent_event_list;
typedef struct asb_agent_turn asb_agent_turn;

/* Options of every blocking call that has no options of its own; the
 * struct itself is in client.h. */
typedef struct asb_call_options asb_call_options;

/* ---- libagentsandbox: callbacks -------------------------------------------
 * Every callback gets the userdata given next to it as its last argument,
 * runs on the thread that made the call, and aborts the call by returning
 * non-zero (asb_read_fn: a negative count); the call then returns ASB_EUSER,
 * or your negative asb_status. What a callback is given is valid during the
 * callback only. */

/* A chunk of output (not NUL-terminated; binary-safe). */
typedef int ASB_CALLBACK(asb_data_fn)(const char *data, size_t len,
                                      void *userdata);

/* Fills buf with up to cap bytes for an upload; returns the count, 0 at the
 * end, or a negative value to abort it. */
typedef long ASB_CALLBACK(asb_read_fn)(char *buf, size_t cap, void *userdata);

/* What happened to a watched path. */
typedef enum asb_fs_event_type {
  ASB_FS_EVENT_CREATE = 1,
  ASB_FS_EVENT_WRITE = 2,
  ASB_FS_EVENT_REMOVE = 3,
  ASB_FS_EVENT_RENAME = 4,
  ASB_FS_EVENT_CHMOD = 5
} asb_fs_event_type;

/* A filesystem event: name is relative to the watched directory; entry is
 * NULL unless include_entry was set (and the file still exists). */
typedef int ASB_CALLBACK(asb_watch_fn)(asb_fs_event_type type, const char *name,
                                       const asb_entry *entry, void *userdata);

/* A rich result of a code run arrived. */
typedef int ASB_CALLBACK(asb_result_fn)(const asb_code_result *result,
                                        void *userdata);

/* The code raised: exception name, value and the formatted traceback. */
typedef int ASB_CALLBACK(asb_code_error_fn)(const char *name, const char *value,
                                            const char *traceback,
                                            void *userdata);

/* An event of an agent session (agents.h), valid during the call. Non-zero
 * aborts the call (ASB_EUSER); the turn in the sandbox goes on. */
typedef int ASB_CALLBACK(asb_agent_event_fn)(const asb_agent_event *event,
                                             void *userdata);

/* ---- libagentsandbox-server (server.h) ------------------------------------
 */

/* A command server: the registry of commands and the HTTP service. */
typedef struct asb_server asb_server;
/* A registered command (owned by its server). */
typedef struct asb_server_command asb_server_command;
/* One call of a command, handed to its handler. */
typedef struct asb_server_call asb_server_call;

/* A command's handler; see server.h for what it may do and where it runs. */
typedef int ASB_CALLBACK(asb_server_handler_fn)(asb_server_call *call,
                                                void *userdata);
/* Releases a command's userdata when the server is freed. */
typedef void ASB_CALLBACK(asb_server_destroy_fn)(void *userdata);

ASB_END_DECL

#endif /* AGENTSANDBOX_TYPES_H */
