/*
 * agent-sandbox — the filesystem of a sandbox.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Paths are absolute, or relative to the user's home. Every operation runs
 * with the permissions of the user it names (default: the sandbox's default
 * user), and files it creates belong to that user. Reads and writes stream:
 * memory stays flat whatever the file size.
 */
#ifndef AGENTSANDBOX_FILES_H
#define AGENTSANDBOX_FILES_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_FILES_OPTIONS_VERSION 2

/* Options shared by the file calls. */
typedef struct asb_files_options {
  unsigned int version; /* ASB_FILES_OPTIONS_VERSION */
  const char *user;     /* NULL = the sandbox's default user */
  long timeout_ms;      /* request timeout: 0 = client default, <0 = none */
  asb_cancel *cancel;
  int gzip; /* compress the transfer (reads and writes) */
  /* version 2 */
  const char *const *metadata; /* writes: "key=value" pairs, NULL-ended,
                                  stored on every written file as its user
                                  metadata (extended attributes; envd
                                  lowercases keys, refuses bad ones: 400) */
} asb_files_options;

#define ASB_FILES_OPTIONS_INIT \
  { ASB_FILES_OPTIONS_VERSION, NULL, 0, NULL, 0, NULL }

ASB_API(int)
asb_files_options_init(asb_files_options *opts, unsigned int version);

/* ---- entries (file information) ------------------------------------------ */
typedef enum asb_file_type {
  ASB_FILE_TYPE_UNKNOWN = 0,
  ASB_FILE_TYPE_FILE = 1,
  ASB_FILE_TYPE_DIR = 2,
  ASB_FILE_TYPE_SYMLINK = 3
} asb_file_type;

ASB_API(const char *) asb_entry_name(const asb_entry *e);
ASB_API(const char *) asb_entry_path(const asb_entry *e);
ASB_API(asb_file_type) asb_entry_type(const asb_entry *e);
ASB_API(asb_int64) asb_entry_size(const asb_entry *e);
ASB_API(unsigned int) asb_entry_mode(const asb_entry *e); /* st_mode bits */
ASB_API(const char *)
asb_entry_permissions(const asb_entry *e); /* "-rw-r--r--" */
ASB_API(const char *) asb_entry_owner(const asb_entry *e);
ASB_API(const char *) asb_entry_group(const asb_entry *e);
/* Modification time: Unix seconds, and the nanoseconds within that second. */
ASB_API(asb_int64) asb_entry_modified_at(const asb_entry *e);
ASB_API(long) asb_entry_modified_nanos(const asb_entry *e);
/* The link's target for symlinks, else NULL. */
ASB_API(const char *) asb_entry_symlink_target(const asb_entry *e);
/* The file's user metadata (what a write's metadata stored): the number of
 * pairs, and key/value i (NULL past the end). */
ASB_API(size_t) asb_entry_metadata_count(const asb_entry *e);
ASB_API(const char *) asb_entry_metadata_key(const asb_entry *e, size_t i);
ASB_API(const char *) asb_entry_metadata_value(const asb_entry *e, size_t i);
ASB_API(void) asb_entry_free(asb_entry *e);

ASB_API(size_t) asb_entry_list_count(const asb_entry_list *list);
ASB_API(const asb_entry *)
asb_entry_list_get(const asb_entry_list *list, size_t i);
ASB_API(void) asb_entry_list_free(asb_entry_list *list);

/* ---- reading ----------------------------------------------------------------
 */
/* The whole file into a new buffer (NUL-terminated for convenience; free
 * with asb_free). ASB_ENOTFOUND if missing. */
ASB_API(int)
asb_files_read(char **data, size_t *len, asb_sandbox *sandbox, const char *path,
               const asb_files_options *opts);
/* Stream the file to on_data in chunks. */
ASB_API(int)
asb_files_read_stream(asb_sandbox *sandbox, const char *path,
                      const asb_files_options *opts, asb_data_fn on_data,
                      void *userdata);

/* ---- reading at the caller's pace ------------------------------------------
 * The transfer of asb_files_read_stream, pulled one chunk per call by a
 * runtime that reads when it likes (an iterator, an event loop); the
 * library reads ahead at most about 1 MiB. */

/* Open path for reading; returns once the sandbox answered: ASB_ENOTFOUND
 * if there is no such file, ASB_EPERM, ASB_EINVAL (a directory). opts'
 * timeout_ms and cancel bound the opening only; *out is freed with
 * asb_file_reader_free. */
ASB_API(int)
asb_files_open_read(asb_file_reader **out, asb_sandbox *sandbox,
                    const char *path, const asb_files_options *opts);
/* The next chunk: 1 with *data and *len set (owned by the reader, valid
 * until its next call), 0 at the end of the file, or a negative asb_status.
 * call->timeout_ms > 0 bounds this wait (ASB_ETIMEOUT, the reader stays
 * usable); call->cancel interrupts it. */
ASB_API(int)
asb_file_reader_read(const char **data, size_t *len, asb_file_reader *reader,
                     const asb_call_options *call);
/* Stop the transfer: a read in progress returns ASB_ECANCELED, later reads
 * at once. Thread-safe, never blocks; the reader stays to be freed. */
ASB_API(void) asb_file_reader_stop(asb_file_reader *reader);
/* Stop and release the reader; a read in progress on another thread
 * returns ASB_ECANCELED and the memory goes when it returned. Never
 * blocks. Accepts NULL. */
ASB_API(void) asb_file_reader_free(asb_file_reader *reader);

/* ---- writing ----------------------------------------------------------------
 */

/* Create or replace path with len bytes (parent directories are created).
 * *out (may be NULL) receives the written entry. */
ASB_API(int)
asb_files_write(asb_entry **out, asb_sandbox *sandbox, const char *path,
                const void *data, size_t len, const asb_files_options *opts);
/* The same, streaming the content from read; size is the exact length, or
 * -1 if unknown. */
ASB_API(int)
asb_files_write_stream(asb_entry **out, asb_sandbox *sandbox, const char *path,
                       asb_read_fn read, void *userdata, asb_int64 size,
                       const asb_files_options *opts);

/* One file of a batch write. */
typedef struct asb_write_entry {
  const char *path;
  const void *data;
  size_t len;
} asb_write_entry;

/* Write several files in one request. *out (may be NULL) lists them. */
ASB_API(int)
asb_files_write_many(asb_entry_list **out, asb_sandbox *sandbox,
                     const asb_write_entry *files, size_t count,
                     const asb_files_options *opts);

/* ---- directory and metadata operations ------------------------------------
 */
/* Entries of a directory, recursing depth levels (0 or 1 = only its own). */
ASB_API(int)
asb_files_list(asb_entry_list **out, asb_sandbox *sandbox, const char *path,
               int depth, const asb_files_options *opts);
/* 1 if path exists, 0 if not, or a negative asb_status. */
ASB_API(int)
asb_files_exists(asb_sandbox *sandbox, const char *path,
                 const asb_files_options *opts);
ASB_API(int)
asb_files_stat(asb_entry **out, asb_sandbox *sandbox, const char *path,
               const asb_files_options *opts);
/* Remove a file or a directory tree. A missing path is not an error (as in
 * E2B: envd removes like os.RemoveAll). */
ASB_API(int)
asb_files_remove(asb_sandbox *sandbox, const char *path,
                 const asb_files_options *opts);
/* Move/rename; *out (may be NULL) receives the entry at its new path. */
ASB_API(int)
asb_files_rename(asb_entry **out, asb_sandbox *sandbox, const char *from,
                 const char *to, const asb_files_options *opts);
/* Create a directory and its parents: 1 if created, 0 if it already
 * existed, or a negative asb_status. */
ASB_API(int)
asb_files_make_dir(asb_sandbox *sandbox, const char *path,
                   const asb_files_options *opts);

/* ---- watching --------------------------------------------------------------
 */
/* Events (asb_fs_event_type) and the callback (asb_watch_fn) are in
 * types.h. */

#define ASB_WATCH_OPTIONS_VERSION 2

typedef struct asb_watch_options {
  unsigned int version; /* ASB_WATCH_OPTIONS_VERSION */
  const char *user;
  int recursive;
  int include_entry;
  long request_timeout_ms;
  asb_watch_fn on_event;
  void *userdata;
  asb_cancel *cancel;
  /* version 2 */
  int polling; /* a polling watch (E2B's sync SDK's watcher): the sandbox
                  keeps the events until asb_watch_poll fetches them */
} asb_watch_options;

#define ASB_WATCH_OPTIONS_INIT \
  { ASB_WATCH_OPTIONS_VERSION, NULL, 0, 0, 0, NULL, NULL, NULL, 0 }

ASB_API(int)
asb_watch_options_init(asb_watch_options *opts, unsigned int version);

/* Start watching; returns once the watch is in place, so every change made
 * after it returns is reported. */
ASB_API(int)
asb_files_watch_dir(asb_watch **out, asb_sandbox *sandbox, const char *path,
                    const asb_watch_options *opts);
/* Deliver events to on_event for up to timeout_ms (negative = until stopped
 * or the watch ends). Returns the number of events delivered, or a
 * negative asb_status. A polling watch polls (asb_watch_poll) every 50 ms
 * until one delivers events or the time is up. */
ASB_API(int) asb_watch_wait(asb_watch *watch, long timeout_ms);
/* A polling watch: deliver to on_event, in order, every event the sandbox
 * recorded since the previous poll, without waiting. The answer holds
 * every change made before the call (envd reads its inotify queue first),
 * so a change followed by a poll is always in that poll. Returns the
 * number delivered, or a negative asb_status: ASB_EINVAL for a streaming
 * watch; the watch's own failure (an inotify queue overflow, more than
 * 100000 unread events: ASB_ERROR with envd's message). call: its timeout
 * and cancel token (NULL = the watch's request timeout). */
ASB_API(int) asb_watch_poll(asb_watch *watch, const asb_call_options *call);
/* Make a concurrent asb_watch_wait return; thread-safe. */
ASB_API(void) asb_watch_stop(asb_watch *watch);
/* Stop and release. Accepts NULL. A polling watch's free also removes its
 * watcher in envd (one request, at most 5 s). */
ASB_API(void) asb_watch_free(asb_watch *watch);

/* ---- signed URLs ------------------------------------------------------------
 */
/* A URL that downloads (GET) or uploads (POST multipart/octet-stream) path
 * without other credentials, valid until expires_in_s seconds from now
 * (0 = no expiry; negative: already expired, as E2B signs it, which envd
 * refuses with 401). Free with asb_free. */
ASB_API(int)
asb_files_download_url(char **url, asb_sandbox *sandbox, const char *path,
                       const char *user, long expires_in_s);
ASB_API(int)
asb_files_upload_url(char **url, asb_sandbox *sandbox, const char *path,
                     const char *user, long expires_in_s);

ASB_END_DECL

#endif /* AGENTSANDBOX_FILES_H */
