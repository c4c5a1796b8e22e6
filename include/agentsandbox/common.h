/*
 * agent-sandbox — common declarations shared by every public header.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * This header is C89-clean and usable from C++.
 */
#ifndef AGENTSANDBOX_COMMON_H
#define AGENTSANDBOX_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
#define ASB_BEGIN_DECL extern "C" {
#define ASB_END_DECL }
#else
#define ASB_BEGIN_DECL
#define ASB_END_DECL
#endif

/* ASB_API marks a function as part of the public, versioned ABI. The library
 * is built with -fvisibility=hidden, so anything without it stays private. */
#if defined(_WIN32)
#if defined(ASB_BUILDING_LIBRARY)
#define ASB_API(type) __declspec(dllexport) type
#else
#define ASB_API(type) __declspec(dllimport) type
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define ASB_API(type) __attribute__((visibility("default"))) type
#else
#define ASB_API(type) type
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define ASB_DEPRECATED __attribute__((deprecated))
#else
#define ASB_DEPRECATED
#endif

/* Declares a callback type: ASB_CALLBACK(name) expands to (*name). */
#define ASB_CALLBACK(name) (*name)

/* 64-bit integers without requiring C99's <stdint.h> in C89 mode. */
#if defined(_MSC_VER)
typedef __int64 asb_int64;
#else
#if defined(__GNUC__)
__extension__ typedef long long asb_int64;
#else
typedef long long asb_int64;
#endif
#endif

ASB_BEGIN_DECL

/* Free memory libagentsandbox returned as a plain buffer (file contents,
 * URLs, JSON text). Accepts NULL. (The server SDK returns no buffers.) */
ASB_API(void) asb_free(void *ptr);

ASB_END_DECL

#endif /* AGENTSANDBOX_COMMON_H */
