/*
 * agent-sandbox — error codes and the thread-local last error.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Every function that can fail returns an int: 0 (ASB_OK) on success or a
 * negative asb_status. The detail of the most recent failure on the calling
 * thread is available from asb_error_last() until the next failing call on
 * that thread. Codes are only ever appended; their values never change.
 */
#ifndef AGENTSANDBOX_ERRORS_H
#define AGENTSANDBOX_ERRORS_H

#include "common.h"

ASB_BEGIN_DECL

/* Negative status codes. The comment names the E2B SDK exception each code
 * corresponds to, so bindings can mirror E2B's hierarchy. */
typedef enum asb_status {
  ASB_OK = 0,
  ASB_ERROR = -1,        /* SandboxException: anything not below */
  ASB_EINVAL = -2,       /* InvalidArgumentException */
  ASB_ENOTFOUND = -3,    /* NotFoundException (file, process, context) */
  ASB_ETIMEOUT = -4,     /* TimeoutException */
  ASB_EAUTH = -5,        /* AuthenticationException */
  ASB_ERATELIMIT = -6,   /* RateLimitException; see asb_error.retry_after */
  ASB_ENOSPACE = -7,     /* NotEnoughSpaceException */
  ASB_ECOMMANDEXIT = -8, /* CommandExitException: non-zero exit code */
  ASB_ETEMPLATE = -9,    /* TemplateException */
  ASB_ESANDBOXNOTFOUND = -10, /* SandboxNotFoundException: unknown id */
  ASB_ESANDBOXGONE = -11,     /* SandboxNotFoundException: the sandbox existed
                                 and ended; asb_error.reason says why */
  ASB_EEXISTS = -12,          /* the object already exists */
  ASB_ECANCELED = -13,        /* cancelled through an asb_cancel */
  ASB_EUSER = -14,            /* a user callback returned non-zero */
  ASB_ENOMEM = -15,           /* out of memory */
  ASB_ECONNECTION = -16,      /* could not connect / connection broke */
  ASB_EPROTOCOL = -17,        /* the server's reply was malformed */
  ASB_EVERSION = -18,         /* options struct version not supported */
  ASB_EUNSUPPORTED = -19,     /* the server does not support this call */
  ASB_EBUILD = -20,           /* BuildException: template build failed */
  ASB_ECOMMANDNOTFOUND = -21, /* CommandNotFoundError: unknown named command */
  ASB_ECOMMANDFAILED = -22,   /* a named command raised; see remote_code */
  ASB_EPERM = -23,            /* permission denied */
  ASB_EGITAUTH = -24,         /* GitAuthException: a git remote wanted
                                 credentials or refused them (git.h) */
  ASB_EGITUPSTREAM = -25      /* GitUpstreamException: push/pull on a
                                 branch without an upstream (git.h) */
} asb_status;

/* Detail of a failure. Owned by the library and valid on the calling thread
 * until the next library call that fails there; copy what you keep. Fields
 * are only ever appended. */
typedef struct asb_error {
  int code;                /* an asb_status */
  int http_status;         /* HTTP status of the failing reply, 0 if none */
  const char *message;     /* human-readable; never NULL */
  const char *remote_code; /* the server's error code ("not_found",
                              "ValueError", ...); never NULL, "" if none */
  int retry_after;         /* seconds from Retry-After on ASB_ERATELIMIT,
                              -1 if the server gave none */
  const char *reason;      /* why a sandbox is gone ("timeout", "killed",
                              "oom", "engine_restart"), or why a command
                              failed; never NULL, "" if none */
} asb_error;

/* The last error on the calling thread. Never NULL: with no error recorded it
 * returns an entry with code ASB_OK and an empty message. */
ASB_API(const asb_error *) asb_error_last(void);

/* The fields of an asb_error, for callers that read no struct layouts
 * (FFI: docs/ffi.md). e NULL means asb_error_last(), so one call reads a
 * field of the calling thread's last error. Strings are never NULL and
 * live as long as e does. */
ASB_API(int) asb_error_code(const asb_error *e);
ASB_API(int) asb_error_http_status(const asb_error *e);
ASB_API(const char *) asb_error_message(const asb_error *e);
ASB_API(const char *) asb_error_remote_code(const asb_error *e);
ASB_API(int) asb_error_retry_after(const asb_error *e);
ASB_API(const char *) asb_error_reason(const asb_error *e);

/* Forget the calling thread's last error. */
ASB_API(void) asb_error_clear(void);

/* A static, human-readable description of a status code; never NULL. */
ASB_API(const char *) asb_strerror(int code);

/* The code's symbolic name ("ASB_ENOTFOUND"); never NULL. */
ASB_API(const char *) asb_status_name(int code);

ASB_END_DECL

#endif /* AGENTSANDBOX_ERRORS_H */
