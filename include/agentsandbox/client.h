/*
 * agent-sandbox — the client handle: configuration and connection pool.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * An asb_client holds the resolved configuration (API key, API URL, domain,
 * sandbox URL, timeouts, headers) and one pool of HTTP connections shared by
 * every call made through it and by every object created from it. A client
 * may be used from several threads at once.
 */
#ifndef AGENTSANDBOX_CLIENT_H
#define AGENTSANDBOX_CLIENT_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_CLIENT_OPTIONS_VERSION 1

/* Client options. Every field left zero/NULL takes its value from the
 * environment, then from the default; see docs/reference/client.md for the
 * exact order (explicit option > ASB_* variable > E2B_* variable > default). */
typedef struct asb_client_options {
  unsigned int version;       /* ASB_CLIENT_OPTIONS_VERSION */
  const char *api_key;        /* sent as X-API-Key */
  const char *api_url;        /* control plane, e.g. https://api.e2b.app */
  const char *domain;         /* sandbox domain, e.g. e2b.app */
  const char *sandbox_url;    /* one base URL for all sandbox traffic; requests
                                 carry E2b-Sandbox-Id / E2b-Sandbox-Port */
  long request_timeout_ms;    /* default per-request timeout: 0 = 60000,
                                 negative = none */
  const char *user_agent;     /* default "agent-sandbox-c/<version>" */
  const char *const *headers; /* extra headers, "Name: value", NULL-ended */
  int debug;                  /* 0 = from ASB_DEBUG/E2B_DEBUG, >0 = on
                                 (envd at http://localhost:49983), <0 = off */
  int max_retries;            /* retries of idempotent requests on connection
                                 errors, 429, 502, 503: 0 = default (3),
                                 negative = never retry */
  int autostart;              /* the local engine (nothing else configured):
                                 start it when it is not running? 0 = from
                                 ASB_AUTOSTART (default yes), >0 = yes,
                                 <0 = never (calls fail with
                                 ASB_ECONNECTION instead) */
} asb_client_options;

#define ASB_CLIENT_OPTIONS_INIT \
  { ASB_CLIENT_OPTIONS_VERSION, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0, 0, 0 }

/* Initialise opts to the defaults of the given version (pass
 * ASB_CLIENT_OPTIONS_VERSION). Returns ASB_EVERSION for unknown versions. */
ASB_API(int)
asb_client_options_init(asb_client_options *opts, unsigned int version);

/* Create a client. opts may be NULL for all defaults. *out is written only on
 * success. Errors: ASB_EVERSION, ASB_EINVAL (malformed URL or header),
 * ASB_ENOMEM. */
ASB_API(int) asb_client_new(asb_client **out, const asb_client_options *opts);

/* Release the caller's reference; accepts NULL. Objects created from the
 * client keep it alive, so they may be freed before or after it. */
ASB_API(void) asb_client_free(asb_client *client);

/* The resolved configuration. Strings are owned by the client. */
ASB_API(const char *) asb_client_api_url(const asb_client *client);
ASB_API(const char *) asb_client_domain(const asb_client *client);
/* NULL when no sandbox URL is configured (traffic goes to
 * <port>-<id>.<domain>). */
ASB_API(const char *) asb_client_sandbox_url(const asb_client *client);
ASB_API(int) asb_client_is_debug(const asb_client *client);
ASB_API(long) asb_client_request_timeout_ms(const asb_client *client);
/* 1 if an API key is configured. The key itself is not exposed. */
ASB_API(int) asb_client_has_api_key(const asb_client *client);

#define ASB_CALL_OPTIONS_VERSION 1

/* Options common to every blocking call that has no options of its own
 * (the typedef is in types.h). */
struct asb_call_options {
  unsigned int version; /* ASB_CALL_OPTIONS_VERSION */
  long timeout_ms;      /* request timeout: 0 = the client's default,
                           negative = none */
  asb_cancel *cancel;   /* optional cancellation token */
};

#define ASB_CALL_OPTIONS_INIT \
  { ASB_CALL_OPTIONS_VERSION, 0, NULL }

ASB_API(int)
asb_call_options_init(asb_call_options *opts, unsigned int version);

ASB_END_DECL

#endif /* AGENTSANDBOX_CLIENT_H */
