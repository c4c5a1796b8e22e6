/* Unit tests for envd's RPC plumbing (core/envd/rpc.c) and the HTTP side
 * of its errno mapping (hreq.c): errno -> Connect code, errno -> HTTP
 * status, Go's error text, Connect errors, stream envelopes (decoded with
 * the proto codec) and the stream wait. SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hreq.h"
#include "proto/connect.h"
#include "rpc.h"
#include "testing.h"

TEST(errno_to_connect_code) {
  static const struct {
    int err;
    const char *code;
  } t[] = {
      {ENOENT, "not_found"},
      {EACCES, "permission_denied"},
      {EPERM, "permission_denied"},
      {EROFS, "permission_denied"},
      {ENOSPC, "resource_exhausted"},
      {EDQUOT, "resource_exhausted"},
      {EEXIST, "already_exists"},
      {ENOTDIR, "invalid_argument"},
      {EISDIR, "invalid_argument"},
      {EINVAL, "invalid_argument"},
      {ENAMETOOLONG, "invalid_argument"},
      {ELOOP, "invalid_argument"},
      {EXDEV, "invalid_argument"},
      {ENOTEMPTY, "invalid_argument"},
      {EIO, "internal"},
      {EBADF, "internal"},
      {0, "internal"},
      {-1, "internal"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    const char *got = envd_errno_code(t[i].err);
    if (strcmp(got, t[i].code) != 0) ASBT_FAIL("errno %d: %s, want %s", t[i].err, got, t[i].code);
    /* every code is one of Connect's */
    CHECK(asbi_connect_code_valid(got));
  }
}

TEST(errno_to_http_status) {
  static const struct {
    int err;
    unsigned status;
  } t[] = {
      {ENOENT, 404}, {EACCES, 403},  {EPERM, 403},  {EROFS, 403},        {ENOSPC, 507},
      {EDQUOT, 507}, {ENOTDIR, 400}, {EISDIR, 400}, {ENAMETOOLONG, 400}, {ELOOP, 400},
      {EINVAL, 400}, {EEXIST, 500},  {EXDEV, 500},  {EIO, 500},          {0, 500},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (envd_errno_status(t[i].err) != t[i].status)
      ASBT_FAIL("errno %d: %u, want %u", t[i].err, envd_errno_status(t[i].err), t[i].status);
}

/* Go prints syscall errors as strerror with the first letter lowered,
 * unless the text starts with an acronym. */
TEST(errno_text) {
  char m[128];
  envd_errno_text(ENOENT, m, sizeof m);
  CHECK_STR(m, "no such file or directory");
  envd_errno_text(EACCES, m, sizeof m);
  CHECK_STR(m, "permission denied");
  envd_errno_text(EIO, m, sizeof m);
  CHECK_STR(m, "input/output error");
  char want[128];
  snprintf(want, sizeof want, "%s", strerror(EDOTDOT)); /* "RFS specific error" */
  envd_errno_text(EDOTDOT, m, sizeof m);
  CHECK_STR(m, want);
  envd_errno_text(ENOENT, m, 4); /* bounded */
  CHECK_STR(m, "no ");
}

TEST(err_set) {
  envd_err e = {0};
  envd_err_set(&e, "not_found", "process with pid %u not found", 42u);
  CHECK_STR(e.code, "not_found");
  CHECK_STR(e.msg, "process with pid 42 not found");
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  envd_err_set(&e, "internal", "%s", big);
  CHECK_INT(strlen(e.msg), sizeof e.msg - 1); /* truncated, terminated */
}

typedef struct got_env {
  int n;
  unsigned flags[4];
  char data[4][256];
} got_env;

static int on_env(void *ud, unsigned flags, const char *data, size_t len) {
  got_env *g = ud;
  if (g->n < 4) {
    g->flags[g->n] = flags;
    snprintf(g->data[g->n], sizeof g->data[g->n], "%.*s", (int)len, data);
  }
  g->n++;
  return 0;
}

static void decode(const asbi_buf *b, got_env *g) {
  memset(g, 0, sizeof *g);
  asbi_connect_dec d;
  asbi_connect_dec_init(&d, 1u << 20);
  CHECK_INT(asbi_connect_dec_feed(&d, b->data, b->len, on_env, g), 0);
  CHECK_INT(asbi_connect_dec_finish(&d), 0);
  asbi_connect_dec_free(&d);
}

TEST(envelopes) {
  asbi_buf b = ASBI_BUF_INIT;
  static const char msg[] = "{\"event\":{\"start\":{\"pid\":7}}}";
  CHECK_INT(envd_env_msg(&b, msg, sizeof msg - 1), 0);
  CHECK_INT(b.len, ASBI_CONNECT_HEADER_LEN + sizeof msg - 1);
  CHECK_INT(envd_env_end(&b, NULL, NULL), 0);
  got_env g;
  decode(&b, &g);
  CHECK_INT(g.n, 2);
  CHECK_INT(g.flags[0], 0);
  CHECK_STR(g.data[0], msg);
  CHECK_INT(g.flags[1], ASBI_CONNECT_FLAG_END_STREAM);
  CHECK_STR(g.data[1], "{}");
  asbi_buf_clear(&b);
  CHECK_INT(envd_env_end(&b, "deadline_exceeded", "context deadline exceeded"), 0);
  decode(&b, &g);
  CHECK_INT(g.n, 1);
  char *code = NULL, *message = NULL;
  CHECK_INT(asbi_connect_parse_end(g.data[0], strlen(g.data[0]), &code, &message), 1);
  CHECK_STR(code, "deadline_exceeded");
  CHECK_STR(message, "context deadline exceeded");
  free(code);
  free(message);
  asbi_buf_free(&b);
}

/* envd_wait: 1 when the wake fd is readable, 0 on timeout, -1 when the
 * client hung up (even with the wake fd readable too). */
TEST(wait) {
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  int sp[2];
  REQUIRE(ev >= 0);
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
  CHECK_INT(envd_wait(ev, sp[0], 0), 0);
  CHECK_INT(envd_wait(-1, -1, 0), 0);
  uint64_t one = 1;
  CHECK_INT(write(ev, &one, sizeof one), (long)sizeof one);
  CHECK_INT(envd_wait(ev, sp[0], -1), 1);
  CHECK_INT(envd_wait(ev, -1, 0), 1);
  /* data from the client is not a hang-up */
  CHECK_INT(write(sp[1], "x", 1), 1);
  uint64_t v;
  CHECK_INT(read(ev, &v, sizeof v), (long)sizeof v);
  CHECK_INT(envd_wait(ev, sp[0], 0), 0);
  close(sp[1]);
  CHECK_INT(envd_wait(ev, sp[0], -1), -1);
  CHECK_INT(write(ev, &one, sizeof one), (long)sizeof one);
  CHECK_INT(envd_wait(ev, sp[0], -1), -1);
  close(sp[0]);
  close(ev);
}

int main(void) {
  RUN(errno_to_connect_code);
  RUN(errno_to_http_status);
  RUN(errno_text);
  RUN(err_set);
  RUN(envelopes);
  RUN(wait);
  TEST_MAIN_END();
}
