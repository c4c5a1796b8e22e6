/* The HTTP front (server.c): TCP and unix listeners, dispatch, auth.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SERVER_H
#define ASB_ENGINE_SERVER_H

#include "engine.h"

int server_start(engine *e, const char *listen, const char *socket_path);
/* Waits (at most timeout_ms) until no POST /templates/builds is under way
 * or its reply unsent: after build_stop_all, so that a build the stop
 * interrupted answers its client before server_stop closes connections. */
void server_drain_builds(engine *e, int timeout_ms);
void server_stop(engine *e);
/* The engine CA's certificate (<state>/tls/ca.pem) that clients of its
 * https:// URLs trust; NULL when TLS is off. */
const char *server_ca_path(engine *e);
/* A loopback URL's port for port of sandbox id (loopurl.c, loopurl_open);
 * e->loopback_open while serving. */
int server_loopback_open(engine *e, const char *id, int port, int *lport);
/* A sandbox left the table: its loopback URLs close (e->sandbox_gone). */
void server_sandbox_gone(engine *e, const char *id);
/* A sandbox's network namespace is new (up) or going: its portal
 * (portal.c) opens or closes (e->sandbox_netns). */
void server_sandbox_netns(engine *e, struct sbx *s, int up);

#endif
