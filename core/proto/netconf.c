/* The shape check of E2B's network config (netconf.h).
 * SPDX-License-Identifier: Apache-2.0 */
#include "proto/netconf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/pjson.h"
#include "util/util.h"

enum { T_LIST, T_OBJECT, T_BOOL, T_STRING, T_COUNT };

static const struct {
  const char *name;
  int type, on_update;
} members[] = {
    {"allowOut", T_LIST, 1},
    {"denyOut", T_LIST, 1},
    {"rules", T_OBJECT, 1},
    {"egressProxy", T_OBJECT, 1},
    {"allowPublicTraffic", T_BOOL, 0},
    {"maskRequestHost", T_STRING, 0},
    /* the local engine's own limits (core/net/policy.h), kept by updates
     * that leave them out */
    {"egressBytesPerSecond", T_COUNT, 1},
    {"maxConnections", T_COUNT, 1},
};

static const char *const type_names[] = {"a list of strings", "an object", "true or false",
                                         "a string", "a whole number, 0 or more"};

static int has_type(const cJSON *m, int type, const char *name) {
  switch (type) {
    case T_LIST: {
      if (!cJSON_IsArray(m)) return 0;
      const cJSON *e;
      cJSON_ArrayForEach(e, m) if (!cJSON_IsString(e)) return 0;
      return 1;
    }
    case T_OBJECT: /* E2B's SDKs spell "no proxy" as egressProxy: null */
      return cJSON_IsObject(m) || (cJSON_IsNull(m) && strcmp(name, "egressProxy") == 0);
    case T_BOOL:
      return cJSON_IsBool(m);
    case T_COUNT: /* the engine judges the bound */
      return cJSON_IsNumber(m) && m->valuedouble >= 0 && m->valuedouble <= 9007199254740992.0 &&
             m->valuedouble == (double)(long long)m->valuedouble;
    default:
      return cJSON_IsString(m);
  }
}

int asbi_netconf_parse(const char *json, size_t len, int update, cJSON **out, char *err,
                       size_t errlen) {
  *out = NULL;
  if (errlen) err[0] = '\0';
  const char *perr = NULL;
  cJSON *j = asbi_pj_parse(json, len, &perr);
  if (!j) return asbi_errf(err, errlen, "network_json is not JSON (%s)", perr ? perr : "?");
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return asbi_errf(err, errlen, "network_json is not a JSON object");
  }
  const cJSON *m;
  cJSON_ArrayForEach(m, j) {
    const char *name = m->string ? m->string : "";
    int k = -1;
    for (int i = 0; i < (int)(sizeof members / sizeof members[0]); i++)
      if (strcmp(members[i].name, name) == 0) k = i;
    if (k < 0 || (update && !members[k].on_update)) {
      int iae = !strcmp(name, "allowInternetAccess") || !strcmp(name, "allow_internet_access");
      asbi_errf(err, errlen, "network_json: %s '%.64s'%s",
                k >= 0 ? "a running sandbox's update does not take" : "unknown member", name,
                iae ? " (give it as allow_internet_access)" : "");
      cJSON_Delete(j);
      return -1;
    }
    if (!has_type(m, members[k].type, name)) {
      asbi_errf(err, errlen, "network_json: '%s' must be %s", name, type_names[members[k].type]);
      cJSON_Delete(j);
      return -1;
    }
  }
  *out = j;
  return 0;
}
