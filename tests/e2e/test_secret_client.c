/* The C ABI's secrets (secret.h) against the real engine's /secrets store:
 * create (metadata, a taken name, a bad name), get by id and by name,
 * update (versions, metadata kept or replaced), list page by page with
 * the next token, delete, and that nothing the library hands back holds
 * the value.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asb_testing.h"
#include "engine_fixture.h"

static engine_fixture F;
static asb_client *C;

static int has_md(const asb_secret *s, const char *k, const char *v) {
  for (size_t i = 0; i < asb_secret_metadata_count(s); i++)
    if (!strcmp(asb_secret_metadata_key(s, i), k) && !strcmp(asb_secret_metadata_value(s, i), v))
      return 1;
  return 0;
}

TEST(secret_calls) {
  char name[64], id[64];
  snprintf(name, sizeof name, "c-sec-%d", (int)getpid());
  const char *md[] = {"env=test", NULL};
  asb_secret *s = NULL;
  REQUIRE_RC(asb_secrets_create(&s, C, name, "s3cr3t-value", md, NULL), ASB_OK);
  snprintf(id, sizeof id, "%s", asb_secret_id(s));
  CHECK(!strncmp(id, "sec_", 4));
  CHECK(!strcmp(asb_secret_name(s), name));
  CHECK(asb_secret_version(s) == 1);
  CHECK(has_md(s, "env", "test") && asb_secret_metadata_count(s) == 1);
  CHECK(asb_secret_created_at(s) > 1700000000 &&
        asb_secret_updated_at(s) >= asb_secret_created_at(s));
  asb_secret_free(s);

  CHECK_RC(asb_secrets_create(&s, C, name, "other", NULL, NULL), ASB_EEXISTS);
  CHECK(s == NULL);
  CHECK_RC(asb_secrets_create(&s, C, "bad name", "v", NULL, NULL), ASB_EINVAL);
  const char *bad_md[] = {"no-equals", NULL};
  CHECK_RC(asb_secrets_create(&s, C, "fine-name", "v", bad_md, NULL), ASB_EINVAL);

  REQUIRE_RC(asb_secrets_get(&s, C, name, NULL), ASB_OK); /* by name */
  CHECK(!strcmp(asb_secret_id(s), id));
  asb_secret_free(s);
  REQUIRE_RC(asb_secrets_update(&s, C, id, "v2", NULL, NULL), ASB_OK); /* by id, md kept */
  CHECK(asb_secret_version(s) == 2 && has_md(s, "env", "test"));
  asb_secret_free(s);
  const char *md2[] = {"k=v", "x=y", NULL};
  REQUIRE_RC(asb_secrets_update(&s, C, name, "v3", md2, NULL), ASB_OK);
  CHECK(asb_secret_version(s) == 3 && asb_secret_metadata_count(s) == 2 && has_md(s, "x", "y"));
  asb_secret_free(s);
  CHECK_RC(asb_secrets_get(&s, C, "no-such-secret", NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_secrets_update(&s, C, "no-such-secret", "v", NULL, NULL), ASB_ENOTFOUND);

  /* three more; listed 2 a page: every one exactly once, in order */
  char ids[4][64];
  snprintf(ids[0], sizeof ids[0], "%s", id);
  for (int i = 1; i < 4; i++) {
    char n[80];
    snprintf(n, sizeof n, "%s-%d", name, i);
    REQUIRE_RC(asb_secrets_create(&s, C, n, "v", NULL, NULL), ASB_OK);
    snprintf(ids[i], sizeof ids[i], "%s", asb_secret_id(s));
    asb_secret_free(s);
  }
  int seen = 0, pages = 0;
  char next[128] = "";
  do {
    asb_secret_page *p = NULL;
    REQUIRE_RC(asb_secrets_list(&p, C, 2, next, NULL), ASB_OK);
    CHECK(asb_secret_page_count(p) <= 2);
    for (size_t i = 0; i < asb_secret_page_count(p); i++) {
      const asb_secret *e = asb_secret_page_get(p, i);
      CHECK(seen < 4 && !strcmp(asb_secret_id(e), ids[seen]));
      seen++;
    }
    const char *nt = asb_secret_page_next_token(p);
    snprintf(next, sizeof next, "%s", nt ? nt : "");
    asb_secret_page_free(p);
    pages++;
  } while (*next && pages < 10);
  CHECK(seen == 4 && pages == 2);
  asb_secret_page *p = NULL;
  CHECK_RC(asb_secrets_list(&p, C, 101, NULL, NULL), ASB_EINVAL);

  for (int i = 0; i < 4; i++) CHECK_RC(asb_secrets_delete(C, ids[i], NULL), ASB_OK);
  CHECK_RC(asb_secrets_delete(C, id, NULL), ASB_ENOTFOUND);
  CHECK_RC(asb_secrets_get(&s, C, id, NULL), ASB_ENOTFOUND);
}

int main(void) {
  if (engine_fixture_start(&F, "secclient") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  if (engine_fixture_client(&F, &C) != ASB_OK) {
    engine_fixture_stop(&F);
    return 1;
  }
  RUN(secret_calls);
  asb_client_free(C);
  engine_fixture_stop(&F); /* the store goes with the state dir */
  TEST_MAIN_END();
}
