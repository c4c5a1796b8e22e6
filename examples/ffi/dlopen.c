/* libagentsandbox from plain C without its header and without linking it:
 * dlopen + dlvsym, the way every language's FFI reaches it (docs/ffi.md).
 * Creates a sandbox, runs a command whose output streams to a callback,
 * writes a file and reads it back, shows a failing call's error, kills the
 * sandbox.
 *
 *   cc dlopen.c -o dlopen          # no -I, no -lagentsandbox
 *   ./dlopen                       # libagentsandbox.so.1 from the loader's path
 *   ASB_LIBRARY="$(pkg-config --variable=libdir agentsandbox)/libagentsandbox.so.1" ./dlopen
 *
 * Nothing is configured here: the library uses the environment (E2B_API_KEY
 * ...), else the local engine (docs/reference/client.md). Options are made
 * with asb_options_new and filled by member name, so no struct layout is
 * written down anywhere in this file.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What this program knows of the ABI, written by hand: handles are
 * pointers, statuses are ints (0 = ASB_OK, negative = an error), and the
 * one callback type it uses. */
#define ASB_OK 0
#define ASB_ECOMMANDEXIT (-8)
typedef int (*data_fn)(const char *data, size_t len, void *userdata);

static void *lib;

/* Every symbol under the version node this program was written for. */
static void *sym(const char *name) {
  void *p = dlvsym(lib, name, "ASB_1.0");
  if (!p) {
    fprintf(stderr, "dlvsym(%s, ASB_1.0): %s\n", name, dlerror());
    exit(1);
  }
  return p;
}
#define LOAD(var, name) var = (__typeof__(var))sym(name)

static const char *(*asb_version)(int *, int *, int *);
static const char *(*asb_error_message)(const void *);
static const char *(*asb_status_name)(int);
static int (*asb_options_new)(void **, const char *, unsigned);
static void (*asb_options_free)(void *);
static int (*asb_options_set_int)(void *, const char *, long long);
static int (*asb_options_set_string)(void *, const char *, const char *);
static int (*asb_options_add_string)(void *, const char *, const char *);
static int (*asb_options_set_pointer)(void *, const char *, void *);
static int (*asb_client_new)(void **, const void *);
static void (*asb_client_free)(void *);
static int (*asb_sandbox_create)(void **, void *, const void *);
static const char *(*asb_sandbox_id)(const void *);
static int (*asb_sandbox_kill)(void *, const void *);
static void (*asb_sandbox_free)(void *);
static int (*asb_commands_run)(void **, void *, const char *, const void *);
static int (*asb_command_result_exit_code)(const void *);
static const char *(*asb_command_result_stdout)(const void *, size_t *);
static void (*asb_command_result_free)(void *);
static int (*asb_files_write)(void **, void *, const char *, const void *, size_t, const void *);
static int (*asb_files_read)(char **, size_t *, void *, const char *, const void *);
static void (*asb_free)(void *);

/* Runs on this thread, during asb_commands_run, once per chunk of output
 * (not NUL-terminated). Returning non-zero would abort the call. */
static int on_stdout(const char *data, size_t len, void *userdata) {
  size_t *streamed = userdata;
  *streamed += len;
  printf("streamed: %.*s", (int)len, data);
  return 0;
}

static int fail(const char *what, int rc) {
  fprintf(stderr, "%s: %s: %s\n", what, asb_status_name(rc), asb_error_message(NULL));
  return 1;
}

int main(void) {
  const char *path = getenv("ASB_LIBRARY");
  lib = dlopen(path && *path ? path : "libagentsandbox.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  LOAD(asb_version, "asb_version");
  LOAD(asb_error_message, "asb_error_message");
  LOAD(asb_status_name, "asb_status_name");
  LOAD(asb_options_new, "asb_options_new");
  LOAD(asb_options_free, "asb_options_free");
  LOAD(asb_options_set_int, "asb_options_set_int");
  LOAD(asb_options_set_string, "asb_options_set_string");
  LOAD(asb_options_add_string, "asb_options_add_string");
  LOAD(asb_options_set_pointer, "asb_options_set_pointer");
  LOAD(asb_client_new, "asb_client_new");
  LOAD(asb_client_free, "asb_client_free");
  LOAD(asb_sandbox_create, "asb_sandbox_create");
  LOAD(asb_sandbox_id, "asb_sandbox_id");
  LOAD(asb_sandbox_kill, "asb_sandbox_kill");
  LOAD(asb_sandbox_free, "asb_sandbox_free");
  LOAD(asb_commands_run, "asb_commands_run");
  LOAD(asb_command_result_exit_code, "asb_command_result_exit_code");
  LOAD(asb_command_result_stdout, "asb_command_result_stdout");
  LOAD(asb_command_result_free, "asb_command_result_free");
  LOAD(asb_files_write, "asb_files_write");
  LOAD(asb_files_read, "asb_files_read");
  LOAD(asb_free, "asb_free");
  printf("libagentsandbox %s\n", asb_version(NULL, NULL, NULL));

  void *client = NULL, *sandbox = NULL, *opts = NULL, *result = NULL;
  int rc = asb_client_new(&client, NULL);
  if (rc != ASB_OK) return fail("client", rc);

  /* A sandbox that lives two minutes unless killed sooner. */
  rc = asb_options_new(&opts, "asb_sandbox_options", 1);
  if (rc == ASB_OK) rc = asb_options_set_int(opts, "timeout_ms", 120000);
  if (rc == ASB_OK) rc = asb_sandbox_create(&sandbox, client, opts);
  asb_options_free(opts);
  if (rc != ASB_OK) return fail("create", rc);
  printf("sandbox %s\n", asb_sandbox_id(sandbox));

  /* A command with its output streamed to on_stdout. */
  size_t streamed = 0;
  rc = asb_options_new(&opts, "asb_command_options", 1);
  if (rc == ASB_OK) rc = asb_options_add_string(opts, "envs", "WHO=dlopen");
  if (rc == ASB_OK) rc = asb_options_set_string(opts, "cwd", "/tmp");
  if (rc == ASB_OK) rc = asb_options_set_pointer(opts, "on_stdout", (void *)on_stdout);
  if (rc == ASB_OK) rc = asb_options_set_pointer(opts, "userdata", &streamed);
  if (rc == ASB_OK)
    rc = asb_commands_run(&result, sandbox, "echo hello from $WHO; echo in $(pwd)", opts);
  asb_options_free(opts); /* the call is over: nothing of it is used now */
  if (rc != ASB_OK) return fail("run", rc);
  size_t len = 0;
  asb_command_result_stdout(result, &len);
  printf("exit code %d, %zu bytes streamed, %zu kept\n", asb_command_result_exit_code(result),
         streamed, len);
  asb_command_result_free(result);
  result = NULL;

  /* A command that fails: the status says how, the result is still set. */
  rc = asb_commands_run(&result, sandbox, "exit 3", NULL);
  if (rc != ASB_ECOMMANDEXIT) return fail("exit 3", rc);
  printf("exit 3: %s, exit code %d (%s)\n", asb_status_name(rc),
         asb_command_result_exit_code(result), asb_error_message(NULL));
  asb_command_result_free(result);

  /* A file written and read back (binary-safe: pointer and length). */
  const char text[] = "written through dlopen\n";
  rc = asb_files_write(NULL, sandbox, "/tmp/ffi/hello.txt", text, sizeof text - 1, NULL);
  if (rc != ASB_OK) return fail("write", rc);
  char *data = NULL;
  rc = asb_files_read(&data, &len, sandbox, "/tmp/ffi/hello.txt", NULL);
  if (rc != ASB_OK) return fail("read", rc);
  int same = len == sizeof text - 1 && memcmp(data, text, len) == 0;
  printf("file round trip %s: %.*s", same ? "ok" : "FAILED", (int)len, data);
  asb_free(data); /* the library's buffer goes back to the library */

  rc = asb_sandbox_kill(sandbox, NULL);
  if (rc != ASB_OK) return fail("kill", rc);
  printf("killed\n");
  asb_sandbox_free(sandbox);
  asb_client_free(client);
  dlclose(lib);
  return same ? 0 : 1;
}
