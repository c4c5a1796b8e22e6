/* envd: signed /files URLs and token comparison (sign.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_SIGN_H
#define ASB_ENVD_SIGN_H

#include <stddef.h>

/* Constant-time string equality. */
int envd_token_eq(const char *a, const char *b);
/* "v1_" + base64-nopad(sha256("path:op:user:token[:exp]")) into out (64+). */
void envd_sign(const char *path, const char *op, const char *user,
               const char *token, const char *exp, char *out, size_t n);

#endif
