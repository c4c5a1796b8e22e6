/* How replies become asb_status codes and asb_error fields: Connect error
 * bodies, E2B API bodies, plain text, 429 with Retry-After, and the
 * engine's sandbox_not_found / gone bodies.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "client/envd.h"
#include "testing.h"

static int map(long status, const char *body, const char *retry_after) {
  asbi_http_resp r = ASBI_HTTP_RESP_INIT;
  r.status = status;
  asbi_buf_init(&r.body, 0);
  asbi_buf_puts(&r.body, body);
  if (retry_after) {
    r.hdr_names = malloc(sizeof(char *));
    r.hdr_values = malloc(sizeof(char *));
    r.hdr_names[0] = strdup("retry-after");
    r.hdr_values[0] = strdup(retry_after);
    r.nhdrs = r.hdr_cap = 1;
  }
  int rc = asbi_map_http_error(&r, "op");
  asbi_http_resp_free(&r);
  return rc;
}

TEST(connect_error_bodies_by_code_name) {
  CHECK_INT(map(404, "{\"code\":\"not_found\",\"message\":\"no such file\"}", NULL), ASB_ENOTFOUND);
  CHECK_STR(asb_error_last()->remote_code, "not_found");
  CHECK(strstr(asb_error_last()->message, "no such file") != NULL);
  CHECK_INT(asb_error_last()->http_status, 404);
  CHECK_INT(map(400, "{\"code\":\"invalid_argument\",\"message\":\"bad\"}", NULL), ASB_EINVAL);
  CHECK_INT(map(401, "{\"code\":\"unauthenticated\",\"message\":\"x\"}", NULL), ASB_EAUTH);
  CHECK_INT(map(403, "{\"code\":\"permission_denied\",\"message\":\"x\"}", NULL), ASB_EPERM);
  CHECK_INT(map(409, "{\"code\":\"already_exists\",\"message\":\"x\"}", NULL), ASB_EEXISTS);
  CHECK_INT(map(429, "{\"code\":\"resource_exhausted\",\"message\":\"x\"}", NULL), ASB_ENOSPACE);
  CHECK_INT(map(504, "{\"code\":\"deadline_exceeded\",\"message\":\"x\"}", NULL), ASB_ETIMEOUT);
  CHECK_INT(map(503, "{\"code\":\"unavailable\",\"message\":\"x\"}", NULL), ASB_ETIMEOUT);
  CHECK_INT(map(501, "{\"code\":\"unimplemented\",\"message\":\"x\"}", NULL), ASB_EUNSUPPORTED);
}

TEST(e2b_api_bodies_by_status) {
  CHECK_INT(map(400, "{\"code\":400,\"message\":\"bad request\"}", NULL), ASB_EINVAL);
  CHECK_STR(asb_error_last()->remote_code, "400");
  CHECK_INT(map(401, "{\"code\":401,\"message\":\"Invalid API key\"}", NULL), ASB_EAUTH);
  CHECK_INT(map(404, "{\"code\":404,\"message\":\"template x not found\"}", NULL), ASB_ENOTFOUND);
  CHECK_INT(map(507, "{\"code\":507,\"message\":\"disk full\"}", NULL), ASB_ENOSPACE);
  CHECK_INT(map(500, "{\"code\":500,\"message\":\"boom\"}", NULL), ASB_ERROR);
  CHECK_INT(map(502, "bad gateway", NULL), ASB_ETIMEOUT); /* E2B: unreachable */
  CHECK_STR(asb_error_last()->message, "op: bad gateway (HTTP 502)");
}

TEST(rate_limit_carries_retry_after) {
  CHECK_INT(map(429, "{\"code\":429,\"message\":\"slow down\"}", "17"), ASB_ERATELIMIT);
  CHECK_INT(asb_error_last()->retry_after, 17);
  CHECK_INT(map(429, "{\"code\":429,\"message\":\"slow down\"}", NULL), ASB_ERATELIMIT);
  CHECK_INT(asb_error_last()->retry_after, -1);
}

TEST(sandbox_not_found_and_gone) {
  CHECK_INT(
      map(404, "{\"code\":404,\"message\":\"sandbox x not found\",\"sandboxID\":\"x\"}", NULL),
      ASB_ESANDBOXNOTFOUND);
  CHECK_INT(
      map(404, "{\"code\":404,\"message\":\"gone\",\"sandboxID\":\"x\",\"reason\":\"oom\"}", NULL),
      ASB_ESANDBOXGONE);
  CHECK_STR(asb_error_last()->reason, "oom");
  /* The router's 502 for an unknown sandbox, and one that ended. */
  CHECK_INT(
      map(502,
          "{\"code\":502,\"message\":\"m\",\"sandboxID\":\"x\",\"error\":\"sandbox_not_found\"}",
          NULL),
      ASB_ESANDBOXNOTFOUND);
  CHECK_INT(
      map(502,
          "{\"code\":502,\"message\":\"m\",\"sandboxID\":\"x\",\"error\":\"sandbox_not_found\","
          "\"reason\":\"timeout\"}",
          NULL),
      ASB_ESANDBOXGONE);
  CHECK_STR(asb_error_last()->reason, "timeout");
  /* A closed port is not a missing sandbox. */
  CHECK_INT(
      map(502,
          "{\"code\":502,\"message\":\"nothing is listening on port 8000\",\"sandboxID\":\"x\","
          "\"error\":\"port_closed\"}",
          NULL),
      ASB_ETIMEOUT);
  CHECK(strstr(asb_error_last()->message, "8000") != NULL);
}

TEST(malformed_bodies_do_not_confuse) {
  CHECK_INT(map(404, "", NULL), ASB_ENOTFOUND);
  CHECK_INT(map(400, "{\"code\":", NULL), ASB_EINVAL);
  CHECK_INT(map(418, "{\"code\":[1,2]}", NULL), ASB_ERROR);
  CHECK_INT(map(401, "\xff\xfe binary", NULL), ASB_EAUTH);
}

int main(void) {
  RUN(connect_error_bodies_by_code_name);
  RUN(e2b_api_bodies_by_status);
  RUN(rate_limit_carries_retry_after);
  RUN(sandbox_not_found_and_gone);
  RUN(malformed_bodies_do_not_confuse);
  TEST_MAIN_END();
}
