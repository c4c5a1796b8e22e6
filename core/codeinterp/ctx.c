/* Contexts and their threads. SPDX-License-Identifier: Apache-2.0 */
#include "ctx.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "drivers.h"
#include "kernel.h"
#include "ndout.h"
#include "util/buf.h"
#include "util/util.h"

#define READY_WAIT_MS 120000
/* An interrupted cell still running this long after the interrupt gets it
 * again where that helps (bash loses a SIGINT while it forks a command;
 * node gets its SIGINT only then: see ci_kernel_interrupt); a late one is
 * harmless (the kernel settles it before the next cell). */
#define INTERRUPT_AGAIN_MS 1000

/* IPython as E2B configures it (plain tracebacks, no truncated reprs) and
 * the formatters and hooks of E2B's start-up scripts: startup/. */
#define python_setup ci_python_startup

struct ci_exec {
  int refs;
  ci_ctx *ctx;
  ci_queue q;
  char *code;
  char *env_set, *env_restore; /* silent cells around the code, or NULL */
  int cancelled;               /* under ctx->mu */
  int internal;                /* ci_set_envs': no client, code NULL */
  ci_exec *next;
};

enum { ST_STARTING = 0, ST_READY = 1, ST_FAILED = 2 };

struct ci_ctx {
  int refs;
  char id[37];
  char language[64];
  char *cwd;
  ci_kspec *spec;
  pthread_t thread;
  int has_thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int wake_fd;
  /* under mu */
  int state;
  char error[768];
  ci_exec *pend_head, *pend_tail;
  ci_exec *running;
  int cancel_running;
  unsigned restart_gen, restart_done, restart_target;
  int removed;
  /* the thread's own */
  ci_kernel *k;
  unsigned kgen;
  int step; /* running: 0 set env, 1 the code, 2 restore env */
  int step_done;
  int client_closed; /* the running execution's output is complete */
  int setup_pending, setup_running;
  int ready_deferred; /* the kernel answered; READY once its start-up cell ran */
  char *notice;       /* the kernel died while idle: tell the next run */
  uint64_t interrupt_deadline;
  uint64_t interrupt_again; /* when to send the interrupt again (it can be lost) */
  asbi_buf line;
};

static ci_config g_cfg;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_default_mu = PTHREAD_MUTEX_INITIALIZER;
static ci_ctx **g_ctxs;
static size_t g_nctx, g_capctx;
typedef struct dflt {
  char language[64];
  ci_ctx *ctx;
} dflt;
static dflt g_defaults[32];
static size_t g_ndefaults;
static ci_ctx *g_boot; /* the default python context started at init */
/* the variables POST /envs set (ci_set_envs), kept in the state file so a
 * restarted server sets them again; under ci_env_lock */
static cJSON *g_envs;
static int g_restoring; /* restore_state: no state file written meanwhile */

#if CI_HAVE_JAVA
#define CI_JAVA_BUILTIN ", java"
#else
#define CI_JAVA_BUILTIN "; java: this server was built without a JDK"
#endif

/* ---- small helpers ---------------------------------------------------------- */

void ci_normalize_language(const char *in, char *out, size_t n) {
  if (!in) in = "";
  while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r') in++;
  size_t l = strlen(in);
  while (l && (in[l - 1] == ' ' || in[l - 1] == '\t' || in[l - 1] == '\n' || in[l - 1] == '\r'))
    l--;
  if (l >= n) l = n - 1;
  for (size_t i = 0; i < l; i++)
    out[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] + 32) : in[i];
  out[l] = '\0';
  if (l == 0)
    snprintf(out, n, "python");
  else if (strcmp(out, "js") == 0)
    snprintf(out, n, "javascript");
  else if (strcmp(out, "ts") == 0)
    snprintf(out, n, "typescript");
}

static void wake(ci_ctx *c) {
  uint64_t one = 1;
  ssize_t w = write(c->wake_fd, &one, sizeof one);
  (void)w;
}

static int uuid4(char out[37]) {
  unsigned char b[16];
  if (asbi_random_bytes(b, sizeof b) != 0) return -1;
  b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
  return 0;
}

/* ---- executions ------------------------------------------------------------------ */

ci_queue *ci_exec_queue(ci_exec *e) {
  return &e->q;
}

static ci_exec *exec_ref(ci_exec *e) {
  __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
  return e;
}

static ci_ctx *ctx_ref(ci_ctx *c) {
  __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
  return c;
}

void ci_exec_unref(ci_exec *e) {
  if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  ci_queue_destroy(&e->q);
  free(e->code);
  free(e->env_set);
  free(e->env_restore);
  ci_ctx_unref(e->ctx);
  free(e);
}

/* Output lines for the running execution's client. */
static void client_push(ci_ctx *c, ci_exec *e) {
  if (c->line.len) ci_queue_push(&e->q, c->line.data, c->line.len);
  if (c->line.cap > (4u << 20))
    asbi_buf_free(&c->line);
  else
    asbi_buf_clear(&c->line);
}

/* End an execution's output with an error. */
static void fail_exec(ci_ctx *c, ci_exec *e, const char *name, const char *value) {
  asbi_buf_clear(&c->line);
  ci_out_error(&c->line, name, value, "");
  client_push(c, e);
  ci_queue_close(&e->q);
}

/* A Java string literal: JSON's \uXXXX escapes would not do, as javac
 * turns \u000a into a line break before it reads the literal; control
 * characters are octal escapes, the rest (UTF-8) as it is. */
static void java_str(asbi_buf *b, const char *v) {
  asbi_buf_putc(b, '"');
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if (*p == '"' || *p == '\\')
      asbi_buf_printf(b, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f)
      asbi_buf_printf(b, "\\%03o", *p);
    else
      asbi_buf_putc(b, (char)*p);
  }
  asbi_buf_putc(b, '"');
}

/* The statement that sets (v != NULL) or removes a variable, in the
 * context's language; 0 if the language has none (env vars are then
 * ignored, as E2B does). JSON string literals are valid string literals of
 * Python, JavaScript and R; names are checked ([A-Za-z_][A-Za-z0-9_]*). */
static int env_stmt(const char *lang, asbi_buf *b, const char *k, const char *v) {
  asbi_buf tk = ASBI_BUF_INIT, tv = ASBI_BUF_INIT;
  ci_out_json_str(&tk, k, strlen(k));
  if (v) ci_out_json_str(&tv, v, strlen(v));
  int ok = 1;
  if (strcmp(lang, "python") == 0) {
    if (v)
      asbi_buf_printf(b, "__import__('os').environ[%s] = %s\n", tk.data, tv.data);
    else
      asbi_buf_printf(b, "__import__('os').environ.pop(%s, None)\n", tk.data);
  } else if (strcmp(lang, "javascript") == 0 || strcmp(lang, "typescript") == 0) {
    if (v)
      asbi_buf_printf(b, "process.env[%s] = %s;\n", tk.data, tv.data);
    else
      asbi_buf_printf(b, "delete process.env[%s];\n", tk.data);
  } else if (strcmp(lang, "bash") == 0) {
    asbi_buf_printf(b, v ? "export %s=" : "unset %s", k); /* k is a checked name */
    if (v) asbi_buf_sh_quote(b, v);
    asbi_buf_putc(b, '\n');
  } else if (strcmp(lang, "r") == 0) {
    if (v)
      asbi_buf_printf(b, "Sys.setenv(%s = %s)\n", k, tv.data);
    else
      asbi_buf_printf(b, "Sys.unsetenv(%s)\n", tk.data);
  } else if (strcmp(lang, "java") == 0) {
    /* system properties, as E2B's java kernel has them (a JVM cannot change
     * its environment); the driver starts with the environment copied in */
    if (v) {
      asbi_buf_printf(b, "System.setProperty(\"%s\", ", k);
      java_str(b, v);
      asbi_buf_puts(b, ");\n");
    } else {
      asbi_buf_printf(b, "System.clearProperty(\"%s\");\n", k);
    }
  } else {
    ok = 0;
  }
  asbi_buf_free(&tk);
  asbi_buf_free(&tv);
  return ok;
}

static int env_name_ok(const char *s) {
  if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
  for (s++; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

int ci_exec_submit(ci_ctx *c, const char *code, const cJSON *env, ci_exec **out, char *err,
                   size_t errlen) {
  *out = NULL;
  ci_exec *e = calloc(1, sizeof *e);
  if (!e || ci_queue_init(&e->q, g_cfg.queue_mem) != 0) {
    free(e);
    snprintf(err, errlen, "out of resources");
    return CI_EFAIL;
  }
  e->refs = 1;
  e->ctx = ctx_ref(c);
  e->code = asbi_strdup(code);
  int rc = e->code ? CI_OK : CI_EFAIL;
  const cJSON *it;
  asbi_buf set = ASBI_BUF_INIT, restore = ASBI_BUF_INIT;
  int supported = 1;
  ci_env_lock();
  cJSON_ArrayForEach(it, env) {
    if (rc != CI_OK || !supported) break;
    if (!env_name_ok(it->string) || !cJSON_IsString(it)) {
      snprintf(err, errlen, "env_vars: '%s' is not a valid variable name with a string value",
               it->string);
      rc = CI_EBADREQ;
      break;
    }
    supported = env_stmt(c->language, &set, it->string, it->valuestring);
    /* afterwards: back to the value the server (and so the kernel) started
     * with, or unset */
    env_stmt(c->language, &restore, it->string, getenv(it->string));
  }
  ci_env_unlock();
  if (rc == CI_OK && supported && set.data) {
    e->env_set = asbi_buf_detach(&set, NULL);
    e->env_restore = asbi_buf_detach(&restore, NULL);
  }
  asbi_buf_free(&set);
  asbi_buf_free(&restore);
  if (rc != CI_OK) {
    if (rc == CI_EFAIL) snprintf(err, errlen, "out of memory");
    ci_exec_unref(e);
    return rc;
  }
  e->q.producer_fd = c->wake_fd;
  pthread_mutex_lock(&c->mu);
  if (c->removed) {
    pthread_mutex_unlock(&c->mu);
    snprintf(err, errlen, "Context %s not found", c->id);
    ci_exec_unref(e);
    return CI_ENOTFOUND;
  }
  exec_ref(e); /* the context's */
  if (c->pend_tail)
    c->pend_tail->next = e;
  else
    c->pend_head = e;
  c->pend_tail = e;
  pthread_mutex_unlock(&c->mu);
  wake(c);
  *out = e;
  return CI_OK;
}

void ci_exec_cancel(ci_exec *e) {
  ci_ctx *c = e->ctx;
  ci_queue_abandon(&e->q);
  pthread_mutex_lock(&c->mu);
  e->cancelled = 1;
  int drop = 0;
  for (ci_exec **p = &c->pend_head; *p; p = &(*p)->next) {
    if (*p != e) continue;
    *p = e->next;
    if (c->pend_tail == e) {
      c->pend_tail = NULL;
      for (ci_exec *q = c->pend_head; q; q = q->next) c->pend_tail = q;
    }
    drop = 1;
    break;
  }
  if (c->running == e) c->cancel_running = 1;
  pthread_mutex_unlock(&c->mu);
  if (drop)
    ci_exec_unref(e);
  else
    wake(c);
}

/* ---- the context's thread ------------------------------------------------------------ */

static void set_state(ci_ctx *c, int st, const char *error) {
  pthread_mutex_lock(&c->mu);
  c->state = st;
  if (error) snprintf(c->error, sizeof c->error, "%s", error);
  if (st != ST_STARTING) c->restart_done = c->restart_target;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void start_kernel(ci_ctx *c) {
  char err[600], tag[64];
  snprintf(tag, sizeof tag, "%.8s-%u", c->id, c->kgen++);
  set_state(c, ST_STARTING, NULL);
  if (ci_kernel_start(&c->k, c->spec, c->cwd, g_cfg.rundir, tag, err, sizeof err) != 0) {
    c->k = NULL;
    set_state(c, ST_FAILED, err);
    return;
  }
  c->setup_pending = c->spec->kind == CI_KIND_JUPYTER && strcmp(c->language, "python") == 0;
  c->ready_deferred = 0;
}

static void finish_running(ci_ctx *c) {
  pthread_mutex_lock(&c->mu);
  ci_exec *e = c->running;
  c->running = NULL;
  c->cancel_running = 0;
  pthread_mutex_unlock(&c->mu);
  c->interrupt_deadline = c->interrupt_again = 0;
  c->step_done = 0;
  if (e && !c->client_closed) ci_queue_close(&e->q);
  ci_exec_unref(e);
}

static void on_ev(void *ud, const ci_ev *ev) {
  ci_ctx *c = ud;
  if (ev->kind == CI_EV_DONE) {
    if (c->setup_running)
      c->setup_running = 0;
    else if (c->running)
      c->step_done = 1;
    return;
  }
  ci_exec *e = c->running;
  if (!e || c->step != 1 || c->client_closed || c->setup_running) return;
  switch (ev->kind) {
    case CI_EV_COUNT:
      ci_out_count(&c->line, ev->count);
      break;
    case CI_EV_STREAM: {
      /* line by line, so a large output is never held twice */
      size_t off = 0;
      do {
        size_t k = ci_out_stream_line(&c->line, ev->is_stderr, ev->text + off, ev->len - off,
                                      ev->ts, ev->escaped);
        if (!k) break;
        client_push(c, e);
        off += k;
      } while (off < ev->len);
      return;
    }
    case CI_EV_RESULT:
      ci_out_result(&c->line, ev->bundle, ev->is_main);
      break;
    case CI_EV_ERROR:
      ci_out_error(&c->line, ev->ename, ev->evalue, ev->traceback);
      break;
    default:
      break;
  }
  client_push(c, e);
}

static void run_step(ci_ctx *c) {
  ci_exec *e = c->running;
  for (;;) {
    const char *code = c->step == 0 ? e->env_set : c->step == 1 ? e->code : e->env_restore;
    int skip = code == NULL || (c->step == 1 && e->cancelled);
    if (!skip) {
      if (ci_kernel_execute(c->k, code, c->step != 1) == 0) return;
      if (c->step == 1) {
        fail_exec(c, e, "UnexpectedEndOfExecution", "could not send the code to the kernel");
        c->client_closed = 1;
      }
    }
    if (c->step == 1 && !c->client_closed) {
      ci_queue_close(&e->q);
      c->client_closed = 1;
    }
    if (c->step == 2) {
      finish_running(c);
      return;
    }
    c->step++;
  }
}

static void start_next(ci_ctx *c) {
  if (c->running) {
    if (!c->step_done) return;
    c->step_done = 0;
    if (c->step == 1) {
      ci_queue_close(&c->running->q);
      c->client_closed = 1;
      c->interrupt_deadline = c->interrupt_again = 0;
    }
    if (c->step == 2) {
      finish_running(c);
    } else {
      c->step++;
      run_step(c);
    }
    if (c->running) return;
  }
  pthread_mutex_lock(&c->mu);
  int pending = c->pend_head != NULL;
  pthread_mutex_unlock(&c->mu);
  if (!pending && !c->setup_pending) return;
  if (!c->k) {
    if (!pending) return;
    start_kernel(c); /* after a failed start, each run tries again */
    if (!c->k) {
      pthread_mutex_lock(&c->mu);
      ci_exec *e = c->pend_head;
      c->pend_head = c->pend_tail = NULL;
      char msg[800];
      snprintf(msg, sizeof msg, "the %s kernel could not be started: %s", c->language, c->error);
      pthread_mutex_unlock(&c->mu);
      while (e) {
        ci_exec *next = e->next;
        fail_exec(c, e, "ContextStartError", msg);
        ci_exec_unref(e);
        e = next;
      }
      return;
    }
  }
  if (!ci_kernel_ready(c->k) || c->setup_running) return;
  if (c->setup_pending) {
    c->setup_pending = 0;
    if (ci_kernel_execute(c->k, python_setup, 1) == 0) c->setup_running = 1;
    return;
  }
  pthread_mutex_lock(&c->mu);
  ci_exec *e = c->pend_head;
  if (e) {
    c->pend_head = e->next;
    if (!c->pend_head) c->pend_tail = NULL;
    e->next = NULL;
    c->running = e;
  }
  pthread_mutex_unlock(&c->mu);
  if (!e) return;
  c->client_closed = 0;
  c->step_done = 0;
  if (c->notice && !e->internal) {
    char msg[1000];
    snprintf(msg, sizeof msg,
             "Context was restarted: %s. Its state (variables, imports, definitions) is lost; "
             "the code was not run.",
             c->notice);
    free(c->notice);
    c->notice = NULL;
    fail_exec(c, e, "ContextRestarting", msg);
    c->client_closed = 1;
    finish_running(c);
    return;
  }
  c->step = 0;
  run_step(c);
}

/* The kernel is gone (died, stopped answering, or was stopped by us after an
 * interrupt did not take): report it and start a new one. */
static void kernel_died(ci_ctx *c, const char *why) {
  int was_ready = c->k && ci_kernel_ready(c->k);
  ci_kernel_destroy(c->k);
  c->k = NULL;
  c->setup_running = c->setup_pending = 0;
  pthread_mutex_lock(&c->mu);
  int client_gone = c->running && c->running->cancelled;
  pthread_mutex_unlock(&c->mu);
  if (c->running && !c->client_closed && !client_gone) {
    char msg[1000];
    snprintf(msg, sizeof msg,
             "Context was restarted: %s. Its state (variables, imports, definitions) is lost.",
             why);
    fail_exec(c, c->running, "ContextRestarting", msg);
    c->client_closed = 1;
  } else if (was_ready) {
    free(c->notice);
    c->notice = asbi_strdup(why);
  }
  if (c->running) finish_running(c);
  if (was_ready) {
    start_kernel(c);
  } else {
    char msg[900];
    snprintf(msg, sizeof msg, "the kernel failed while starting: %s", why);
    set_state(c, ST_FAILED, msg);
  }
}

static void do_restart(ci_ctx *c) {
  pthread_mutex_lock(&c->mu);
  c->restart_target = c->restart_gen;
  pthread_mutex_unlock(&c->mu);
  if (c->running) {
    if (!c->client_closed) {
      fail_exec(c, c->running, "ContextRestarting", "Context was restarted");
      c->client_closed = 1;
    }
    finish_running(c);
  }
  free(c->notice);
  c->notice = NULL;
  ci_kernel_destroy(c->k);
  c->k = NULL;
  c->setup_running = 0;
  start_kernel(c);
}

static void *ctx_main(void *arg) {
  ci_ctx *c = arg;
  start_kernel(c);
  for (;;) {
    pthread_mutex_lock(&c->mu);
    int removed = c->removed;
    int restart = c->restart_gen != c->restart_target;
    int cancel = c->cancel_running;
    c->cancel_running = 0;
    pthread_mutex_unlock(&c->mu);
    if (removed) break;
    if (restart) do_restart(c);
    if (cancel && c->running && c->step == 1 && c->k && !c->interrupt_deadline) {
      ci_kernel_interrupt(c->k);
      c->interrupt_deadline = asbi_now_ms() + (uint64_t)g_cfg.interrupt_grace_ms;
      c->interrupt_again = asbi_now_ms() + INTERRUPT_AGAIN_MS;
    } else if (c->interrupt_again && c->k && c->step == 1 && asbi_now_ms() >= c->interrupt_again) {
      ci_kernel_interrupt(c->k); /* nothing once the cell has ended */
      c->interrupt_again = asbi_now_ms() + INTERRUPT_AGAIN_MS;
    }
    start_next(c);

    zmq_pollitem_t items[1 + CI_KERNEL_MAX_ITEMS];
    items[0] = (zmq_pollitem_t){NULL, c->wake_fd, ZMQ_POLLIN, 0};
    int want = 1;
    if (c->running && c->step == 1 && !c->client_closed) want = !ci_queue_busy(&c->running->q);
    int n = 1 + (c->k ? ci_kernel_items(c->k, items + 1, want) : 0);
    long to = c->k ? ci_kernel_timeout(c->k) : -1;
    if (c->interrupt_deadline) {
      uint64_t now = asbi_now_ms();
      long d = c->interrupt_deadline > now ? (long)(c->interrupt_deadline - now) : 0;
      if (to < 0 || d < to) to = d;
      d = c->interrupt_again > now ? (long)(c->interrupt_again - now) : 0;
      if (c->interrupt_again && d < to) to = d;
    }
    if (c->step_done) to = 0;
    if (zmq_poll(items, n, to) < 0 && zmq_errno() != EINTR) {
      fprintf(stderr, "code-interpreter: zmq_poll: %s\n", zmq_strerror(zmq_errno()));
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (items[0].revents & ZMQ_POLLIN) {
      uint64_t v;
      ssize_t r = read(c->wake_fd, &v, sizeof v);
      (void)r;
    }
    if (c->k) {
      int was_ready = ci_kernel_ready(c->k);
      if (ci_kernel_handle(c->k, items + 1, n - 1, on_ev, c) == CI_K_DEAD) {
        char why[800];
        snprintf(why, sizeof why, "%s", ci_kernel_why(c->k));
        kernel_died(c, why);
      } else if (!was_ready && ci_kernel_ready(c->k)) {
        /* A python kernel is ready once its start-up cell has run too, so
         * /health, a new context and a restart answer when a cell runs at
         * once (a warm pool's sandbox is claimed right after /health). */
        if (c->setup_pending || c->setup_running)
          c->ready_deferred = 1;
        else
          set_state(c, ST_READY, NULL);
      }
      if (c->k && c->ready_deferred && !c->setup_pending && !c->setup_running) {
        c->ready_deferred = 0;
        set_state(c, ST_READY, NULL);
      }
    }
    if (c->k && c->interrupt_deadline && asbi_now_ms() >= c->interrupt_deadline) {
      char why[200];
      snprintf(why, sizeof why,
               "the interrupted code did not stop within %d s, so its kernel was killed",
               g_cfg.interrupt_grace_ms / 1000);
      kill(-ci_kernel_pid(c->k), 9);
      kernel_died(c, why);
    }
  }
  /* removed: whatever runs or waits ends here */
  if (c->running) {
    if (!c->client_closed)
      fail_exec(c, c->running, "UnexpectedEndOfExecution", "The context was removed");
    c->client_closed = 1;
    finish_running(c);
  }
  pthread_mutex_lock(&c->mu);
  ci_exec *e = c->pend_head;
  c->pend_head = c->pend_tail = NULL;
  pthread_mutex_unlock(&c->mu);
  while (e) {
    ci_exec *next = e->next;
    fail_exec(c, e, "UnexpectedEndOfExecution", "The context was removed");
    ci_exec_unref(e);
    e = next;
  }
  ci_kernel_destroy(c->k);
  c->k = NULL;
  return NULL;
}

/* ---- registry -------------------------------------------------------------------------- */

void ci_ctx_unref(ci_ctx *c) {
  if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  free(c->cwd);
  free(c->notice);
  ci_kspec_free(c->spec);
  asbi_buf_free(&c->line);
  if (c->wake_fd >= 0) close(c->wake_fd);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}

static int registry_add(ci_ctx *c) {
  pthread_mutex_lock(&g_mu);
  if (g_nctx == g_capctx) {
    size_t cap = g_capctx ? g_capctx * 2 : 8;
    ci_ctx **v = realloc(g_ctxs, cap * sizeof *v);
    if (!v) {
      pthread_mutex_unlock(&g_mu);
      return -1;
    }
    g_ctxs = v;
    g_capctx = cap;
  }
  g_ctxs[g_nctx++] = ctx_ref(c);
  pthread_mutex_unlock(&g_mu);
  return 0;
}

/* Take c out of the registry and the defaults; 1 if it was there. */
static int registry_take(ci_ctx *c) {
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nctx; i++)
    if (g_ctxs[i] == c) {
      memmove(&g_ctxs[i], &g_ctxs[i + 1], (g_nctx - i - 1) * sizeof *g_ctxs);
      g_nctx--;
      found = 1;
      break;
    }
  for (size_t i = 0; i < g_ndefaults; i++)
    if (g_defaults[i].ctx == c) {
      g_defaults[i] = g_defaults[--g_ndefaults];
      ci_ctx_unref(c);
      break;
    }
  pthread_mutex_unlock(&g_mu);
  return found;
}

/* Stop the thread of a context taken out of the registry and drop the
 * registry's reference. */
static void stop_ctx(ci_ctx *c) {
  pthread_mutex_lock(&c->mu);
  c->removed = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  wake(c);
  if (c->has_thread) pthread_join(c->thread, NULL);
  c->has_thread = 0;
  ci_ctx_unref(c);
}

static int wait_ready(ci_ctx *c, char *err, size_t errlen) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += READY_WAIT_MS / 1000;
  pthread_mutex_lock(&c->mu);
  while (c->state == ST_STARTING && !c->removed)
    if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT) break;
  int st = c->state;
  if (st == ST_FAILED)
    snprintf(err, errlen, "%s", c->error);
  else if (st == ST_STARTING)
    snprintf(err, errlen, "the kernel did not start within %d s", READY_WAIT_MS / 1000);
  pthread_mutex_unlock(&c->mu);
  return st == ST_READY ? CI_OK : CI_EFAIL;
}

static const char *cstr_(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- the server's own environment ------------------------------------------------- */

/* A silent execution on c that sets env (a checked object of strings) in
 * its kernel, queued behind what c already has (so every later call sees
 * them). Nobody reads its output; it never takes the ContextRestarting
 * notice meant for the next caller. */
static void queue_env(ci_ctx *c, const cJSON *env) {
  asbi_buf set = ASBI_BUF_INIT;
  const cJSON *it;
  int supported = 1;
  cJSON_ArrayForEach(it, env) {
    if (!supported) break;
    supported = env_stmt(c->language, &set, it->string, it->valuestring);
  }
  ci_exec *e = supported && set.data ? calloc(1, sizeof *e) : NULL;
  if (!e || ci_queue_init(&e->q, g_cfg.queue_mem) != 0) {
    free(e);
    asbi_buf_free(&set);
    return;
  }
  e->refs = 1;
  e->ctx = ctx_ref(c);
  e->internal = e->cancelled = 1;
  e->env_set = asbi_buf_detach(&set, NULL);
  e->q.producer_fd = c->wake_fd;
  pthread_mutex_lock(&c->mu);
  if (c->removed) {
    pthread_mutex_unlock(&c->mu);
    ci_exec_unref(e);
    return;
  }
  if (c->pend_tail)
    c->pend_tail->next = e;
  else
    c->pend_head = e;
  c->pend_tail = e;
  pthread_mutex_unlock(&c->mu);
  wake(c);
}

static void save_state(void);

int ci_set_envs(const cJSON *env, char *err, size_t errlen) {
  if (!cJSON_IsObject(env)) {
    snprintf(err, errlen, "the body must be an object of strings");
    return CI_EBADREQ;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, env) {
    if (!env_name_ok(it->string) || !cJSON_IsString(it)) {
      snprintf(err, errlen, "'%s' is not a valid variable name with a string value", it->string);
      return CI_EBADREQ;
    }
  }
  ci_env_lock();
  int ok = g_envs || (g_envs = cJSON_CreateObject());
  cJSON_ArrayForEach(it, env) {
    if (!ok) break;
    cJSON *v = cJSON_CreateString(it->valuestring);
    ok = v && setenv(it->string, it->valuestring, 1) == 0;
    if (ok && cJSON_GetObjectItemCaseSensitive(g_envs, it->string))
      cJSON_ReplaceItemInObjectCaseSensitive(g_envs, it->string, v);
    else if (ok)
      cJSON_AddItemToObject(g_envs, it->string, v);
    else
      cJSON_Delete(v);
  }
  ci_env_unlock();
  if (!ok) {
    snprintf(err, errlen, "out of memory");
    return CI_EFAIL;
  }
  /* kernels started from now on inherit them; the running ones (and
   * those still starting, from the old environment) are told */
  pthread_mutex_lock(&g_mu);
  ci_ctx **all = g_nctx ? calloc(g_nctx, sizeof *all) : NULL;
  size_t n = 0;
  for (size_t i = 0; all && i < g_nctx; i++) all[n++] = ctx_ref(g_ctxs[i]);
  pthread_mutex_unlock(&g_mu);
  for (size_t i = 0; i < n; i++) {
    queue_env(all[i], env);
    ci_ctx_unref(all[i]);
  }
  free(all);
  if (!g_restoring) save_state();
  return CI_OK;
}

/* The state file: {"contexts": [{id, language, cwd, default}], "envs":
 * {NAME: value}}, replaced whole (a rename), after every change of the
 * registry or of the envs. */
static pthread_mutex_t g_state_mu = PTHREAD_MUTEX_INITIALIZER;
static void save_state(void) {
  if (!g_cfg.state_path) return;
  asbi_buf b = ASBI_BUF_INIT;
  pthread_mutex_lock(&g_state_mu);
  ci_env_lock();
  char *envs = g_envs ? cJSON_PrintUnformatted(g_envs) : NULL;
  ci_env_unlock();
  pthread_mutex_lock(&g_mu);
  asbi_buf_puts(&b, "{\"contexts\":[");
  for (size_t i = 0; i < g_nctx; i++) {
    ci_ctx *c = g_ctxs[i];
    int dflt = 0;
    for (size_t d = 0; d < g_ndefaults && !dflt; d++) dflt = g_defaults[d].ctx == c;
    asbi_buf_printf(&b, "%s{\"id\":\"%s\",\"language\":", i ? "," : "", c->id);
    ci_out_json_str(&b, c->language, strlen(c->language));
    asbi_buf_puts(&b, ",\"cwd\":");
    ci_out_json_str(&b, c->cwd, strlen(c->cwd));
    asbi_buf_printf(&b, ",\"default\":%s}", dflt ? "true" : "false");
  }
  asbi_buf_printf(&b, "],\"envs\":%s}\n", envs ? envs : "{}");
  free(envs);
  pthread_mutex_unlock(&g_mu);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", g_cfg.state_path);
  FILE *f = b.data ? fopen(tmp, "we") : NULL;
  int ok = f && fwrite(b.data, 1, b.len, f) == b.len;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok || rename(tmp, g_cfg.state_path) != 0) {
    fprintf(stderr, "code-interpreter: cannot write the state file %s: %s\n", g_cfg.state_path,
            strerror(errno));
    unlink(tmp);
  }
  pthread_mutex_unlock(&g_state_mu);
  asbi_buf_free(&b);
}

/* id: NULL for a new one; notice: NULL, or why the first call is told the
 * context restarted (a context taken back from the state file). */
static int ctx_new(const char *language, const char *cwd, int wait, const char *id,
                   const char *notice, ci_ctx **out, char *err, size_t errlen) {
  *out = NULL;
  char lang[64];
  ci_normalize_language(language, lang, sizeof lang);
  const char *klang = strcmp(lang, "typescript") == 0 ? "javascript" : lang;
  if (asbi_empty(cwd)) cwd = g_cfg.default_cwd;
  struct stat st;
  if (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "cwd %s is not a directory", cwd);
    return CI_EBADREQ;
  }
  ci_env_lock(); /* it reads JUPYTER_PATH, HOME, XDG_DATA_HOME */
  ci_kspec *spec = ci_kspec_find(klang);
  ci_env_unlock();
  if (spec && spec->kind == CI_KIND_NODE && klang != lang) {
    /* the node driver strips a typescript context's types */
    free(spec->language);
    spec->language = asbi_strdup(lang);
  }
  if (!spec) {
    snprintf(err, errlen,
             "Unsupported language '%s': no Jupyter kernelspec for it is installed and there is "
             "no built-in driver (built in: python, javascript, typescript, bash" CI_JAVA_BUILTIN
             ")",
             lang);
    return CI_EBADREQ;
  }
  ci_ctx *c = calloc(1, sizeof *c);
  if (!c) {
    ci_kspec_free(spec);
    snprintf(err, errlen, "out of memory");
    return CI_EFAIL;
  }
  c->refs = 1;
  c->spec = spec;
  c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  snprintf(c->language, sizeof c->language, "%s", lang);
  c->cwd = asbi_strdup(cwd);
  if (id) snprintf(c->id, sizeof c->id, "%s", id);
  if (notice) c->notice = asbi_strdup(notice);
  if (c->wake_fd < 0 || !c->cwd || (!id && uuid4(c->id) != 0) || registry_add(c) != 0) {
    ci_ctx_unref(c);
    snprintf(err, errlen, "out of resources");
    return CI_EFAIL;
  }
  /* the thread lives on the registry's reference: stop_ctx joins it
   * before dropping that */
  if (pthread_create(&c->thread, NULL, ctx_main, c) != 0) {
    registry_take(c);
    ci_ctx_unref(c);
    ci_ctx_unref(c);
    snprintf(err, errlen, "cannot start a thread");
    return CI_EFAIL;
  }
  c->has_thread = 1;
  if (wait && wait_ready(c, err, errlen) != CI_OK) {
    if (registry_take(c)) stop_ctx(c);
    ci_ctx_unref(c);
    return CI_EFAIL;
  }
  *out = c;
  return CI_OK;
}

int ci_ctx_create(const char *language, const char *cwd, ci_ctx **out, char *err, size_t errlen) {
  int rc = ctx_new(language, cwd, 1, NULL, NULL, out, err, errlen);
  if (rc == CI_OK) save_state();
  return rc;
}

ci_ctx *ci_ctx_get(const char *id) {
  ci_ctx *c = NULL;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nctx && !c; i++)
    if (strcmp(g_ctxs[i]->id, id) == 0) c = ctx_ref(g_ctxs[i]);
  pthread_mutex_unlock(&g_mu);
  return c;
}

static ci_ctx *find_default(const char *lang) {
  ci_ctx *c = NULL;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_ndefaults && !c; i++)
    if (strcmp(g_defaults[i].language, lang) == 0) c = ctx_ref(g_defaults[i].ctx);
  pthread_mutex_unlock(&g_mu);
  return c;
}

static int add_default(ci_ctx *c) {
  pthread_mutex_lock(&g_mu);
  int ok = g_ndefaults < ASBI_ARRAY_LEN(g_defaults);
  if (ok) {
    snprintf(g_defaults[g_ndefaults].language, sizeof g_defaults[0].language, "%s", c->language);
    g_defaults[g_ndefaults++].ctx = ctx_ref(c);
  }
  pthread_mutex_unlock(&g_mu);
  return ok ? 0 : -1;
}

int ci_ctx_default(const char *language, ci_ctx **out, char *err, size_t errlen) {
  char lang[64];
  ci_normalize_language(language, lang, sizeof lang);
  if ((*out = find_default(lang))) return CI_OK;
  pthread_mutex_lock(&g_default_mu);
  int rc = CI_OK;
  if (!(*out = find_default(lang))) {
    rc = ctx_new(lang, NULL, 1, NULL, NULL, out, err, errlen);
    if (rc == CI_OK) add_default(*out);
  }
  pthread_mutex_unlock(&g_default_mu);
  if (rc == CI_OK) save_state();
  return rc;
}

char *ci_ctx_json(const ci_ctx *c) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "{\"id\":\"%s\",\"language\":", c->id);
  ci_out_json_str(&b, c->language, strlen(c->language));
  asbi_buf_puts(&b, ",\"cwd\":");
  ci_out_json_str(&b, c->cwd, strlen(c->cwd));
  asbi_buf_putc(&b, '}');
  return b.data;
}

char *ci_ctx_list_json(void) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_putc(&b, '[');
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_nctx; i++) {
    char *one = ci_ctx_json(g_ctxs[i]);
    if (i) asbi_buf_putc(&b, ',');
    if (one) asbi_buf_puts(&b, one);
    free(one);
  }
  pthread_mutex_unlock(&g_mu);
  asbi_buf_putc(&b, ']');
  return b.data;
}

int ci_ctx_restart(const char *id, char *err, size_t errlen) {
  ci_ctx *c = ci_ctx_get(id);
  if (!c) {
    snprintf(err, errlen, "Context %s not found", id);
    return CI_ENOTFOUND;
  }
  pthread_mutex_lock(&c->mu);
  unsigned my = ++c->restart_gen;
  pthread_mutex_unlock(&c->mu);
  wake(c);
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += READY_WAIT_MS / 1000;
  pthread_mutex_lock(&c->mu);
  while ((int)(c->restart_done - my) < 0 && !c->removed)
    if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT) break;
  int rc = CI_OK;
  if (c->removed) {
    snprintf(err, errlen, "Context %s not found", id);
    rc = CI_ENOTFOUND;
  } else if ((int)(c->restart_done - my) < 0) {
    snprintf(err, errlen, "Failed to restart context %s: the kernel did not start in time", id);
    rc = CI_EFAIL;
  } else if (c->state == ST_FAILED) {
    snprintf(err, errlen, "Failed to restart context %s: %s", id, c->error);
    rc = CI_EFAIL;
  }
  pthread_mutex_unlock(&c->mu);
  ci_ctx_unref(c);
  return rc;
}

int ci_ctx_remove(const char *id) {
  ci_ctx *c = ci_ctx_get(id);
  if (!c) return CI_ENOTFOUND;
  int found = registry_take(c);
  if (found) stop_ctx(c);
  ci_ctx_unref(c);
  if (found) save_state();
  return found ? CI_OK : CI_ENOTFOUND;
}

int ci_ctx_startup_done(void) {
  pthread_mutex_lock(&g_mu);
  ci_ctx *c = g_boot;
  int expected = g_cfg.default_context;
  pthread_mutex_unlock(&g_mu);
  if (!c) return !expected; /* not started yet, or its start failed */
  pthread_mutex_lock(&c->mu);
  int done = c->state != ST_STARTING || c->removed;
  pthread_mutex_unlock(&c->mu);
  return done;
}

int ci_ctx_init(const ci_config *cfg) {
  g_cfg = *cfg;
  if (!g_cfg.queue_mem) g_cfg.queue_mem = 4u << 20;
  if (!g_cfg.interrupt_grace_ms) g_cfg.interrupt_grace_ms = 10000;
  ci_queue_spool_dir(cfg->rundir);
  return 0;
}

/* Take back the contexts of the state file (a server restarted after a
 * crash: its kernels died with it). 1 if the file listed any. */
static int restore_state(void) {
  if (!g_cfg.state_path) return 0;
  FILE *f = fopen(g_cfg.state_path, "re");
  if (!f) return 0;
  static char text[1 << 20]; /* one thread: the start-up */
  size_t len = fread(text, 1, sizeof text, f);
  fclose(f);
  cJSON *j = len < sizeof text ? cJSON_ParseWithLength(text, len) : NULL;
  int n = 0;
  const cJSON *it;
  static const char notice[] =
      "the code interpreter was restarted (its server process ended), and its kernels with it";
  /* the contexts (an array alone: the format before "envs" existed) */
  const cJSON *arr = cJSON_IsArray(j) ? j : cJSON_GetObjectItemCaseSensitive(j, "contexts");
  /* first the envs, which the kernels started below inherit */
  const cJSON *envs = cJSON_GetObjectItemCaseSensitive(j, "envs");
  if (cJSON_IsObject(envs) && cJSON_GetArraySize(envs)) {
    char err[300];
    g_restoring = 1;
    int erc = ci_set_envs(envs, err, sizeof err);
    g_restoring = 0;
    if (erc != CI_OK)
      fprintf(stderr, "code-interpreter: the state file's envs not taken back: %s\n", err);
  }
  if (!cJSON_IsArray(arr)) arr = NULL;
  cJSON_ArrayForEach(it, arr) {
    const char *id = cstr_(it, "id"), *lang = cstr_(it, "language"), *cwd = cstr_(it, "cwd");
    if (!id || strlen(id) != 36 || !lang || !cwd) continue;
    ci_ctx *c = NULL;
    char err[600];
    if (ctx_new(lang, cwd, 0, id, notice, &c, err, sizeof err) != CI_OK) {
      fprintf(stderr, "code-interpreter: context %s not taken back: %s\n", id, err);
      continue;
    }
    n++;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "default"))) {
      add_default(c);
      if (strcmp(c->language, "python") == 0 && !g_boot) {
        pthread_mutex_lock(&g_mu);
        g_boot = c; /* keeps the reference */
        pthread_mutex_unlock(&g_mu);
        continue;
      }
    }
    ci_ctx_unref(c);
  }
  cJSON_Delete(j);
  return n > 0;
}

int ci_ctx_start_default(void) {
  char err[600];
  ci_ctx *c = NULL;
  pthread_mutex_lock(&g_default_mu);
  int rc = CI_OK;
  if (restore_state()) {
    /* a state without the python default (removed) gets a fresh one */
    if (!g_boot && (c = find_default("python"))) {
      pthread_mutex_lock(&g_mu);
      g_boot = c;
      pthread_mutex_unlock(&g_mu);
    }
    pthread_mutex_unlock(&g_default_mu);
    if (!g_boot) {
      pthread_mutex_lock(&g_mu);
      g_cfg.default_context = 0;
      pthread_mutex_unlock(&g_mu);
    }
    save_state();
    return CI_OK;
  }
  rc = ctx_new("python", NULL, 0, NULL, NULL, &c, err, sizeof err);
  if (rc == CI_OK) {
    add_default(c);
    pthread_mutex_lock(&g_mu);
    g_boot = c; /* keeps the reference */
    pthread_mutex_unlock(&g_mu);
  } else {
    fprintf(stderr, "code-interpreter: default python context: %s\n", err);
    pthread_mutex_lock(&g_mu);
    g_cfg.default_context = 0; /* healthy without it: calls report the error */
    pthread_mutex_unlock(&g_mu);
  }
  /* and javascript, as E2B's server creates both (not waited for) */
  ci_ctx *js = NULL;
  if (ctx_new("javascript", NULL, 0, NULL, NULL, &js, err, sizeof err) == CI_OK)
    add_default(js);
  else
    fprintf(stderr, "code-interpreter: default javascript context: %s\n", err);
  ci_ctx_unref(js);
  pthread_mutex_unlock(&g_default_mu);
  save_state();
  return rc;
}

void ci_ctx_shutdown(void) {
  for (;;) {
    pthread_mutex_lock(&g_mu);
    ci_ctx *c = g_nctx ? ctx_ref(g_ctxs[0]) : NULL;
    pthread_mutex_unlock(&g_mu);
    if (!c) break;
    if (registry_take(c)) stop_ctx(c);
    ci_ctx_unref(c);
  }
  pthread_mutex_lock(&g_mu);
  ci_ctx *b = g_boot;
  g_boot = NULL;
  free(g_ctxs);
  g_ctxs = NULL;
  g_nctx = g_capctx = 0;
  pthread_mutex_unlock(&g_mu);
  ci_ctx_unref(b);
  ci_env_lock();
  cJSON_Delete(g_envs);
  g_envs = NULL;
  ci_env_unlock();
  /* the state file stays: whoever stopped us (a user's pkill, asb-init at the
   * sandbox's end) is followed by a restart or by nothing */
}
