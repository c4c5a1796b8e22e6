/* libagentsandbox-server internals shared by its source files. Not installed.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_SERVER_INTERNAL_H
#define ASB_SERVER_INTERNAL_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "agentsandbox/server.h"
#include "proto/cmdargs.h"
#include "util/buf.h"

/* ---- errors (error.c) ------------------------------------------------------
 * Record the detail for asb_server_error_last() and return `code`. */
int asbs_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define asbs_oom() asbs_err(ASB_ENOMEM, "out of memory")

/* ---- registry (registry.c) -------------------------------------------------- */
typedef struct asbs_arg {
  char *name;
  char *description; /* never NULL */
  char *dflt_text;   /* default as given, or NULL */
  cJSON *dflt;       /* coerced default, or NULL */
  int type;
  int required;
} asbs_arg;

struct asb_server_command {
  asb_server *server;
  char *name;
  char *description; /* never NULL */
  asb_server_handler_fn handler;
  void *userdata;
  asb_server_destroy_fn destroy;
  int hidden;
  asbs_arg *args;
  size_t nargs, capargs;
  asbi_argspec *specs; /* built when the server starts */
};

/* A call's states (guarded by its server's qmu). */
enum {
  ASBS_CALL_HANDLER,  /* its handler runs on the connection's thread */
  ASBS_CALL_QUEUED,   /* pull mode: waiting in the server's queue */
  ASBS_CALL_TAKEN,    /* pulled (asb_server_next_call) or deferred: the
                         program answers it from any thread */
  ASBS_CALL_DONE,     /* answered: status and reply are set */
  ASBS_CALL_ABANDONED /* the connection gave up (the server stopped) */
};

struct asb_server_call {
  asb_server_command *cmd;
  asb_server *server;
  atomic_int refs; /* the connection's, and the program's once taken */
  cJSON *args;     /* bound arguments */
  char **texts;    /* per arg: cached string / JSON texts */
  char *args_text; /* cached asb_server_call_args_json */
  char *result;    /* JSON text of the result, or NULL */
  char *err_type, *err_message;
  int state;
  int deferred; /* its handler called asb_server_call_defer */
  int status;   /* DONE: the HTTP status and body to send */
  char *reply;
  asb_server_call *next; /* the queue */
};

struct asb_server {
  atomic_int refs; /* the user's, and one per call the program holds */
  /* configuration */
  char *host;
  unsigned char token_md[32]; /* SHA-256 of the token, when has_token */
  int has_token;
  size_t max_body;
  unsigned max_conns;
  long grace_ms;
  /* registry */
  asb_server_command **cmds;
  size_t ncmds, capcmds;
  char *listing; /* GET /commands body, built at start */
  /* running */
  pthread_mutex_t mu;
  atomic_int running;  /* 1 from start until fully stopped */
  atomic_int stopping; /* stop requested */
  atomic_int port;
  atomic_int inflight; /* requests being handled */
  int stop_pipe[2];    /* written by asb_server_stop (async-signal-safe) */
  int listen_fd;
  void *daemon;        /* struct MHD_Daemon */
  void *guard;         /* asbi_connguard: request-head deadlines */
  pthread_t bg_thread; /* background mode: the supervisor */
  int bg;
  pthread_cond_t done_cv;
  int done; /* the last run finished */
  /* calls answered by the program (pull mode, deferred replies) */
  pthread_mutex_t qmu;
  pthread_cond_t qcv;     /* a call was queued, or the server stops */
  pthread_cond_t call_cv; /* a call was answered, or waiting calls give up */
  asb_server_call *qhead, *qtail;
  int efd; /* eventfd: readable while calls are queued or
              the server stopped */
  int efd_set;
  int queue_closed;           /* stopping: no more calls are queued */
  int abandon;                /* after the grace: waiting calls answer 503 */
  struct asbs_agents *agents; /* the agents service, when enabled */
};

/* Drop a reference to the server: the last one releases it. */
void asbs_server_unref(asb_server *s);

asb_server_command *asbs_find(const asb_server *s, const char *name);
/* Freeze the registry: build per-command specs and the listing. */
int asbs_freeze(asb_server *s);
/* A call of c with the request body bound to its arguments (the
 * connection's reference; it holds the server), or NULL with *status and a
 * malloc'd *reply set (400 for bad arguments). */
asb_server_call *asbs_call_new(asb_server_command *c, const char *body, size_t len, int *status,
                               char **reply);
/* The reply of a call whose handler returned rc (or of an answered call:
 * rc 0): 200 {"result": ...} or the error. */
void asbs_call_finish(asb_server_call *call, int rc, int *status, char **reply);
void asbs_call_release(asb_server_call *call);
/* {"error": message, "type": type} (malloc'd, never NULL unless OOM). */
char *asbs_error_json(const char *message, const char *type);

/* ---- HTTP helpers shared with the agents service (server.c) --------------- */
/* Queue body (malloc'd JSON text, taken; NULL = empty) with status. */
enum MHD_Result asbs_send_json(asb_server *s, struct MHD_Connection *c, unsigned status,
                               char *body);
int asbs_server_stopping(const asb_server *s);

/* ---- the agents service (agents.c) ------------------------------------------ */
struct asbs_agents;
int asbs_agents_new(struct asbs_agents **out, asb_server *server,
                    const asb_server_agents_options *opts);
void asbs_agents_free(struct asbs_agents *svc);
/* 1 if url is one of the agents routes. */
int asbs_agents_route(const char *url);
/* Answer an agents request (body: the whole request body). */
enum MHD_Result asbs_agents_handle(struct asbs_agents *svc, asb_server *srv,
                                   struct MHD_Connection *c, const char *url, const char *method,
                                   const char *body, size_t len);

#endif
