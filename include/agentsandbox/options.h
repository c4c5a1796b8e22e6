/*
 * agent-sandbox — options without struct layouts, for callers that load the
 * library at run time (dlopen, ctypes, Go purego, LuaJIT, Java FFM, ...).
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Every options struct of this library (asb_command_options,
 * asb_sandbox_options, ... — each header's *_options) can also be made on
 * the heap by its type name and filled member by member, so a caller never
 * needs its size, its member offsets or its padding. What asb_options_new
 * returns is the struct itself, initialised as its *_options_init does:
 * pass it wherever that struct is taken, e.g.
 *   asb_commands_run(&result, sandbox, "ls", opts).
 * Members are named as in the header; each setter works on the members of
 * its kind and copies what it is given (strings and string arrays), except
 * asb_options_set_pointer, which stores the pointer as it is. docs/ffi.md
 * has the whole picture. This header is C89-clean and usable from C++.
 */
#ifndef AGENTSANDBOX_OPTIONS_H
#define AGENTSANDBOX_OPTIONS_H

#include "common.h"

ASB_BEGIN_DECL

/* Make a `type` ("asb_command_options") of the given version on the heap,
 * with that version's defaults. Free it with asb_options_free. Errors:
 * ASB_EINVAL (no such options type), ASB_EVERSION, ASB_ENOMEM. */
ASB_API(int)
asb_options_new(void **out, const char *type, unsigned int version);

/* Free options made by asb_options_new and every copy they hold. Accepts
 * NULL. No call may still be using them. */
ASB_API(void) asb_options_free(void *opts);

/* Set an integer member (int, unsigned int or long: flags, counts,
 * timeouts). ASB_EINVAL when the member does not exist, is not an integer
 * or cannot hold value; ASB_EVERSION when it is newer than the version the
 * options were made with. The same errors for every setter; each also
 * fails with ASB_EINVAL on options that asb_options_new did not make. */
ASB_API(int)
asb_options_set_int(void *opts, const char *field, asb_int64 value);

/* Set a string member (const char *) to a copy of value; NULL restores
 * the default. */
ASB_API(int)
asb_options_set_string(void *opts, const char *field, const char *value);

/* Append a copy of value to a string-array member (const char *const *,
 * NULL-ended: envs, metadata, headers). */
ASB_API(int)
asb_options_add_string(void *opts, const char *field, const char *value);

/* Set a byte-buffer member (const void *, e.g. stdin_data) and its length
 * member (stdin_len) together, to a copy of the len bytes at data; data
 * NULL (len 0) restores the default. The length member is set only so. */
ASB_API(int)
asb_options_set_bytes(void *opts, const char *field, const void *data,
                      size_t len);

/* Set a pointer member as it is: a callback (the address of a function of
 * the member's callback type), its userdata, or an asb_cancel. Nothing is
 * copied: what it points to must outlive every call using the options. */
ASB_API(int)
asb_options_set_pointer(void *opts, const char *field, void *value);

ASB_END_DECL

#endif /* AGENTSANDBOX_OPTIONS_H */
