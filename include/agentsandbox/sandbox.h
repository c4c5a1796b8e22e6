/*
 * agent-sandbox — sandbox handles.
 *
 * Copyright 2026 The agent-sandbox authors. SPDX-License-Identifier: Apache-2.0
 *
 * An asb_sandbox is a handle to one sandbox: its id, the envd access token
 * and version, and the route to its ports. Freeing a handle never stops the
 * sandbox. Handles are safe to use from several threads at once and keep
 * their client alive.
 */
#ifndef AGENTSANDBOX_SANDBOX_H
#define AGENTSANDBOX_SANDBOX_H

#include "common.h"
#include "types.h"

ASB_BEGIN_DECL

#define ASB_SANDBOX_ATTACH_OPTIONS_VERSION 1

/* What asb_sandbox_attach needs to know that the control plane would
 * otherwise tell. */
typedef struct asb_sandbox_attach_options {
  unsigned int version;          /* ASB_SANDBOX_ATTACH_OPTIONS_VERSION */
  const char *envd_access_token; /* sent as X-Access-Token; NULL = none */
  const char *envd_version;      /* e.g. "0.6.13"; NULL = the newest we know */
  const char *domain;            /* NULL = the client's domain */
  const char *traffic_access_token; /* the create/connect reply's
                                       trafficAccessToken; NULL = none */
} asb_sandbox_attach_options;

#define ASB_SANDBOX_ATTACH_OPTIONS_INIT \
  { ASB_SANDBOX_ATTACH_OPTIONS_VERSION, NULL, NULL, NULL, NULL }

ASB_API(int)
asb_sandbox_attach_options_init(asb_sandbox_attach_options *opts,
                                unsigned int version);

/* Make a handle to a sandbox whose id (and token) you already know, without
 * asking the control plane — e.g. restored from your own storage, or in
 * debug mode (envd at http://localhost:49983 or the client's sandbox URL).
 * Makes no network call. Errors: ASB_EINVAL (bad id), ASB_ENOMEM. */
ASB_API(int)
asb_sandbox_attach(asb_sandbox **out, asb_client *client,
                   const char *sandbox_id,
                   const asb_sandbox_attach_options *opts);

/* Release the handle; the sandbox keeps running. Accepts NULL. */
ASB_API(void) asb_sandbox_free(asb_sandbox *sandbox);

/* Owned by the handle. */
ASB_API(const char *) asb_sandbox_id(const asb_sandbox *sandbox);
ASB_API(const char *) asb_sandbox_envd_version(const asb_sandbox *sandbox);
ASB_API(const char *) asb_sandbox_domain(const asb_sandbox *sandbox);
/* The envd access token, or NULL when the sandbox has none. */
ASB_API(const char *) asb_sandbox_envd_access_token(const asb_sandbox *sandbox);
/* The sandbox's traffic access token (e2b-traffic-access-token), or NULL
 * when the control plane gave none. The local engine gives every sandbox
 * one: its ports require it only when the sandbox was made with
 * allowPublicTraffic false, and its code interpreter accepts it instead of
 * the envd token (E2B's code-interpreter SDKs send only it on their
 * context calls). E2B's cloud gives one only with allowPublicTraffic
 * false. */
ASB_API(const char *)
asb_sandbox_traffic_access_token(const asb_sandbox *sandbox);

/* "<port>-<id>.<domain>" (debug mode: "localhost:<port>") into buf, as
 * E2B's get_host does. Returns ASB_OK, or ASB_EINVAL if the port is out of
 * range or buf is too small. */
ASB_API(int)
asb_sandbox_get_host(char *buf, size_t buflen, const asb_sandbox *sandbox,
                     int port);
/* The public URL of a port: "https://<host>" ("http" for loopback
 * domains such as the local engine's). Same errors. */
ASB_API(int)
asb_sandbox_get_url(char *buf, size_t buflen, const asb_sandbox *sandbox,
                    int port);
/* A loopback URL for a port, "http://127.0.0.1:<n>" (*url, free with
 * asb_free): the local engine opens a listener for this sandbox and port
 * (the same one on every call) and closes it when the sandbox ends.
 * Unlike get_url's <port>-<id>.localhost host, it needs no resolver for
 * *.localhost, so Node's fetch and Python's urllib open it on any host.
 * Local engine only (E2B's API has no such call: ASB_ENOTFOUND there).
 * ASB_EINVAL for a port out of range, ASB_ESANDBOXNOTFOUND. */
ASB_API(int)
asb_sandbox_loopback_url(char **url, asb_sandbox *sandbox, int port,
                         const asb_call_options *call);

/* ---- the control plane: create, connect, list, lifecycle ------------------
 */

#define ASB_SANDBOX_OPTIONS_VERSION 5

typedef struct asb_sandbox_options {
  unsigned int version;        /* ASB_SANDBOX_OPTIONS_VERSION */
  const char *template_id;     /* template id or name; NULL = "base" */
  long timeout_ms;             /* the sandbox's lifetime: 0 = 300000 (5 min),
                                  rounded up to whole seconds */
  const char *const *metadata; /* "key=value" strings, NULL-ended */
  const char *const *envs;     /* "KEY=VALUE" for every command, NULL-ended */
  int auto_pause;              /* on timeout: pause instead of kill */
  long request_timeout_ms;     /* 0 = client default, negative = none */
  asb_cancel *cancel;
  /* version 2: the sandbox's network (E2B's allowInternetAccess and
   * network; docs/reference/sandbox.md, Network) */
  int allow_internet_access; /* 0 = the default (allowed), 1 = allowed,
                                -1 = denied: as denyOut ["0.0.0.0/0"],
                                allowOut still applies */
  const char *network_json;  /* E2B's SandboxNetworkConfig as a JSON
                                object: {"allowOut": [...], "denyOut":
                                [...], "rules": {...}, "egressProxy":
                                {...}, "allowPublicTraffic": false,
                                "maskRequestHost": "..."}; NULL = none */
  /* version 3: volumes to mount (E2B's volumeMounts; docs/volumes.md) */
  const char *const *volume_mounts; /* "PATH=VOLUME" (a mount path inside,
                                       a volume's name or id), NULL-ended */
  /* version 4: pause modes and auto-resume (docs/lifecycle.md) */
  int auto_pause_files_only; /* with auto_pause: 1 = pause without memory
                                (E2B's keepMemory / autoPauseMemory
                                false): processes stopped, files kept,
                                resume boots it again */
  int auto_resume;           /* 1 = a request to one of its ports resumes
                                it once paused (E2B's autoResume); needs
                                auto_pause, not with auto_pause_files_only */
  /* version 5: E2B's mcp option (docs/mcp.md, "The gateway") */
  const char *mcp_json; /* E2B's MCP config object as JSON ({"<server>":
                           {...}, ...}); NULL = none. The template is then
                           "mcp-gateway" unless template_id names one;
                           once created, `mcp-gateway --config <json>`
                           runs as root with a fresh random
                           GATEWAY_ACCESS_TOKEN; if it fails the sandbox
                           is killed and create fails with ASB_ERROR
                           "Failed to start MCP gateway: <stderr>" */
} asb_sandbox_options;

#define ASB_SANDBOX_OPTIONS_INIT                                           \
  {                                                                        \
    ASB_SANDBOX_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0, 0, NULL, 0, NULL, \
        NULL, 0, 0, NULL                                                   \
  }

ASB_API(int)
asb_sandbox_options_init(asb_sandbox_options *opts, unsigned int version);

/* Create a sandbox and return a handle to it. With nothing configured this
 * uses the local engine (starting it if needed; see client.h). Errors:
 * ASB_ENOTFOUND (unknown template), ASB_EAUTH, ASB_EINVAL, ASB_ERATELIMIT,
 * ASB_ETEMPLATE (the template's envd is too old), transport errors. */
ASB_API(int)
asb_sandbox_create(asb_sandbox **out, asb_client *client,
                   const asb_sandbox_options *opts);

/* Connect to a running or paused sandbox by id; a paused one is resumed.
 * timeout_ms (0 = 300000) extends its lifetime to at least that long from
 * now and never shortens it. ASB_ESANDBOXNOTFOUND / ASB_ESANDBOXGONE. */
ASB_API(int)
asb_sandbox_connect(asb_sandbox **out, asb_client *client,
                    const char *sandbox_id, long timeout_ms,
                    const asb_call_options *call);

/* Kill the sandbox: every process, mount and file of it goes. Returns
 * ASB_OK, or ASB_ESANDBOXNOTFOUND if it did not exist (any more). */
ASB_API(int)
asb_sandbox_kill(asb_sandbox *sandbox, const asb_call_options *call);
ASB_API(int)
asb_sandbox_kill_id(asb_client *client, const char *sandbox_id,
                    const asb_call_options *call);

/* Set the lifetime to timeout_ms from now (shorter or longer). */
ASB_API(int)
asb_sandbox_set_timeout(asb_sandbox *sandbox, long timeout_ms,
                        const asb_call_options *call);
/* 1 if the sandbox is running and its agent answers, 0 if not (paused,
 * gone), or a negative asb_status. */
ASB_API(int)
asb_sandbox_is_running(asb_sandbox *sandbox, const asb_call_options *call);
/* Pause: 1 if it is paused now, 0 if it already was. Every process is
 * frozen, every file kept; connect or resume thaws it. */
ASB_API(int)
asb_sandbox_pause(asb_sandbox *sandbox, const asb_call_options *call);
/* Pause without memory when keep_memory is 0 (E2B's keepMemory: false):
 * every process is stopped and its memory freed, every file kept; resume
 * (or connect) boots it again, with a new boot_id. keep_memory 1 is
 * asb_sandbox_pause. Same returns. */
ASB_API(int)
asb_sandbox_pause_memory(asb_sandbox *sandbox, int keep_memory,
                         const asb_call_options *call);
/* Resume a paused sandbox (as connect does); timeout_ms as for connect. */
ASB_API(int)
asb_sandbox_resume(asb_sandbox *sandbox, long timeout_ms,
                   const asb_call_options *call);

/* Replace a running sandbox's egress rules (E2B's
 * PUT /sandboxes/{id}/network), live. network_json is E2B's
 * SandboxNetworkUpdateConfig as a JSON object: "allowOut", "denyOut",
 * "rules", "egressProxy"; a field left out is cleared (NULL = every
 * field cleared). allow_internet_access: 1 allowed, -1 denied, 0 left
 * out (the default: allowed). Connections to destinations the new rules
 * deny are cut. Errors: ASB_EINVAL (not a JSON object, a field of the
 * wrong type, or the engine refused a value), ASB_ESANDBOXNOTFOUND,
 * transport errors. */
ASB_API(int)
asb_sandbox_update_network(asb_sandbox *sandbox, int allow_internet_access,
                           const char *network_json,
                           const asb_call_options *call);

/* ---- sandbox information ---------------------------------------------- */
ASB_API(int)
asb_sandbox_get_info(asb_sandbox_info **out, asb_sandbox *sandbox,
                     const asb_call_options *call);
ASB_API(const char *) asb_sandbox_info_id(const asb_sandbox_info *info);
ASB_API(const char *)
asb_sandbox_info_template_id(const asb_sandbox_info *info);
/* The template's name, or NULL. */
ASB_API(const char *) asb_sandbox_info_name(const asb_sandbox_info *info);
/* "running" or "paused". */
ASB_API(const char *) asb_sandbox_info_state(const asb_sandbox_info *info);
/* A paused sandbox's pause mode, "memory", "filesystem" or, under the
 * local engine's --pause-criu, "checkpoint" (its pauseMode), or NULL
 * (running, or not said). */
ASB_API(const char *)
asb_sandbox_info_pause_mode(const asb_sandbox_info *info);
/* Under the engine's --pause-swap, where the memory of a sandbox paused
 * with memory went (the local engine's swap object: GET /sandboxes/{id}
 * only, so asb_sandbox_list's items never have it; E2B's cloud has none):
 * the bytes of it in the swap file now, in RAM now, and in RAM just before
 * the pause. -1 when the reply had no swap object (running, paused without
 * memory, an engine without --pause-swap, E2B), never 0 for "not said";
 * resident_before_bytes is also -1 when the engine does not know it (it
 * adopted the paused sandbox from an engine before it). */
ASB_API(asb_int64)
asb_sandbox_info_swapped_bytes(const asb_sandbox_info *info);
ASB_API(asb_int64)
asb_sandbox_info_resident_bytes(const asb_sandbox_info *info);
ASB_API(asb_int64)
asb_sandbox_info_resident_before_bytes(const asb_sandbox_info *info);
/* E2B's lifecycle.autoResume: 1 on, 0 off, -1 not said. */
ASB_API(int) asb_sandbox_info_auto_resume(const asb_sandbox_info *info);
/* E2B's lifecycle.onTimeout: "kill" or "pause", or NULL when the reply
 * had no lifecycle (asb_sandbox_list's items: E2B's ListedSandbox has
 * none). */
ASB_API(const char *)
asb_sandbox_info_on_timeout(const asb_sandbox_info *info);
/* Unix seconds. */
ASB_API(asb_int64) asb_sandbox_info_started_at(const asb_sandbox_info *info);
ASB_API(asb_int64) asb_sandbox_info_end_at(const asb_sandbox_info *info);
ASB_API(int) asb_sandbox_info_cpu_count(const asb_sandbox_info *info);
ASB_API(int) asb_sandbox_info_memory_mb(const asb_sandbox_info *info);
ASB_API(int) asb_sandbox_info_disk_mb(const asb_sandbox_info *info);
ASB_API(const char *)
asb_sandbox_info_envd_version(const asb_sandbox_info *info);
/* The metadata value of key, or NULL. */
ASB_API(const char *)
asb_sandbox_info_metadata(const asb_sandbox_info *info, const char *key);
/* Every metadata pair: the count, and the key and value of pair i (NULL
 * past the end). */
ASB_API(size_t) asb_sandbox_info_metadata_count(const asb_sandbox_info *info);
ASB_API(const char *)
asb_sandbox_info_metadata_key(const asb_sandbox_info *info, size_t i);
ASB_API(const char *)
asb_sandbox_info_metadata_value(const asb_sandbox_info *info, size_t i);
/* Internet access as the engine reports it (E2B's allowInternetAccess):
 * 1 allowed, 0 denied, -1 not said (not set at create, or an engine
 * without networking). */
ASB_API(int)
asb_sandbox_info_allow_internet_access(const asb_sandbox_info *info);
/* The effective network config (E2B's SandboxNetworkConfig) as a JSON
 * object, or NULL when the reply had none. Secrets and the egress proxy's
 * password are never in it. */
ASB_API(const char *)
asb_sandbox_info_network_json(const asb_sandbox_info *info);
/* Its network.allowOut and network.denyOut entries: the count, and entry
 * i (NULL past the end). */
ASB_API(size_t) asb_sandbox_info_allow_out_count(const asb_sandbox_info *info);
ASB_API(const char *)
asb_sandbox_info_allow_out_get(const asb_sandbox_info *info, size_t i);
ASB_API(size_t) asb_sandbox_info_deny_out_count(const asb_sandbox_info *info);
ASB_API(const char *)
asb_sandbox_info_deny_out_get(const asb_sandbox_info *info, size_t i);
/* Its volumeMounts (E2B's [{name, path}], in the order of the create):
 * the count, and the volume name and mount path of mount i (NULL past the
 * end). Listed sandboxes carry them too. */
ASB_API(size_t)
asb_sandbox_info_volume_mount_count(const asb_sandbox_info *info);
ASB_API(const char *)
asb_sandbox_info_volume_mount_name(const asb_sandbox_info *info, size_t i);
ASB_API(const char *)
asb_sandbox_info_volume_mount_path(const asb_sandbox_info *info, size_t i);
/* A fork's mode ("processes" or "files", as asb_sandbox_fork_mode), or
 * NULL when the sandbox is not a fork. */
ASB_API(const char *)
asb_sandbox_info_fork_mode(const asb_sandbox_info *info);
ASB_API(void) asb_sandbox_info_free(asb_sandbox_info *info);

/* ---- listing
 * ----------------------------------------------------------------- */
#define ASB_SANDBOX_LIST_OPTIONS_VERSION 2

typedef struct asb_sandbox_list_options {
  unsigned int version;        /* ASB_SANDBOX_LIST_OPTIONS_VERSION */
  const char *const *metadata; /* "key=value" filters, all must match */
  int running;                 /* include running sandboxes */
  int paused;                  /* include paused sandboxes (both 0 = both) */
  const char *template_id;     /* filter by template id or name */
  int limit;                   /* page size: 0 = 100 (the maximum) */
  const char *next_token;      /* from asb_sandbox_page_next_token */
  long request_timeout_ms;
  asb_cancel *cancel;
  /* version 2 */
  const char *started_after; /* RFC 3339 date-time ("2026-01-02T03:04:05Z"):
                                only sandboxes started then or later; the
                                engine filters (whole seconds), so pages
                                stay full */
} asb_sandbox_list_options;

#define ASB_SANDBOX_LIST_OPTIONS_INIT \
  { ASB_SANDBOX_LIST_OPTIONS_VERSION, NULL, 0, 0, NULL, 0, NULL, 0, NULL, NULL }

ASB_API(int)
asb_sandbox_list_options_init(asb_sandbox_list_options *opts,
                              unsigned int version);

/* One page of sandboxes, newest first. */
ASB_API(int)
asb_sandbox_list(asb_sandbox_page **out, asb_client *client,
                 const asb_sandbox_list_options *opts);
ASB_API(size_t) asb_sandbox_page_count(const asb_sandbox_page *page);
ASB_API(const asb_sandbox_info *)
asb_sandbox_page_get(const asb_sandbox_page *page, size_t i);
/* Token for the next page, or NULL when this is the last. */
ASB_API(const char *) asb_sandbox_page_next_token(const asb_sandbox_page *page);
ASB_API(void) asb_sandbox_page_free(asb_sandbox_page *page);

/* ---- metrics ----------------------------------------------------------- */
/* Samples between start and end (Unix seconds; 0 = unbounded). */
ASB_API(int)
asb_sandbox_get_metrics(asb_metrics **out, asb_sandbox *sandbox,
                        asb_int64 start, asb_int64 end,
                        const asb_call_options *call);
ASB_API(size_t) asb_metrics_count(const asb_metrics *m);
/* Each sample i: when it was taken (Unix seconds), CPU, memory and disk. */
ASB_API(asb_int64) asb_metrics_sampled_at(const asb_metrics *m, size_t i);
ASB_API(double) asb_metrics_cpu_used_pct(const asb_metrics *m, size_t i);
ASB_API(int) asb_metrics_cpu_count(const asb_metrics *m, size_t i);
ASB_API(asb_int64) asb_metrics_mem_used(const asb_metrics *m, size_t i);
ASB_API(asb_int64) asb_metrics_mem_total(const asb_metrics *m, size_t i);
ASB_API(asb_int64) asb_metrics_disk_used(const asb_metrics *m, size_t i);
ASB_API(asb_int64) asb_metrics_disk_total(const asb_metrics *m, size_t i);
ASB_API(void) asb_metrics_free(asb_metrics *m);

/* ---- snapshots and fork (docs/snapshots.md) ------------------------------ */
/* Snapshot the sandbox's files at this instant (E2B's createSnapshot; it is
 * frozen while they are copied, then runs on). name NULL or "": unnamed.
 * *snapshot_id (free with asb_free) is tag-qualified, "<name>:default";
 * pass it (or the name) as a template id to asb_sandbox_create, and to
 * asb_templates_delete to delete it. A sandbox from it boots fresh: files,
 * not processes. Errors: ASB_EINVAL (the name), ASB_ESANDBOXNOTFOUND,
 * ASB_ERROR (the name is a template's that is not a snapshot: 409). */
ASB_API(int)
asb_sandbox_snapshot(char **snapshot_id, asb_sandbox *sandbox, const char *name,
                     const asb_call_options *call);
/* Fork: a new sandbox with this one's files at this instant, its metadata,
 * env vars and network policy (E2B's fork with count 1); this one runs on
 * (a paused one stays paused). On an engine started with --pause-criu, the
 * fork of a running sandbox also has its running processes and their
 * memory (a fresh boot when criu fails; docs/snapshots.md). timeout_ms:
 * the new one's lifetime (0 = 15 s, E2B's default). Errors:
 * ASB_ESANDBOXNOTFOUND, ASB_ERROR (its template is gone: 409; or the fork
 * failed to start, the engine's reason in the message). */
ASB_API(int)
asb_sandbox_fork(asb_sandbox **out, asb_sandbox *sandbox, long timeout_ms,
                 const asb_call_options *call);

/* Forks with options (issue 20; docs/snapshots.md). asb_sandbox_fork is
 * asb_sandbox_fork_ex with timeout_ms and the defaults. Fill the options
 * with ASB_FORK_OPTIONS_INIT or asb_fork_options_init: in a zeroed struct
 * keep_processes is 0, which asks for forks booted fresh. */
#define ASB_FORK_OPTIONS_VERSION 1

typedef struct asb_fork_options {
  unsigned int version; /* ASB_FORK_OPTIONS_VERSION */
  long timeout_ms;      /* each new one's lifetime: 0 = 15 s (E2B's) */
  int keep_processes;   /* -1 (the default): the engine's choice (a
                           --pause-criu engine keeps the running parent's
                           processes); 0: boot fresh on the parent's files
                           (fork mode "files"); 1: keep them (an engine
                           without --pause-criu, or a failing criu, still
                           gives "files": see asb_sandbox_fork_mode) */
  int count;            /* how many forks, 1..100 (E2B's count): 0 = 1;
                           more than 1 only with asb_sandbox_fork_many */
} asb_fork_options;

#define ASB_FORK_OPTIONS_INIT \
  { ASB_FORK_OPTIONS_VERSION, 0, -1, 1 }

ASB_API(int)
asb_fork_options_init(asb_fork_options *opts, unsigned int version);

/* One fork with opts (NULL = the defaults; opts->count must be 0 or 1).
 * Errors as asb_sandbox_fork, and ASB_EINVAL (count, keep_processes). */
ASB_API(int)
asb_sandbox_fork_ex(asb_sandbox **out, asb_sandbox *sandbox,
                    const asb_fork_options *opts, const asb_call_options *call);

/* opts->count forks in one call (E2B's fork with count: one snapshot of
 * the parent, then count sandboxes from it), into *out, one entry per fork
 * in the engine's order. A fork that failed to start does not fail the
 * call (as E2B's [{sandbox} or {error}]): asb_fork_list_take gives its
 * error. The call's own errors as asb_sandbox_fork_ex's. */
ASB_API(int)
asb_sandbox_fork_many(asb_fork_list **out, asb_sandbox *sandbox,
                      const asb_fork_options *opts,
                      const asb_call_options *call);
ASB_API(size_t) asb_fork_list_count(const asb_fork_list *list);
/* Fork i: ASB_OK and *out its handle (the caller's now: asb_sandbox_free),
 * or that fork's error: ASB_ERROR with the engine's reason in the message
 * (the fork failed to start), ASB_EINVAL (i past the end, or taken
 * already). No I/O. */
ASB_API(int)
asb_fork_list_take(asb_sandbox **out, asb_fork_list *list, size_t i);
/* Frees the handles not taken (their sandboxes run on). */
ASB_API(void) asb_fork_list_free(asb_fork_list *list);

/* What a fork got of its parent, as the engine said when this handle was
 * made (asb_sandbox_fork*, asb_sandbox_connect): "processes" (it kept the
 * parent's running processes and memory) or "files" (booted fresh on the
 * parent's files); NULL when the sandbox is not a fork, or the handle was
 * attached without a request. */
ASB_API(const char *) asb_sandbox_fork_mode(const asb_sandbox *sandbox);

/* The snapshots taken of sandbox_id (NULL = of any) that name matches
 * (NULL = any; a name or id, with ":default" or "namespace/" too), every
 * page: their ids (tag-qualified, as asb_sandbox_snapshot gives them). */
ASB_API(int)
asb_snapshots_list(asb_snapshot_list **out, asb_client *client,
                   const char *sandbox_id, const char *name,
                   const asb_call_options *call);
ASB_API(size_t) asb_snapshot_list_count(const asb_snapshot_list *l);
/* Id i, or NULL past the end. */
ASB_API(const char *)
asb_snapshot_list_get(const asb_snapshot_list *l, size_t i);
ASB_API(void) asb_snapshot_list_free(asb_snapshot_list *l);

/* ---- E2B's mcp option: the gateway (docs/mcp.md) ------------------------ */

/* The URL of the sandbox's MCP gateway: asb_sandbox_get_url of port 50005
 * with "/mcp" (E2B's getMcpUrl). Errors as asb_sandbox_get_url. */
ASB_API(int)
asb_sandbox_mcp_url(char *buf, size_t buflen, const asb_sandbox *sandbox);
/* The gateway's bearer token (E2B's getMcpToken) into a new string (free
 * with asb_free): the one made at create when this handle created the
 * sandbox with mcp_json, else read as root from /etc/mcp-gateway/.token.
 * ASB_ENOTFOUND: the sandbox runs no gateway (no token file). */
ASB_API(int)
asb_sandbox_mcp_token(char **token, asb_sandbox *sandbox,
                      const asb_call_options *call);

ASB_END_DECL

#endif /* AGENTSANDBOX_SANDBOX_H */
