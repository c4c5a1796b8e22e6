/*
 * agent-sandbox — sandbox handles.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * An asb_sandbox is a handle to one sandbox: its id, the envd access token
 * and version, and the route to its ports. Freeing a handle never stops the
 * sandbox. Handles are safe to use from several threads at once and keep
 * their client alive.
 */
#ifndef AGENTSANDBOX_SANDBOX_H
#define AGENTSANDBOX_SANDBOX_H

#include "common.h"
#include "client.h"

ASB_BEGIN_DECL

typedef struct asb_sandbox asb_sandbox;

#define ASB_SANDBOX_ATTACH_OPTIONS_VERSION 1

/* What asb_sandbox_attach needs to know that the control plane would
 * otherwise tell. */
typedef struct asb_sandbox_attach_options {
  unsigned int version;           /* ASB_SANDBOX_ATTACH_OPTIONS_VERSION */
  const char *envd_access_token;  /* sent as X-Access-Token; NULL = none */
  const char *envd_version;       /* e.g. "0.6.13"; NULL = the newest we know */
  const char *domain;             /* NULL = the client's domain */
  const char *traffic_access_token; /* for ports behind a traffic token */
} asb_sandbox_attach_options;

#define ASB_SANDBOX_ATTACH_OPTIONS_INIT \
  { ASB_SANDBOX_ATTACH_OPTIONS_VERSION, NULL, NULL, NULL, NULL }

ASB_API(int) asb_sandbox_attach_options_init(asb_sandbox_attach_options *opts,
                                             unsigned int version);

/* Make a handle to a sandbox whose id (and token) you already know, without
 * asking the control plane — e.g. restored from your own storage, or in
 * debug mode (envd at http://localhost:49983 or the client's sandbox URL).
 * Makes no network call. Errors: ASB_EINVAL (bad id), ASB_ENOMEM. */
ASB_API(int) asb_sandbox_attach(asb_sandbox **out, asb_client *client,
                                const char *sandbox_id,
                                const asb_sandbox_attach_options *opts);

/* Release the handle; the sandbox keeps running. Accepts NULL. */
ASB_API(void) asb_sandbox_free(asb_sandbox *sandbox);

/* Owned by the handle. */
ASB_API(const char *) asb_sandbox_id(const asb_sandbox *sandbox);
ASB_API(const char *) asb_sandbox_envd_version(const asb_sandbox *sandbox);
ASB_API(const char *) asb_sandbox_domain(const asb_sandbox *sandbox);
/* The envd access token, or NULL when the sandbox has none. */
ASB_API(const char *) asb_sandbox_envd_access_token(const asb_sandbox *sandbox);

/* "<port>-<id>.<domain>" (debug mode: "localhost:<port>") into buf, as
 * E2B's get_host does. Returns ASB_OK, or ASB_EINVAL if the port is out of
 * range or buf is too small. */
ASB_API(int) asb_sandbox_get_host(const asb_sandbox *sandbox, int port,
                                  char *buf, size_t buflen);
/* The public URL of a port: "https://<host>" ("http" for loopback
 * domains such as the local engine's). Same errors. */
ASB_API(int) asb_sandbox_get_url(const asb_sandbox *sandbox, int port,
                                 char *buf, size_t buflen);

/* Free memory the library returned as a plain buffer (file contents, URLs).
 * Accepts NULL. */
ASB_API(void) asb_free(void *ptr);

ASB_END_DECL

#endif /* AGENTSANDBOX_SANDBOX_H */
