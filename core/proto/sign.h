/* E2B's signed /files URLs: the signature envd checks, the clients put in
 * download/upload URLs and the engine's router uses to find the sandbox a
 * signed request is for (sign.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_SIGN_H
#define ASB_PROTO_SIGN_H

#include <stddef.h>

/* "v1_" + base64-nopad(sha256("path:op:user:token[:exp]")) into out (at
 * least ASBI_FILES_SIG_MAX bytes; n smaller truncates). op is "read" or
 * "write"; exp the expiration as its decimal text, or NULL for none. */
#define ASBI_FILES_SIG_MAX 64
void asbi_files_sign(const char *path, const char *op, const char *user, const char *token,
                     const char *exp, char *out, size_t n);

#endif
