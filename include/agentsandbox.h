/*
 * agent-sandbox — umbrella header of libagentsandbox.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Include this one header; it pulls in every public header. All public
 * headers are C89-clean and usable from C++. See docs/abi.md for the
 * conventions (ownership, errors, threading, callbacks, versioned options).
 */
#ifndef AGENTSANDBOX_H
#define AGENTSANDBOX_H

#include "agentsandbox/common.h"
#include "agentsandbox/types.h"
#include "agentsandbox/version.h"
#include "agentsandbox/errors.h"
#include "agentsandbox/global.h"
#include "agentsandbox/cancel.h"
#include "agentsandbox/client.h"
#include "agentsandbox/sandbox.h"
#include "agentsandbox/commands.h"
#include "agentsandbox/pty.h"
#include "agentsandbox/files.h"
#include "agentsandbox/code.h"
#include "agentsandbox/session.h"
#include "agentsandbox/named.h"
#include "agentsandbox/agents.h"
#include "agentsandbox/template.h"
#include "agentsandbox/volume.h"
#include "agentsandbox/secret.h"
#include "agentsandbox/git.h"
#include "agentsandbox/options.h"

#endif /* AGENTSANDBOX_H */
