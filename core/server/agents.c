/* The agents service of libagentsandbox-server: HTTP sessions with
 * coding-agent CLIs run inside the sandbox, next to /commands on the same
 * port and behind the same token (docs/agents.md):
 *
 *   GET    /agents                         the agents, installed or not
 *   POST   /agents/{agent}/install         npm install -g into the prefix
 *   POST   /agents/sessions                a session → its id
 *   GET    /agents/sessions                the sessions
 *   GET    /agents/sessions/{id}           status and transcript
 *   POST   /agents/sessions/{id}/messages  a turn: streams its events
 *   GET    /agents/sessions/{id}/events    ?after=N: what came after N
 *   POST   /agents/sessions/{id}/cancel    end the turn in progress
 *   DELETE /agents/sessions/{id}           cancel and forget
 *
 * A session runs its CLI once per turn (agents_cli.c says how), reads the
 * CLI's JSON lines, maps them onto the unified events and appends those to
 * the session's log, numbered from 1. Streams (NDJSON or SSE) read that log,
 * so a client that goes away loses nothing: the turn goes on, and
 * GET .../events?after=N resumes where it left off.
 *
 * Processes: posix_spawn (safe in a threaded program, such as the Python
 * interpreter serving a template) with POSIX_SPAWN_SETSID, so each turn's
 * CLI has its own session and no terminal; cancel signals that process
 * group and every descendant found in /proc (tools that left the group).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agents.h"
#include "internal.h"
#include "proto/pjson.h"
#include "util/agents_table.h"
#include "util/util.h"

extern char **environ;

#define DEFAULT_MAX_PROMPT (256u << 10)
#define DEFAULT_MAX_SESSIONS 64u
#define DEFAULT_MAX_LOG (16u << 20)
#define LINE_MAX_BYTES (8u << 20) /* one JSON line of a CLI */
#define LOG_LINE_MAX 4096         /* one stderr line kept as an event */
#define TAIL_MAX 4096             /* stderr kept for error messages */
#define CANCEL_GRACE_MS 3000      /* SIGTERM, then SIGKILL */
#define KEEPALIVE_MS 15000        /* SSE comment while a stream idles */
#define MAX_LIST 64               /* args / env entries of a session */
#define PAGE_MAX 10000            /* events of one GET .../events page */
#define DEFAULT_SEARCH ASBI_AGENTS_TEMPLATE_PREFIX ":" ASBI_AGENTS_HOST_PREFIX

/* ---- the event log of a session (or of an install) ----------------------------------- */

typedef struct ev {
  int64_t seq;
  int turn;
  char type[32];
  char *json;
  size_t len;
} ev;

typedef struct evlog {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* an event was appended, or activity ended */
  ev *v;
  size_t n, cap;
  int64_t next_seq; /* the seq of the next event (from 1) */
  int64_t dropped;  /* events up to this seq were dropped (over max) */
  size_t bytes, max;
  int active; /* a turn (or the install) is in progress */
} evlog;

static void evlog_init(evlog *l, size_t max) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cv, &ca);
  pthread_condattr_destroy(&ca);
  l->next_seq = 1;
  l->max = max;
}

static void evlog_destroy(evlog *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i].json);
  free(l->v);
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
}

/* With l->mu held: append (json taken). Returns its seq, or -1 (OOM). */
static int64_t evlog_append_locked(evlog *l, int turn, const char *type, char *json) {
  if (!json) return -1;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    ev *v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      free(json);
      return -1;
    }
    l->v = v;
    l->cap = cap;
  }
  ev *e = &l->v[l->n++];
  e->seq = l->next_seq++;
  e->turn = turn;
  snprintf(e->type, sizeof e->type, "%s", type);
  e->json = json;
  e->len = strlen(json);
  l->bytes += e->len;
  /* over the limit: the oldest events go (a reader that asks for them
   * learns it: 410) */
  size_t drop = 0;
  while (l->bytes > l->max && l->n - drop > 1) {
    l->bytes -= l->v[drop].len;
    l->dropped = l->v[drop].seq;
    free(l->v[drop].json);
    drop++;
  }
  if (drop) {
    memmove(l->v, l->v + drop, (l->n - drop) * sizeof *l->v);
    l->n -= drop;
  }
  pthread_cond_broadcast(&l->cv);
  return e->seq;
}

/* The index of the first event with seq > after. */
static size_t evlog_index_after(const evlog *l, int64_t after) {
  if (l->n == 0) return 0;
  int64_t first = l->v[0].seq;
  if (after < first) return 0;
  size_t i = (size_t)(after - first + 1);
  return i > l->n ? l->n : i;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cv_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms) {
  struct timespec ts = asbi_deadline(CLOCK_MONOTONIC, ms);
  pthread_cond_timedwait(cv, mu, &ts);
}

/* ---- the service and its sessions ---------------------------------------------------- */

struct asbs_agents {
  asb_server *server;
  char *prefix;   /* installs go here (npm -g layout: bin/, lib/node_modules/) */
  char **search;  /* read-only prefixes looked at after it, NULL-ended */
  char *npm;      /* the npm command */
  char *registry; /* default registry of installs, or NULL */
  size_t max_prompt;
  unsigned max_sessions;
  size_t max_log;
  int on_demand;      /* install a missing agent at a session's first turn */
  pthread_mutex_t mu; /* the session table */
  asbs_session **sessions;
  size_t nsessions, cap;
  unsigned long long serial;
  pthread_mutex_t install_mu; /* one npm install at a time */
  atomic_int stopping;
  /* install jobs still running (threads the service joins at free) */
  pthread_mutex_t jobs_mu;
  pthread_cond_t jobs_cv;
  int jobs;
};

typedef struct turn_agg {
  char *final_message;
  cJSON *files;    /* paths, unique */
  cJSON *commands; /* [{command, exit_code}] */
  double in_tok, out_tok, cached;
  char *error; /* the first fatal error */
} turn_agg;

struct asbs_session {
  atomic_int refs;
  asbs_agents *svc;
  char id[40];
  const asbs_agent_spec *spec;
  asbs_session_cfg cfg;
  char first_id[40]; /* the id a CLI that takes one gets on its first turn */
  char *native_id;   /* the agent's own session id, once known */
  int install;       /* install the CLI if missing */
  int64_t created_ms;
  evlog log;
  /* guarded by log.mu */
  int closed;
  int turn; /* the current (or last) turn's number */
  int running;
  int cancel; /* cancel requested for the running turn */
  int64_t cancel_at;
  pid_t pid; /* the running CLI (or npm), 0 when none */
  pthread_t thread;
  int has_thread;
  char status_text[32];
  cJSON *turns; /* transcript: [{turn, prompt, status, final_message, ...}] */
  turn_agg agg;
  asbs_map map; /* the running turn's mapper state (the turn's thread) */
};

static void agg_clear(turn_agg *a) {
  free(a->final_message);
  cJSON_Delete(a->files);
  cJSON_Delete(a->commands);
  free(a->error);
  memset(a, 0, sizeof *a);
}

static void cfg_free(asbs_session_cfg *c) {
  free(c->cwd);
  free(c->model);
  free(c->base_url);
  free(c->api_key_env);
  free(c->wire_api);
  free(c->approval);
  free(c->sandbox);
  for (size_t i = 0; i < c->nargs; i++) free(c->args[i]);
  for (size_t i = 0; i < c->nenv; i++) free(c->env[i]);
  free(c->args);
  free(c->env);
  memset(c, 0, sizeof *c);
}

static void session_unref(asbs_session *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  /* The last turn's thread, unless a later turn or the service's free
   * joined it: a session closed with DELETE is not in the table, so without
   * this its thread was never joined (server.agents under TSan: a thread
   * leak per closed session). The last reference is that thread's own when
   * the session was closed while it ran: then it detaches itself. */
  if (s->has_thread) {
    if (pthread_equal(s->thread, pthread_self()))
      pthread_detach(s->thread);
    else
      pthread_join(s->thread, NULL);
  }
  cfg_free(&s->cfg);
  free(s->native_id);
  cJSON_Delete(s->turns);
  agg_clear(&s->agg);
  evlog_destroy(&s->log);
  free(s);
}

static void session_ref(asbs_session *s) {
  atomic_fetch_add(&s->refs, 1);
}

/* ---- emitting (called by the mappers on the turn's thread) ---------------------------- */

static void agg_take(asbs_session *s, const char *type, const cJSON *f) {
  turn_agg *a = &s->agg;
  if (!strcmp(type, "message")) {
    const char *t = asbs_jstr(f, "text");
    if (t) {
      free(a->final_message);
      a->final_message = asbi_strdup(t);
    }
  } else if (!strcmp(type, "tool.completed")) {
    const char *cmd = asbs_jstr(f, "command");
    if (cmd) {
      if (!a->commands) a->commands = cJSON_CreateArray();
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "command", cmd);
      const cJSON *ec = asbs_jget(f, "exit_code");
      cJSON_AddItemToObject(c, "exit_code", ec ? cJSON_Duplicate(ec, 1) : cJSON_CreateNull());
      cJSON_AddItemToArray(a->commands, c);
    }
  } else if (!strcmp(type, "file.changed")) {
    const char *p = asbs_jstr(f, "path");
    if (p) {
      if (!a->files) a->files = cJSON_CreateArray();
      int seen = 0;
      const cJSON *x;
      cJSON_ArrayForEach(x, a->files) seen |= cJSON_IsString(x) && !strcmp(x->valuestring, p);
      if (!seen) cJSON_AddItemToArray(a->files, cJSON_CreateString(p));
    }
  } else if (!strcmp(type, "usage")) {
    const cJSON *v;
    if ((v = asbs_jget(f, "input_tokens")) && cJSON_IsNumber(v)) a->in_tok += v->valuedouble;
    if ((v = asbs_jget(f, "output_tokens")) && cJSON_IsNumber(v)) a->out_tok += v->valuedouble;
    if ((v = asbs_jget(f, "cached_input_tokens")) && cJSON_IsNumber(v)) a->cached += v->valuedouble;
  } else if (!strcmp(type, "error")) {
    if (cJSON_IsTrue(asbs_jget(f, "fatal")) && !a->error) {
      const char *m = asbs_jstr(f, "message");
      a->error = asbi_strdup(m ? m : "error");
    }
  }
}

/* Build an event (fields taken): its seq is set when it is appended. */
static cJSON *emit_build(asbs_session *s, int turn, const char *type, cJSON *fields,
                         const cJSON *native) {
  cJSON *e = cJSON_CreateObject();
  if (!e) {
    cJSON_Delete(fields);
    return NULL;
  }
  cJSON_AddNumberToObject(e, "seq", 0); /* set under the log's lock below */
  cJSON_AddStringToObject(e, "type", type);
  cJSON_AddStringToObject(e, "session", s->id);
  cJSON_AddNumberToObject(e, "turn", turn);
  cJSON_AddNumberToObject(e, "time", (double)wall_ms());
  if (fields) {
    cJSON *it = fields->child;
    while (it) {
      cJSON *next = it->next;
      cJSON_DetachItemViaPointer(fields, it);
      if (it->string && strcmp(it->string, "seq") && strcmp(it->string, "type"))
        cJSON_AddItemToObject(e, it->string, it);
      else
        cJSON_Delete(it);
      it = next;
    }
    agg_take(s, type, e);
    cJSON_Delete(fields);
  }
  if (native) cJSON_AddItemToObject(e, "native", cJSON_Duplicate(native, 1));
  return e;
}

/* Append a built event (taken) with the log's mutex held. */
static void emit_append_locked(asbs_session *s, int turn, const char *type, cJSON *e) {
  if (!e) return;
  cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "seq"), (double)s->log.next_seq);
  char *json = cJSON_PrintUnformatted(e);
  evlog_append_locked(&s->log, turn, type, json);
  cJSON_Delete(e);
}

/* Build the event's JSON and append it; the session's log mutex is not held. */
static void emit_in(asbs_session *s, int turn, const char *type, cJSON *fields,
                    const cJSON *native) {
  cJSON *e = emit_build(s, turn, type, fields, native);
  if (!e) return;
  pthread_mutex_lock(&s->log.mu);
  emit_append_locked(s, turn, type, e);
  pthread_mutex_unlock(&s->log.mu);
}

void asbs_emit(asbs_map *m, const char *type, cJSON *fields, const cJSON *native) {
  emit_in(m->sess, m->turn, type, fields, native);
}

void asbs_set_native_id(asbs_map *m, const char *id) {
  asbs_session *s = m->sess;
  pthread_mutex_lock(&s->log.mu);
  if (!s->native_id) s->native_id = asbi_strdup(id);
  pthread_mutex_unlock(&s->log.mu);
}

const char *asbs_native_id(asbs_map *m) {
  asbs_session *s = m->sess;
  pthread_mutex_lock(&s->log.mu);
  const char *id = s->native_id;
  pthread_mutex_unlock(&s->log.mu);
  return id;
}

/* ---- finding an installed CLI ------------------------------------------------------------ */

static char *read_version(const char *pkgjson, const char *want_name) {
  asbi_buf b = ASBI_BUF_INIT;
  if (asbi_buf_read_file(&b, pkgjson, 1u << 20) != 0 || !b.data) {
    asbi_buf_free(&b);
    return NULL;
  }
  cJSON *j = cJSON_ParseWithLength(b.data, b.len);
  asbi_buf_free(&b);
  const char *name = asbs_jstr(j, "name"), *v = asbs_jstr(j, "version");
  char *out = v && (!want_name || (name && !strcmp(name, want_name))) ? asbi_strdup(v) : NULL;
  cJSON_Delete(j);
  return out;
}

typedef struct found {
  char path[PATH_MAX];
  char *version;
  const char *where; /* "prefix", "search", "PATH" */
} found;

static int executable(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

static int find_in_prefix(const char *prefix, const asbs_agent_spec *spec, found *f) {
  char bin[PATH_MAX], pj[PATH_MAX];
  snprintf(bin, sizeof bin, "%s/bin/%s", prefix, spec->bin);
  if (!executable(bin)) return 0;
  snprintf(f->path, sizeof f->path, "%s", bin);
  snprintf(pj, sizeof pj, "%s/lib/node_modules/%s/package.json", prefix, spec->package);
  f->version = read_version(pj, spec->package);
  return 1;
}

/* The CLI: in the install prefix, the read-only prefixes, then $PATH. */
static int find_agent(asbs_agents *svc, const asbs_agent_spec *spec, found *f) {
  memset(f, 0, sizeof *f);
  if (find_in_prefix(svc->prefix, spec, f)) {
    f->where = "prefix";
    return 1;
  }
  for (char **p = svc->search; p && *p; p++)
    if (find_in_prefix(*p, spec, f)) {
      f->where = "search";
      return 1;
    }
  const char *path = getenv("PATH");
  if (!path) return 0;
  char *dup = asbi_strdup(path), *save = NULL;
  int ok = 0;
  for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d && !ok; d = strtok_r(NULL, ":", &save)) {
    char bin[PATH_MAX];
    snprintf(bin, sizeof bin, "%s/%s", d, spec->bin);
    if (!*d || !executable(bin)) continue;
    snprintf(f->path, sizeof f->path, "%s", bin);
    f->where = "PATH";
    ok = 1;
    /* npm's bin links point into the package: find its package.json */
    char real[PATH_MAX];
    if (realpath(bin, real)) {
      for (int up = 0; up < 8 && !f->version; up++) {
        char *slash = strrchr(real, '/');
        if (!slash || slash == real) break;
        *slash = 0;
        char pj[PATH_MAX + 16];
        snprintf(pj, sizeof pj, "%s/package.json", real);
        f->version = read_version(pj, spec->package);
      }
    }
  }
  free(dup);
  return ok;
}

static void found_free(found *f) {
  free(f->version);
  f->version = NULL;
}

static int npm_path(asbs_agents *svc, char *out, size_t n) {
  if (strchr(svc->npm, '/')) {
    snprintf(out, n, "%s", svc->npm);
    return executable(out);
  }
  const char *path = getenv("PATH");
  char *dup = asbi_strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
  int ok = 0;
  for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d && !ok; d = strtok_r(NULL, ":", &save)) {
    snprintf(out, n, "%s/%s", d, svc->npm);
    ok = *d && executable(out);
  }
  free(dup);
  return ok;
}

/* ---- processes ------------------------------------------------------------------------------ */

static int env_has(char *const *envp, size_t n, const char *name, size_t nl) {
  for (size_t i = 0; i < n; i++)
    if (!strncmp(envp[i], name, nl) && envp[i][nl] == '=') return (int)i;
  return -1;
}

/* Add "K=V" to list, replacing an earlier K. */
static int env_set(asbs_argv *l, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq) return 0;
  int i = env_has(l->v, l->n, kv, (size_t)(eq - kv));
  if (i >= 0) {
    char *d = asbi_strdup(kv);
    if (!d) return -1;
    free(l->v[i]);
    l->v[i] = d;
    return 0;
  }
  return asbs_argv_add(l, kv);
}

/* The environment of a CLI or npm: ours without the server's token, PATH
 * with the agents' bin directories first, then extra (the agent's own
 * settings), then the session's env. */
static int build_env(asbs_agents *svc, const asbs_argv *extra, const asbs_session_cfg *cfg,
                     asbs_argv *out) {
  int rc = 0;
  for (char **e = environ; e && *e; e++) {
    if (asbi_startswith(*e, "ASB_SERVER_TOKEN=") || asbi_startswith(*e, "ASB_SERVER_TOKEN_SHA256="))
      continue;
    if (asbi_startswith(*e, "PATH=")) continue;
    rc |= asbs_argv_add(out, *e);
  }
  asbi_buf p = ASBI_BUF_INIT;
  asbi_buf_printf(&p, "PATH=%s/bin", svc->prefix);
  for (char **s = svc->search; s && *s; s++) asbi_buf_printf(&p, ":%s/bin", *s);
  const char *path = getenv("PATH");
  asbi_buf_printf(&p, ":%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  rc |= p.data ? env_set(out, p.data) : -1;
  asbi_buf_free(&p);
  if (!getenv("HOME")) rc |= env_set(out, "HOME=/tmp");
  for (size_t i = 0; extra && i < extra->n; i++) rc |= env_set(out, extra->v[i]);
  for (size_t i = 0; cfg && i < cfg->nenv; i++) rc |= env_set(out, cfg->env[i]);
  return rc ? -1 : 0;
}

/* Spawn argv in its own session (no terminal), stdin /dev/null, stdout and
 * stderr to pipes. Returns 0 or an errno. */
static int spawn(pid_t *pid, int *outfd, int *errfd, char *const argv[], char *const envp[],
                 const char *cwd) {
  int o[2], e[2];
  if (pipe2(o, O_CLOEXEC)) return errno;
  if (pipe2(e, O_CLOEXEC)) {
    int err = errno;
    close(o[0]);
    close(o[1]);
    return err;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, o[1], 1);
  posix_spawn_file_actions_adddup2(&fa, e[1], 2);
  if (cwd && *cwd) posix_spawn_file_actions_addchdir_np(&fa, cwd);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawn(pid, argv[0], &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(o[1]);
  close(e[1]);
  if (rc) {
    close(o[0]);
    close(e[0]);
    return rc;
  }
  *outfd = o[0];
  *errfd = e[0];
  return 0;
}

/* Every descendant of root (by the parent pids in /proc), root included. */
static size_t descendants(pid_t root, pid_t *out, size_t cap) {
  size_t n = 0;
  if (cap) out[n++] = root;
  DIR *d = opendir("/proc");
  if (!d) return n;
  pid_t pids[4096], ppids[4096];
  size_t np = 0;
  struct dirent *de;
  while ((de = readdir(d)) && np < 4096) {
    char *end;
    long p = strtol(de->d_name, &end, 10);
    if (*end || p <= 0) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) continue;
    buf[r] = 0;
    char *rp = strrchr(buf, ')');
    char st;
    long pp;
    if (!rp || sscanf(rp + 1, " %c %ld", &st, &pp) != 2) continue;
    pids[np] = (pid_t)p;
    ppids[np++] = (pid_t)pp;
  }
  closedir(d);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < np && n < cap; j++)
      if (ppids[j] == out[i]) {
        int dup = 0;
        for (size_t k = 0; k < n; k++) dup |= out[k] == pids[j];
        if (!dup) out[n++] = pids[j];
      }
  return n;
}

static void kill_tree(pid_t pid, int sig) {
  if (pid <= 0) return;
  pid_t tree[1024];
  size_t n = descendants(pid, tree, 1024);
  kill(-pid, sig); /* its process group (= its session: setsid) */
  for (size_t i = 0; i < n; i++) {
    pid_t pg = getpgid(tree[i]);
    if (pg > 0 && pg != pid && pg != getpgrp()) kill(-pg, sig);
    kill(tree[i], sig);
  }
}

/* Read a child's stdout (lines to on_line) and stderr (lines to on_err)
 * until both close, then reap it. Returns its exit status (128+signal), or
 * -1 when it could not be reaped (SIGCHLD ignored by the program). */
typedef struct reader {
  void (*on_line)(void *ud, char *line, size_t len);
  void (*on_err)(void *ud, char *line, size_t len);
  void *ud;
  asbs_session *sess; /* checked for cancel */
} reader;

static void split_lines(asbi_buf *b, int final, void (*fn)(void *, char *, size_t), void *ud,
                        size_t max) {
  size_t start = 0;
  for (size_t i = 0; i < b->len; i++) {
    if (b->data[i] != '\n') continue;
    b->data[i] = 0;
    size_t len = i - start;
    if (len && b->data[start + len - 1] == '\r') b->data[start + --len] = 0;
    fn(ud, b->data + start, len);
    start = i + 1;
  }
  if (final && start < b->len) {
    fn(ud, b->data + start, b->len - start);
    start = b->len;
  }
  asbi_buf_consume(b, start);
  if (b->len > max) { /* a line over the limit: cut it */
    fn(ud, b->data, max);
    asbi_buf_clear(b);
  }
}

static int run_child(pid_t pid, int outfd, int errfd, reader *rd) {
  asbi_buf ob = ASBI_BUF_INIT, eb = ASBI_BUF_INIT;
  int open_o = 1, open_e = 1, status = -1, reaped = 0;
  int64_t exited_at = 0;
  while (open_o || open_e) {
    struct pollfd p[2] = {{open_o ? outfd : -1, POLLIN, 0}, {open_e ? errfd : -1, POLLIN, 0}};
    poll(p, 2, 200);
    char chunk[65536];
    for (int k = 0; k < 2; k++) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(k ? errfd : outfd, chunk, sizeof chunk);
      if (r > 0) {
        asbi_buf *b = k ? &eb : &ob;
        if (asbi_buf_append(b, chunk, (size_t)r) == 0)
          split_lines(b, 0, k ? rd->on_err : rd->on_line, rd->ud,
                      k ? LOG_LINE_MAX : LINE_MAX_BYTES);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (k)
          open_e = 0;
        else
          open_o = 0;
      }
    }
    /* cancel: SIGTERM at once (the cancel call), SIGKILL after the grace */
    if (rd->sess) {
      asbs_session *s = rd->sess;
      pthread_mutex_lock(&s->log.mu);
      int cancel = s->cancel;
      int64_t at = s->cancel_at;
      pthread_mutex_unlock(&s->log.mu);
      if (cancel && at && mono_ms() - at > CANCEL_GRACE_MS) {
        kill_tree(pid, SIGKILL);
        pthread_mutex_lock(&s->log.mu);
        s->cancel_at = 0; /* once */
        pthread_mutex_unlock(&s->log.mu);
      }
    }
    if (!reaped) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid || (w < 0 && errno == ECHILD)) {
        reaped = 1;
        if (w < 0) status = -1;
        exited_at = mono_ms();
      }
    }
    /* the CLI is gone but something it started holds its pipes: stop
     * reading after a while */
    if (reaped && exited_at && mono_ms() - exited_at > 2000) break;
  }
  split_lines(&ob, 1, rd->on_line, rd->ud, LINE_MAX_BYTES);
  split_lines(&eb, 1, rd->on_err, rd->ud, LOG_LINE_MAX);
  asbi_buf_free(&ob);
  asbi_buf_free(&eb);
  close(outfd);
  close(errfd);
  if (!reaped) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (errno == ECHILD) status = -1;
  }
  if (status < 0) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/* ---- installing ------------------------------------------------------------------------------ */

typedef struct install_ctx {
  asbs_session *sess; /* where the events go */
  int turn;
  asbi_buf tail; /* npm's last output, for the error */
} install_ctx;

static void install_line(void *ud, char *line, size_t len) {
  install_ctx *ic = ud;
  if (!len) return;
  asbi_buf_append(&ic->tail, line, len);
  asbi_buf_putc(&ic->tail, '\n');
  if (ic->tail.len > TAIL_MAX) asbi_buf_consume(&ic->tail, ic->tail.len - TAIL_MAX);
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "line", line);
  emit_in(ic->sess, ic->turn, "install.progress", f, NULL);
}

/* The last non-empty lines of npm's output that say why, on one line. */
static void reason_of(const char *tail, char *out, size_t n) {
  out[0] = 0;
  if (!tail) return;
  /* prefer npm's "npm error" lines */
  asbi_buf b = ASBI_BUF_INIT;
  const char *p = tail;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len && (!strncmp(p, "npm error", 9) || !strncmp(p, "npm ERR!", 8))) {
      if (b.len) asbi_buf_puts(&b, "; ");
      asbi_buf_append(&b, p, len);
    }
    p += len + (nl ? 1 : 0);
  }
  if (!b.len) {
    size_t l = strlen(tail);
    while (l && tail[l - 1] == '\n') l--;
    const char *s = tail + l;
    int lines = 0;
    while (s > tail && lines < 3) {
      s--;
      if (*s == '\n') lines++;
    }
    asbi_buf_append(&b, s, (size_t)(tail + l - s));
  }
  snprintf(out, n, "%s", b.data ? b.data : "");
  for (char *q = out; *q; q++)
    if (*q == '\n') *q = ' ';
  asbi_buf_free(&b);
}

typedef struct install_req {
  char *version, *registry, *source;
} install_req;

static void install_req_free(install_req *r) {
  free(r->version);
  free(r->registry);
  free(r->source);
  memset(r, 0, sizeof *r);
}

/* Install spec's package into the prefix with npm, reporting install.*
 * events to sess (turn). Returns 0, or -1 with why (a message naming the
 * package and the reason). */
static int do_install(asbs_agents *svc, const asbs_agent_spec *spec, const install_req *req,
                      asbs_session *sess, int turn, char *why, size_t whyn) {
  char npm[PATH_MAX];
  char spec_text[1200];
  if (req && req->source)
    snprintf(spec_text, sizeof spec_text, "%s", req->source);
  else
    snprintf(spec_text, sizeof spec_text, "%s@%s", spec->package,
             req && req->version ? req->version : "latest");
  const char *registry = req && req->registry ? req->registry : svc->registry;
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "agent", spec->name);
  cJSON_AddStringToObject(f, "package", spec->package);
  cJSON_AddStringToObject(f, "spec", spec_text);
  cJSON_AddStringToObject(f, "prefix", svc->prefix);
  if (registry)
    cJSON_AddStringToObject(f, "registry", registry);
  else
    cJSON_AddNullToObject(f, "registry");
  emit_in(sess, turn, "install.started", f, NULL);
  int rc = -1;
  why[0] = 0;
  pthread_mutex_lock(&svc->install_mu);
  if (!npm_path(svc, npm, sizeof npm)) {
    snprintf(why, whyn, "cannot install %s: npm (%s) is not installed in the sandbox",
             spec->package, svc->npm);
  } else {
    asbs_argv argv = {0}, extra = {0}, env = {0};
    int brc = 0;
    brc |= asbs_argv_add(&argv, npm);
    brc |= asbs_argv_add(&argv, "install");
    brc |= asbs_argv_add(&argv, "-g");
    brc |= asbs_argv_add(&argv, "--prefix");
    brc |= asbs_argv_add(&argv, svc->prefix);
    brc |= asbs_argv_add(&argv, "--no-audit");
    brc |= asbs_argv_add(&argv, "--no-fund");
    brc |= asbs_argv_add(&argv, "--no-update-notifier");
    brc |= asbs_argv_add(&argv, "--loglevel");
    brc |= asbs_argv_add(&argv, "http");
    if (registry) {
      brc |= asbs_argv_add(&argv, "--registry");
      brc |= asbs_argv_add(&argv, registry);
    }
    brc |= asbs_argv_add(&argv, spec_text);
    brc |= asbs_argv_add(&extra, "NO_COLOR=1");
    brc |= build_env(svc, &extra, NULL, &env);
    char mk[PATH_MAX + 8];
    snprintf(mk, sizeof mk, "%s", svc->prefix);
    for (char *q = mk + 1; *q; q++) /* mkdir -p */
      if (*q == '/') {
        *q = 0;
        mkdir(mk, 0755);
        *q = '/';
      }
    mkdir(mk, 0755);
    pid_t pid = 0;
    int of, ef;
    int sp = brc ? ENOMEM : spawn(&pid, &of, &ef, argv.v, env.v, NULL);
    if (sp) {
      snprintf(why, whyn, "cannot install %s: cannot run %s: %s", spec->package, npm, strerror(sp));
    } else {
      install_ctx ic = {sess, turn, ASBI_BUF_INIT};
      pthread_mutex_lock(&sess->log.mu);
      sess->pid = pid;
      pthread_mutex_unlock(&sess->log.mu);
      reader rd = {install_line, install_line, &ic, sess};
      int code = run_child(pid, of, ef, &rd);
      pthread_mutex_lock(&sess->log.mu);
      sess->pid = 0;
      int cancelled = sess->cancel;
      pthread_mutex_unlock(&sess->log.mu);
      found fd;
      if (cancelled) {
        snprintf(why, whyn, "installing %s was cancelled", spec->package);
      } else if (code != 0) {
        char reason[1500];
        reason_of(ic.tail.data, reason, sizeof reason);
        snprintf(why, whyn, "npm install %s failed (exit %d): %s%s", spec_text, code,
                 reason[0] ? reason : "no output",
                 registry ? ""
                          : " (sandboxes have no network yet: give a registry or a "
                            "tarball reachable inside the sandbox)");
      } else if (!find_agent(svc, spec, &fd)) {
        snprintf(why, whyn, "npm installed %s, but its command '%s' is not in %s/bin", spec_text,
                 spec->bin, svc->prefix);
      } else {
        rc = 0;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "agent", spec->name);
        cJSON_AddStringToObject(d, "package", spec->package);
        cJSON_AddStringToObject(d, "status", "installed");
        if (fd.version)
          cJSON_AddStringToObject(d, "version", fd.version);
        else
          cJSON_AddNullToObject(d, "version");
        cJSON_AddStringToObject(d, "path", fd.path);
        found_free(&fd);
        emit_in(sess, turn, "install.completed", d, NULL);
      }
      asbi_buf_free(&ic.tail);
    }
    asbs_argv_free(&argv);
    asbs_argv_free(&extra);
    asbs_argv_free(&env);
  }
  pthread_mutex_unlock(&svc->install_mu);
  if (rc) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "agent", spec->name);
    cJSON_AddStringToObject(d, "package", spec->package);
    cJSON_AddStringToObject(d, "status", "failed");
    cJSON_AddStringToObject(d, "error", why);
    emit_in(sess, turn, "install.completed", d, NULL);
  }
  return rc;
}

/* ---- one turn ------------------------------------------------------------------------------ */

typedef struct turn_job {
  asbs_session *sess;
  int turn;
  char *prompt;
  asbi_buf tail; /* stderr tail */
} turn_job;

static void turn_line(void *ud, char *line, size_t len) {
  turn_job *j = ud;
  asbs_session *s = j->sess;
  while (len && (*line == ' ' || *line == '\t')) {
    line++;
    len--;
  }
  if (!len) return;
  cJSON *ev = line[0] == '{' ? cJSON_ParseWithLength(line, len) : NULL;
  if (ev) {
    s->spec->map(&s->map, ev);
    cJSON_Delete(ev);
    return;
  }
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "stream", "stdout");
  cJSON_AddStringToObject(f, "text", asbi_utf8_valid(line, len) ? line : "(not UTF-8)");
  emit_in(s, j->turn, "log", f, NULL);
}

static void turn_err(void *ud, char *line, size_t len) {
  turn_job *j = ud;
  if (!len) return;
  asbi_buf_append(&j->tail, line, len);
  asbi_buf_putc(&j->tail, '\n');
  if (j->tail.len > TAIL_MAX) asbi_buf_consume(&j->tail, j->tail.len - TAIL_MAX);
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "stream", "stderr");
  cJSON_AddStringToObject(f, "text", asbi_utf8_valid(line, len) ? line : "(not UTF-8)");
  emit_in(j->sess, j->turn, "log", f, NULL);
}

static void uuid4(char out[37]) {
  unsigned char b[16];
  if (asbi_random_bytes(b, sizeof b)) memset(b, 0x5a, sizeof b);
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
}

static void *turn_main(void *arg) {
  turn_job *j = arg;
  asbs_session *s = j->sess;
  asbs_agents *svc = s->svc;
  const asbs_agent_spec *spec = s->spec;
  int64_t t0 = mono_ms();
  int exit_code = -1, spawned = 0;
  char why[2048] = "";
  memset(&s->map, 0, sizeof s->map);
  s->map.sess = s;
  s->map.turn = j->turn;
  found fd;
  int have = find_agent(svc, spec, &fd);
  if (!have && s->install) {
    if (do_install(svc, spec, NULL, s, j->turn, why, sizeof why) == 0)
      have = find_agent(svc, spec, &fd);
  } else if (!have) {
    snprintf(why, sizeof why,
             "agent '%s' is not installed (npm package %s) and the session does not install "
             "it: POST /agents/%s/install, or create the session with \"install\": true",
             spec->name, spec->package, spec->name);
  }
  pthread_mutex_lock(&s->log.mu);
  int cancelled = s->cancel;
  const char *native = s->native_id;
  char *native_copy = native ? asbi_strdup(native) : NULL;
  pthread_mutex_unlock(&s->log.mu);
  if (have && !cancelled) {
    asbs_argv argv = {0}, extra = {0}, env = {0};
    int brc = asbs_argv_add(&argv, fd.path);
    brc |= spec->command(spec, &s->cfg, native_copy, s->first_id, j->prompt, &argv, &extra);
    /* codex wants its home to exist */
    if (!strcmp(spec->name, "codex") && !getenv("CODEX_HOME")) {
      const char *home = getenv("HOME");
      char ch[PATH_MAX];
      snprintf(ch, sizeof ch, "%s/.codex", home ? home : "/tmp");
      mkdir(ch, 0700);
    }
    brc |= build_env(svc, &extra, &s->cfg, &env);
    pid_t pid = 0;
    int of, ef;
    int sp = brc ? ENOMEM : spawn(&pid, &of, &ef, argv.v, env.v, s->cfg.cwd);
    if (sp) {
      snprintf(why, sizeof why, "cannot run %s: %s", fd.path, strerror(sp));
    } else {
      spawned = 1;
      pthread_mutex_lock(&s->log.mu);
      s->pid = pid;
      if (s->cancel) kill_tree(pid, SIGTERM); /* cancelled meanwhile */
      pthread_mutex_unlock(&s->log.mu);
      reader rd = {turn_line, turn_err, j, s};
      exit_code = run_child(pid, of, ef, &rd);
      pthread_mutex_lock(&s->log.mu);
      s->pid = 0;
      pthread_mutex_unlock(&s->log.mu);
    }
    asbs_argv_free(&argv);
    asbs_argv_free(&extra);
    asbs_argv_free(&env);
  }
  if (have) found_free(&fd);
  free(native_copy);
  pthread_mutex_lock(&s->log.mu);
  cancelled = s->cancel;
  pthread_mutex_unlock(&s->log.mu);
  /* the outcome */
  const char *status = "completed";
  char errbuf[2300] = "";
  if (cancelled) {
    status = "cancelled";
    snprintf(errbuf, sizeof errbuf, "the turn was cancelled");
  } else if (!spawned) {
    status = "failed";
    snprintf(errbuf, sizeof errbuf, "%s", why[0] ? why : "the agent could not be started");
  } else if (s->agg.error) {
    status = "failed";
    snprintf(errbuf, sizeof errbuf, "%s", s->agg.error);
  } else if (exit_code != 0) {
    status = "failed";
    char reason[1500];
    reason_of(j->tail.data, reason, sizeof reason);
    snprintf(errbuf, sizeof errbuf, "%s exited with code %d%s%s", spec->bin, exit_code,
             reason[0] ? ": " : "", reason);
  }
  if (!cancelled && !spawned) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "message", errbuf);
    cJSON_AddTrueToObject(e, "fatal");
    emit_in(s, j->turn, "error", e, NULL);
  } else if (!cancelled && !s->agg.error && exit_code != 0) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "message", errbuf);
    cJSON_AddTrueToObject(e, "fatal");
    emit_in(s, j->turn, "error", e, NULL);
  }
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "status", status);
  if (s->agg.final_message)
    cJSON_AddStringToObject(f, "final_message", s->agg.final_message);
  else
    cJSON_AddNullToObject(f, "final_message");
  cJSON_AddItemToObject(f, "files_changed",
                        s->agg.files ? cJSON_Duplicate(s->agg.files, 1) : cJSON_CreateArray());
  cJSON_AddItemToObject(
      f, "commands", s->agg.commands ? cJSON_Duplicate(s->agg.commands, 1) : cJSON_CreateArray());
  cJSON *u = cJSON_AddObjectToObject(f, "usage");
  cJSON_AddNumberToObject(u, "input_tokens", s->agg.in_tok);
  cJSON_AddNumberToObject(u, "output_tokens", s->agg.out_tok);
  cJSON_AddNumberToObject(u, "cached_input_tokens", s->agg.cached);
  cJSON_AddNumberToObject(u, "total_tokens", s->agg.in_tok + s->agg.out_tok);
  if (spawned && exit_code >= 0)
    cJSON_AddNumberToObject(f, "exit_code", exit_code);
  else
    cJSON_AddNullToObject(f, "exit_code");
  if (strcmp(status, "completed") != 0)
    cJSON_AddStringToObject(f, "error", errbuf);
  else
    cJSON_AddNullToObject(f, "error");
  cJSON_AddNumberToObject(f, "duration_ms", (double)(mono_ms() - t0));
  /* the transcript entry */
  cJSON *entry = cJSON_Duplicate(f, 1);
  cJSON_AddNumberToObject(entry, "turn", j->turn);
  cJSON_AddStringToObject(entry, "prompt", j->prompt);
  cJSON *done = emit_build(s, j->turn, "turn.completed", f, NULL);
  cJSON_Delete(s->map.calls);
  free(s->map.out_id);
  memset(&s->map, 0, sizeof s->map);
  /* turn.completed and the session going idle are one step: a client that
   * has read turn.completed may send the next prompt at once (before, it
   * could get 409 TurnInProgressError in between) */
  pthread_mutex_lock(&s->log.mu);
  emit_append_locked(s, j->turn, "turn.completed", done);
  cJSON *last = cJSON_GetArrayItem(s->turns, cJSON_GetArraySize(s->turns) - 1);
  if (last) { /* turn.started put {turn, prompt, status: running} there */
    cJSON_ReplaceItemViaPointer(s->turns, last, entry);
  } else {
    cJSON_AddItemToArray(s->turns, entry);
  }
  s->running = 0;
  s->cancel = 0;
  s->cancel_at = 0;
  s->log.active = 0;
  pthread_cond_broadcast(&s->log.cv);
  pthread_mutex_unlock(&s->log.mu);
  agg_clear(&s->agg);
  asbi_buf_free(&j->tail);
  free(j->prompt);
  free(j);
  session_unref(s);
  return NULL;
}

/* ---- HTTP helpers --------------------------------------------------------------------------- */

enum { FMT_NONE = 0, FMT_NDJSON = 1, FMT_SSE = 2 };

static enum MHD_Result reply(asb_server *s, struct MHD_Connection *c, unsigned status,
                             cJSON *body /* taken */) {
  char *text = body ? cJSON_PrintUnformatted(body) : NULL;
  cJSON_Delete(body);
  return asbs_send_json(s, c, status, text);
}

static enum MHD_Result reply_err(asb_server *s, struct MHD_Connection *c, unsigned status,
                                 const char *type, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result reply_err(asb_server *s, struct MHD_Connection *c, unsigned status,
                                 const char *type, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return asbs_send_json(s, c, status, asbs_error_json(msg, type));
}

/* The stream format a request asks for: ?stream=ndjson|sse|none, else its
 * Accept header, else dflt. -1 for an unknown ?stream. */
static int want_format(struct MHD_Connection *c, int dflt) {
  const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "stream");
  if (q) {
    if (!strcmp(q, "ndjson") || !strcmp(q, "jsonl")) return FMT_NDJSON;
    if (!strcmp(q, "sse")) return FMT_SSE;
    if (!strcmp(q, "none") || !strcmp(q, "false") || !strcmp(q, "0")) return FMT_NONE;
    if (!strcmp(q, "true") || !strcmp(q, "1")) return dflt ? dflt : FMT_NDJSON;
    return -1;
  }
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  if (a && strstr(a, "text/event-stream")) return FMT_SSE;
  if (a && (strstr(a, "application/x-ndjson") || strstr(a, "application/jsonl"))) return FMT_NDJSON;
  return dflt;
}

/* A stream of a log's events: from seq > after, until the event of type
 * `until` of turn `until_turn` (or, without one, until the log is idle and
 * every event went out). */
typedef struct stream {
  asb_server *server;
  asbs_session *sess; /* a reference */
  int64_t after;
  int fmt;
  char until[32];
  int until_turn;
  int done;
  asbi_buf pending;
  int64_t last_write;
} stream;

static void stream_free(void *cls) {
  stream *st = cls;
  asbi_buf_free(&st->pending);
  session_unref(st->sess);
  free(st);
}

static void frame(stream *st, const ev *e) {
  if (st->fmt == FMT_SSE)
    asbi_buf_printf(&st->pending, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)e->seq, e->type,
                    e->json);
  else
    asbi_buf_printf(&st->pending, "%s\n", e->json);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stream *st = cls;
  asbs_session *s = st->sess;
  while (!st->pending.len) {
    if (st->done) return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&s->log.mu);
    for (;;) {
      if (s->log.dropped > st->after) { /* they went: say so, go on after them */
        cJSON *g = cJSON_CreateObject();
        cJSON_AddNumberToObject(g, "seq", (double)s->log.dropped);
        cJSON_AddStringToObject(g, "type", "events.dropped");
        cJSON_AddStringToObject(g, "session", s->id);
        cJSON_AddNumberToObject(g, "after", (double)st->after);
        char *t = cJSON_PrintUnformatted(g);
        cJSON_Delete(g);
        ev fake = {s->log.dropped, 0, "events.dropped", t, t ? strlen(t) : 0};
        if (t) frame(st, &fake);
        free(t);
        st->after = s->log.dropped;
      }
      size_t i = evlog_index_after(&s->log, st->after);
      for (; i < s->log.n && st->pending.len < 256 * 1024; i++) {
        ev *e = &s->log.v[i];
        frame(st, e);
        st->after = e->seq;
        if (st->until[0] && e->turn == st->until_turn && !strcmp(e->type, st->until)) {
          st->done = 1;
          break;
        }
      }
      if (!st->until[0] && !s->log.active && i >= s->log.n) st->done = 1;
      if (st->pending.len || st->done) break;
      if (atomic_load(&s->svc->stopping) || asbs_server_stopping(st->server)) {
        st->done = 1;
        break;
      }
      if (st->fmt == FMT_SSE && mono_ms() - st->last_write > KEEPALIVE_MS) {
        asbi_buf_puts(&st->pending, ": keepalive\n\n");
        break;
      }
      cv_wait_ms(&s->log.cv, &s->log.mu, 1000);
    }
    pthread_mutex_unlock(&s->log.mu);
  }
  size_t n = st->pending.len < max ? st->pending.len : max;
  memcpy(buf, st->pending.data, n);
  asbi_buf_consume(&st->pending, n);
  st->last_write = mono_ms();
  return (ssize_t)n;
}

static enum MHD_Result send_stream(asb_server *srv, struct MHD_Connection *c, asbs_session *s,
                                   int64_t after, int fmt, const char *until, int until_turn,
                                   unsigned status) {
  stream *st = calloc(1, sizeof *st);
  if (!st) return MHD_NO;
  st->server = srv;
  session_ref(s);
  st->sess = s;
  st->after = after;
  st->fmt = fmt;
  if (until) snprintf(st->until, sizeof st->until, "%s", until);
  st->until_turn = until_turn;
  st->last_write = mono_ms();
  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_free);
  if (!r) {
    stream_free(st);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type",
                          fmt == FMT_SSE ? "text/event-stream" : "application/x-ndjson");
  MHD_add_response_header(r, "Cache-Control", "no-cache");
  MHD_add_response_header(r, "X-Accel-Buffering", "no");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---- the JSON views -------------------------------------------------------------------------- */

static cJSON *agent_json(asbs_agents *svc, const asbs_agent_spec *spec) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "name", spec->name);
  cJSON_AddStringToObject(a, "package", spec->package);
  cJSON_AddStringToObject(a, "command", spec->bin);
  cJSON_AddStringToObject(a, "protocol", spec->protocol);
  cJSON_AddStringToObject(a, "api", spec->api);
  cJSON_AddStringToObject(a, "api_key_env", spec->key_env);
  found f;
  int have = find_agent(svc, spec, &f);
  cJSON_AddBoolToObject(a, "installed", have);
  if (have && f.version)
    cJSON_AddStringToObject(a, "version", f.version);
  else
    cJSON_AddNullToObject(a, "version");
  if (have) {
    cJSON_AddStringToObject(a, "path", f.path);
    cJSON_AddStringToObject(a, "source", f.where);
  } else {
    cJSON_AddNullToObject(a, "path");
    cJSON_AddNullToObject(a, "source");
  }
  if (have) found_free(&f);
  return a;
}

static cJSON *session_json(asbs_session *s, int with_turns) {
  cJSON *j = cJSON_CreateObject();
  pthread_mutex_lock(&s->log.mu);
  cJSON_AddStringToObject(j, "id", s->id);
  cJSON_AddStringToObject(j, "agent", s->spec->name);
  cJSON_AddStringToObject(j, "status", s->closed ? "closed" : s->running ? "running" : "idle");
  if (s->native_id)
    cJSON_AddStringToObject(j, "native_session_id", s->native_id);
  else
    cJSON_AddNullToObject(j, "native_session_id");
  cJSON_AddStringToObject(j, "cwd", s->cfg.cwd);
  if (s->cfg.model)
    cJSON_AddStringToObject(j, "model", s->cfg.model);
  else
    cJSON_AddNullToObject(j, "model");
  if (s->cfg.base_url)
    cJSON_AddStringToObject(j, "base_url", s->cfg.base_url);
  else
    cJSON_AddNullToObject(j, "base_url");
  cJSON_AddStringToObject(j, "approval", s->cfg.approval ? s->cfg.approval : "never");
  cJSON_AddStringToObject(j, "sandbox", s->cfg.sandbox ? s->cfg.sandbox : "none");
  cJSON_AddNumberToObject(j, "created_at", (double)(s->created_ms / 1000));
  cJSON_AddNumberToObject(j, "turns_count", s->turn);
  cJSON_AddNumberToObject(j, "last_seq", (double)(s->log.next_seq - 1));
  cJSON_AddNumberToObject(j, "first_seq", (double)(s->log.dropped + 1));
  if (with_turns) cJSON_AddItemToObject(j, "turns", cJSON_Duplicate(s->turns, 1));
  pthread_mutex_unlock(&s->log.mu);
  return j;
}

/* ---- request bodies ------------------------------------------------------------------------- */

static int valid_env_name(const char *s) {
  if (!s || !*s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) return 0;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9')))
      return 0;
  return 1;
}

/* Parse a request body: an object (an empty body is {}). NULL + *why. */
static cJSON *body_object(const char *body, size_t len, const char **why) {
  if (!body || !len) return cJSON_CreateObject();
  cJSON *j = asbi_pj_parse(body, len, why);
  if (j && !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    *why = "the body must be a JSON object";
    return NULL;
  }
  if (!j && !*why) *why = "not valid JSON";
  return j;
}

/* A field of the body that must be a string (or absent/null). */
static int opt_string(const cJSON *o, const char *key, char **out, char *err, size_t errn) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsString(v)) {
    snprintf(err, errn, "'%s' must be a string", key);
    return -1;
  }
  *out = asbi_strdup(v->valuestring);
  return *out ? 0 : -1;
}

static int check_keys(const cJSON *o, const char *const *allowed, char *err, size_t errn) {
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    int ok = 0;
    for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(it->string, *a);
    if (!ok) {
      snprintf(err, errn, "unknown field '%.100s'", it->string);
      return -1;
    }
  }
  return 0;
}

static int one_of(const char *v, const char *const *set) {
  for (; *set; set++)
    if (!strcmp(v, *set)) return 1;
  return 0;
}

static int parse_cfg(asbs_agents *svc, const cJSON *o, asbs_session_cfg *cfg, int *install,
                     char *err, size_t errn) {
  (void)svc;
  static const char *const approvals[] = {"never", "edits", "plan", NULL};
  static const char *const sandboxes[] = {"none", "workspace-write", "read-only", NULL};
  if (opt_string(o, "cwd", &cfg->cwd, err, errn) ||
      opt_string(o, "model", &cfg->model, err, errn) ||
      opt_string(o, "base_url", &cfg->base_url, err, errn) ||
      opt_string(o, "api_key_env", &cfg->api_key_env, err, errn) ||
      opt_string(o, "wire_api", &cfg->wire_api, err, errn) ||
      opt_string(o, "approval", &cfg->approval, err, errn) ||
      opt_string(o, "sandbox", &cfg->sandbox, err, errn))
    return -1;
  if (cfg->approval && !one_of(cfg->approval, approvals)) {
    snprintf(err, errn, "'approval' must be one of never, edits, plan (got '%.64s')",
             cfg->approval);
    return -1;
  }
  if (cfg->sandbox && !one_of(cfg->sandbox, sandboxes)) {
    snprintf(err, errn, "'sandbox' must be one of none, workspace-write, read-only (got '%.64s')",
             cfg->sandbox);
    return -1;
  }
  if (cfg->api_key_env && !valid_env_name(cfg->api_key_env)) {
    snprintf(err, errn, "'api_key_env' must be an environment variable name");
    return -1;
  }
  if (cfg->base_url && !asbi_startswith(cfg->base_url, "http://") &&
      !asbi_startswith(cfg->base_url, "https://")) {
    snprintf(err, errn, "'base_url' must be an http:// or https:// URL");
    return -1;
  }
  if (!cfg->cwd) {
    const char *home = getenv("HOME");
    cfg->cwd = asbi_strdup(home && *home ? home : "/");
  }
  struct stat st;
  if (!cfg->cwd || cfg->cwd[0] != '/' || stat(cfg->cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errn, "'cwd' must be an existing absolute directory (got '%.200s')",
             cfg->cwd ? cfg->cwd : "");
    return -1;
  }
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "args"), *it;
  if (args && !cJSON_IsNull(args)) {
    if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > MAX_LIST) {
      snprintf(err, errn, "'args' must be a list of at most %d strings", MAX_LIST);
      return -1;
    }
    cfg->args = calloc((size_t)cJSON_GetArraySize(args) + 1, sizeof *cfg->args);
    if (!cfg->args) return -1;
    cJSON_ArrayForEach(it, args) {
      if (!cJSON_IsString(it)) {
        snprintf(err, errn, "'args' must be a list of strings");
        return -1;
      }
      if (!(cfg->args[cfg->nargs++] = asbi_strdup(it->valuestring))) return -1;
    }
  }
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(o, "env");
  if (env && !cJSON_IsNull(env)) {
    if (!cJSON_IsObject(env) || cJSON_GetArraySize(env) > MAX_LIST) {
      snprintf(err, errn, "'env' must be an object of at most %d names and string values",
               MAX_LIST);
      return -1;
    }
    cfg->env = calloc((size_t)cJSON_GetArraySize(env) + 1, sizeof *cfg->env);
    if (!cfg->env) return -1;
    cJSON_ArrayForEach(it, env) {
      if (!valid_env_name(it->string) || !cJSON_IsString(it)) {
        snprintf(err, errn, "'env': '%.100s' must be a variable name with a string value",
                 it->string);
        return -1;
      }
      asbi_buf b = ASBI_BUF_INIT;
      asbi_buf_printf(&b, "%s=%s", it->string, it->valuestring);
      if (!b.data) return -1;
      cfg->env[cfg->nenv++] = asbi_buf_detach(&b, NULL);
    }
  }
  const cJSON *inst = cJSON_GetObjectItemCaseSensitive(o, "install");
  if (inst && !cJSON_IsNull(inst)) {
    if (!cJSON_IsBool(inst)) {
      snprintf(err, errn, "'install' must be true or false");
      return -1;
    }
    *install = cJSON_IsTrue(inst);
  }
  return 0;
}

/* ---- routes --------------------------------------------------------------------------------- */

static asbs_session *find_session(asbs_agents *svc, const char *id) {
  asbs_session *found = NULL;
  pthread_mutex_lock(&svc->mu);
  for (size_t i = 0; i < svc->nsessions && !found; i++)
    if (!strcmp(svc->sessions[i]->id, id)) {
      found = svc->sessions[i];
      session_ref(found);
    }
  pthread_mutex_unlock(&svc->mu);
  return found;
}

static char *available_agents(void) {
  asbi_buf b = ASBI_BUF_INIT;
  for (size_t i = 0; i < asbs_agent_nspecs; i++)
    asbi_buf_printf(&b, "%s%s", i ? ", " : "", asbs_agent_specs[i].name);
  return asbi_buf_detach(&b, NULL);
}

static void printable(char *out, size_t n, const char *s) {
  size_t k = 0;
  for (; s && *s && k + 1 < n && k < 100; s++)
    out[k++] = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?';
  out[k] = 0;
}

static enum MHD_Result unknown_agent(asb_server *srv, struct MHD_Connection *c, const char *name) {
  char *avail = available_agents(), safe[128];
  printable(safe, sizeof safe, name);
  enum MHD_Result r = reply_err(srv, c, 404, "AgentNotFoundError",
                                "Unknown agent '%s'; available: %s", safe, avail ? avail : "");
  free(avail);
  return r;
}

static enum MHD_Result list_agents(asbs_agents *svc, asb_server *srv, struct MHD_Connection *c) {
  cJSON *j = cJSON_CreateObject();
  cJSON *arr = cJSON_AddArrayToObject(j, "agents");
  for (size_t i = 0; i < asbs_agent_nspecs; i++)
    cJSON_AddItemToArray(arr, agent_json(svc, &asbs_agent_specs[i]));
  cJSON *in = cJSON_AddObjectToObject(j, "install");
  cJSON_AddStringToObject(in, "prefix", svc->prefix);
  char npm[PATH_MAX];
  if (npm_path(svc, npm, sizeof npm))
    cJSON_AddStringToObject(in, "npm", npm);
  else
    cJSON_AddNullToObject(in, "npm");
  if (svc->registry)
    cJSON_AddStringToObject(in, "registry", svc->registry);
  else
    cJSON_AddNullToObject(in, "registry");
  cJSON_AddBoolToObject(in, "on_demand", svc->on_demand);
  cJSON *sp = cJSON_AddArrayToObject(in, "search_path");
  for (char **p = svc->search; p && *p; p++) cJSON_AddItemToArray(sp, cJSON_CreateString(*p));
  return reply(srv, c, 200, j);
}

static asbs_session *session_alloc(asbs_agents *svc, const asbs_agent_spec *spec) {
  asbs_session *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  atomic_init(&s->refs, 1);
  s->svc = svc;
  s->spec = spec;
  evlog_init(&s->log, svc->max_log);
  s->turns = cJSON_CreateArray();
  s->created_ms = wall_ms();
  char rnd[21];
  asbi_random_alnum(rnd, 20);
  snprintf(s->id, sizeof s->id, "ags_%s", rnd);
  uuid4(s->first_id);
  return s;
}

/* An install job runs on its own thread with a session-less log; the
 * stream (or the waiting handler) holds a reference. */
typedef struct install_job {
  asbs_session *log_owner;
  const asbs_agent_spec *spec;
  install_req req;
  char why[2048];
  int rc;
} install_job;

static void *install_main(void *arg) {
  install_job *j = arg;
  asbs_session *s = j->log_owner;
  asbs_agents *svc = s->svc;
  j->rc = do_install(svc, j->spec, &j->req, s, 0, j->why, sizeof j->why);
  pthread_mutex_lock(&s->log.mu);
  s->log.active = 0;
  pthread_cond_broadcast(&s->log.cv);
  pthread_mutex_unlock(&s->log.mu);
  install_req_free(&j->req);
  session_unref(s);
  free(j);
  pthread_mutex_lock(&svc->jobs_mu);
  svc->jobs--;
  pthread_cond_broadcast(&svc->jobs_cv);
  pthread_mutex_unlock(&svc->jobs_mu);
  return NULL;
}

static enum MHD_Result install_route(asbs_agents *svc, asb_server *srv, struct MHD_Connection *c,
                                     const char *name, const char *body, size_t len) {
  const asbs_agent_spec *spec = asbs_agent_find(name);
  if (!spec) return unknown_agent(srv, c, name);
  const char *why = NULL;
  cJSON *o = body_object(body, len, &why);
  if (!o) return reply_err(srv, c, 400, "ValidationError", "install: %s", why);
  static const char *const keys[] = {"version", "registry", "source", NULL};
  char err[256];
  install_req req = {0};
  if (check_keys(o, keys, err, sizeof err) ||
      opt_string(o, "version", &req.version, err, sizeof err) ||
      opt_string(o, "registry", &req.registry, err, sizeof err) ||
      opt_string(o, "source", &req.source, err, sizeof err)) {
    cJSON_Delete(o);
    install_req_free(&req);
    return reply_err(srv, c, 400, "ValidationError", "install %s: %s", spec->name, err);
  }
  cJSON_Delete(o);
  if (req.version && (strchr(req.version, ' ') || req.version[0] == '-')) {
    install_req_free(&req);
    return reply_err(srv, c, 400, "ValidationError", "install %s: 'version' is not a version",
                     spec->name);
  }
  if (req.source && req.source[0] == '-') {
    install_req_free(&req);
    return reply_err(srv, c, 400, "ValidationError", "install %s: 'source' must be a path or URL",
                     spec->name);
  }
  int fmt = want_format(c, FMT_NDJSON);
  if (fmt < 0) {
    install_req_free(&req);
    return reply_err(srv, c, 400, "ValidationError", "stream must be ndjson, sse or none");
  }
  asbs_session *log = session_alloc(svc, spec);
  install_job *j = calloc(1, sizeof *j);
  if (!log || !j) {
    free(j);
    session_unref(log);
    install_req_free(&req);
    return MHD_NO;
  }
  log->log.active = 1;
  j->spec = spec;
  j->req = req;
  if (fmt == FMT_NONE) { /* on this thread, then the outcome */
    int rc = do_install(svc, spec, &j->req, log, 0, j->why, sizeof j->why);
    install_req_free(&j->req);
    enum MHD_Result r;
    if (rc) {
      r = reply_err(srv, c, 500, "InstallError", "%s", j->why);
    } else {
      r = reply(srv, c, 200, agent_json(svc, spec));
    }
    free(j);
    session_unref(log);
    return r;
  }
  session_ref(log);
  j->log_owner = log;
  pthread_mutex_lock(&svc->jobs_mu);
  svc->jobs++;
  pthread_mutex_unlock(&svc->jobs_mu);
  pthread_t t;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &at, install_main, j) != 0) {
    pthread_attr_destroy(&at);
    pthread_mutex_lock(&svc->jobs_mu);
    svc->jobs--;
    pthread_mutex_unlock(&svc->jobs_mu);
    install_req_free(&j->req);
    free(j);
    session_unref(log);
    session_unref(log);
    return reply_err(srv, c, 500, "Error", "cannot start a thread");
  }
  pthread_attr_destroy(&at);
  enum MHD_Result r = send_stream(srv, c, log, 0, fmt, "install.completed", 0, 200);
  session_unref(log);
  return r;
}

static enum MHD_Result create_session(asbs_agents *svc, asb_server *srv, struct MHD_Connection *c,
                                      const char *body, size_t len) {
  const char *why = NULL;
  cJSON *o = body_object(body, len, &why);
  if (!o) return reply_err(srv, c, 400, "ValidationError", "create session: %s", why);
  static const char *const keys[] = {"agent",       "cwd",      "model",    "base_url",
                                     "api_key_env", "wire_api", "approval", "sandbox",
                                     "args",        "env",      "install",  NULL};
  char err[512];
  if (check_keys(o, keys, err, sizeof err)) {
    cJSON_Delete(o);
    return reply_err(srv, c, 400, "ValidationError", "create session: %s", err);
  }
  const char *agent = asbs_jstr(o, "agent");
  if (!agent) {
    cJSON_Delete(o);
    return reply_err(srv, c, 400, "ValidationError",
                     "create session: 'agent' (a string) is required");
  }
  const asbs_agent_spec *spec = asbs_agent_find(agent);
  if (!spec) {
    enum MHD_Result r = unknown_agent(srv, c, agent);
    cJSON_Delete(o);
    return r;
  }
  asbs_session *s = session_alloc(svc, spec);
  if (!s) {
    cJSON_Delete(o);
    return MHD_NO;
  }
  s->install = svc->on_demand;
  if (parse_cfg(svc, o, &s->cfg, &s->install, err, sizeof err)) {
    cJSON_Delete(o);
    session_unref(s);
    return reply_err(srv, c, 400, "ValidationError", "create session: %s", err);
  }
  cJSON_Delete(o);
  found f;
  int have = find_agent(svc, spec, &f);
  if (have) found_free(&f);
  if (!have && !s->install) {
    session_unref(s);
    return reply_err(srv, c, 409, "AgentNotInstalledError",
                     "agent '%s' is not installed (npm package %s): POST /agents/%s/install "
                     "first, or create the session with \"install\": true",
                     spec->name, spec->package, spec->name);
  }
  pthread_mutex_lock(&svc->mu);
  if (svc->nsessions >= svc->max_sessions) {
    pthread_mutex_unlock(&svc->mu);
    session_unref(s);
    return reply_err(srv, c, 429, "TooManySessionsError",
                     "at most %u agent sessions at once: close one (DELETE "
                     "/agents/sessions/{id}) first",
                     svc->max_sessions);
  }
  if (svc->nsessions == svc->cap) {
    size_t cap = svc->cap ? svc->cap * 2 : 8;
    asbs_session **v = realloc(svc->sessions, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&svc->mu);
      session_unref(s);
      return MHD_NO;
    }
    svc->sessions = v;
    svc->cap = cap;
  }
  svc->sessions[svc->nsessions++] = s; /* the table's reference */
  pthread_mutex_unlock(&svc->mu);
  cJSON *j = session_json(s, 0);
  cJSON_AddBoolToObject(j, "installed", have);
  return reply(srv, c, 201, j);
}

static enum MHD_Result send_message(asbs_agents *svc, asb_server *srv, struct MHD_Connection *c,
                                    asbs_session *s, const char *body, size_t len) {
  const char *why = NULL;
  cJSON *o = body_object(body, len, &why);
  if (!o) return reply_err(srv, c, 400, "ValidationError", "send: %s", why);
  static const char *const keys[] = {"prompt", NULL};
  char err[256];
  if (check_keys(o, keys, err, sizeof err)) {
    cJSON_Delete(o);
    return reply_err(srv, c, 400, "ValidationError", "send: %s", err);
  }
  const char *prompt = asbs_jstr(o, "prompt");
  if (!prompt || !*prompt) {
    cJSON_Delete(o);
    return reply_err(srv, c, 400, "ValidationError",
                     "send: 'prompt' (a non-empty string) is required");
  }
  size_t plen = strlen(prompt);
  if (plen > svc->max_prompt) {
    cJSON_Delete(o);
    return reply_err(srv, c, 413, "PayloadTooLarge", "send: the prompt is %zu bytes, over %zu",
                     plen, svc->max_prompt);
  }
  int fmt = want_format(c, FMT_NDJSON);
  if (fmt < 0) {
    cJSON_Delete(o);
    return reply_err(srv, c, 400, "ValidationError", "stream must be ndjson, sse or none");
  }
  turn_job *j = calloc(1, sizeof *j);
  if (!j || !(j->prompt = asbi_strdup(prompt))) {
    free(j);
    cJSON_Delete(o);
    return MHD_NO;
  }
  cJSON_Delete(o);
  j->sess = s;
  pthread_mutex_lock(&s->log.mu);
  if (s->closed || s->running) {
    int closed = s->closed;
    pthread_mutex_unlock(&s->log.mu);
    free(j->prompt);
    free(j);
    if (closed)
      return reply_err(srv, c, 404, "SessionNotFoundError", "session %s is closed", s->id);
    return reply_err(srv, c, 409, "TurnInProgressError",
                     "session %s is running a turn: wait for its turn.completed, or cancel it",
                     s->id);
  }
  if (s->has_thread) { /* the previous turn's thread has finished its work */
    pthread_join(s->thread, NULL);
    s->has_thread = 0;
  }
  s->running = 1;
  s->cancel = 0;
  s->log.active = 1;
  j->turn = ++s->turn;
  int64_t after = s->log.next_seq - 1;
  cJSON *entry = cJSON_CreateObject();
  cJSON_AddNumberToObject(entry, "turn", j->turn);
  cJSON_AddStringToObject(entry, "prompt", j->prompt);
  cJSON_AddStringToObject(entry, "status", "running");
  cJSON_AddItemToArray(s->turns, entry);
  pthread_mutex_unlock(&s->log.mu);
  cJSON *f = cJSON_CreateObject();
  cJSON_AddStringToObject(f, "prompt", j->prompt);
  cJSON_AddStringToObject(f, "agent", s->spec->name);
  emit_in(s, j->turn, "turn.started", f, NULL);
  session_ref(s); /* the thread's */
  int turn = j->turn;
  pthread_mutex_lock(&s->log.mu);
  int rc = pthread_create(&s->thread, NULL, turn_main, j);
  if (!rc) s->has_thread = 1;
  pthread_mutex_unlock(&s->log.mu);
  if (rc) {
    session_unref(s);
    pthread_mutex_lock(&s->log.mu);
    s->running = 0;
    s->log.active = 0;
    pthread_mutex_unlock(&s->log.mu);
    free(j->prompt);
    free(j);
    return reply_err(srv, c, 500, "Error", "cannot start a thread");
  }
  if (fmt == FMT_NONE) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "session", s->id);
    cJSON_AddNumberToObject(r, "turn", turn);
    cJSON_AddNumberToObject(r, "after", (double)after);
    return reply(srv, c, 202, r);
  }
  return send_stream(srv, c, s, after, fmt, "turn.completed", turn, 200);
}

/* Ask the running turn to stop: SIGTERM now (its thread sends SIGKILL after
 * the grace). Returns 1 if a turn was running. */
static int cancel_turn(asbs_session *s) {
  pthread_mutex_lock(&s->log.mu);
  int was = s->running;
  if (was && !s->cancel) {
    s->cancel = 1;
    s->cancel_at = mono_ms();
    if (s->pid > 0) kill_tree(s->pid, SIGTERM);
  }
  pthread_mutex_unlock(&s->log.mu);
  return was;
}

static enum MHD_Result events_route(asbs_agents *svc, asb_server *srv, struct MHD_Connection *c,
                                    asbs_session *s) {
  (void)svc;
  const char *a = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
  if (!a) a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
  int64_t after = 0, limit = 1000;
  if (a && (asbi_parse_i64(a, strlen(a), &after) || after < 0))
    return reply_err(srv, c, 400, "ValidationError", "'after' must be a sequence number >= 0");
  const char *l = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  if (l && (asbi_parse_i64(l, strlen(l), &limit) || limit < 1 || limit > PAGE_MAX))
    return reply_err(srv, c, 400, "ValidationError", "'limit' must be 1..%d", PAGE_MAX);
  int fmt = want_format(c, FMT_NONE);
  if (fmt < 0)
    return reply_err(srv, c, 400, "ValidationError", "stream must be ndjson, sse or none");
  if (fmt != FMT_NONE) return send_stream(srv, c, s, after, fmt, NULL, 0, 200);
  pthread_mutex_lock(&s->log.mu);
  if (after < s->log.dropped) {
    int64_t first = s->log.dropped + 1;
    pthread_mutex_unlock(&s->log.mu);
    return reply_err(srv, c, 410, "EventsExpiredError",
                     "events up to %lld were dropped (the session's log is over its limit); "
                     "the first kept is %lld",
                     (long long)(first - 1), (long long)first);
  }
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, "{\"events\":[");
  size_t i = evlog_index_after(&s->log, after), k = 0;
  int64_t last = after;
  for (; i < s->log.n && (int64_t)k < limit; i++, k++) {
    if (k) asbi_buf_putc(&b, ',');
    asbi_buf_append(&b, s->log.v[i].json, s->log.v[i].len);
    last = s->log.v[i].seq;
  }
  asbi_buf_printf(&b, "],\"next\":%lld,\"more\":%s,\"status\":\"%s\",\"last_seq\":%lld}",
                  (long long)last, i < s->log.n ? "true" : "false",
                  s->closed    ? "closed"
                  : s->running ? "running"
                               : "idle",
                  (long long)(s->log.next_seq - 1));
  pthread_mutex_unlock(&s->log.mu);
  return asbs_send_json(srv, c, 200, asbi_buf_detach(&b, NULL));
}

static void session_close(asbs_agents *svc, asbs_session *s) {
  pthread_mutex_lock(&svc->mu);
  for (size_t i = 0; i < svc->nsessions; i++)
    if (svc->sessions[i] == s) {
      svc->sessions[i] = svc->sessions[--svc->nsessions];
      session_unref(s); /* the table's */
      break;
    }
  pthread_mutex_unlock(&svc->mu);
  pthread_mutex_lock(&s->log.mu);
  s->closed = 1;
  pthread_cond_broadcast(&s->log.cv);
  pthread_mutex_unlock(&s->log.mu);
  cancel_turn(s);
}

int asbs_agents_route(const char *url) {
  return !strcmp(url, "/agents") || !strcmp(url, "/agents/") || asbi_startswith(url, "/agents/");
}

enum MHD_Result asbs_agents_handle(asbs_agents *svc, asb_server *srv, struct MHD_Connection *c,
                                   const char *url, const char *method, const char *body,
                                   size_t len) {
  int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
  int post = !strcmp(method, "POST"), del = !strcmp(method, "DELETE");
  if (!svc)
    return reply_err(srv, c, 404, "NotFound",
                     "this server does not serve agents (asb_server_enable_agents)");
  if (atomic_load(&svc->stopping))
    return reply_err(srv, c, 503, "ServiceUnavailable", "the server is stopping");
  const char *rest = url + strlen("/agents");
  if (!*rest || !strcmp(rest, "/")) {
    if (!get) return reply_err(srv, c, 405, "MethodNotAllowed", "use GET /agents");
    return list_agents(svc, srv, c);
  }
  rest++; /* after "/agents/" */
  if (!strcmp(rest, "sessions") || !strcmp(rest, "sessions/")) {
    if (post) return create_session(svc, srv, c, body, len);
    if (!get) return reply_err(srv, c, 405, "MethodNotAllowed", "use POST or GET /agents/sessions");
    cJSON *j = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(j, "sessions");
    pthread_mutex_lock(&svc->mu);
    for (size_t i = 0; i < svc->nsessions; i++)
      cJSON_AddItemToArray(arr, session_json(svc->sessions[i], 0));
    pthread_mutex_unlock(&svc->mu);
    return reply(srv, c, 200, j);
  }
  if (asbi_startswith(rest, "sessions/")) {
    const char *id = rest + strlen("sessions/");
    const char *slash = strchr(id, '/');
    char sid[64];
    size_t idn = slash ? (size_t)(slash - id) : strlen(id);
    if (idn == 0 || idn >= sizeof sid) {
      char safe[128];
      printable(safe, sizeof safe, id);
      return reply_err(srv, c, 404, "SessionNotFoundError", "no agent session '%s'", safe);
    }
    memcpy(sid, id, idn);
    sid[idn] = 0;
    const char *action = slash ? slash + 1 : "";
    asbs_session *s = find_session(svc, sid);
    if (!s) {
      char safe[128];
      printable(safe, sizeof safe, sid);
      return reply_err(srv, c, 404, "SessionNotFoundError", "no agent session '%s'", safe);
    }
    enum MHD_Result r;
    if (!*action) {
      if (get)
        r = reply(srv, c, 200, session_json(s, 1));
      else if (del) {
        session_close(svc, s);
        cJSON *j = session_json(s, 0);
        r = reply(srv, c, 200, j);
      } else
        r = reply_err(srv, c, 405, "MethodNotAllowed", "use GET or DELETE /agents/sessions/{id}");
    } else if (!strcmp(action, "messages")) {
      r = post ? send_message(svc, srv, c, s, body, len)
               : reply_err(srv, c, 405, "MethodNotAllowed", "use POST .../messages");
    } else if (!strcmp(action, "events")) {
      r = get ? events_route(svc, srv, c, s)
              : reply_err(srv, c, 405, "MethodNotAllowed", "use GET .../events?after=N");
    } else if (!strcmp(action, "cancel")) {
      if (!post) {
        r = reply_err(srv, c, 405, "MethodNotAllowed", "use POST .../cancel");
      } else {
        int was = cancel_turn(s);
        cJSON *j = session_json(s, 0);
        cJSON_AddBoolToObject(j, "cancelled", was);
        r = reply(srv, c, 200, j);
      }
    } else {
      r = reply_err(srv, c, 404, "NotFound",
                    "no such route (sessions/{id}, .../messages, .../events, .../cancel)");
    }
    session_unref(s);
    return r;
  }
  /* /agents/{agent}/install */
  const char *slash = strchr(rest, '/');
  if (slash && !strcmp(slash, "/install")) {
    char name[64];
    size_t n = (size_t)(slash - rest);
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, rest, n);
    name[n] = 0;
    if (!post)
      return reply_err(srv, c, 405, "MethodNotAllowed", "use POST /agents/{agent}/install");
    return install_route(svc, srv, c, name, body, len);
  }
  if (!slash && asbs_agent_find(rest)) {
    if (!get) return reply_err(srv, c, 405, "MethodNotAllowed", "use GET /agents/{agent}");
    return reply(srv, c, 200, agent_json(svc, asbs_agent_find(rest)));
  }
  if (!slash) return unknown_agent(srv, c, rest);
  return reply_err(
      srv, c, 404, "NotFound",
      "no such route (GET /agents, POST /agents/{agent}/install, /agents/sessions...)");
}

/* ---- enabling and freeing ---------------------------------------------------------------------
 */

static char **split_path(const char *s) {
  size_t n = 1;
  for (const char *p = s; *p; p++) n += *p == ':';
  char **v = calloc(n + 1, sizeof *v);
  char *dup = asbi_strdup(s), *save = NULL;
  size_t k = 0;
  if (!v || !dup) {
    free(v);
    free(dup);
    return NULL;
  }
  for (char *t = strtok_r(dup, ":", &save); t; t = strtok_r(NULL, ":", &save))
    if (*t == '/') v[k++] = asbi_strdup(t);
  free(dup);
  return v;
}

static void strv_free(char **v) {
  for (char **p = v; p && *p; p++) free(*p);
  free(v);
}

void asbs_agents_free(asbs_agents *svc) {
  if (!svc) return;
  atomic_store(&svc->stopping, 1);
  /* every session: cancel its turn, wait for its thread */
  for (;;) {
    pthread_mutex_lock(&svc->mu);
    asbs_session *s = svc->nsessions ? svc->sessions[--svc->nsessions] : NULL;
    pthread_mutex_unlock(&svc->mu);
    if (!s) break;
    pthread_mutex_lock(&s->log.mu);
    s->closed = 1;
    pthread_mutex_unlock(&s->log.mu);
    cancel_turn(s);
    pthread_mutex_lock(&s->log.mu);
    int join = s->has_thread;
    s->has_thread = 0;
    pthread_mutex_unlock(&s->log.mu);
    if (join) pthread_join(s->thread, NULL);
    session_unref(s);
  }
  pthread_mutex_lock(&svc->jobs_mu);
  while (svc->jobs > 0) pthread_cond_wait(&svc->jobs_cv, &svc->jobs_mu);
  pthread_mutex_unlock(&svc->jobs_mu);
  free(svc->sessions);
  free(svc->prefix);
  strv_free(svc->search);
  free(svc->npm);
  free(svc->registry);
  pthread_mutex_destroy(&svc->mu);
  pthread_mutex_destroy(&svc->install_mu);
  pthread_mutex_destroy(&svc->jobs_mu);
  pthread_cond_destroy(&svc->jobs_cv);
  free(svc);
}

int asb_server_agents_options_init(asb_server_agents_options *o, unsigned int version) {
  if (!o) return asbs_err(ASB_EINVAL, "asb_server_agents_options_init: NULL");
  if (version == 0 || version > ASB_SERVER_AGENTS_OPTIONS_VERSION)
    return asbs_err(ASB_EVERSION, "asb_server_agents_options: unsupported version %u", version);
  asb_server_agents_options d = ASB_SERVER_AGENTS_OPTIONS_INIT;
  *o = d;
  o->version = version;
  return ASB_OK;
}

int asbs_agents_new(asbs_agents **out, asb_server *server, const asb_server_agents_options *o) {
  asb_server_agents_options d = ASB_SERVER_AGENTS_OPTIONS_INIT;
  if (!o) o = &d;
  if (o->version == 0 || o->version > ASB_SERVER_AGENTS_OPTIONS_VERSION)
    return asbs_err(ASB_EVERSION, "asb_server_agents_options: unsupported version %u", o->version);
  asbs_agents *svc = calloc(1, sizeof *svc);
  if (!svc) return asbs_oom();
  svc->server = server;
  const char *prefix = o->prefix ? o->prefix : asbi_getenv("ASB_AGENTS_PREFIX");
  char def[PATH_MAX];
  if (!prefix || !*prefix) {
    const char *home = getenv("HOME");
    snprintf(def, sizeof def, "%s/.agent-sandbox/agents", home && *home ? home : "/tmp");
    prefix = def;
  }
  const char *search = o->search_path ? o->search_path : asbi_getenv("ASB_AGENTS_PATH");
  if (!search) search = DEFAULT_SEARCH;
  const char *npm = o->npm && *o->npm ? o->npm : "npm";
  const char *registry = o->registry ? o->registry : asbi_getenv("ASB_AGENTS_REGISTRY");
  svc->prefix = asbi_strdup(prefix);
  svc->search = split_path(search);
  svc->npm = asbi_strdup(npm);
  svc->registry = registry && *registry ? asbi_strdup(registry) : NULL;
  svc->max_prompt = o->max_prompt_bytes ? o->max_prompt_bytes : DEFAULT_MAX_PROMPT;
  svc->max_sessions = o->max_sessions ? o->max_sessions : DEFAULT_MAX_SESSIONS;
  svc->max_log = o->max_log_bytes ? o->max_log_bytes : DEFAULT_MAX_LOG;
  svc->on_demand = !o->no_install_on_demand;
  pthread_mutex_init(&svc->mu, NULL);
  pthread_mutex_init(&svc->install_mu, NULL);
  pthread_mutex_init(&svc->jobs_mu, NULL);
  pthread_cond_init(&svc->jobs_cv, NULL);
  if (!svc->prefix || !svc->search || !svc->npm || prefix[0] != '/') {
    int bad = svc->prefix && prefix[0] != '/';
    asbs_agents_free(svc);
    return bad ? asbs_err(ASB_EINVAL, "asb_server_enable_agents: the prefix must be absolute")
               : asbs_oom();
  }
  *out = svc;
  return ASB_OK;
}
