/* SPDX-License-Identifier: Apache-2.0 */
#include "internal.h"

const char *asb_version(int *major, int *minor, int *patch) {
  if (major) *major = ASB_VERSION_MAJOR;
  if (minor) *minor = ASB_VERSION_MINOR;
  if (patch) *patch = ASB_VERSION_PATCH;
  return ASB_VERSION_STRING;
}

int asb_version_number(void) {
  return ASB_VERSION_NUMBER;
}
