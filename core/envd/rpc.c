/* envd: the RPC plumbing every service uses: Connect errors (envd_err and
 * the errno → Connect code mapping), stream envelopes, and the wait of a
 * stream for its next event or its client's hang-up.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/connect.h"
#include "rpc.h"

void envd_err_set(envd_err *e, const char *code, const char *fmt, ...) {
  va_list ap;
  e->code = code;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
}

const char *envd_errno_code(int err) {
  switch (err) {
    case ENOENT:
      return "not_found";
    case EACCES:
    case EPERM:
    case EROFS:
      return "permission_denied";
    case ENOSPC:
    case EDQUOT:
      return "resource_exhausted";
    case EEXIST:
      return "already_exists";
    case ENOTDIR:
    case EISDIR:
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
    case EXDEV:
    case ENOTEMPTY:
      return "invalid_argument";
    default:
      return "internal";
  }
}

int envd_env_msg(asbi_buf *out, const char *json, size_t len) {
  return asbi_connect_encode(out, 0, json, len);
}

int envd_env_end(asbi_buf *out, const char *code, const char *msg) {
  asbi_buf j = ASBI_BUF_INIT;
  int rc = asbi_connect_end_json(&j, code, msg);
  if (rc == 0) rc = asbi_connect_encode(out, ASBI_CONNECT_FLAG_END_STREAM, j.data, j.len);
  asbi_buf_free(&j);
  return rc;
}

int envd_wait(int wake_fd, int sock, int timeout_ms) {
  struct pollfd p[2];
  int n = 0;
  if (wake_fd >= 0) p[n++] = (struct pollfd){wake_fd, POLLIN, 0};
  int si = -1;
  if (sock >= 0) {
    si = n;
    p[n++] = (struct pollfd){sock, POLLRDHUP, 0};
  }
  for (;;) {
    int rc = poll(p, (nfds_t)n, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return 0;
    if (si >= 0 && (p[si].revents & (POLLRDHUP | POLLHUP | POLLERR))) return -1;
    return 1;
  }
}

/* Go's syscall error text: strerror in lower case. */
void envd_errno_text(int err, char *out, size_t n) {
  snprintf(out, n, "%s", strerror(err));
  if (out[0] >= 'A' && out[0] <= 'Z' && !(out[1] >= 'A' && out[1] <= 'Z'))
    out[0] = (char)(out[0] - 'A' + 'a');
}
