/* The engine's secrets (E2B's /secrets API, issue 17): named values kept
 * by the engine in <state>/secrets.json (0600, written whole to a
 * temporary file then renamed), never given to a sandbox. Header rules
 * reference one as ${e2b.secrets.<name>} (the placeholder E2B's SDKs'
 * Secret.fill() makes); the egress proxy substitutes the value when it
 * sends the request on, and nowhere else. Replies carry E2B's Secret
 * object (metadata only: no call returns a value). Thread-safe.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_NET_EGRESS_SECRETS_H
#define ASB_NET_EGRESS_SECRETS_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct asbn_secrets asbn_secrets;

/* Loads (or starts empty) the store in state_dir. 0, or -1 with err. */
int asbn_secrets_open(const char *state_dir, asbn_secrets **out, char *err, size_t errlen);
void asbn_secrets_close(asbn_secrets *s);

/* The /secrets operations. Each returns the HTTP status E2B's API gives
 * (201/200/204 on success; 400 bad name/value/metadata, 404 unknown, 409
 * name taken, 500 the store could not be written), with a message in err
 * on failure and, on success, E2B's Secret object in *info (cJSON_Delete
 * it; NULL allowed). id_or_name: "sec_..." or the name (case-insensitive). */
int asbn_secrets_create(asbn_secrets *s, const char *name, const char *value, const cJSON *metadata,
                        cJSON **info, char *err, size_t errlen);
int asbn_secrets_update(asbn_secrets *s, const char *id_or_name, const char *value,
                        const cJSON *metadata, cJSON **info, char *err, size_t errlen);
int asbn_secrets_get(asbn_secrets *s, const char *id_or_name, cJSON **info);
int asbn_secrets_delete(asbn_secrets *s, const char *id_or_name, char *err, size_t errlen);
/* Every secret's Secret object, oldest first. */
cJSON *asbn_secrets_list(asbn_secrets *s);

/* tmpl with each ${e2b.secrets.<name>} replaced by that secret's current
 * value: a malloc'ed string in *out (wipe and free it with
 * asbn_secrets_wipe). 0; 0 with *out a copy when tmpl has no placeholder;
 * -1 if a placeholder names no secret (the request is then not sent) or
 * out of memory. s may be NULL (no store: any placeholder fails). */
int asbn_secrets_resolve(asbn_secrets *s, const char *tmpl, char **out);
void asbn_secrets_wipe(char *v);

#endif
