/* The engine's state (engine.h): made and released in one place.
 * SPDX-License-Identifier: Apache-2.0 */
#include "engine.h"

#include <stdlib.h>
#include <string.h>


void engine_init(engine *e) {
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->mu, NULL);
  pthread_mutex_init(&e->tmpl_mu, NULL);
  pthread_mutex_init(&e->build_mu, NULL);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&e->bundled_mu, &a);
  pthread_mutexattr_destroy(&a);
  asbi_buf_init(&e->bundled_done, 0);
  e->lc_kick_fd = -1;
}

void engine_free(engine *e) {
  free(e->sbx);
  free(e->tombs);
  free(e->state_dir);
  free(e->envd_path);
  free(e->init_path);
  free(e->codei_path);
  free(e->templates_dir);
  free(e->envd_version);
  free(e->domain);
  asbi_buf_free(&e->bundled_done);
  pthread_mutex_destroy(&e->bundled_mu);
  pthread_mutex_destroy(&e->build_mu);
  pthread_mutex_destroy(&e->tmpl_mu);
  pthread_mutex_destroy(&e->mu);
}
