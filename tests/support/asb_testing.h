/* testing.h plus checks that show the library's last error on failure.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ASB_TESTING_H
#define ASB_ASB_TESTING_H

#include <agentsandbox.h>

#include "testing.h"

#define REQUIRE_RC(expr, code)                                                                 \
  do {                                                                                         \
    int rc_ = (expr);                                                                          \
    if (rc_ != (code)) {                                                                       \
      ASBT_FAIL("%s: got %s (%d), want %d: %s", #expr, asb_status_name(rc_), rc_, (int)(code), \
                asb_error_last()->message);                                                    \
      return;                                                                                  \
    }                                                                                          \
  } while (0)

#define CHECK_RC(expr, code)                                                                   \
  do {                                                                                         \
    int rc_ = (expr);                                                                          \
    if (rc_ != (code))                                                                         \
      ASBT_FAIL("%s: got %s (%d), want %d: %s", #expr, asb_status_name(rc_), rc_, (int)(code), \
                asb_error_last()->message);                                                    \
  } while (0)

#endif
