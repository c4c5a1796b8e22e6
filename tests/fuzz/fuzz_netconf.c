/* Fuzz the client's shape check of E2B's network config (proto/netconf.c).
 * Input: [flags][json...], flags bit 0 = an update's config. Invariants:
 * the result is 0 or -1; on -1 nothing is returned and the message is a
 * NUL-terminated, non-empty sentence; on 0 an object of only the members
 * the mode allows, each of its type, which printed and checked again is
 * accepted and prints the same; an accepted update's config is accepted at create.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "proto/netconf.h"
#include "proto/pjson.h"

static const char *const create_only[] = {"allowPublicTraffic", "maskRequestHost"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int update = data[0] & 1;
  const char *json = (const char *)data + 1;
  size_t len = size - 1;
  char err[128];
  memset(err, 'x', sizeof err);
  cJSON *out = (cJSON *)1;
  int rc = asbi_netconf_parse(json, len, update, &out, err, sizeof err);
  FUZZ_CHECK(rc == 0 || rc == -1);
  if (rc == -1) {
    FUZZ_CHECK(out == NULL);
    FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
    return 0;
  }
  FUZZ_CHECK(cJSON_IsObject(out));
  const cJSON *m;
  cJSON_ArrayForEach(m, out) {
    for (size_t i = 0; update && i < sizeof create_only / sizeof create_only[0]; i++)
      FUZZ_CHECK(strcmp(m->string, create_only[i]) != 0);
  }
  char *text = asbi_pj_print_exact(out);
  if (text) {
    cJSON *again = NULL;
    char err2[128];
    FUZZ_CHECK(asbi_netconf_parse(text, strlen(text), update, &again, err2, sizeof err2) == 0);
    /* compared as text: cJSON_Compare finds inf unequal to itself */
    char *text2 = asbi_pj_print_exact(again);
    FUZZ_CHECK(!text2 || strcmp(text, text2) == 0);
    free(text2);
    cJSON_Delete(again);
    if (update) {
      FUZZ_CHECK(asbi_netconf_parse(text, strlen(text), 0, &again, err2, sizeof err2) == 0);
      cJSON_Delete(again);
    }
    free(text);
  }
  cJSON_Delete(out);
  return 0;
}
