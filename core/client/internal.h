/* libagentsandbox internals shared by its source files. Not installed.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CLIENT_INTERNAL_H
#define ASB_CLIENT_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>

#include "agentsandbox.h"

/* ---- errors (errors.c) ---------------------------------------------------
 * Each setter records the detail for asb_error_last() and returns `code`, so
 * failures read `return asbi_err(ASB_EINVAL, "bad %s", x);`. */
int asbi_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int asbi_verr(int code, const char *fmt, va_list ap);
/* As asbi_err, also recording the HTTP status and the server's error code. */
int asbi_err_remote(int code, int http_status, const char *remote_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Amend the last error (call after one of the above). */
void asbi_err_set_retry_after(int seconds);
void asbi_err_set_reason(const char *reason);
/* Prefix the last error's message with "<context>: ". */
void asbi_err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define asbi_oom() asbi_err(ASB_ENOMEM, "out of memory")
/* Keep the calling thread's last error across another call. */
typedef struct asbi_err_saved {
  asb_error e;
  char message[1024], remote_code[128], reason[128];
} asbi_err_saved;
void asbi_err_save(asbi_err_saved *s);
void asbi_err_restore(const asbi_err_saved *s);

/* Checks an options struct's version field: NULL is fine (defaults). */
#define ASBI_CHECK_VERSION(opts, max, name)                                                       \
  do {                                                                                            \
    if ((opts) && ((opts)->version == 0 || (opts)->version > (max)))                              \
      return asbi_err(ASB_EVERSION, "%s: unsupported options version %u", name, (opts)->version); \
  } while (0)

/* A field appended in version `since` of an options struct: a struct of an
 * older version (from a program built against older headers) does not
 * have it, so it reads as dflt. */
#define ASBI_OPT(opts, since, field, dflt) ((opts)->version >= (since) ? (opts)->field : (dflt))

/* Defines `int <type>_init(<type> *opts, unsigned int version)` for a
 * versioned options struct: rejects NULL and unknown versions, fills the
 * defaults from the struct's _INIT macro, stores the requested version. */
#define ASBI_DEFINE_OPTIONS_INIT(type, max_version, init_macro)                 \
  int type##_init(type *opts, unsigned int version) {                           \
    if (!opts) return asbi_err(ASB_EINVAL, #type "_init: NULL");                \
    if (version == 0 || version > (max_version))                                \
      return asbi_err(ASB_EVERSION, #type ": unsupported version %u", version); \
    /* static, and copied with memcpy: the padding is zero as well (callers     \
     * and asb_options_new compare or hand out whole structs) */                \
    static const type init_ = init_macro;                                       \
    memcpy(opts, &init_, sizeof *opts);                                         \
    opts->version = version;                                                    \
    return ASB_OK;                                                              \
  }

/* The same for an options struct that grew: size(version) is the size of
 * that version's struct (a program built against older headers passes a
 * smaller one, so no byte beyond it is written). */
#define ASBI_DEFINE_OPTIONS_INIT_SIZED(type, max_version, init_macro, size)     \
  int type##_init(type *opts, unsigned int version) {                           \
    if (!opts) return asbi_err(ASB_EINVAL, #type "_init: NULL");                \
    if (version == 0 || version > (max_version))                                \
      return asbi_err(ASB_EVERSION, #type ": unsupported version %u", version); \
    /* static: its padding is zero too, and memcpy copies padding */            \
    static const type init_ = init_macro;                                       \
    memcpy(opts, &init_, size(version));                                        \
    opts->version = version;                                                    \
    return ASB_OK;                                                              \
  }

/* ---- global (global.c) --------------------------------------------------- */
/* Initialise once for the process (idempotent, thread-safe) and count one
 * more user (an HTTP pool); every successful hold needs a release. The
 * library gives its libcurl initialisation back when it is unloaded while
 * nothing holds it. */
int asbi_global_hold(void);
void asbi_global_release(void);

/* ---- cancellation (cancel.c) --------------------------------------------- */
struct asbi_waker; /* something a cancel request must wake (a curl multi) */
typedef void (*asbi_wake_fn)(void *target);
/* Register a wake target; returns 0, or ASB_ECANCELED if already requested.
 * Every register needs an unregister. cancel may be NULL (no-op). */
int asbi_cancel_register(asb_cancel *cancel, asbi_wake_fn fn, void *target);
void asbi_cancel_unregister(asb_cancel *cancel, void *target);
int asbi_cancel_requested(const asb_cancel *cancel);

/* ---- handle lifecycle (cancel.c; docs/abi.md, Lifecycle) -----------------
 * A handle's memory is shared by the user's reference, its children's and
 * one per call in flight on it (asbi_life_hold at the call's start). Freeing
 * it requests its stop token, which every request made for the handle
 * carries (asbi_http_req.stop): calls in flight on it return ASB_ECANCELED
 * promptly, and it drops the user's reference. The memory goes with the last
 * reference, on whichever thread drops it: free never waits for a call. */
typedef struct asbi_life {
  atomic_int refs;
  asb_cancel *stop;
} asbi_life;
/* refs = 1 and a fresh stop token; ASB_OK or ASB_ENOMEM. */
int asbi_life_init(asbi_life *l);
void asbi_life_hold(asbi_life *l);
/* Drop one reference: 1 when it was the last (destroy the handle now, and
 * asbi_life_fini once nothing registered on its stop token any more), else
 * 0. */
int asbi_life_drop(asbi_life *l);
void asbi_life_fini(asbi_life *l);
/* Cancel what runs for the handle, now and later. Thread-safe. */
void asbi_life_stop(asbi_life *l);
int asbi_life_stopped(const asbi_life *l);

/* ---- client (client.c) ---------------------------------------------------- */
struct asbi_http;
#include <pthread.h>
struct asb_client {
  asbi_life life; /* refs: the user's, its sandboxes', calls in flight */
  char *api_key;
  char *api_url;
  char *domain;
  char *sandbox_url;
  char *user_agent;
  char **headers;          /* extra "Name: value", NULL-ended */
  long request_timeout_ms; /* <0 none */
  int debug;
  int max_retries;
  struct asbi_http *http;
  /* The local engine: api_url was not configured, so the library talks to
   * the engine of state_dir, reading its key there and starting it when it
   * is not running. */
  int local;
  int autostart; /* local mode: start the engine when it is not running */
  char *state_dir;
  pthread_mutex_t mu; /* api_key / api_url discovered lazily in local mode */
  char *retired[8];   /* URLs replaced at run time, freed with the client
                         (a concurrent call may still hold them) */
  int nretired;
};
/* Local mode: adopt the URL the engine recorded in <state>/engine.url. */
void asbi_client_follow_engine_url(asb_client *c);
/* Local mode (local_engine.c): make sure the engine runs and its key is
 * known. start_engine:
 * 1 = start it unless it answers; 0 = only if its state dir has no key yet
 * (it never ran); -1 = never. */
int asbi_client_local_prepare(asb_client *c, int start_engine);
void asbi_client_ref(asb_client *c);
void asbi_client_unref(asb_client *c);
/* The client a public call acts on is held for the whole call (released by
 * the compiler at every return): ASBI_CLIENT_CALL(c); as its first line. */
asb_client *asbi_client_hold(asb_client *c);
static inline void asbi_client_release_(asb_client *const *c) {
  asbi_client_unref(*c);
}
#define ASBI_CLIENT_CALL(c)                                                                    \
  asb_client *const asbi_held_client_ __attribute__((cleanup(asbi_client_release_), unused)) = \
      asbi_client_hold(c)
/* Effective timeout of a call: explicit (>0), none (<0), or the client's. */
long asbi_client_timeout(const asb_client *c, long call_timeout_ms);

/* ---- control plane (cp.c) ------------------------------------------------ */
/* One request to the control plane (local mode: starting the engine if
 * needed) with a raw body of content_type (both may be NULL). A 2xx, or a
 * status listed in ok_statuses (0-ended), is accepted: *status gets it and
 * *out (if not NULL) the parsed JSON reply; other statuses are mapped to an
 * asb_status and recorded. keep_resp (if not NULL) receives the response,
 * to be freed by the caller. */
struct cJSON;
struct asbi_http_resp;
#define ASBI_CP_IDEMPOTENT 1 /* may be retried */
#define ASBI_CP_NO_START 2   /* local mode: never start the engine for it */
int asbi_cp_request_raw(asb_client *c, const char *method, const char *path, const void *body,
                        size_t body_len, const char *content_type, long timeout_ms,
                        asb_cancel *cancel, asb_cancel *stop, int flags, const char *what,
                        const int *ok_statuses, int *status, struct cJSON **out,
                        struct asbi_http_resp *keep_resp);

/* ---- JSON lists (list.c) -------------------------------------------------- */
/* Turn each element of the JSON array arr into an item of elem_size bytes in
 * a fresh zeroed array (*items, never NULL on success; *count items). conv
 * fills one item and, when it fails, leaves nothing of its own behind; on
 * the first failure drop (may be NULL) is called on the items converted so
 * far, the array is freed and conv's status returned. */
typedef int (*asbi_item_from_json)(const struct cJSON *j, void *item);
typedef void (*asbi_item_drop)(void *item);
int asbi_json_items(const struct cJSON *arr, size_t elem_size, asbi_item_from_json conv,
                    asbi_item_drop drop, void **items, size_t *count);
/* The same for the array member key of the reply object obj; a reply without
 * that array is ASB_EPROTOCOL "<what>: the reply has no "<key>" list". */
int asbi_json_member_items(const struct cJSON *obj, const char *key, const char *what,
                           size_t elem_size, asbi_item_from_json conv, asbi_item_drop drop,
                           void **items, size_t *count);

#endif
