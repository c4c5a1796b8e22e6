/* How an operation of the engine failed (eng_err.c). The operations
 * (sandboxes.c, build.c, templates.c, bundled.c) know nothing of HTTP:
 * they return 0, or -1 with an eng_err that says what kind of failure it
 * was and why; the HTTP fronts (api.c, api_templates.c) turn the kind into
 * a status code and the rest into E2B's error body.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_ENG_ERR_H
#define ASB_ENGINE_ENG_ERR_H

typedef enum eng_status {
  ENG_OK = 0,
  ENG_EINVAL,    /* the request is not valid (its values, its template.yaml) */
  ENG_ENOTFOUND, /* no such sandbox or template */
  ENG_ECONFLICT, /* not in this state: already paused, still in use, ... */
  ENG_EFAILED,   /* valid, but the work it asked for failed (a build step) */
  ENG_EINTERNAL, /* the engine or the host failed */
} eng_status;

typedef struct eng_err {
  eng_status status;
  /* a word for programs, or "": "template_start_failed" (create), or why
   * a sandbox that is not found ended ("timeout", "killed", ...) */
  char code[32];
  char message[4096];
} eng_err;

/* err = {status, code (NULL = ""), message}; returns -1 (err may be
 * NULL: nothing is recorded). */
int eng_err_set(eng_err *err, eng_status status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void eng_err_clear(eng_err *err);

#endif
