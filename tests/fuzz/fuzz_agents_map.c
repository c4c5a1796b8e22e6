/* Fuzz the agents service's CLI event mappers (core/server/agents_cli.c):
 * what a coding-agent CLI prints — and so, through it, what a model makes
 * it print — mapped onto the unified events. Input: [agent selector][JSON
 * lines...], fed line by line to the selected agent's mapper as one turn,
 * the way the server's turn_line does (a line starting with '{' is parsed
 * with cJSON; the rest are not events). The corpus holds the real CLIs'
 * events of a tool-call turn and a failing turn (captured from e2e.agents'
 * native fields).
 *
 * The server's event log (agents.c: asbs_emit and the native id) is
 * replaced here by a recorder that checks each event's shape. Invariants:
 * a type is a known one; fields are an object whose members have names and
 * never "seq"/"type"; a tool.* event's call_id and a file.changed's path
 * are strings (or null); exit_code is a number or null. SPDX-License-Identifier: Apache-2.0 */
#include "fuzz.h"
#include "server/agents.h"

static const char *const TYPES[] = {
    "session.started", "message.delta", "message", "reasoning", "tool.started", "tool.output",
    "tool.completed",  "file.changed",  "usage",   "error",     "native",       NULL};

static char *native_id;

static int known(const char *type) {
  for (const char *const *t = TYPES; *t; t++)
    if (!strcmp(*t, type)) return 1;
  return 0;
}

static void str_or_null(const cJSON *f, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, key);
  FUZZ_CHECK(!v || cJSON_IsString(v) || cJSON_IsNull(v));
}

void asbs_emit(asbs_map *m, const char *type, cJSON *fields, const cJSON *native) {
  (void)m;
  FUZZ_CHECK(type && known(type));
  if (fields) {
    FUZZ_CHECK(cJSON_IsObject(fields));
    for (const cJSON *it = fields->child; it; it = it->next) {
      FUZZ_CHECK(it->string != NULL);
      FUZZ_CHECK(strcmp(it->string, "seq") && strcmp(it->string, "type"));
    }
    if (!strncmp(type, "tool.", 5)) str_or_null(fields, "call_id");
    if (!strcmp(type, "tool.completed")) {
      const cJSON *ec = cJSON_GetObjectItemCaseSensitive(fields, "exit_code");
      FUZZ_CHECK(!ec || cJSON_IsNumber(ec) || cJSON_IsNull(ec));
      str_or_null(fields, "command");
    }
    if (!strcmp(type, "file.changed")) {
      const cJSON *p = cJSON_GetObjectItemCaseSensitive(fields, "path");
      FUZZ_CHECK(cJSON_IsString(p));
      str_or_null(fields, "diff");
    }
    /* what the server does next: the event as text */
    char *text = cJSON_PrintUnformatted(fields);
    free(text);
  }
  if (native) {
    char *text = cJSON_PrintUnformatted(native);
    free(text);
  }
  cJSON_Delete(fields);
}

void asbs_set_native_id(asbs_map *m, const char *id) {
  (void)m;
  FUZZ_CHECK(id != NULL);
  if (!native_id) native_id = strdup(id);
}

const char *asbs_native_id(asbs_map *m) {
  (void)m;
  return native_id;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const asbs_agent_spec *spec = &asbs_agent_specs[data[0] % asbs_agent_nspecs];
  asbs_map m;
  memset(&m, 0, sizeof m);
  m.turn = 1;
  const char *p = (const char *)data + 1, *end = (const char *)data + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    while (len && (*p == ' ' || *p == '\t')) {
      p++;
      len--;
    }
    if (len && p[0] == '{') {
      cJSON *ev = cJSON_ParseWithLength(p, len);
      if (ev) {
        spec->map(&m, ev);
        cJSON_Delete(ev);
      }
    }
    p += len + (nl ? 1 : 0);
  }
  /* what turn_main frees after the turn */
  cJSON_Delete(m.calls);
  free(m.out_id);
  free(native_id);
  native_id = NULL;
  return 0;
}
