/*
 * agent-sandbox — process-wide initialisation.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef AGENTSANDBOX_GLOBAL_H
#define AGENTSANDBOX_GLOBAL_H

#include "common.h"

ASB_BEGIN_DECL

/* Initialise the library (libcurl, OpenSSL). Reference-counted and safe to
 * call from several threads; every successful call needs one matching
 * asb_global_cleanup(). Calling it is optional: asb_client_new() initialises
 * on first use. Call it yourself in programs that start threads before they
 * make their first client, so initialisation happens at a moment you choose.
 * Returns ASB_OK or a negative asb_status. */
ASB_API(int) asb_global_init(void);

/* Drop one reference taken by asb_global_init(). The last one releases
 * libcurl's global state; no client may be alive then. */
ASB_API(void) asb_global_cleanup(void);

ASB_END_DECL

#endif /* AGENTSANDBOX_GLOBAL_H */
