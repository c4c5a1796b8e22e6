/* Process-wide initialisation of libcurl (and through it OpenSSL).
 *
 * libcurl is initialised once, by the first asb_global_init() or, without
 * one, by the first client; libcurl counts initialisations, so this library
 * makes exactly one of its own and gives it back exactly once: at the last
 * asb_global_cleanup(), or when the library is unloaded (dlclose, exit).
 * The second matters to hosts that load this library at run time and also
 * use libcurl themselves: libcurl then stays loaded when this library goes,
 * and an initialisation never given back would keep the host's own last
 * curl_global_cleanup() from releasing libcurl's global state — once per
 * load of this library.
 *
 * libcurl itself stays loaded once used, as OpenSSL keeps itself loaded:
 * its threaded resolver hands a name lookup that is given up (a cancelled
 * or timed-out call) to a detached thread, which finishes it in libcurl's
 * code, and nothing can wait for that thread. Were libcurl unloaded with
 * this library meanwhile (a host dlclose'ing us), the thread would run
 * unmapped code.
 * SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>

#include "internal.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int refs;        /* explicit asb_global_init references */
static int users;       /* live HTTP pools (one per client) */
static int initialised; /* curl_global_init done */

/* Keep libcurl loaded for the rest of the process if its resolver runs on
 * threads (see above): RTLD_NOLOAD finds the copy already loaded, and
 * RTLD_NODELETE marks it never to be unloaded. */
static void pin_libcurl(void) {
  static int pinned;
  const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
  if (pinned || !(v->features & CURL_VERSION_ASYNCHDNS) || v->ares) return;
  Dl_info info;
  if (dladdr((void *)curl_easy_init, &info) && info.dli_fname &&
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
    pinned = 1;
}

static int init_locked(void) {
  if (initialised) return ASB_OK;
  CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK)
    return asbi_err(ASB_ERROR, "libcurl initialisation failed: %s", curl_easy_strerror(rc));
  initialised = 1;
  pin_libcurl();
  return ASB_OK;
}

int asb_global_init(void) {
  pthread_mutex_lock(&mu);
  int rc = init_locked();
  if (rc == ASB_OK) refs++;
  pthread_mutex_unlock(&mu);
  return rc;
}

void asb_global_cleanup(void) {
  pthread_mutex_lock(&mu);
  if (refs > 0 && --refs == 0 && initialised) {
    curl_global_cleanup();
    initialised = 0;
  }
  pthread_mutex_unlock(&mu);
}

int asbi_global_hold(void) {
  pthread_mutex_lock(&mu);
  int rc = init_locked();
  if (rc == ASB_OK) users++;
  pthread_mutex_unlock(&mu);
  return rc;
}

void asbi_global_release(void) {
  pthread_mutex_lock(&mu);
  if (users > 0) users--;
  pthread_mutex_unlock(&mu);
}

/* Unloading (dlclose) or exiting. Not while a client is alive: at exit
 * another thread may still be in a call, and what it holds goes with the
 * process. An asb_global_init() never matched by asb_global_cleanup()
 * goes with the library too. */
__attribute__((destructor)) static void global_fini(void) {
  pthread_mutex_lock(&mu);
  if (initialised && users == 0) {
    curl_global_cleanup();
    initialised = 0;
    refs = 0;
  }
  pthread_mutex_unlock(&mu);
}
