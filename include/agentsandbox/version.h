/*
 * agent-sandbox — library version.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 */
#ifndef AGENTSANDBOX_VERSION_H
#define AGENTSANDBOX_VERSION_H

#include "common.h"

/* The version of the headers you compile against. asb_version() returns the
 * version of the library you run against; they differ when an application
 * built against an older header loads a newer libagentsandbox.so.1. */
#define ASB_VERSION_MAJOR 1
#define ASB_VERSION_MINOR 0
#define ASB_VERSION_PATCH 0
#define ASB_VERSION_STRING "1.0.0"
/* Comparable number: (major << 16) | (minor << 8) | patch. */
#define ASB_VERSION_NUMBER \
  ((ASB_VERSION_MAJOR << 16) | (ASB_VERSION_MINOR << 8) | ASB_VERSION_PATCH)

ASB_BEGIN_DECL

/* Returns the library's version string ("1.0.0"); never NULL. Any of the out
 * pointers may be NULL. */
ASB_API(const char *) asb_version(int *major, int *minor, int *patch);

/* The library's version as ASB_VERSION_NUMBER computes it. */
ASB_API(int) asb_version_number(void);

ASB_END_DECL

#endif /* AGENTSANDBOX_VERSION_H */
