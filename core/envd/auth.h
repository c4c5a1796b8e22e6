/* envd: Unix users and per-thread filesystem credentials (auth.c).
 * Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_AUTH_H
#define ASB_ENVD_AUTH_H

#include <stddef.h>
#include <sys/types.h>

typedef struct envd_user {
  char name[64];
  uid_t uid;
  gid_t gid;
  char home[512];
  gid_t groups[64];
  int ngroups;
} envd_user;

/* Look up a Unix user by name. 0, or -1 (unknown user). */
int envd_user_lookup(const char *name, envd_user *out);
/* Names of uid/gid (decimal when unknown) into out. */
void envd_uid_name(uid_t uid, char *out, size_t n);
void envd_gid_name(gid_t gid, char *out, size_t n);
/* Switch the calling thread's filesystem credentials (fsuid, fsgid and
 * supplementary groups) to the user's; envd_creds_leave restores root's.
 * 0, or -1 with errno. */
int envd_creds_enter(const envd_user *u);
void envd_creds_leave(void);

#endif
