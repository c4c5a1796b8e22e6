/* Kernels: a Jupyter kernel driven over ZeroMQ (shell, iopub, control,
 * heartbeat; stdin is not offered), or a built-in driver for node or bash
 * over pipes with the same contract. One kernel is used by one thread
 * (its context's). Internal. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_KERNEL_H
#define ASB_CODEINTERP_KERNEL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>
#include <zmq.h>

typedef enum ci_kind {
  CI_KIND_JUPYTER = 0, /* argv from a kernelspec, Jupyter protocol */
  CI_KIND_NODE = 1,    /* built-in javascript driver */
  CI_KIND_BASH = 2,    /* built-in bash driver */
  CI_KIND_JAVA = 3     /* built-in java driver (JShell) */
} ci_kind;

/* How to start a kernel for a language. */
typedef struct ci_kspec {
  char *name;     /* kernelspec name ("python3"), or "node" / "bash" */
  char *language; /* lowercase language name */
  char *dir;      /* the kernelspec's directory ({resource_dir}), or NULL */
  ci_kind kind;
  char **argv;           /* NULL-ended; "{connection_file}" is replaced */
  char **env;            /* "KEY=VALUE" set for the kernel, NULL-ended */
  int interrupt_message; /* kernelspec interrupt_mode "message" */
} ci_kspec;

/* The kernelspec for a (normalised) language: an installed kernelspec whose
 * name or language matches (directories: $JUPYTER_PATH entries, then
 * ~/.local/share/jupyter, /usr/local/share/jupyter, /usr/share/jupyter, each
 * + /kernels), else a built-in one (python → python3 -m ipykernel_launcher,
 * javascript → node driver, bash → bash driver, java → java driver when
 * built with it). NULL if none. */
ci_kspec *ci_kspec_find(const char *language);
void ci_kspec_free(ci_kspec *s);

enum { CI_EV_COUNT = 1, CI_EV_STREAM, CI_EV_RESULT, CI_EV_ERROR, CI_EV_DONE };
enum { CI_DONE_OK = 0, CI_DONE_ERROR = 1, CI_DONE_ABORT = 2 };

/* Something the running execution produced. Pointers are valid during the
 * callback only. */
typedef struct ci_ev {
  int kind;
  int count;     /* COUNT */
  int is_stderr; /* STREAM */
  const char *text;
  size_t len;
  const char *ts;      /* STREAM: the kernel's timestamp, or NULL */
  int escaped;         /* STREAM: text is a JSON string's escaped body */
  const cJSON *bundle; /* RESULT: MIME bundle */
  int is_main;
  const char *ename, *evalue, *traceback; /* ERROR */
  int status;                             /* DONE: CI_DONE_* */
} ci_ev;

typedef void (*ci_ev_fn)(void *ud, const ci_ev *ev);

typedef struct ci_kernel ci_kernel;

/* Launch. cwd: its working directory; rundir: a private directory for the
 * connection file and cells; tag: unique among running kernels. Returns 0
 * (not ready yet: see ci_kernel_ready) or -1 with a message in err. */
int ci_kernel_start(ci_kernel **out, const ci_kspec *spec, const char *cwd, const char *rundir,
                    const char *tag, char *err, size_t errlen);
/* Fill poll items (at most CI_KERNEL_MAX_ITEMS); want_output 0 asks
 * producers that can wait (driver pipes) to wait. */
#define CI_KERNEL_MAX_ITEMS 8
int ci_kernel_items(ci_kernel *k, zmq_pollitem_t *items, int want_output);

enum { CI_K_OK = 0, CI_K_DEAD = -1 };
/* Handle what the poll found (the items from ci_kernel_items) and the
 * timers; events of the running execution go to fn. CI_K_DEAD when the
 * kernel died or stopped answering: ci_kernel_why says how. */
int ci_kernel_handle(ci_kernel *k, const zmq_pollitem_t *items, int n, ci_ev_fn fn, void *ud);
/* Milliseconds until the kernel's next timer, or -1. */
long ci_kernel_timeout(ci_kernel *k);
const char *ci_kernel_why(const ci_kernel *k);

int ci_kernel_ready(const ci_kernel *k);
/* Start an execution (the kernel must be ready and idle). Events follow;
 * CI_EV_DONE ends it. silent: no count, no history, no main result. */
int ci_kernel_execute(ci_kernel *k, const char *code, int silent);
/* Interrupt the running execution (interrupt_request or SIGINT). Nothing
 * once it has ended. Called again while it runs on: bash gets SIGINT again
 * (it loses one that comes while it forks a command); node gets an
 * interrupt named for the cell first and SIGINT only when called again;
 * others get one.
 * Its DONE comes once the interrupt is
 * known consumed or moot (a barrier the kernel answers after the signal),
 * so no interrupt reaches the next execution. */
void ci_kernel_interrupt(ci_kernel *k);
pid_t ci_kernel_pid(const ci_kernel *k);
/* Kill its process group, reap it, remove its files. NULL is fine. */
void ci_kernel_destroy(ci_kernel *k);

/* Run as a sandbox's agent: every kernel's process first joins these
 * cgroups (colon-separated dirs, $ASB_WORKLOAD_CGROUPS: writes itself to
 * each cgroup.procs) and takes this open-file limit ("soft:hard",
 * $ASB_NOFILE), as envd does for commands. Call before any kernel starts;
 * NULLs are fine. */
void ci_kernel_workload(const char *cgroups, const char *nofile);
/* Held while the server's environment (environ) is read for a kernel's
 * start or changed by ci_set_envs. */
void ci_env_lock(void);
void ci_env_unlock(void);

/* The ZeroMQ context of the process (created on first use). */
void *ci_zmq_ctx(void);
void ci_zmq_term(void);

#endif
