/* Shared helpers for the fuzz harnesses (libFuzzer entry point, invariant
 * checks, deterministic chunking). SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_FUZZ_H
#define ASB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a crash, so libFuzzer records the input. */
#define FUZZ_CHECK(cond)                                                           \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                     \
    }                                                                              \
  } while (0)

/* Chunk sizes derived from the input, so a crash replays identically. */
typedef struct fuzz_rng {
  uint64_t s;
} fuzz_rng;

static inline void fuzz_rng_init(fuzz_rng *r, const uint8_t *d, size_t n, uint64_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211ull;
  r->s = h ? h : 0x9E3779B97F4A7C15ull;
}

static inline uint64_t fuzz_rng_next(fuzz_rng *r) {
  uint64_t x = r->s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return r->s = x;
}

/* Next chunk length (>= 1, <= left): mostly small, sometimes large. */
static inline size_t fuzz_chunk(fuzz_rng *r, size_t left) {
  uint64_t v = fuzz_rng_next(r);
  size_t k = (v & 3) == 0 ? (size_t)(v >> 8) % (left + 1) : (size_t)(v >> 8) % 9;
  if (k == 0) k = 1;
  return k > left ? left : k;
}

#endif
