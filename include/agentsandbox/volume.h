/*
 * agent-sandbox — volumes: persistent filesystems that sandboxes mount at
 * create (asb_sandbox_options.volume_mounts), made, listed and deleted with
 * the API key, and their files reached without a sandbox through the
 * volume content API, authorised by the volume's own token
 * (docs/volumes.md). E2B's SDK names: Volume.create/connect/list/destroy,
 * vol.readFile/writeFile/list/makeDir/getInfo/exists/updateMetadata/remove.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef AGENTSANDBOX_VOLUME_H
#define AGENTSANDBOX_VOLUME_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

/* ---- the control plane (API key) ---------------------------------------- */

/* Make a volume named name (1..63 of [A-Za-z0-9_-]) of size_mb MiB (its
 * quota; 0 = the engine's default, 1024). ASB_EINVAL for a bad name or
 * size, ASB_EEXISTS if the name is taken. */
ASB_API(int)
asb_volumes_create(asb_volume **out, asb_client *client, const char *name,
                   int size_mb, const asb_call_options *call);

/* A volume by id or name (E2B's Volume.connect / getInfo), with its token.
 * ASB_ENOTFOUND if there is none. */
ASB_API(int)
asb_volumes_get(asb_volume **out, asb_client *client, const char *volume_id,
                const asb_call_options *call);

/* Every volume (without tokens: asb_volumes_get one to reach its files). */
ASB_API(int)
asb_volumes_list(asb_volume_list **out, asb_client *client,
                 const asb_call_options *call);
ASB_API(size_t) asb_volume_list_count(const asb_volume_list *l);
/* Owned by the list; NULL past the end. */
ASB_API(const asb_volume *)
asb_volume_list_get(const asb_volume_list *l, size_t i);
/* The volume named name, or NULL. */
ASB_API(const asb_volume *)
asb_volume_list_find(const asb_volume_list *l, const char *name);
ASB_API(void) asb_volume_list_free(asb_volume_list *l);

/* Delete a volume by id or name, with its files. ASB_ENOTFOUND if there is
 * none; ASB_EEXISTS while a running or paused sandbox mounts it (the
 * message names them). */
ASB_API(int)
asb_volumes_delete(asb_client *client, const char *volume_id,
                   const asb_call_options *call);

/* A volume object from its id, name and content token, with no API call
 * (E2B's `new Volume(volumeId, name, token)`): its file calls go to
 * client's engine, authorised by token alone (the client's API key is not
 * needed). name may be NULL (""); asb_volume_size_mb is 0 (not known).
 * ASB_EINVAL for an empty id or token, or a token with bytes outside
 * printable ASCII (it goes into an HTTP header). A wrong token or id is
 * only found out by the first file call (ASB_EAUTH / ASB_ENOTFOUND). */
ASB_API(int)
asb_volume_from_token(asb_volume **out, asb_client *client,
                      const char *volume_id, const char *name,
                      const char *token);

/* ---- a volume (strings owned by the object) ----------------------------- */
ASB_API(const char *) asb_volume_id(const asb_volume *v);
ASB_API(const char *) asb_volume_name(const asb_volume *v);
/* The token of the content API; "" for volumes of asb_volumes_list. */
ASB_API(const char *) asb_volume_token(const asb_volume *v);
ASB_API(int) asb_volume_size_mb(const asb_volume *v);
ASB_API(void) asb_volume_free(asb_volume *v);

/* ---- its files (the volume's token) -------------------------------------
 * path is a path in the volume ("/" its root; "." and ".." components are
 * refused with ASB_EINVAL). A volume from asb_volumes_list has no token:
 * these calls fail with ASB_EINVAL on it. */

#define ASB_VOLUME_WRITE_OPTIONS_VERSION 1

typedef struct asb_volume_write_options {
  unsigned int version; /* ASB_VOLUME_WRITE_OPTIONS_VERSION */
  int uid;              /* owner as sandboxes see it (0..65535): 0 = root */
  int gid;
  int mode;        /* permission bits: 0 = 0644 for files, 0755 for
                      directories */
  int force;       /* files: replace an existing one (ASB_EEXISTS
                      otherwise); directories: make missing parents and
                      accept an existing one (mkdir -p) */
  long timeout_ms; /* 0 = the client's default, negative = none */
  asb_cancel *cancel;
} asb_volume_write_options;

#define ASB_VOLUME_WRITE_OPTIONS_INIT \
  { ASB_VOLUME_WRITE_OPTIONS_VERSION, 0, 0, 0, 0, 0, NULL }

ASB_API(int)
asb_volume_write_options_init(asb_volume_write_options *opts,
                              unsigned int version);

/* The bytes of the file at path (*data freed with asb_free; NUL-terminated
 * beyond *len). ASB_ENOTFOUND for no regular file. */
ASB_API(int)
asb_volume_read_file(char **data, size_t *len, asb_volume *v, const char *path,
                     const asb_call_options *call);

/* Write a file (at most 256 MiB; readers never see half of it). *out
 * (optional) describes it. ASB_EEXISTS if it exists and opts->force is
 * not set, ASB_ENOTFOUND if the parent dir does not exist, ASB_ENOSPACE
 * when the volume is full (the old file stays). */
ASB_API(int)
asb_volume_write_file(asb_volume_entry **out, asb_volume *v, const char *path,
                      const void *data, size_t len,
                      const asb_volume_write_options *opts);

/* Make a directory; *out (optional) describes it. Without opts->force:
 * ASB_ENOTFOUND if its parent does not exist, ASB_EEXISTS if it does. */
ASB_API(int)
asb_volume_make_dir(asb_volume_entry **out, asb_volume *v, const char *path,
                    const asb_volume_write_options *opts);

/* What is at path (a symlink is not followed). ASB_ENOTFOUND if nothing. */
ASB_API(int)
asb_volume_get_info(asb_volume_entry **out, asb_volume *v, const char *path,
                    const asb_call_options *call);

/* 1 if something is at path, 0 if not (as asb_files_exists), or an
 * error. */
ASB_API(int)
asb_volume_exists(asb_volume *v, const char *path,
                  const asb_call_options *call);

/* Change the owner and mode of what is at path: -1 keeps a value. *out
 * (optional) describes it after. A symlink is refused. */
ASB_API(int)
asb_volume_update_metadata(asb_volume_entry **out, asb_volume *v,
                           const char *path, int uid, int gid, int mode,
                           const asb_call_options *call);

/* Remove what is at path, recursively; a symlink is removed, never
 * followed. ASB_ENOTFOUND if nothing is there. */
ASB_API(int)
asb_volume_remove(asb_volume *v, const char *path,
                  const asb_call_options *call);

/* The entries of the dir at path, depth levels down (0 = 1, at most 64). */
ASB_API(int)
asb_volume_entries_list(asb_volume_entry_list **out, asb_volume *v,
                        const char *path, int depth,
                        const asb_call_options *call);
ASB_API(size_t) asb_volume_entry_list_count(const asb_volume_entry_list *l);
/* Owned by the list; NULL past the end. */
ASB_API(const asb_volume_entry *)
asb_volume_entry_list_get(const asb_volume_entry_list *l, size_t i);
ASB_API(void) asb_volume_entry_list_free(asb_volume_entry_list *l);

/* ---- an entry (strings owned by the object) ----------------------------- */
ASB_API(const char *) asb_volume_entry_name(const asb_volume_entry *e);
/* Its path in the volume. */
ASB_API(const char *) asb_volume_entry_path(const asb_volume_entry *e);
/* "file", "directory", "symlink" or "unknown". */
ASB_API(const char *) asb_volume_entry_type(const asb_volume_entry *e);
/* A symlink's target; NULL for anything else. */
ASB_API(const char *) asb_volume_entry_target(const asb_volume_entry *e);
ASB_API(asb_int64) asb_volume_entry_size(const asb_volume_entry *e);
/* Permission bits (e.g. 0644). */
ASB_API(int) asb_volume_entry_mode(const asb_volume_entry *e);
ASB_API(int) asb_volume_entry_uid(const asb_volume_entry *e);
ASB_API(int) asb_volume_entry_gid(const asb_volume_entry *e);
/* Unix seconds. */
ASB_API(asb_int64) asb_volume_entry_modified_at(const asb_volume_entry *e);
ASB_API(asb_int64) asb_volume_entry_accessed_at(const asb_volume_entry *e);
ASB_API(asb_int64) asb_volume_entry_changed_at(const asb_volume_entry *e);
ASB_API(void) asb_volume_entry_free(asb_volume_entry *e);

ASB_END_DECL

#endif /* AGENTSANDBOX_VOLUME_H */
