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

ASB_END_DECL

#endif /* AGENTSANDBOX_TEMPLATE_H */
