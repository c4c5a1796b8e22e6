/* Shared set-up for the engine.* tests: a temp state dir, the base and
 * busybox templates, an agent dir with asb-init and the stand-in agent, and
 * an engine with its own cgroup name. SPDX-License-Identifier: Apache-2.0 */
#ifndef ASBT_ENGINE_COMMON_H
#define ASBT_ENGINE_COMMON_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "iso/iso.h"

typedef struct asbt_env {
  char root[PATH_MAX];
  char state[PATH_MAX];
  char agent_dir[PATH_MAX];
  char cgname[64];
  unsigned pool_target;
  asbe_engine *e;
  asbe_template *base, *busybox;
} asbt_env;

/* Engine option for asbt_setup (the benchmark's -f). */
extern int asbt_favor_dynmods;

/* pool_target 0 = no pool. Returns 0 or -1 (and prints why). */
int asbt_setup(asbt_env *env, unsigned pool_target);
/* Closes env->e and opens it again (another engine can use the state dir
 * in between: one engine per state dir). */
void asbt_close_engine(asbt_env *env);
int asbt_open_engine(asbt_env *env);
/* Reaps, closes the engine, removes the temp dir. */
void asbt_teardown(asbt_env *env);

/* A spec with the stand-in agent on /run/asb/envd.sock and 127.0.0.1:8080. */
void asbt_spec(asbe_sandbox_spec *s, const char *id, const asbe_template *t);
asbe_sandbox *asbt_create(asbt_env *env, const char *id, const asbe_template *t);

/* sh -c cmd as uid; returns the exit code (-1 on failure); out (may be NULL)
 * receives stdout+stderr (malloc'd). */
int asbt_sh(asbe_sandbox *sb, uid_t uid, const char *cmd, char **out);
/* Same, output must equal expect (trailing newline ignored). 1 if so. */
int asbt_sh_eq(asbe_sandbox *sb, uid_t uid, const char *cmd, const char *expect);

/* Sends one line to the stand-in agent over /run/asb/envd.sock; reply into
 * buf. 0 or -1. */
int asbt_agent(asbe_sandbox *sb, const char *line, char *buf, size_t len);
/* 1 when the disk pool holds exactly pool_target images, each on its loop
 * device (none being made). It refills in the background after a create,
 * and its images hold fds: count fds only once it has settled. An image
 * is on its loop a moment before it is pooled, so this checks twice. */
int asbt_pool_settled(asbt_env *env);
/* Waits (up to timeout_ms) until the agent answers ping. 0 or -1. */
int asbt_wait_agent(asbe_sandbox *sb, int timeout_ms);

/* Leak counters. */
int asbt_count_fds(void);
int asbt_count_mounts(void);
int asbt_count_children(void);
/* Entries under every hierarchy's engine cgroup dir. */
int asbt_count_cgroups(asbt_env *env);
/* Loop devices backing a sandbox's disk (not the pool's). */
int asbt_count_loops(asbt_env *env);

void asbt_sleep_ms(int ms);

/* The cgroup2 mount point and its super options (0, or -1 if none). */
int asbt_cgroup2(char *point, size_t plen, char *opts, size_t olen);
/* Remounts cgroup2 with exactly these super options (undoes favordynmods). */
int asbt_cgroup2_restore(const char *point, const char *opts);

#endif
