/* envd: signed /files URLs and token comparison (sign.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_SIGN_H
#define ASB_ENVD_SIGN_H

#include <stddef.h>
#include <stdint.h>

/* E2B's check of a /files request when the access token is tok (NULL: none
 * is set, everything passes): an X-Access-Token header h equal to it, or a
 * signature sig of (path, op, user, tok[, exp]) whose expiration exp (unix
 * seconds, optional) is not before now. h, sig, exp and user are the
 * request's values, NULL when absent. 0, or -1 with the reason in msg. */
int envd_sign_verify(const char *tok, const char *h, const char *sig, const char *exp,
                     const char *user, const char *path, const char *op, int64_t now, char *msg,
                     size_t n);

#endif
