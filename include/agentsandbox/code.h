/*
 * agent-sandbox — running code in stateful kernels (E2B's code interpreter).
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * Code runs in a context: a live kernel (Python by default; JavaScript,
 * bash and any installed Jupyter kernel by language name) whose state
 * persists across runs. Output streams as it happens; rich results (the
 * Jupyter MIME bundle: text, html, markdown, svg, png, jpeg, pdf, latex,
 * json, javascript, chart, extra formats) come back whole.
 */
#ifndef AGENTSANDBOX_CODE_H
#define AGENTSANDBOX_CODE_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_CODE_OPTIONS_VERSION 1

typedef struct asb_code_options {
  unsigned int version;    /* ASB_CODE_OPTIONS_VERSION */
  const char *language;    /* "python" (default), "javascript", "bash", ...;
                              not together with context_id */
  const char *context_id;  /* run in this context */
  const char *const *envs; /* "KEY=VALUE" for this run, NULL-ended */
  long timeout_ms;         /* the run: 0 = 300000, negative = none; on
                              timeout the cell is interrupted and the
                              context stays usable */
  long request_timeout_ms;
  asb_data_fn on_stdout;
  asb_data_fn on_stderr;
  asb_result_fn on_result;
  asb_code_error_fn on_error;
  void *userdata;
  asb_cancel *cancel; /* cancelling interrupts the cell */
} asb_code_options;

#define ASB_CODE_OPTIONS_INIT                                                 \
  {                                                                           \
    ASB_CODE_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, \
        NULL, NULL                                                            \
  }

ASB_API(int)
asb_code_options_init(asb_code_options *opts, unsigned int version);

/* Run code. *out receives the execution (also when the code raised: check
 * asb_execution_error_name; the call itself returns ASB_OK). Errors:
 * ASB_ENOTFOUND (unknown context), ASB_EINVAL (both language and context),
 * ASB_ETIMEOUT, ASB_ECANCELED, ASB_EUSER, transport errors. */
ASB_API(int)
asb_code_run(asb_execution **out, asb_sandbox *sandbox, const char *code,
             const asb_code_options *opts);

/* ---- executions ------------------------------------------------------------
 */
ASB_API(size_t) asb_execution_result_count(const asb_execution *e);
ASB_API(const asb_code_result *)
asb_execution_result_get(const asb_execution *e, size_t i);
/* The main result's text ("1024" for print-less `2 ** 10`), or NULL. */
ASB_API(const char *) asb_execution_text(const asb_execution *e);
/* stdout / stderr as the list of chunks the kernel sent. */
ASB_API(size_t) asb_execution_stdout_count(const asb_execution *e);
ASB_API(const char *)
asb_execution_stdout_get(const asb_execution *e, size_t i);
ASB_API(size_t) asb_execution_stderr_count(const asb_execution *e);
ASB_API(const char *)
asb_execution_stderr_get(const asb_execution *e, size_t i);
/* The error, or NULL for all three when the code did not raise. */
ASB_API(const char *) asb_execution_error_name(const asb_execution *e);
ASB_API(const char *) asb_execution_error_value(const asb_execution *e);
ASB_API(const char *) asb_execution_error_traceback(const asb_execution *e);
/* The kernel's execution count, or -1. */
ASB_API(int) asb_execution_count(const asb_execution *e);
ASB_API(void) asb_execution_free(asb_execution *e);

/* ---- results
 * ----------------------------------------------------------------- */
/* A format of the result: "text", "html", "markdown", "svg", "png", "jpeg",
 * "pdf", "latex", "json", "javascript", "chart", "data", or an extra MIME
 * type. png/jpeg/pdf are base64; json/chart/data are JSON text. NULL if the
 * result lacks it. */
ASB_API(const char *)
asb_code_result_value(const asb_code_result *r, const char *format);
/* The formats present, in the order the kernel sent them. */
ASB_API(size_t) asb_code_result_format_count(const asb_code_result *r);
ASB_API(const char *)
asb_code_result_format_name(const asb_code_result *r, size_t i);
/* 1 for the cell's value (Jupyter's execute_result), 0 for display data. */
ASB_API(int) asb_code_result_is_main(const asb_code_result *r);

/* ---- contexts
 * ------------------------------------------------------------------ */
/* language NULL = "python"; cwd NULL = the server's default (/home/user in
 * E2B's sandboxes). */
ASB_API(int)
asb_code_context_create(asb_code_context **out, asb_sandbox *sandbox,
                        const char *language, const char *cwd,
                        const asb_call_options *call);
ASB_API(const char *) asb_code_context_id(const asb_code_context *c);
ASB_API(const char *) asb_code_context_language(const asb_code_context *c);
ASB_API(const char *) asb_code_context_cwd(const asb_code_context *c);
ASB_API(void) asb_code_context_free(asb_code_context *c);

ASB_API(int)
asb_code_contexts_list(asb_code_context_list **out, asb_sandbox *sandbox,
                       const asb_call_options *call);
ASB_API(size_t) asb_code_context_list_count(const asb_code_context_list *l);
ASB_API(const asb_code_context *)
asb_code_context_list_get(const asb_code_context_list *l, size_t i);
ASB_API(void) asb_code_context_list_free(asb_code_context_list *l);

/* Restart the context's kernel (its state is lost, its id kept). */
ASB_API(int)
asb_code_context_restart(asb_sandbox *sandbox, const char *context_id,
                         const asb_call_options *call);
ASB_API(int)
asb_code_context_remove(asb_sandbox *sandbox, const char *context_id,
                        const asb_call_options *call);

ASB_END_DECL

#endif /* AGENTSANDBOX_CODE_H */
