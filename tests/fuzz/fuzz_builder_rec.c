/* Fuzz the records E2B's Template builder API keeps across engine runs
 * (core/engine/builder_rec.c): a record file as the engine reads it at
 * start. Invariants: it is read or refused with a message; what is read
 * has a 20-character template id, a valid name and tags, builds that are
 * not "building" (an engine that ended stopped them), logs within the
 * bounds; written back and read again it is the same record (a record the
 * engine writes is one it reads). SPDX-License-Identifier: Apache-2.0 */
#include "engine/builder_rec.h"
#include "fuzz.h"
#include "proto/pjson.h"

static char *text_of(const btmpl *t) {
  cJSON *j = brec_to_json(t);
  FUZZ_CHECK(j != NULL);
  char *s = asbi_pj_print(j);
  FUZZ_CHECK(s != NULL);
  cJSON_Delete(j);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char why[256] = "";
  btmpl *t = brec_from_json((const char *)data, size, "stopped", why, sizeof why);
  if (!t) {
    FUZZ_CHECK(why[0] != '\0');
    return 0;
  }
  FUZZ_CHECK(strlen(t->id) == BREC_ID_LEN);
  FUZZ_CHECK(brec_name_ok(t->name));
  FUZZ_CHECK(t->ntags <= BREC_MAX_TAGS);
  for (size_t i = 0; i < t->ntags; i++) FUZZ_CHECK(brec_tag_ok(t->tags[i].tag));
  for (const bbuild *x = t->builds; x; x = x->next) {
    FUZZ_CHECK(strcmp(x->status, "building") != 0);
    FUZZ_CHECK(cJSON_GetArraySize(x->entries) <= BREC_LOG_ENTRIES);
    size_t bytes = 0;
    const cJSON *en;
    cJSON_ArrayForEach(en, x->entries) {
      const char *m = cJSON_GetObjectItemCaseSensitive(en, "message")->valuestring;
      FUZZ_CHECK(strlen(m) <= BREC_LOG_LINE);
      bytes += strlen(m);
    }
    FUZZ_CHECK(bytes <= BREC_LOG_BYTES);
  }
  char *a = text_of(t);
  btmpl *u = brec_from_json(a, strlen(a), "stopped", why, sizeof why);
  if (!u) fprintf(stderr, "%s\n%s\n", a, why);
  FUZZ_CHECK(u != NULL);
  char *b = text_of(u);
  FUZZ_CHECK(!strcmp(a, b));
  free(a);
  free(b);
  brec_free(t);
  brec_free(u);
  return 0;
}
