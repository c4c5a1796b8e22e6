/* Fuzz template.yaml parsing (the engine parses untrusted build contexts).
 * Invariants: a spec comes back or an error with a message; an accepted
 * spec has a valid name, and every field the engine reads has its type.
 * SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "tmpl/tmpl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  asbi_tmpl_error err;
  cJSON *s = asbi_tmpl_parse((const char *)data, size, &err);
  if (!s) {
    FUZZ_CHECK(err.message[0] != '\0');
    FUZZ_CHECK(err.line >= 0 && err.column >= 0);
    char out[1024];
    asbi_tmpl_format_error(&err, "template.yaml", out, sizeof out);
    return 0;
  }
  const cJSON *name = cJSON_GetObjectItem(s, "name");
  FUZZ_CHECK(cJSON_IsString(name) && name->valuestring[0]);
  FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItem(s, "base")));
  FUZZ_CHECK(cJSON_IsObject(cJSON_GetObjectItem(s, "env")));
  FUZZ_CHECK(cJSON_IsArray(cJSON_GetObjectItem(s, "steps")));
  FUZZ_CHECK(cJSON_IsArray(cJSON_GetObjectItem(s, "commands")));
  const cJSON *res = cJSON_GetObjectItem(s, "resources");
  FUZZ_CHECK(cJSON_IsNumber(cJSON_GetObjectItem(res, "cpu")));
  FUZZ_CHECK(cJSON_IsNumber(cJSON_GetObjectItem(res, "memoryMB")));
  const cJSON *st;
  cJSON_ArrayForEach(st, cJSON_GetObjectItem(s, "steps")) {
    const cJSON *kind = cJSON_GetObjectItem(st, "kind");
    FUZZ_CHECK(cJSON_IsString(kind));
    if (!strcmp(kind->valuestring, "run"))
      FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItem(st, "cmd")));
    if (!strcmp(kind->valuestring, "copy")) {
      const cJSON *src = cJSON_GetObjectItem(st, "src"), *dest = cJSON_GetObjectItem(st, "dest");
      FUZZ_CHECK(cJSON_IsString(src) && src->valuestring[0] != '/');
      FUZZ_CHECK(cJSON_IsString(dest) && dest->valuestring[0] == '/');
    }
  }
  const cJSON *start = cJSON_GetObjectItem(s, "start"), *ready = cJSON_GetObjectItem(s, "ready");
  FUZZ_CHECK(cJSON_IsNull(ready) || !cJSON_IsNull(start));
  char *text = cJSON_PrintUnformatted(s);
  FUZZ_CHECK(text != NULL);
  free(text);
  cJSON_Delete(s);
  return 0;
}
