/* --pause-swap: the engine's own swap file, where sandboxes paused with
 * memory put their RAM (swap.c; docs/lifecycle.md "Pause with memory frees
 * the RAM").
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_SWAP_H
#define ASB_ENGINE_SWAP_H

#include <stdint.h>

#include "eng_err.h"

struct engine;

/* Parses --pause-swap's SIZE: a whole number of bytes with an optional
 * K, M, G or T suffix (binary units), at least 1 MiB. 0 or -1. */
int swap_parse_size(const char *text, uint64_t *bytes);
/* At start, before any sandbox is adopted. With bytes > 0: the swap file
 * <state>/pause.swap of that size, active (made and swapped on, or the one
 * an engine that stopped with paused sandboxes or crashed left active,
 * taken over). With 0: a file left active by such an engine is swapped off
 * (its pages go back into the RAM of their sandboxes) and removed. 0, or
 * -1 with err (the filesystem cannot hold a swap file, swapon refused). */
int swap_open(struct engine *e, uint64_t bytes, eng_err *err);
/* At stop, after the sandboxes that go were killed: swaps the file off and
 * removes it, unless `keep` (paused sandboxes left behind still have pages
 * in it: the next engine takes it over). */
void swap_close(struct engine *e, int keep);
/* Free bytes in the engine's swap file now (0 without one). */
uint64_t swap_free_bytes(struct engine *e);

#endif
