/*
 * agent-sandbox — cancellation tokens.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Every blocking call accepts an optional asb_cancel. Requesting cancellation
 * from any thread makes every call currently using the token return
 * ASB_ECANCELED promptly (it interrupts network waits, retries' back-off
 * sleeps and streams), and makes later calls using it fail at once until the
 * token is reset.
 */
#ifndef AGENTSANDBOX_CANCEL_H
#define AGENTSANDBOX_CANCEL_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

/* Create a token in the "not requested" state. */
ASB_API(int) asb_cancel_new(asb_cancel **out);

/* Free a token; accepts NULL. No call may still be using it. */
ASB_API(void) asb_cancel_free(asb_cancel *cancel);

/* Request cancellation. Thread-safe; idempotent. */
ASB_API(void) asb_cancel_request(asb_cancel *cancel);

/* 1 if cancellation was requested and not reset since, else 0. */
ASB_API(int) asb_cancel_is_requested(const asb_cancel *cancel);

/* Return the token to the "not requested" state so it can be reused. */
ASB_API(void) asb_cancel_reset(asb_cancel *cancel);

ASB_END_DECL

#endif /* AGENTSANDBOX_CANCEL_H */
