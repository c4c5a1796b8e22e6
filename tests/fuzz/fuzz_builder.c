/* Fuzz E2B's Template builder input (core/engine/builder.c): the trigger
 * body of POST /v2/templates/{id}/builds/{b} (first byte even) and the
 * uploaded file archives (odd). Invariants: a body is translated or
 * refused with a message; a translation is a template.yaml that
 * template.yaml's own parser accepts, with one entry per step in the
 * step map and a one-line label per step; an archive is repacked (a tar our reader reads back,
 * every name under the prefix) or refused with a message. SPDX-License-Identifier: Apache-2.0 */
#include "engine/builder.h"
#include "fuzz.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "tmpl/tmpl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  char err[1024] = "";
  if (data[0] % 2 == 0) {
    cJSON *body = asbi_pj_parse((const char *)data + 1, size - 1, NULL);
    if (!body) return 0;
    builder_plan p;
    if (builder_translate(body, "fuzz", 1, 256, &p, err, sizeof err)) {
      FUZZ_CHECK(err[0] != '\0');
    } else {
      const char *y = p.yaml;
      FUZZ_CHECK(y != NULL);
      asbi_tmpl_error te;
      cJSON *spec = asbi_tmpl_parse(y, strlen(y), &te);
      if (!spec) fprintf(stderr, "%s\n%s\n", y, te.message);
      FUZZ_CHECK(spec != NULL);
      FUZZ_CHECK((size_t)cJSON_GetArraySize(cJSON_GetObjectItem(spec, "steps")) == p.nsteps);
      for (size_t i = 0; i < p.nhashes; i++) FUZZ_CHECK(builder_hash_ok(p.hashes[i]));
      /* every step has its E2B label, on one line, for its errors */
      for (size_t i = 0; i < p.nsteps; i++)
        FUZZ_CHECK(p.step_label[i] && p.step_label[i][0] && !strchr(p.step_label[i], '\n'));
      cJSON_Delete(spec);
      builder_plan_free(&p);
    }
    cJSON_Delete(body);
    return 0;
  }
  asbi_buf out;
  asbi_buf_init(&out, 1u << 24);
  if (builder_archive_repack(data + 1, size - 1, "files/x/", &out, err, sizeof err)) {
    FUZZ_CHECK(err[0] != '\0');
  } else {
    FUZZ_CHECK(asbi_tar_finish(&out) == 0);
    asbi_tar_reader r;
    asbi_tar_reader_init(&r, out.data, out.len);
    asbi_tar_entry *e = malloc(sizeof *e);
    int k, n = 0;
    while ((k = asbi_tar_next(&r, e)) > 0) {
      FUZZ_CHECK(!strncmp(e->name, "files/x/", 8) || !strcmp(e->name, "files/x"));
      n++;
    }
    FUZZ_CHECK(k == 0 && n > 0);
    free(e);
  }
  asbi_buf_free(&out);
  return 0;
}
