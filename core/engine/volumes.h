/* Volumes (volumes.c): E2B's /volumes API and its volume content API
 * (/volumecontent/{id}/...), persistent ext4 filesystems of a fixed size
 * mounted into sandboxes at create (volumeMounts).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_VOLUMES_H
#define ASB_ENGINE_VOLUMES_H

#include <stdint.h>

#include "apiio.h"
#include "engine.h"

struct asbe_template;

#define VOLUMES_MAX_MOUNTS 8
#define VOLUME_BODY_MAX (256u << 20) /* PUT /volumecontent/{id}/file */

/* Opens the store <state>/volumes (made if absent). 0 or -errno. */
int volumes_open(engine *e);
void volumes_close(engine *e);

/* 1 if q is a /volumes route (r is then filled), 0 if not. */
int api_volumes_handle(engine *e, api_req *q, api_reply *r);

/* The reply of the content API: JSON (body) or a file's bytes (fd >= 0,
 * size bytes; the caller owns and closes fd). */
typedef struct vol_reply {
  int status;
  char *body;
  int fd;
  uint64_t size;
} vol_reply;

/* Whether a /volumecontent/{id}/... request may go on, from its head: 0,
 * or 404 (no such volume) or 401 (not its token). Checked before the body
 * is read, so nobody without the token makes the engine buffer an upload. */
int volumes_content_authorized(engine *e, const char *path, const char *auth);

/* A /volumecontent/... request; auth is the Authorization header (NULL if
 * none): "Bearer <the volume's token>". */
void volumes_content(engine *e, api_req *q, const char *auth, vol_reply *r);

/* Checks E2B's volumeMounts of a create body (NULL/absent: none): an array
 * of {name, path}, names of existing volumes, paths absolute, normalised,
 * distinct, not nested and not where the sandbox's system lives. On success
 * *out is a normalised copy (caller frees), else 400 in r. */
int volumes_parse_mounts(engine *e, const cJSON *v, cJSON **out, api_reply *r);
/* Adds the mounts (as volumes_parse_mounts returned) to t, a copy made for
 * this create. 0, or -1 with why. */
int volumes_add_to(engine *e, const cJSON *mounts, struct asbe_template *t, char *why, size_t len);

#endif
