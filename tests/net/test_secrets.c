/* net.egress.secrets: the secrets store (core/net/egress/secrets.c):
 * E2B's /secrets semantics (names case-insensitive and canonical lower
 * case, sec_ ids, versions, metadata limits, 409 on a taken name, 404),
 * no reply ever carrying a value, the file 0600 and kept across reopen,
 * ${e2b.secrets.<name>} resolution (unknown names fail, by id too).
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/egress/secrets.h"

static int fails;
#define CHECK(c)                                              \
  do {                                                        \
    if (!(c)) {                                               \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
      fails++;                                                \
    }                                                         \
  } while (0)

static int has_value(const cJSON *j, const char *v) {
  char *s = cJSON_PrintUnformatted(j);
  int r = s && strstr(s, v) != NULL;
  free(s);
  return r;
}

int main(void) {
  char dir[] = "/tmp/net-secrets-XXXXXX", path[128], err[256];
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/secrets.json", dir);
  asbn_secrets *s;
  CHECK(asbn_secrets_open(dir, &s, err, sizeof err) == 0);
  cJSON *info = NULL, *md = cJSON_CreateObject();
  cJSON_AddStringToObject(md, "team", "infra");
  CHECK(asbn_secrets_create(s, "OpenAI-Key", "sk-VALUE-1", md, &info, err, sizeof err) == 201);
  CHECK(info && !strcmp(cJSON_GetObjectItem(info, "name")->valuestring, "openai-key"));
  CHECK(!strncmp(cJSON_GetObjectItem(info, "secretID")->valuestring, "sec_", 4));
  CHECK(cJSON_GetObjectItem(info, "currentVersion")->valueint == 1);
  CHECK(!has_value(info, "sk-VALUE-1") && !cJSON_GetObjectItem(info, "value"));
  char id[64];
  snprintf(id, sizeof id, "%s", cJSON_GetObjectItem(info, "secretID")->valuestring);
  cJSON_Delete(info);
  CHECK(asbn_secrets_create(s, "openai-key", "x", NULL, NULL, err, sizeof err) == 409);
  CHECK(asbn_secrets_create(s, "sec_x", "x", NULL, NULL, err, sizeof err) == 400);
  CHECK(asbn_secrets_create(s, "bad name", "x", NULL, NULL, err, sizeof err) == 400);
  CHECK(asbn_secrets_create(s, "crlf", "a\r\nInjected: 1", NULL, NULL, err, sizeof err) == 400);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

  char *v = NULL;
  CHECK(asbn_secrets_resolve(s, "Bearer ${e2b.secrets.openai-key}!", &v) == 0 && v &&
        !strcmp(v, "Bearer sk-VALUE-1!"));
  asbn_secrets_wipe(v);
  CHECK(asbn_secrets_resolve(s, "${e2b.secrets.OPENAI-KEY}${e2b.secrets.openai-key}", &v) == 0 &&
        !strcmp(v, "sk-VALUE-1sk-VALUE-1"));
  asbn_secrets_wipe(v);
  CHECK(asbn_secrets_resolve(s, "plain", &v) == 0 && !strcmp(v, "plain"));
  asbn_secrets_wipe(v);
  CHECK(asbn_secrets_resolve(s, "${e2b.secrets.nope}", &v) == -1 && v == NULL);
  CHECK(asbn_secrets_resolve(s, "${e2b.secrets.openai-key", &v) == -1);
  CHECK(asbn_secrets_resolve(NULL, "${e2b.secrets.openai-key}", &v) == -1);

  CHECK(asbn_secrets_update(s, id, "sk-VALUE-2", NULL, &info, err, sizeof err) == 200);
  CHECK(info && cJSON_GetObjectItem(info, "currentVersion")->valueint == 2 &&
        !has_value(info, "sk-VALUE-2"));
  CHECK(has_value(info, "infra")); /* metadata kept when the update has none */
  cJSON_Delete(info);
  CHECK(asbn_secrets_update(s, "nope", "x", NULL, NULL, err, sizeof err) == 404);
  cJSON *list = asbn_secrets_list(s);
  CHECK(cJSON_GetArraySize(list) == 1 && !has_value(list, "sk-VALUE"));
  cJSON_Delete(list);
  asbn_secrets_close(s);

  /* Kept across reopen, the latest version. */
  CHECK(asbn_secrets_open(dir, &s, err, sizeof err) == 0);
  CHECK(asbn_secrets_get(s, "OPENAI-KEY", &info) == 200);
  CHECK(info && cJSON_GetObjectItem(info, "currentVersion")->valueint == 2);
  cJSON_Delete(info);
  CHECK(asbn_secrets_resolve(s, "${e2b.secrets.openai-key}", &v) == 0 && !strcmp(v, "sk-VALUE-2"));
  asbn_secrets_wipe(v);
  CHECK(asbn_secrets_delete(s, "openai-key", err, sizeof err) == 204);
  CHECK(asbn_secrets_delete(s, "openai-key", err, sizeof err) == 404);
  CHECK(asbn_secrets_resolve(s, "${e2b.secrets.openai-key}", &v) == -1);
  asbn_secrets_close(s);
  cJSON_Delete(md);

  unlink(path);
  rmdir(dir);
  if (fails) fprintf(stderr, "net.egress.secrets: %d failed\n", fails);
  return fails ? 1 : 0;
}
