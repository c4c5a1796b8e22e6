/* libagentsandbox loaded and unloaded at run time, as FFI hosts and plugin
 * hosts do (docs/ffi.md), against a real engine:
 *
 *  - twice: the soname through the search path, the unversioned dev
 *    symlink by path and the soname again are one library (one handle, one
 *    copy of every function); it keeps working after one dlclose and is
 *    gone after the last;
 *  - after_use: a sandbox created, commands run with streaming callbacks
 *    from several threads at once over "localhost" (so libcurl resolves
 *    names on threads of its own), a background process whose wait is
 *    cancelled from another thread, files written and read — then every
 *    object freed and the library dlclose'd: it is unmapped (libcurl is
 *    kept, pinned by the library on purpose) and no thread is left; then
 *    loaded again and used again without
 *    asb_global_init (the implicit initialisation a destructor must undo);
 *  - host_keeps_libcurl: a host that uses libcurl itself, and so keeps it
 *    loaded, loads and unloads this library twice; its own last
 *    curl_global_cleanup must then leave libcurl uninitialised (the
 *    library gave back the initialisation it made on its own).
 *
 * Run under valgrind (memcheck, normal tree) and with LeakSanitizer (ASan
 * tree): no invalid access and no leak, which is what shows the library's
 * destructor released what it set up. The binary does not link the library
 * (the header is only read for the declarations' types, so every dlvsym'd
 * pointer is checked against the real prototype).
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "testing.h"

#ifndef ASB_LIB_DIR
#error "define ASB_LIB_DIR (where libagentsandbox.so and .so.1 are)"
#endif

#define SONAME "libagentsandbox.so.1"

/* The functions used, each looked up with dlvsym under ASB_1.0. */
/* An X-macro list, one name a line: clang-format 14 does not keep its own
 * layout of it stable. */
/* clang-format off */
#define API(X) \
  X(asb_version) \
  X(asb_global_init) \
  X(asb_global_cleanup) \
  X(asb_error_message) \
  X(asb_options_new) \
  X(asb_options_free) \
  X(asb_options_set_string) \
  X(asb_options_set_int) \
  X(asb_options_set_pointer) \
  X(asb_client_new) \
  X(asb_client_free) \
  X(asb_sandbox_create) \
  X(asb_sandbox_kill) \
  X(asb_sandbox_free) \
  X(asb_commands_run) \
  X(asb_commands_start) \
  X(asb_command_result_stdout) \
  X(asb_command_result_free) \
  X(asb_process_wait) \
  X(asb_process_kill) \
  X(asb_process_free) \
  X(asb_cancel_new) \
  X(asb_cancel_request) \
  X(asb_cancel_free) \
  X(asb_files_write) \
  X(asb_files_read) \
  X(asb_free)
/* clang-format on */

typedef struct api {
#define FIELD(name) __typeof__(&name) name;
  API(FIELD)
#undef FIELD
} api;

static int load(api *a, void *h) {
  int ok = 1;
#define LOAD(name)                                          \
  a->name = (__typeof__(&name))dlvsym(h, #name, "ASB_1.0"); \
  if (!a->name) {                                           \
    ASBT_FAIL("dlvsym(%s, ASB_1.0): %s", #name, dlerror()); \
    ok = 0;                                                 \
  }
  API(LOAD)
#undef LOAD
  return ok;
}

static engine_fixture F;

static int loaded(const char *name) {
  void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* 1 if /proc/net/<file> lists a socket of this inode. */
static int in_net_table(const char *file, unsigned long inode) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/net/%s", file);
  FILE *f = fopen(path, "r");
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f)) {
    unsigned long ino = 0;
    /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
    if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu", &ino) == 1 && ino == inode)
      found = 1;
  }
  if (f) fclose(f);
  return found;
}

/* The TCP sockets of this process that a child it forks would inherit
 * (no O_CLOEXEC): this process has none of its own, so they would be the
 * library's connections. */
static int inheritable_tcp_sockets(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    char path[300], link[64] = "", line[128];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, link, sizeof link - 1);
    unsigned long inode = 0;
    if (len <= 0 || (link[len] = 0, sscanf(link, "socket:[%lu]", &inode) != 1)) continue;
    if (!in_net_table("tcp", inode) && !in_net_table("tcp6", inode)) continue;
    snprintf(path, sizeof path, "/proc/self/fdinfo/%s", e->d_name);
    FILE *f = fopen(path, "r");
    unsigned long flags = 0;
    while (f && fgets(line, sizeof line, f))
      if (sscanf(line, "flags: %lo", &flags) == 1) break;
    if (f) fclose(f);
    if (!(flags & 02000000)) n++; /* O_CLOEXEC */
  }
  if (d) closedir(d);
  return n;
}

/* A client of the fixture's engine, its URLs with host name `host`. */
static int client(const api *a, asb_client **out, const char *host) {
  char url[96];
  snprintf(url, sizeof url, "http://%s:%d", host, F.port);
  void *o = NULL;
  int rc = a->asb_options_new(&o, "asb_client_options", 1);
  if (!rc) rc = a->asb_options_set_string(o, "api_url", url);
  if (!rc) rc = a->asb_options_set_string(o, "sandbox_url", url);
  if (!rc) rc = a->asb_options_set_string(o, "api_key", F.key);
  if (!rc) rc = a->asb_options_set_int(o, "debug", -1);
  if (!rc) rc = a->asb_client_new(out, o);
  a->asb_options_free(o);
  return rc;
}

TEST(twice) {
  REQUIRE(!loaded(SONAME));
  void *h1 = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL); /* found through LD_LIBRARY_PATH */
  void *h2 = dlopen(ASB_LIB_DIR "/libagentsandbox.so", RTLD_NOW | RTLD_LOCAL);
  void *h3 = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h1 && h2 && h3);
  CHECK(h1 == h2 && h2 == h3); /* one library, however it is named */
  api a1, a2;
  REQUIRE(load(&a1, h1) && load(&a2, h2));
  CHECK((void *)a1.asb_client_new == (void *)a2.asb_client_new);
  CHECK_STR(a1.asb_version(NULL, NULL, NULL), "1.0.0");
  dlclose(h3);
  dlclose(h2);
  /* one reference left: still loaded, still working */
  REQUIRE(loaded(SONAME));
  asb_client *c = NULL;
  int rc = client(&a1, &c, "127.0.0.1");
  CHECK(rc == ASB_OK);
  asb_sandbox *sb = NULL;
  if (c && (rc = a1.asb_sandbox_create(&sb, c, NULL)) != ASB_OK)
    ASBT_FAIL("create: %d %s", rc, a1.asb_error_message(NULL));
  if (sb) {
    CHECK(a1.asb_sandbox_kill(sb, NULL) == ASB_OK);
    a1.asb_sandbox_free(sb);
  }
  a1.asb_client_free(c);
  dlclose(h1);
  CHECK(!loaded(SONAME));
}

/* ---- after_use ------------------------------------------------------------ */

typedef struct worker {
  const api *a;
  asb_sandbox *sb;
  int index;
  size_t streamed;
  int ok;
} worker;

static int on_chunk(const char *data, size_t len, void *userdata) {
  (void)data;
  ((worker *)userdata)->streamed += len;
  return 0;
}

/* One thread: a command streamed to on_chunk, a file written and read. */
static void *work(void *arg) {
  worker *w = arg;
  const api *a = w->a;
  void *o = NULL;
  char cmd[64], path[64], body[64];
  snprintf(cmd, sizeof cmd, "for i in 1 2 3; do echo worker %d line $i; done", w->index);
  snprintf(path, sizeof path, "/tmp/unload-%d.txt", w->index);
  snprintf(body, sizeof body, "written by worker %d", w->index);
  asb_command_result *r = NULL;
  int rc = a->asb_options_new(&o, "asb_command_options", 1);
  if (!rc) rc = a->asb_options_set_pointer(o, "on_stdout", (void *)on_chunk);
  if (!rc) rc = a->asb_options_set_pointer(o, "userdata", w);
  if (!rc) rc = a->asb_commands_run(&r, w->sb, cmd, o);
  a->asb_options_free(o);
  size_t len = 0;
  const char *out = r ? a->asb_command_result_stdout(r, &len) : NULL;
  int ran = rc == ASB_OK && out && strstr(out, "line 3") && w->streamed == len;
  a->asb_command_result_free(r);
  char *data = NULL;
  size_t dlen = 0;
  int filed = a->asb_files_write(NULL, w->sb, path, body, strlen(body), NULL) == ASB_OK &&
              a->asb_files_read(&data, &dlen, w->sb, path, NULL) == ASB_OK &&
              dlen == strlen(body) && memcmp(data, body, dlen) == 0;
  a->asb_free(data);
  w->ok = ran && filed;
  if (!w->ok) fprintf(stderr, "worker %d: rc %d: %s\n", w->index, rc, a->asb_error_message(NULL));
  return NULL;
}

typedef struct waiter {
  const api *a;
  asb_process *p;
  asb_cancel *cancel;
  int rc;
} waiter;

static void *wait_process(void *arg) {
  waiter *w = arg;
  void *o = NULL;
  w->rc = w->a->asb_options_new(&o, "asb_call_options", 1);
  if (!w->rc) w->rc = w->a->asb_options_set_pointer(o, "cancel", w->cancel);
  if (!w->rc) w->rc = w->a->asb_process_wait(NULL, w->p, o);
  w->a->asb_options_free(o);
  return NULL;
}

/* Everything a host may do before unloading; explicit: with its own
 * asb_global_init/cleanup pair. */
static void use_library(void *h, int explicit_init) {
  api a;
  if (!load(&a, h)) return;
  if (explicit_init) CHECK(a.asb_global_init() == ASB_OK);
  asb_client *c = NULL;
  if (client(&a, &c, "localhost") != ASB_OK) {
    ASBT_FAIL("client: %s", a.asb_error_message(NULL));
    return;
  }
  asb_sandbox *sb = NULL;
  int rc = a.asb_sandbox_create(&sb, c, NULL);
  if (rc != ASB_OK) {
    ASBT_FAIL("create: %d %s", rc, a.asb_error_message(NULL));
    a.asb_client_free(c);
    return;
  }
  enum { N = 4 };
  worker w[N];
  pthread_t t[N];
  for (int i = 0; i < N; i++) {
    w[i] = (worker){.a = &a, .sb = sb, .index = i};
    CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
  }
  /* a long call on another thread, interrupted by a cancel from here */
  waiter wt = {.a = &a};
  asb_process *p = NULL;
  CHECK(a.asb_cancel_new(&wt.cancel) == ASB_OK);
  CHECK(a.asb_commands_start(&p, sb, "sleep 600", NULL) == ASB_OK);
  pthread_t tw;
  wt.p = p;
  int waiting = p && pthread_create(&tw, NULL, wait_process, &wt) == 0;
  for (int i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    CHECK(w[i].ok);
  }
  /* The pooled connections (several now, one per concurrent call, and the
   * waiter's stream) are not inherited by children the host forks. */
  CHECK_INT(inheritable_tcp_sockets(), 0);
  if (waiting) {
    a.asb_cancel_request(wt.cancel);
    pthread_join(tw, NULL);
    CHECK(wt.rc == ASB_ECANCELED);
    CHECK(a.asb_process_kill(p, NULL) == ASB_OK);
  }
  a.asb_process_free(p);
  a.asb_cancel_free(wt.cancel);
  CHECK(a.asb_sandbox_kill(sb, NULL) == ASB_OK);
  a.asb_sandbox_free(sb);
  a.asb_client_free(c);
  if (explicit_init) a.asb_global_cleanup();
}

TEST(after_use) {
  int threads = thread_count();
  for (int round = 0; round < 2; round++) {
    REQUIRE(!loaded(SONAME));
    void *h = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL);
    use_library(h, round == 0);
    CHECK(dlclose(h) == 0);
    CHECK(!loaded(SONAME));
    /* libcurl stays: a name lookup it gave up finishes on a detached
     * thread in its code (core/client/global.c) */
    CHECK(loaded("libcurl.so.4"));
    CHECK_INT(thread_count(), threads);
  }
}

/* ---- a host that uses libcurl itself -------------------------------------- */

static size_t host_allocs;
static void *count_malloc(size_t n) {
  return host_allocs++, malloc(n);
}
static void count_free(void *p) {
  free(p);
}
static void *count_realloc(void *p, size_t n) {
  return host_allocs++, realloc(p, n);
}
static char *count_strdup(const char *s) {
  return host_allocs++, strdup(s);
}
static void *count_calloc(size_t n, size_t m) {
  return host_allocs++, calloc(n, m);
}

/* libcurl counts its initialisations: the host's last curl_global_cleanup
 * releases libcurl's global state only if this library gave back the one it
 * made on its own (its first client) when it was unloaded. Seen through
 * curl_global_init_mem, which installs its allocators only into a libcurl
 * that is not initialised: after the host's cleanup they must be in use. */
TEST(host_keeps_libcurl) {
  void *curl = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  REQUIRE(curl != NULL);
  int (*global_init)(long) = (int (*)(long))dlsym(curl, "curl_global_init");
  void (*global_cleanup)(void) = (void (*)(void))dlsym(curl, "curl_global_cleanup");
  int (*global_init_mem)(long, void *(*)(size_t), void (*)(void *), void *(*)(void *, size_t),
                         char *(*)(const char *), void *(*)(size_t, size_t)) =
      (int (*)(long, void *(*)(size_t), void (*)(void *), void *(*)(void *, size_t),
               char *(*)(const char *), void *(*)(size_t, size_t)))dlsym(curl,
                                                                         "curl_global_init_mem");
  void *(*easy_init)(void) = (void *(*)(void))dlsym(curl, "curl_easy_init");
  void (*easy_cleanup)(void *) = (void (*)(void *))dlsym(curl, "curl_easy_cleanup");
  REQUIRE(global_init && global_cleanup && global_init_mem && easy_init && easy_cleanup);
  REQUIRE(global_init(3 /* CURL_GLOBAL_ALL */) == 0);
  for (int round = 0; round < 2; round++) {
    void *h = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL);
    use_library(h, 0);
    CHECK(dlclose(h) == 0);
    CHECK(!loaded(SONAME));
  }
  global_cleanup();
  REQUIRE(global_init_mem(3, count_malloc, count_free, count_realloc, count_strdup, count_calloc) ==
          0);
  void *e = easy_init();
  CHECK(e != NULL);
  easy_cleanup(e);
  global_cleanup();
  if (!host_allocs) ASBT_FAIL("libcurl was still initialised after the host's last cleanup");
  dlclose(curl);
}

int main(void) {
  if (engine_fixture_start(&F, "unload") != 0) {
    fprintf(stderr, "cannot start the engine\n");
    return 1;
  }
  RUN(twice);
  RUN(after_use);
  RUN(host_keeps_libcurl);
  engine_fixture_stop(&F);
  TEST_MAIN_END();
}
