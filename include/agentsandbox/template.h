/*
 * agent-sandbox — templates: build one from a directory with a
 * template.yaml, list, inspect and delete them.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * A template is what a sandbox starts from: read-only layers, resources, an
 * optional start command and ready check, custom commands. The local
 * engine builds templates from a template.yaml (docs/templates.md): the
 * directory is packed and sent to its build endpoint, which runs the steps
 * in a build sandbox and records the result; builds are cached by the hash
 * of their inputs. List, get and delete use E2B's template API, so they
 * also work against E2B-compatible cloud engines; building needs an engine
 * with the build endpoint (ASB_EUNSUPPORTED otherwise).
 */
#ifndef AGENTSANDBOX_TEMPLATE_H
#define AGENTSANDBOX_TEMPLATE_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_TEMPLATE_BUILD_OPTIONS_VERSION 1

typedef struct asb_template_build_options {
  unsigned int version; /* ASB_TEMPLATE_BUILD_OPTIONS_VERSION */
  int force;            /* rebuild even when a build of the same inputs
                           exists */
  long timeout_ms;      /* the whole build: 0 = 1800000 (30 min),
                           negative = none */
  asb_cancel *cancel;   /* gives up waiting (the engine finishes or fails
                           the build on its own) */
} asb_template_build_options;

#define ASB_TEMPLATE_BUILD_OPTIONS_INIT \
  { ASB_TEMPLATE_BUILD_OPTIONS_VERSION, 0, 0, NULL }

ASB_API(int)
asb_template_build_options_init(asb_template_build_options *opts,
                                unsigned int version);

/* Build the template of directory dir (it holds template.yaml and the files
 * its steps copy; everything in it is sent, at most 64 MiB). Returns once
 * the template is ready; *out describes it (asb_template_cached says if an
 * earlier build was reused). Errors:
 *   ASB_EINVAL        no template.yaml, or it is invalid: the message is
 *                     "template.yaml:<line>:<column>: <field>: <why>"
 *   ASB_EBUILD        a step failed: the message names the step and ends
 *                     with its output
 *   ASB_ENOTFOUND     dir does not exist
 *   ASB_EUNSUPPORTED  the engine cannot build templates
 *   ASB_ETIMEOUT, ASB_ECANCELED, transport errors. */
ASB_API(int)
asb_templates_build(asb_template **out, asb_client *client, const char *dir,
                    const asb_template_build_options *opts);

/* A template by id or name. ASB_ENOTFOUND if there is none. */
ASB_API(int)
asb_templates_get(asb_template **out, asb_client *client,
                  const char *template_id, const asb_call_options *call);

/* Every template the engine has (the built-in ones too). */
ASB_API(int)
asb_templates_list(asb_template_list **out, asb_client *client,
                   const asb_call_options *call);
ASB_API(size_t) asb_template_list_count(const asb_template_list *l);
/* Owned by the list; NULL past the end. */
ASB_API(const asb_template *)
asb_template_list_get(const asb_template_list *l, size_t i);
ASB_API(void) asb_template_list_free(asb_template_list *l);

/* Delete a template by id or name. ASB_ENOTFOUND if there is none,
 * ASB_EEXISTS while sandboxes (or templates built on it) use it,
 * ASB_EINVAL for a built-in template. */
ASB_API(int)
asb_templates_delete(asb_client *client, const char *template_id,
                     const asb_call_options *call);

/* ---- template information (strings owned by the object) ----------------- */
ASB_API(const char *) asb_template_id(const asb_template *t);
/* The name (alias) sandboxes may be created from. */
ASB_API(const char *) asb_template_name(const asb_template *t);
ASB_API(const char *) asb_template_build_id(const asb_template *t);
/* "" when it has none. */
ASB_API(const char *) asb_template_description(const asb_template *t);
ASB_API(int) asb_template_cpu_count(const asb_template *t);
ASB_API(int) asb_template_memory_mb(const asb_template *t);
ASB_API(int) asb_template_disk_mb(const asb_template *t);
/* Unix seconds of the build (0 if unknown). */
ASB_API(asb_int64) asb_template_created_at(const asb_template *t);
/* From asb_templates_build: 1 if an existing build was reused, 0 if it was
 * built now; -1 for templates from get and list. */
ASB_API(int) asb_template_cached(const asb_template *t);
/* From asb_templates_build: the build's log (each step and its output);
 * NULL otherwise. */
ASB_API(const char *) asb_template_build_log(const asb_template *t);
/* The engine's whole description of the template, as JSON. */
ASB_API(const char *) asb_template_json(const asb_template *t);
ASB_API(void) asb_template_free(asb_template *t);

/* ---- E2B's Template builder ------------------------------------------------
 * What E2B's SDKs send for Template().fromTemplate(...).runCmd(...) and
 * friends (E2B's TemplateBuildStartV2, docs/templates.md "E2B's Template
 * builder"), built through the engine's builder API: the library asks for a
 * template name (POST /v3/templates), uploads the files of every COPY step
 * from a local context directory unless the engine already has them by
 * their hash, starts the build and follows its status and logs. */

/* One line of a build's log. timestamp_ms: Unix milliseconds (0 if
 * unknown); level: "debug", "info", "warn" or "error". A non-zero return
 * stops following the build (the call fails with ASB_EUSER; the engine
 * finishes the build on its own). */
typedef int ASB_CALLBACK(asb_template_log_fn)(asb_int64 timestamp_ms,
                                              const char *level,
                                              const char *message,
                                              void *userdata);

#define ASB_TEMPLATE_STEPS_OPTIONS_VERSION 2

typedef struct asb_template_steps_options {
  unsigned int version;       /* ASB_TEMPLATE_STEPS_OPTIONS_VERSION */
  const char *context_dir;    /* COPY sources are relative to it; NULL = the
                                 current directory */
  const char *const *tags;    /* NULL-ended extra tags of the build, or NULL */
  int cpu_count;              /* 0 = the engine's default (2) */
  int memory_mb;              /* 0 = the engine's default (1024) */
  int skip_cache;             /* rebuild even when the inputs' hash matches a
                                 build (E2B's skipCache / force) */
  int background;             /* return once the build has started (status
                                 "building"), without following it */
  long timeout_ms;            /* the whole call: 0 = 1800000 (30 min),
                                 negative = none */
  asb_cancel *cancel;         /* gives up following the build */
  asb_template_log_fn on_log; /* each log line as it arrives, or NULL */
  void *userdata;             /* for on_log */
  /* version 2 */
  const char *const *ignore_patterns; /* NULL-ended .dockerignore patterns
                                         (E2B's fileIgnorePatterns) applied
                                         before the context directory's own
                                         .dockerignore, or NULL */
} asb_template_steps_options;

#define ASB_TEMPLATE_STEPS_OPTIONS_INIT                                        \
  {                                                                            \
    ASB_TEMPLATE_STEPS_OPTIONS_VERSION, NULL, NULL, 0, 0, 0, 0, 0, NULL, NULL, \
        NULL, NULL                                                             \
  }

ASB_API(int)
asb_template_steps_options_init(asb_template_steps_options *opts,
                                unsigned int version);

/* Build the template `name` (E2B's form: "my-app" or "my-app:tag") from
 * build_json, a JSON object in E2B's TemplateBuildStartV2 shape:
 *   {"fromTemplate": "base"} or {"fromImage": "oci:/dir"},
 *   "steps": [{"type": "RUN"|"COPY"|"ENV"|"WORKDIR"|"USER", "args": [...],
 *              "force": bool, "filesHash": "..."}],
 *   "startCmd", "readyCmd", "force".
 * A COPY step without "filesHash" has its args[0] (a path or glob, relative
 * to opts->context_dir) packed as a tar of the matching files, directories
 * and symlinks (args[4] "true" = E2B's resolveSymlinks: copy what a symlink
 * points to), hashed (SHA-256) and uploaded unless the engine has it
 * ("forceUpload": true uploads anyway). Files that opts->ignore_patterns
 * and then the context directory's .dockerignore leave out are not packed,
 * with Docker's rules ("**", "!" exceptions, a leading "/", comments; the
 * last matching pattern decides; docs/templates.md). on_log gets the library's
 * own progress too, as E2B's SDKs log it ("Template created with ID: <id>,
 * Build ID: <build>", "Uploaded '<src>'" or "Skipping upload of '<src>',
 * already cached", "Starting building..."), then the engine's log lines
 * (the ones *out holds). Returns when the build is ready
 * (or, with opts->background, once started); *out describes the build.
 * Once the build has started, *out is set whatever the result (on
 * ASB_ETIMEOUT, ASB_ECANCELED or ASB_EUSER the engine goes on building:
 * follow it with asb_templates_build_status). Errors:
 *   ASB_EBUILD       the build failed: the message is the engine's reason;
 *                    *out says which step (asb_template_build_error_step)
 *                    and holds its log
 *   ASB_EINVAL       build_json is not such an object, a COPY source
 *                    matches nothing (or only what is ignored) or leaves
 *                    the context directory, a pattern is not valid, or
 *                    the engine refused the request (400: the step's index
 *                    and why)
 *   ASB_EUNSUPPORTED the engine has no builder API
 *   ASB_ETIMEOUT, ASB_ECANCELED, ASB_EUSER (on_log), transport errors. */
ASB_API(int)
asb_templates_build_steps(asb_template_build **out, asb_client *client,
                          const char *name, const char *build_json,
                          const asb_template_steps_options *opts);

/* ---- E2B's Template builder, step by step ---------------------------------
 * The calls asb_templates_build_steps makes, one by one, for callers that
 * drive the build themselves (E2B's SDKs do: request_build,
 * get_file_upload_link, upload_file, trigger_build, get_build_status):
 *   1. asb_templates_request_build: the name, its template and build ids;
 *   2. for each COPY step: asb_templates_files_hash (its files' hash),
 *      asb_templates_files_link (does the engine have them? where to upload
 *      them) and, unless present, asb_templates_files_upload;
 *   3. asb_templates_trigger_build with the TemplateBuildStartV2 JSON, each
 *      COPY step's "filesHash" filled in;
 *   4. asb_templates_build_status until "ready" or "error".
 * asb_templates_build_steps is exactly these (the same code). */

#define ASB_TEMPLATE_REQUEST_OPTIONS_VERSION 1

typedef struct asb_template_request_options {
  unsigned int version;    /* ASB_TEMPLATE_REQUEST_OPTIONS_VERSION */
  const char *const *tags; /* NULL-ended extra tags of the build, or NULL */
  int cpu_count;           /* 0 = the engine's default (2) */
  int memory_mb;           /* 0 = the engine's default (1024) */
  long timeout_ms;         /* 0 = the client's default */
  asb_cancel *cancel;
} asb_template_request_options;

#define ASB_TEMPLATE_REQUEST_OPTIONS_INIT \
  { ASB_TEMPLATE_REQUEST_OPTIONS_VERSION, NULL, 0, 0, 0, NULL }

ASB_API(int)
asb_template_request_options_init(asb_template_request_options *opts,
                                  unsigned int version);

/* Ask for a build of template `name` ("my-app" or "my-app:tag"; POST
 * /v3/templates). *out has its template id, build id and tags
 * (asb_template_build_tag_count/_tag), status "waiting". Errors:
 * ASB_EUNSUPPORTED (the engine has no builder API), ASB_EINVAL (the engine
 * refused the name or tags), transport errors. */
ASB_API(int)
asb_templates_request_build(asb_template_build **out, asb_client *client,
                            const char *name,
                            const asb_template_request_options *opts);

#define ASB_TEMPLATE_FILES_OPTIONS_VERSION 1

typedef struct asb_template_files_options {
  unsigned int version;               /* ASB_TEMPLATE_FILES_OPTIONS_VERSION */
  const char *context_dir;            /* src is relative to it; NULL = the
                                         current directory */
  const char *const *ignore_patterns; /* NULL-ended, applied before the
                                         context directory's .dockerignore,
                                         or NULL */
  int resolve_symlinks;               /* pack what symlinks point to */
  long timeout_ms;                    /* the upload: 0 = the client's
                                         default */
  asb_cancel *cancel;                 /* the upload */
} asb_template_files_options;

#define ASB_TEMPLATE_FILES_OPTIONS_INIT \
  { ASB_TEMPLATE_FILES_OPTIONS_VERSION, NULL, NULL, 0, 0, NULL }

ASB_API(int)
asb_template_files_options_init(asb_template_files_options *opts,
                                unsigned int version);

/* The filesHash of a COPY step whose source is src (a path or glob,
 * relative to opts->context_dir): the SHA-256 (64 hex digits, freed with
 * asb_free) of the tar asb_templates_build_steps packs of it, with the same
 * rules (ignore patterns, symlinks). Local only: opts->timeout_ms is
 * unused, a cancel already requested fails it (ASB_ECANCELED). ASB_EINVAL
 * as for asb_templates_build_steps' COPY sources. */
ASB_API(int)
asb_templates_files_hash(char **hash, const char *src,
                         const asb_template_files_options *opts);

/* Whether the engine has the files of hash files_hash for template_id
 * (GET /templates/{id}/files/{hash}): *present = 1 or 0, *url where to
 * upload them (freed with asb_free; NULL if the engine gave none). */
ASB_API(int)
asb_templates_files_link(int *present, char **url, asb_client *client,
                         const char *template_id, const char *files_hash,
                         const asb_call_options *call);

/* Pack src's files (as asb_templates_files_hash does) and PUT the tar to
 * url (from asb_templates_files_link: through the client when it is on its
 * API, else a plain PUT to the signed URL). hash, if not NULL, gets the
 * hash of what was uploaded (freed with asb_free). */
ASB_API(int)
asb_templates_files_upload(char **hash, asb_client *client, const char *url,
                           const char *src,
                           const asb_template_files_options *opts);

/* Start the build (POST /v2/templates/{id}/builds/{buildID}) with
 * build_json, E2B's TemplateBuildStartV2 object as sent (each COPY step
 * with its "filesHash"; nothing is packed or uploaded here). Then follow it
 * with asb_templates_build_status. ASB_EINVAL if build_json is not an
 * object or the engine refused it (400: the step's index and why). */
ASB_API(int)
asb_templates_trigger_build(asb_client *client, const char *template_id,
                            const char *build_id, const char *build_json,
                            const asb_call_options *call);

/* The status of a build (E2B's getBuildStatus): its state and its log
 * lines from logs_offset on (at most 100 per call), delivered through
 * asb_template_build_log_count/_get. ASB_ENOTFOUND for an unknown build. */
ASB_API(int)
asb_templates_build_status(asb_template_build **out, asb_client *client,
                           const char *template_id, const char *build_id,
                           int logs_offset, const asb_call_options *call);

/* Whether a template of that name (alias) exists: *exists = 1 or 0. */
ASB_API(int)
asb_templates_alias_exists(int *exists, asb_client *client, const char *alias,
                           const asb_call_options *call);

/* Tags. target is "name:tag" (the build that tag names; "name" = its
 * latest); tags NULL-ended. assign: the tags then name target's build. */
ASB_API(int)
asb_templates_tags_assign(asb_client *client, const char *target,
                          const char *const *tags,
                          const asb_call_options *call);
ASB_API(int)
asb_templates_tags_remove(asb_client *client, const char *name,
                          const char *const *tags,
                          const asb_call_options *call);
/* The tags of a template as JSON text ([{"tag", "buildID", "createdAt"}]),
 * freed with asb_free. */
ASB_API(int)
asb_templates_tags_list(char **json, asb_client *client,
                        const char *template_id, const asb_call_options *call);

/* ---- a build (strings owned by the object) ------------------------------- */
ASB_API(const char *)
asb_template_build_template_id(const asb_template_build *b);
ASB_API(const char *) asb_template_build_build_id(const asb_template_build *b);
/* "waiting", "building", "ready" or "error". */
ASB_API(const char *) asb_template_build_status(const asb_template_build *b);
/* The engine's reason of a failed build, NULL otherwise. */
ASB_API(const char *) asb_template_build_error(const asb_template_build *b);
/* E2B's number of the step that failed: 0 the base (fromTemplate /
 * fromImage), i + 1 for build_json's steps[i]; -1 if none is known. */
ASB_API(int) asb_template_build_error_step(const asb_template_build *b);
/* Log lines this object holds (asb_templates_build_status: those from its
 * logs_offset; asb_templates_build_steps: every line of the build). */
ASB_API(size_t) asb_template_build_log_count(const asb_template_build *b);
/* Line i: its message, level and time; NULL / 0 past the end. */
ASB_API(const char *)
asb_template_build_log_message(const asb_template_build *b, size_t i);
ASB_API(const char *)
asb_template_build_log_level(const asb_template_build *b, size_t i);
ASB_API(asb_int64)
asb_template_build_log_timestamp(const asb_template_build *b, size_t i);
/* From asb_templates_request_build: the build's tags; 0 / NULL otherwise
 * and past the end. */
ASB_API(size_t) asb_template_build_tag_count(const asb_template_build *b);
ASB_API(const char *)
asb_template_build_tag(const asb_template_build *b, size_t i);
ASB_API(void) asb_template_build_free(asb_template_build *b);

ASB_END_DECL

#endif /* AGENTSANDBOX_TEMPLATE_H */
