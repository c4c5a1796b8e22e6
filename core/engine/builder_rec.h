/* What E2B's Template builder API (api_builder.c) keeps of a template
 * across engine runs: its builds (status, reason, bounded log, times) and
 * tags, as one JSON record per template in <state>/builder/<id>.json.
 * The codec is here (cJSON only, fuzzed: tests/fuzz/fuzz_builder_rec.c);
 * the files' reading and writing is api_builder.c's.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_BUILDER_REC_H
#define ASB_ENGINE_BUILDER_REC_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define BREC_ID_LEN 20 /* ENGINE_ID_LEN: a template id, a-z A-Z 0-9 */
#define BREC_MAX_TAGS 64
#define BREC_MAX_BUILDS 16        /* builds not under way kept per template (their logs) */
#define BREC_MAX_BUILDS_READ 4096 /* and under way (queued): a record with more is refused */
/* A build's log as kept (in memory once the build ended, and on disk):
 * at most BREC_LOG_ENTRIES entries and BREC_LOG_BYTES of their messages,
 * each message at most BREC_LOG_LINE bytes. Over that, the first
 * BREC_LOG_HEAD entries and the newest that fit stay, with one entry in
 * between saying how many were left out. */
#define BREC_LOG_ENTRIES 2000
#define BREC_LOG_BYTES (512u * 1024u)
#define BREC_LOG_LINE (4u * 1024u)
#define BREC_LOG_HEAD 100
#define BREC_FILE_MAX (64u << 20) /* a record file larger than this is skipped */

typedef struct btag {
  char tag[129];
  char build_id[40];
  char ours[40]; /* our build (template_info.build_id) */
  int64_t at_ms;
} btag;

typedef struct bbuild {
  char id[40];
  char status[12]; /* waiting, building, ready, error */
  cJSON *entries;  /* BuildLogEntry[]: {timestamp, message, level} */
  char *reason;
  int reason_step; /* E2B's step, -1 = none */
  char ours[40];   /* ready: our build id (template_info.build_id) */
  char **tags;
  size_t ntags;
  int64_t created_ms, updated_ms, finished_ms; /* finished: 0 = not yet */
  struct bbuild *next;
} bbuild;

typedef struct btmpl {
  char id[BREC_ID_LEN + 1];
  char name[64];
  int cpu, memory_mb;
  bbuild *builds;
  btag tags[BREC_MAX_TAGS];
  size_t ntags;
  int64_t updated_ms;
  int interrupted; /* brec_from_json: builds it found "building" (not stored) */
  struct btmpl *next;
} btmpl;

void brec_build_free(bbuild *x);
void brec_free(btmpl *t);
int brec_name_ok(const char *s);
int brec_tag_ok(const char *s);
/* Bounds x->entries as above (see BREC_LOG_*). */
void brec_trim_log(bbuild *x);
/* The record of t (NULL: out of memory). */
cJSON *brec_to_json(const btmpl *t);
/* A record read back: a new btmpl, or NULL with why (a corrupt or foreign
 * file). A build that was "building" comes back as "error" (the engine
 * that ran it ended: stopping_reason, a log entry saying so). */
btmpl *brec_from_json(const char *text, size_t len, const char *stopping_reason, char *why,
                      size_t whylen);

#endif
