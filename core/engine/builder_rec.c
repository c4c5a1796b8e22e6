/* E2B's Template builder records (builder_rec.h): the codec.
 *
 *   {"version": 1, "templateID", "name", "cpuCount", "memoryMB",
 *    "updatedAt": ms,
 *    "tags":   [{"tag", "buildID", "ours", "createdAt": ms}],
 *    "builds": [{"buildID", "status", "reason": text|null,
 *                "reasonStep": n (-1 none), "ours", "tags": [text],
 *                "createdAt", "updatedAt", "finishedAt": ms (0 not yet),
 *                "logEntries": [{"timestamp", "level", "message"}]}]}
 *
 * Reading checks every field (a template id of 20 letters and digits,
 * names and tags as the API takes them, a known status, the bounds) and
 * refuses the whole record otherwise: a record is written whole (rename),
 * so a bad one is corrupt or foreign, not half of ours.
 * SPDX-License-Identifier: Apache-2.0 */
#include "builder_rec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"

void brec_build_free(bbuild *x) {
  if (!x) return;
  cJSON_Delete(x->entries);
  free(x->reason);
  for (size_t i = 0; i < x->ntags; i++) free(x->tags[i]);
  free(x->tags);
  free(x);
}

void brec_free(btmpl *t) {
  if (!t) return;
  while (t->builds) {
    bbuild *x = t->builds;
    t->builds = x->next;
    brec_build_free(x);
  }
  free(t);
}

int brec_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 63) return 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9'))) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
      return 0;
  return 1;
}

int brec_tag_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 128) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || strchr("._-", s[i])))
      return 0;
  return 1;
}

static int id_ok(const char *s) {
  if (strlen(s) != BREC_ID_LEN) return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
      return 0;
  return 1;
}

/* A build id (a UUID) or our build id: 1..39 of a-z A-Z 0-9 - _. */
static int bid_ok(const char *s, int empty_ok) {
  size_t n = strlen(s);
  if (n > 39 || (!n && !empty_ok)) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_'))
      return 0;
  return 1;
}

static int status_ok(const char *s) {
  return !strcmp(s, "waiting") || !strcmp(s, "building") || !strcmp(s, "ready") ||
         !strcmp(s, "error");
}

static const char *msg_of(const cJSON *en) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(en, "message");
  return cJSON_IsString(m) ? m->valuestring : "";
}

/* The message of en cut to BREC_LOG_LINE bytes (at a UTF-8 boundary). */
static void cut_line(cJSON *en) {
  cJSON *m = cJSON_GetObjectItemCaseSensitive(en, "message");
  if (!cJSON_IsString(m) || strlen(m->valuestring) <= BREC_LOG_LINE) return;
  size_t n = BREC_LOG_LINE - 20;
  const unsigned char *s = (const unsigned char *)m->valuestring;
  while (n > 0 && (s[n] & 0xc0) == 0x80) n--;
  char *c = malloc(n + 20);
  if (!c) return;
  memcpy(c, s, n);
  memcpy(c + n, " [line cut]", 12);
  cJSON_SetValuestring(m, c);
  free(c);
}

void brec_trim_log(bbuild *x) {
  int n = cJSON_GetArraySize(x->entries);
  size_t bytes = 0;
  cJSON *en;
  cJSON_ArrayForEach(en, x->entries) {
    cut_line(en);
    bytes += strlen(msg_of(en));
  }
  if (n <= BREC_LOG_ENTRIES && bytes <= BREC_LOG_BYTES) return;
  /* the head, then the newest entries that fit in what is left */
  int head = n < BREC_LOG_HEAD ? n : BREC_LOG_HEAD;
  size_t used = 0;
  for (int i = 0; i < head; i++) used += strlen(msg_of(cJSON_GetArrayItem(x->entries, i)));
  int from = n; /* the first tail entry kept */
  while (from > head && n - from + head + 1 < BREC_LOG_ENTRIES) {
    size_t l = strlen(msg_of(cJSON_GetArrayItem(x->entries, from - 1)));
    if (used + l > BREC_LOG_BYTES - 200) break;
    used += l;
    from--;
  }
  int dropped = from - head;
  if (dropped <= 0) return;
  cJSON *keep = cJSON_CreateArray();
  if (!keep) return;
  for (int i = 0; i < n; i++) {
    if (i == head) {
      char msg[200], ts[40] = "";
      const cJSON *t =
          cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(x->entries, from), "timestamp");
      snprintf(ts, sizeof ts, "%s", cJSON_IsString(t) ? t->valuestring : "");
      snprintf(msg, sizeof msg,
               "[%d log lines left out: a build keeps its first %d lines and its newest, at "
               "most %d lines and %u KiB]",
               dropped, BREC_LOG_HEAD, BREC_LOG_ENTRIES, BREC_LOG_BYTES >> 10);
      cJSON *m = cJSON_CreateObject();
      cJSON_AddStringToObject(m, "timestamp", ts);
      cJSON_AddStringToObject(m, "message", msg);
      cJSON_AddStringToObject(m, "level", "warn");
      cJSON_AddItemToArray(keep, m);
    }
    if (i >= head && i < from) continue;
    cJSON_AddItemToArray(keep, cJSON_Duplicate(cJSON_GetArrayItem(x->entries, i), 1));
  }
  cJSON_Delete(x->entries);
  x->entries = keep;
}

static cJSON *strings(char *const *v, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
  return a;
}

cJSON *brec_to_json(const btmpl *t) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddNumberToObject(j, "version", 1);
  cJSON_AddStringToObject(j, "templateID", t->id);
  cJSON_AddStringToObject(j, "name", t->name);
  cJSON_AddNumberToObject(j, "cpuCount", t->cpu);
  cJSON_AddNumberToObject(j, "memoryMB", t->memory_mb);
  asbi_pj_add_i64(j, "updatedAt", t->updated_ms);
  cJSON *tags = cJSON_AddArrayToObject(j, "tags");
  for (size_t i = 0; i < t->ntags; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tag", t->tags[i].tag);
    cJSON_AddStringToObject(o, "buildID", t->tags[i].build_id);
    cJSON_AddStringToObject(o, "ours", t->tags[i].ours);
    asbi_pj_add_i64(o, "createdAt", t->tags[i].at_ms);
    cJSON_AddItemToArray(tags, o);
  }
  cJSON *builds = cJSON_AddArrayToObject(j, "builds");
  for (const bbuild *x = t->builds; x; x = x->next) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "buildID", x->id);
    cJSON_AddStringToObject(o, "status", x->status);
    if (x->reason)
      cJSON_AddStringToObject(o, "reason", x->reason);
    else
      cJSON_AddNullToObject(o, "reason");
    cJSON_AddNumberToObject(o, "reasonStep", x->reason_step);
    cJSON_AddStringToObject(o, "ours", x->ours);
    cJSON_AddItemToObject(o, "tags", strings(x->tags, x->ntags));
    asbi_pj_add_i64(o, "createdAt", x->created_ms);
    asbi_pj_add_i64(o, "updatedAt", x->updated_ms);
    asbi_pj_add_i64(o, "finishedAt", x->finished_ms);
    cJSON_AddItemToObject(o, "logEntries",
                          x->entries ? cJSON_Duplicate(x->entries, 1) : cJSON_CreateArray());
    cJSON_AddItemToArray(builds, o);
  }
  return j;
}

/* The string field k of o into out (size n): 0, or -1 if absent, not a
 * string or too long. */
static int get_str(const cJSON *o, const char *k, char *out, size_t n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= n) return -1;
  snprintf(out, n, "%s", v->valuestring);
  return 0;
}

/* A time in ms (proto3's int64: a string or a number; absent = 0, as
 * asbi_pj_add_i64 leaves a 0 out). */
static int get_ms(const cJSON *o, const char *k, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  *out = 0;
  if (!v) return 0;
  if (!cJSON_IsNumber(v) && !cJSON_IsString(v)) return -1;
  return asbi_pj_get_i64(o, k, out) || *out < 0 ? -1 : 0;
}

static int get_int(const cJSON *o, const char *k, int lo, int hi, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
      v->valuedouble != (double)(int)v->valuedouble)
    return -1;
  *out = (int)v->valuedouble;
  return 0;
}

#define BAD(...)                                 \
  do {                                           \
    if (why) snprintf(why, whylen, __VA_ARGS__); \
    goto bad;                                    \
  } while (0)

static bbuild *build_from(const cJSON *o, const char *stopping, int *interrupted, char *why,
                          size_t whylen) {
  bbuild *x = calloc(1, sizeof *x);
  if (!x) BAD("out of memory");
  x->reason_step = -1;
  if (!cJSON_IsObject(o)) BAD("a build is not an object");
  if (get_str(o, "buildID", x->id, sizeof x->id) || !bid_ok(x->id, 0)) BAD("a build's buildID");
  if (get_str(o, "status", x->status, sizeof x->status) || !status_ok(x->status))
    BAD("build %s: status", x->id);
  if (get_str(o, "ours", x->ours, sizeof x->ours) || !bid_ok(x->ours, 1))
    BAD("build %s: ours", x->id);
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "reason");
  if (cJSON_IsString(rs)) {
    if (!(x->reason = asbi_strdup(rs->valuestring))) BAD("out of memory");
  } else if (rs && !cJSON_IsNull(rs)) {
    BAD("build %s: reason", x->id);
  }
  if (get_int(o, "reasonStep", -1, 1 << 20, &x->reason_step)) BAD("build %s: reasonStep", x->id);
  if (get_ms(o, "createdAt", &x->created_ms) || get_ms(o, "updatedAt", &x->updated_ms) ||
      get_ms(o, "finishedAt", &x->finished_ms))
    BAD("build %s: its times", x->id);
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(o, "tags"), *it;
  int nt = cJSON_GetArraySize(tags);
  if (!cJSON_IsArray(tags) || nt > BREC_MAX_TAGS + 1) BAD("build %s: tags", x->id);
  if (!(x->tags = calloc((size_t)nt + 1, sizeof *x->tags))) BAD("out of memory");
  cJSON_ArrayForEach(it, tags) {
    if (!cJSON_IsString(it) || !brec_tag_ok(it->valuestring)) BAD("build %s: a tag", x->id);
    if (!(x->tags[x->ntags] = asbi_strdup(it->valuestring))) BAD("out of memory");
    x->ntags++;
  }
  const cJSON *ents = cJSON_GetObjectItemCaseSensitive(o, "logEntries");
  if (!cJSON_IsArray(ents)) BAD("build %s: logEntries", x->id);
  if (!(x->entries = cJSON_CreateArray())) BAD("out of memory");
  cJSON_ArrayForEach(it, ents) {
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(it, "timestamp");
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(it, "level");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "message");
    if (!cJSON_IsString(ts) || !cJSON_IsString(lv) || !cJSON_IsString(m) ||
        strlen(ts->valuestring) > 39 || strlen(lv->valuestring) > 15)
      BAD("build %s: a log entry", x->id);
    cJSON *e = cJSON_CreateObject();
    if (!e) BAD("out of memory");
    cJSON_AddItemToArray(x->entries, e);
    cJSON_AddStringToObject(e, "timestamp", ts->valuestring);
    cJSON_AddStringToObject(e, "message", m->valuestring);
    cJSON_AddStringToObject(e, "level", lv->valuestring);
  }
  if (!strcmp(x->status, "building")) {
    /* its engine ended before the build did */
    (*interrupted)++;
    char ts[40];
    int64_t now = asbi_unix_ms();
    asbi_rfc3339_ms(now, ts);
    snprintf(x->status, sizeof x->status, "error");
    free(x->reason);
    if (!(x->reason = asbi_strdup(stopping))) BAD("out of memory");
    x->reason_step = -1;
    x->updated_ms = x->finished_ms = now;
    cJSON *e = cJSON_CreateObject();
    if (!e) BAD("out of memory");
    cJSON_AddItemToArray(x->entries, e);
    cJSON_AddStringToObject(e, "timestamp", ts);
    cJSON_AddStringToObject(e, "message", stopping);
    cJSON_AddStringToObject(e, "level", "error");
  }
  brec_trim_log(x);
  return x;
bad:
  brec_build_free(x);
  return NULL;
}

btmpl *brec_from_json(const char *text, size_t len, const char *stopping, char *why,
                      size_t whylen) {
  btmpl *t = NULL;
  cJSON *j = len <= BREC_FILE_MAX ? asbi_pj_parse(text, len, NULL) : NULL;
  if (!cJSON_IsObject(j)) BAD("not a JSON object");
  int version = 0;
  if (get_int(j, "version", 1, 1, &version)) BAD("not a version 1 record");
  if (!(t = calloc(1, sizeof *t))) BAD("out of memory");
  if (get_str(j, "templateID", t->id, sizeof t->id) || !id_ok(t->id)) BAD("templateID");
  if (get_str(j, "name", t->name, sizeof t->name) || !brec_name_ok(t->name)) BAD("name");
  if (get_int(j, "cpuCount", 1, 64, &t->cpu) || get_int(j, "memoryMB", 64, 1 << 20, &t->memory_mb))
    BAD("cpuCount or memoryMB");
  if (get_ms(j, "updatedAt", &t->updated_ms)) BAD("updatedAt");
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(j, "tags"), *it;
  if (!cJSON_IsArray(tags) || cJSON_GetArraySize(tags) > BREC_MAX_TAGS) BAD("tags");
  cJSON_ArrayForEach(it, tags) {
    btag *g = &t->tags[t->ntags];
    if (!cJSON_IsObject(it) || get_str(it, "tag", g->tag, sizeof g->tag) || !brec_tag_ok(g->tag) ||
        get_str(it, "buildID", g->build_id, sizeof g->build_id) || !bid_ok(g->build_id, 0) ||
        get_str(it, "ours", g->ours, sizeof g->ours) || !bid_ok(g->ours, 1) ||
        get_ms(it, "createdAt", &g->at_ms))
      BAD("a tag");
    for (size_t k = 0; k < t->ntags; k++)
      if (!strcmp(t->tags[k].tag, g->tag)) BAD("tag %s twice", g->tag);
    t->ntags++;
  }
  const cJSON *builds = cJSON_GetObjectItemCaseSensitive(j, "builds");
  if (!cJSON_IsArray(builds) || cJSON_GetArraySize(builds) > BREC_MAX_BUILDS_READ) BAD("builds");
  bbuild **tail = &t->builds;
  cJSON_ArrayForEach(it, builds) {
    bbuild *x = build_from(it, stopping, &t->interrupted, why, whylen);
    if (!x) goto bad;
    for (bbuild *y = t->builds; y; y = y->next)
      if (!strcmp(y->id, x->id)) {
        brec_build_free(x);
        BAD("build %s twice", y->id);
      }
    *tail = x;
    tail = &x->next;
  }
  cJSON_Delete(j);
  return t;
bad:
  cJSON_Delete(j);
  brec_free(t);
  return NULL;
}
