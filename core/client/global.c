/* Process-wide initialisation of libcurl (and through it OpenSSL).
 * SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <pthread.h>

#include "internal.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int refs;        /* explicit asb_global_init references */
static int initialised; /* curl_global_init done */

static int init_locked(void) {
  if (initialised) return ASB_OK;
  CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK)
    return asbi_err(ASB_ERROR, "libcurl initialisation failed: %s",
                    curl_easy_strerror(rc));
  initialised = 1;
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

int asbi_global_ensure(void) {
  pthread_mutex_lock(&mu);
  int rc = init_locked();
  pthread_mutex_unlock(&mu);
  return rc;
}
