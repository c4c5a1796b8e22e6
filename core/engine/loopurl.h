/* Loopback URLs (see loopurl.c): http://127.0.0.1:<port> for one port of
 * one sandbox, for clients that cannot resolve *.localhost.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_LOOPURL_H
#define ASB_ENGINE_LOOPURL_H

#include <stddef.h>

#include "engine.h"
#include "front.h"

typedef struct loopurl loopurl;

loopurl *loopurl_new(front *f);
/* After front_stop (the front closes the listeners). Accepts NULL. */
void loopurl_free(loopurl *lu);
/* The loopback port serving port of sandbox id, opened now if it is not
 * yet (the same one on every call while the sandbox lives). 0, or
 * -EINVAL (port), -ENOSPC (64 per sandbox, 4096 in all), -ESRCH (the
 * sandbox ended meanwhile), -errno. */
int loopurl_open(loopurl *lu, engine *e, const char *id, int port, int *lport);
/* Keeps the URLs in <state>/loopback from now on, and opens again those
 * a previous engine kept for the sandboxes in the table (adopted): the
 * same loopback port where it is free. Once, after the sandbox_gone
 * callback is in place. */
void loopurl_restore(loopurl *lu, engine *e);
/* Closes the sandbox's listeners (reg_remove calls it). */
void loopurl_sandbox_gone(loopurl *lu, const char *id);
/* 1 when conn_fd (a client connection) came in on a loopback URL's
 * listener: fills the sandbox id and port it serves (id "" once that
 * sandbox ended: the router answers its 502). */
int loopurl_match(loopurl *lu, int engine_port, int conn_fd, char *id, size_t idlen, int *port);

#endif
