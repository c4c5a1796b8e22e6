/* Execution output FIFO with a bounded memory part and a spool file.
 * SPDX-License-Identifier: Apache-2.0 */
#include "queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ndout.h"
#include "util/util.h"

static char g_spool_dir[512];

void ci_queue_spool_dir(const char *dir) {
  snprintf(g_spool_dir, sizeof g_spool_dir, "%s", dir ? dir : "");
}

int ci_queue_init(ci_queue *q, size_t mem_max) {
  memset(q, 0, sizeof *q);
  q->spill_fd = -1;
  q->producer_fd = -1;
  q->mem_max = mem_max;
  q->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (q->wake_fd < 0) return -1;
  pthread_mutex_init(&q->mu, NULL);
  return 0;
}

void ci_queue_destroy(ci_queue *q) {
  if (q->wake_fd >= 0) close(q->wake_fd);
  if (q->spill_fd >= 0) close(q->spill_fd);
  asbi_buf_free(&q->mem);
  pthread_mutex_destroy(&q->mu);
}

static void wake(ci_queue *q) {
  uint64_t one = 1;
  ssize_t w = write(q->wake_fd, &one, sizeof one);
  (void)w; /* EAGAIN: the counter is already non-zero */
}

void ci_queue_ack(ci_queue *q) {
  uint64_t v;
  ssize_t r = read(q->wake_fd, &v, sizeof v);
  (void)r;
}

static int open_spool(void) {
  const char *dir = g_spool_dir[0] ? g_spool_dir : asbi_getenv("TMPDIR");
  if (!dir) dir = "/tmp";
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != ENOENT)) return fd;
  char path[600];
  snprintf(path, sizeof path, "%s/asb-codei-spool-XXXXXX", dir);
  fd = mkostemp(path, O_CLOEXEC);
  if (fd >= 0) unlink(path);
  return fd;
}

static int spool_write(ci_queue *q, const char *p, size_t n) {
  if (q->spill_fd < 0 && (q->spill_fd = open_spool()) < 0) return -1;
  while (n) {
    ssize_t w = pwrite(q->spill_fd, p, n, (off_t)q->spill_w);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
    q->spill_w += (uint64_t)w;
    q->spilled += (uint64_t)w;
  }
  return 0;
}

int ci_queue_push(ci_queue *q, const char *p, size_t n) {
  pthread_mutex_lock(&q->mu);
  int rc = 0;
  if (!q->abandoned && n) {
    size_t pending = q->mem.len - q->mem_off;
    if (q->spill_w == q->spill_r && pending + n <= q->mem_max) {
      if (q->mem_off && q->mem_off == q->mem.len) {
        asbi_buf_clear(&q->mem);
        q->mem_off = 0;
      }
      rc = asbi_buf_append(&q->mem, p, n);
      if (rc) errno = ENOMEM;
    } else {
      uint64_t at = q->spill_w;
      rc = spool_write(q, p, n);
      if (rc) q->spill_w = at; /* a partial line would corrupt the stream */
    }
    if (rc) {
      q->lost += n;
      q->lost_errno = errno;
    }
  }
  pthread_mutex_unlock(&q->mu);
  wake(q);
  return rc;
}

void ci_queue_close(ci_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_mutex_unlock(&q->mu);
  wake(q);
}

void ci_queue_abandon(ci_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->abandoned = 1;
  asbi_buf_free(&q->mem);
  q->mem_off = 0;
  pthread_mutex_unlock(&q->mu);
}

int ci_queue_busy(ci_queue *q) {
  pthread_mutex_lock(&q->mu);
  int busy = q->spill_w != q->spill_r || (q->mem.len - q->mem_off) * 2 >= q->mem_max;
  if (busy) q->producer_waiting = 1;
  pthread_mutex_unlock(&q->mu);
  return busy;
}

long ci_queue_pop(ci_queue *q, char *buf, size_t max, int *closed) {
  pthread_mutex_lock(&q->mu);
  long got = 0;
  size_t pending = q->mem.len - q->mem_off;
  if (pending) {
    size_t k = pending < max ? pending : max;
    memcpy(buf, q->mem.data + q->mem_off, k);
    q->mem_off += k;
    if (q->mem_off == q->mem.len) {
      /* drop a large allocation once it is drained */
      if (q->mem.cap > (1u << 20))
        asbi_buf_free(&q->mem);
      else
        asbi_buf_clear(&q->mem);
      q->mem_off = 0;
    } else if (q->mem_off > (1u << 20) && q->mem_off * 2 > q->mem.len) {
      asbi_buf_consume(&q->mem, q->mem_off);
      q->mem_off = 0;
    }
    got = (long)k;
  } else if (q->spill_r < q->spill_w) {
    uint64_t left = q->spill_w - q->spill_r;
    size_t k = left < max ? (size_t)left : max;
    ssize_t r;
    do r = pread(q->spill_fd, buf, k, (off_t)q->spill_r);
    while (r < 0 && errno == EINTR);
    if (r <= 0) {
      got = -1;
    } else {
      q->spill_r += (uint64_t)r;
      if (q->spill_r == q->spill_w) {
        q->spill_r = q->spill_w = 0;
        if (ftruncate(q->spill_fd, 0) != 0) { /* space is reused anyway */
        }
      }
      got = (long)r;
    }
  } else if (q->lost) {
    asbi_buf note = ASBI_BUF_INIT;
    char msg[200];
    snprintf(msg, sizeof msg,
             "[code-interpreter: %llu bytes of output were lost: could not spool "
             "them (%s)]\n",
             (unsigned long long)q->lost, strerror(q->lost_errno));
    ci_out_stream(&note, 1, msg, strlen(msg), NULL);
    q->lost = 0;
    if (note.data && note.len <= max) {
      memcpy(buf, note.data, note.len);
      got = (long)note.len;
    }
    asbi_buf_free(&note);
  }
  *closed = q->closed;
  int wake_producer = q->producer_waiting && q->producer_fd >= 0 && q->spill_w == q->spill_r &&
                      (q->mem.len - q->mem_off) * 2 < q->mem_max;
  if (wake_producer) q->producer_waiting = 0;
  pthread_mutex_unlock(&q->mu);
  if (wake_producer) {
    uint64_t one = 1;
    ssize_t w = write(q->producer_fd, &one, sizeof one);
    (void)w;
  }
  return got;
}
