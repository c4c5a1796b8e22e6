/* Unit tests of the records E2B's Template builder API keeps across engine
 * runs (core/engine/builder_rec.c): a record written and read back, a
 * build under way coming back as "error", the log's bounds, bad records.
 * SPDX-License-Identifier: Apache-2.0 */
#include "engine/builder_rec.h"
#include "proto/pjson.h"
#include "testing.h"
#include "util/util.h"

static void add_entry(bbuild *x, const char *msg) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "timestamp", "2026-12-02T05:00:00.000Z");
  cJSON_AddStringToObject(e, "message", msg);
  cJSON_AddStringToObject(e, "level", "info");
  cJSON_AddItemToArray(x->entries, e);
}

static bbuild *new_build(const char *id, const char *status) {
  bbuild *x = calloc(1, sizeof *x);
  snprintf(x->id, sizeof x->id, "%s", id);
  snprintf(x->status, sizeof x->status, "%s", status);
  x->entries = cJSON_CreateArray();
  x->reason_step = -1;
  x->tags = calloc(2, sizeof *x->tags);
  x->tags[x->ntags++] = asbi_strdup("default");
  x->created_ms = x->updated_ms = 1764650000000LL;
  return x;
}

static char *text_of(const btmpl *t) {
  cJSON *j = brec_to_json(t);
  char *s = asbi_pj_print(j);
  cJSON_Delete(j);
  return s;
}

static const char *msg_at(const bbuild *x, int i) {
  return cJSON_GetObjectItem(cJSON_GetArrayItem(x->entries, i), "message")->valuestring;
}

TEST(round_trip_and_interrupted) {
  btmpl *t = calloc(1, sizeof *t);
  snprintf(t->id, sizeof t->id, "abcdefghij0123456789");
  snprintf(t->name, sizeof t->name, "my-app");
  t->cpu = 2;
  t->memory_mb = 1024;
  snprintf(t->tags[0].tag, sizeof t->tags[0].tag, "v1");
  snprintf(t->tags[0].build_id, sizeof t->tags[0].build_id, "b-ready");
  snprintf(t->tags[0].ours, sizeof t->tags[0].ours, "ours1");
  t->tags[0].at_ms = 1764650000000LL;
  t->ntags = 1;
  bbuild *r = new_build("b-ready", "ready");
  snprintf(r->ours, sizeof r->ours, "ours1");
  r->finished_ms = 1764650001000LL;
  add_entry(r, "==> step 1/1: RUN true (E2B's step 1)");
  bbuild *w = new_build("b-running", "building"); /* finishedAt 0: left out when written */
  add_entry(w, "building");
  r->next = w;
  t->builds = r;
  char *a = text_of(t);
  char why[256] = "";
  btmpl *u = brec_from_json(a, strlen(a), "the engine stopped", why, sizeof why);
  REQUIRE(u);
  CHECK_STR(u->name, "my-app");
  CHECK_INT((int)u->ntags, 1);
  CHECK_STR(u->tags[0].ours, "ours1");
  CHECK_INT(u->interrupted, 1);
  CHECK_STR(u->builds->status, "ready");
  CHECK_STR(msg_at(u->builds, 0), "==> step 1/1: RUN true (E2B's step 1)");
  bbuild *w2 = u->builds->next;
  REQUIRE(w2);
  CHECK_STR(w2->status, "error");
  CHECK_STR(w2->reason, "the engine stopped");
  CHECK_INT(cJSON_GetArraySize(w2->entries), 2);
  CHECK_STR(msg_at(w2, 1), "the engine stopped");
  CHECK(w2->finished_ms > 0);
  /* written again and read: the same */
  char *b = text_of(u);
  btmpl *v = brec_from_json(b, strlen(b), "the engine stopped", why, sizeof why);
  REQUIRE(v);
  char *c = text_of(v);
  CHECK_STR(c, b);
  CHECK_INT(v->interrupted, 0);
  free(a);
  free(b);
  free(c);
  brec_free(t);
  brec_free(u);
  brec_free(v);
}

TEST(log_bounds) {
  bbuild *x = new_build("b1", "error");
  char line[64];
  for (int i = 0; i < 5000; i++) {
    snprintf(line, sizeof line, "line %d", i);
    add_entry(x, line);
  }
  brec_trim_log(x);
  int n = cJSON_GetArraySize(x->entries);
  CHECK_INT(n, BREC_LOG_ENTRIES);
  CHECK_STR(msg_at(x, 0), "line 0");
  CHECK_STR(msg_at(x, BREC_LOG_HEAD - 1), "line 99");
  CHECK(strstr(msg_at(x, BREC_LOG_HEAD), "[3001 log lines left out"));
  CHECK_STR(msg_at(x, BREC_LOG_HEAD + 1), "line 3101"); /* 100 + 1 + 1899 = 2000 */
  CHECK_STR(msg_at(x, n - 1), "line 4999");
  brec_trim_log(x); /* within the bounds now: unchanged */
  CHECK_INT(cJSON_GetArraySize(x->entries), n);
  brec_build_free(x);

  /* bytes: long lines are cut at 4 KiB (a UTF-8 boundary), the total kept under 512 KiB */
  x = new_build("b2", "error");
  char *big = malloc(20000);
  memset(big, 'a', 20000);
  memcpy(big + BREC_LOG_LINE - 21, "\xc3\xa9\xc3\xa9", 4); /* é é across the cut */
  big[19999] = '\0';
  for (int i = 0; i < 300; i++) add_entry(x, big);
  free(big);
  brec_trim_log(x);
  size_t bytes = 0;
  const cJSON *en;
  cJSON_ArrayForEach(en, x->entries) {
    const char *m = cJSON_GetObjectItem(en, "message")->valuestring;
    CHECK(strlen(m) <= BREC_LOG_LINE);
    CHECK(asbi_utf8_valid(m, strlen(m)));
    bytes += strlen(m);
  }
  CHECK(bytes <= BREC_LOG_BYTES);
  CHECK(strstr(msg_at(x, 0), " [line cut]"));
  CHECK(strstr(msg_at(x, BREC_LOG_HEAD), "log lines left out"));
  brec_build_free(x);
}

TEST(bad_records) {
  static const char *const bad[] = {
      "",
      "[]",
      "{\"version\": 2}",
      "{\"version\":1,\"templateID\":\"../../../etc/passwd00\",\"name\":\"x\",\"cpuCount\":1,"
      "\"memoryMB\":64,\"tags\":[],\"builds\":[]}",
      "{\"version\":1,\"templateID\":\"abcdefghij0123456789\",\"name\":\"Bad Name\","
      "\"cpuCount\":1,\"memoryMB\":64,\"tags\":[],\"builds\":[]}",
      "{\"version\":1,\"templateID\":\"abcdefghij0123456789\",\"name\":\"x\",\"cpuCount\":1,"
      "\"memoryMB\":64,\"tags\":[],\"builds\":[{\"buildID\":\"b\",\"status\":\"done\"}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char why[256] = "";
    btmpl *t = brec_from_json(bad[i], strlen(bad[i]), "stopped", why, sizeof why);
    CHECK(t == NULL);
    CHECK(why[0] != '\0');
    brec_free(t);
  }
}

int main(void) {
  RUN(round_trip_and_interrupted);
  RUN(log_bounds);
  RUN(bad_records);
  TEST_MAIN_END();
}
