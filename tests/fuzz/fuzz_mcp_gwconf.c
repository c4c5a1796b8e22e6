/* Fuzz mcp-gateway's --config reader (core/mcp/gateway/gwconf.c).
 * Invariants: any input gives a config or an error message, never both;
 * a config has 1..GW_MAX_SERVERS servers, each keyed github/<owner>/<repo>
 * with a non-empty runCmd, a tool prefix of [A-Za-z0-9_-] unique in the
 * config, and envs of the form NAME=value with a valid NAME.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "mcp/gateway/gwconf.h"

static int prefix_ok(const char *p) {
  if (!*p) return 0;
  for (; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '-'))
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gw_conf c;
  char err[1024];
  err[0] = 0;
  int rc = gw_conf_parse((const char *)data, size, &c, err, sizeof err);
  if (rc != 0) {
    FUZZ_CHECK(err[0] != 0);
    FUZZ_CHECK(c.n == 0 && c.servers == NULL);
    return 0;
  }
  FUZZ_CHECK(c.n >= 1 && c.n <= GW_MAX_SERVERS);
  for (size_t i = 0; i < c.n; i++) {
    const gw_server_conf *s = &c.servers[i];
    FUZZ_CHECK(strncmp(s->key, "github/", 7) == 0);
    FUZZ_CHECK(s->run_cmd && s->run_cmd[0]);
    FUZZ_CHECK(!s->install_cmd || s->install_cmd[0]);
    FUZZ_CHECK(prefix_ok(s->prefix));
    for (size_t j = 0; j < i; j++) FUZZ_CHECK(strcmp(c.servers[j].prefix, s->prefix) != 0);
    for (char **e = s->envs; *e; e++) {
      const char *eq = strchr(*e, '=');
      FUZZ_CHECK(eq && eq > *e && !(**e >= '0' && **e <= '9'));
    }
  }
  gw_conf_free(&c);
  return 0;
}
