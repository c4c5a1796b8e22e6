/*
 * agent-sandbox — secrets (E2B's /secrets API, docs/reference/secret.md).
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * A secret is a named value kept by the control plane. Its value goes in
 * (create, update) and never comes out: no call returns it. A sandbox's
 * egress rules reference it as ${e2b.secrets.<name>} in a header value,
 * and the egress proxy puts the value into the request it sends on
 * (docs/egress.md, "Header rules and secrets"). An asb_secret holds what
 * may be read back: id, name, version, metadata and times.
 */
#ifndef AGENTSANDBOX_SECRET_H
#define AGENTSANDBOX_SECRET_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

/* Store a new secret: name 1..128 of [A-Za-z0-9_-] (kept lower case),
 * metadata "key=value" strings (NULL-ended; NULL = none). Errors:
 * ASB_EINVAL (bad name, value or metadata), ASB_EEXISTS (the name is
 * taken), ASB_EAUTH, transport errors. */
ASB_API(int)
asb_secrets_create(asb_secret **out, asb_client *client, const char *name,
                   const char *value, const char *const *metadata,
                   const asb_call_options *call);

/* A new value (and version) for the secret of this id or name; metadata
 * replaces the stored metadata, NULL keeps it. ASB_ENOTFOUND if none. */
ASB_API(int)
asb_secrets_update(asb_secret **out, asb_client *client, const char *secret,
                   const char *value, const char *const *metadata,
                   const asb_call_options *call);

/* The secret of this id or name. ASB_ENOTFOUND if none. */
ASB_API(int)
asb_secrets_get(asb_secret **out, asb_client *client, const char *secret,
                const asb_call_options *call);

/* Delete the secret of this id or name. ASB_ENOTFOUND if none. */
ASB_API(int)
asb_secrets_delete(asb_client *client, const char *secret,
                   const asb_call_options *call);

/* One page of the secrets, oldest first: at most limit (1..100; 0 = 100)
 * after next_token (NULL or "" = from the start). */
ASB_API(int)
asb_secrets_list(asb_secret_page **out, asb_client *client, int limit,
                 const char *next_token, const asb_call_options *call);
ASB_API(size_t) asb_secret_page_count(const asb_secret_page *page);
/* Owned by the page. */
ASB_API(const asb_secret *)
asb_secret_page_get(const asb_secret_page *page, size_t i);
/* The token of the next page, or NULL on the last. */
ASB_API(const char *) asb_secret_page_next_token(const asb_secret_page *page);
ASB_API(void) asb_secret_page_free(asb_secret_page *page);

/* Owned by the secret. */
ASB_API(const char *) asb_secret_id(const asb_secret *secret);
ASB_API(const char *) asb_secret_name(const asb_secret *secret);
/* 1 when created, one more per update. */
ASB_API(int) asb_secret_version(const asb_secret *secret);
/* Unix seconds. */
ASB_API(asb_int64) asb_secret_created_at(const asb_secret *secret);
ASB_API(asb_int64) asb_secret_updated_at(const asb_secret *secret);
ASB_API(size_t) asb_secret_metadata_count(const asb_secret *secret);
ASB_API(const char *)
asb_secret_metadata_key(const asb_secret *secret, size_t i);
ASB_API(const char *)
asb_secret_metadata_value(const asb_secret *secret, size_t i);
/* Accepts NULL. */
ASB_API(void) asb_secret_free(asb_secret *secret);

ASB_END_DECL

#endif /* AGENTSANDBOX_SECRET_H */
