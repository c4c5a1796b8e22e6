/*
 * agent-sandbox — named sessions: remember a sandbox under a name, and
 * reconnect to it later, from any process or binding.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * One on-disk format for every binding: a JSON file per name in the session
 * directory — $ASB_SESSION_DIR, else $XDG_STATE_HOME/agent-sandbox/sessions,
 * else ~/.local/state/agent-sandbox/sessions (created 0700; files 0600).
 * A session records the sandbox's id, template, the engine's API URL, its
 * creation time and your metadata — no credentials: loading reconnects
 * through the control plane with the client's API key. Writes are atomic (write
 * to a temporary file, rename) under an exclusive lock on <dir>/.lock, so
 * concurrent processes never see a torn or half-written session.
 */
#ifndef AGENTSANDBOX_SESSION_H
#define AGENTSANDBOX_SESSION_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

/* Save sandbox under name (letters, digits, '.', '_', '-'; ≤ 128 chars),
 * replacing an existing session of that name. metadata: "key=value"
 * strings, NULL-ended, may be NULL. */
ASB_API(int)
asb_session_save(const char *name, const asb_sandbox *sandbox,
                 const char *const *metadata);

/* Reconnect to the session's sandbox (asb_sandbox_connect semantics: a
 * paused one is resumed; timeout_ms extends its lifetime, 0 = 5 min).
 * ASB_ENOTFOUND if there is no such session; ASB_ESANDBOXNOTFOUND /
 * ASB_ESANDBOXGONE if its sandbox is no more (the session is kept: delete
 * it yourself). The client should point at the engine the session was
 * saved from (its api_url is recorded: see asb_session_api_url). */
ASB_API(int)
asb_session_load(asb_sandbox **out, asb_client *client, const char *name,
                 long timeout_ms, const asb_call_options *call);

/* Read a session's record without connecting. */
ASB_API(int) asb_session_get(asb_session **out, const char *name);
ASB_API(int) asb_sessions_list(asb_session_list **out);
/* ASB_ENOTFOUND if there is no such session. */
ASB_API(int) asb_session_delete(const char *name);

ASB_API(size_t) asb_session_list_count(const asb_session_list *l);
ASB_API(const asb_session *)
asb_session_list_get(const asb_session_list *l, size_t i);
ASB_API(void) asb_session_list_free(asb_session_list *l);

ASB_API(const char *) asb_session_name(const asb_session *s);
ASB_API(const char *) asb_session_sandbox_id(const asb_session *s);
ASB_API(const char *) asb_session_template_id(const asb_session *s);
ASB_API(const char *) asb_session_api_url(const asb_session *s);
/* Unix seconds. */
ASB_API(asb_int64) asb_session_created_at(const asb_session *s);
ASB_API(const char *)
asb_session_metadata(const asb_session *s, const char *key);
ASB_API(void) asb_session_free(asb_session *s);

ASB_END_DECL

#endif /* AGENTSANDBOX_SESSION_H */
