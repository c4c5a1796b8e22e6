/* Warm pools (pool.c): per template, sandboxes made ahead of time by a
 * background refill thread, which create claims (sandboxes.c) and
 * personalises. The pools themselves are the templates' (templates.h:
 * put, take, drain); docs/engine.md "Warm pools".
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_POOL_H
#define ASB_ENGINE_POOL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "engine.h"

#define POOL_SIZE_MAX 1000

/* One --pool-template value "NAME=N" (NAME a template's name or id,
 * N 0..POOL_SIZE_MAX): 0 with *name (malloc'd) and *n, or -1. */
int pool_parse(const char *arg, char **name, int *n);
/* The pool size wanted for t: --pool-template's for its name or id, else
 * its template.yaml's pool.size, else 0. */
int pool_target(engine *e, const template_info *t);
/* Takes cfg's pool settings and starts the refill thread: 0 or -1. */
int pool_start(engine *e, const engine_config *cfg);
/* Stops and joins the refill thread (the pools stay: templates_free
 * drains them). */
void pool_stop(engine *e);
/* Bytes of memory the pooled sandboxes of t use now (their cgroups). */
uint64_t pool_memory(engine *e, const template_info *t);
/* t's pool as GET /templates shows it: {target, ready, claims, misses,
 * memoryBytes, memoryBytesPerSandbox, heldByMemory}. */
cJSON *pool_json(engine *e, const template_info *t);

#endif
