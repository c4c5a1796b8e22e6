/* The output of one execution on its way to the HTTP client: a FIFO of
 * NDJSON bytes with one producer (the context's thread) and one consumer
 * (the request's thread). Memory holds at most `mem_max` bytes; Jupyter
 * kernels publish on a channel without flow control, so what arrives
 * beyond that is spooled to an unlinked temporary file instead of being
 * held in memory or dropped. Producers that can wait (the node and bash
 * drivers' pipes) stop reading while ci_queue_busy() says so. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_QUEUE_H
#define ASB_CODEINTERP_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct ci_queue {
  pthread_mutex_t mu;
  asbi_buf mem; /* pending bytes are mem.data[mem_off, mem.len) */
  size_t mem_off;
  size_t mem_max;
  int spill_fd; /* -1 until needed */
  uint64_t spill_r, spill_w;
  uint64_t spilled; /* total bytes ever spooled (for tests and logs) */
  uint64_t lost;    /* bytes that could not be kept (spool failed) */
  int lost_errno;
  int wake_fd;     /* eventfd the consumer waits on */
  int closed;      /* the producer will add nothing more */
  int producer_fd; /* eventfd of a producer to wake when room frees up */
  int producer_waiting;
  int abandoned; /* the consumer is gone: pushes are discarded */
} ci_queue;

/* Where spool files go (default $TMPDIR or /tmp); call before any queue
 * exists. */
void ci_queue_spool_dir(const char *dir);
int ci_queue_init(ci_queue *q, size_t mem_max);
void ci_queue_destroy(ci_queue *q);
/* Producer side. push appends whole lines; close ends the stream. */
int ci_queue_push(ci_queue *q, const char *p, size_t n);
void ci_queue_close(ci_queue *q);
/* 1 while half the memory is in use or the spool holds data; the
 * producer's eventfd (producer_fd, if set) is then woken once that ends. */
int ci_queue_busy(ci_queue *q);
/* Consumer side: copies up to max pending bytes; returns the count, 0 if
 * nothing is pending (then *closed tells whether more can come), or -1 on
 * a spool read error. A notice about lost bytes is delivered as a stderr
 * line once the bytes before it have been read. */
long ci_queue_pop(ci_queue *q, char *buf, size_t max, int *closed);
void ci_queue_abandon(ci_queue *q);
/* Drain the wake eventfd. */
void ci_queue_ack(ci_queue *q);

#endif
