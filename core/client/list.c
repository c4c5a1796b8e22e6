/* JSON array → C array of items, for the client's list calls.
 * SPDX-License-Identifier: Apache-2.0 */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "internal.h"

int asbi_json_items(const cJSON *arr, size_t elem_size, asbi_item_from_json conv,
                    asbi_item_drop drop, void **items, size_t *count) {
  *items = NULL;
  *count = 0;
  if (!cJSON_IsArray(arr)) return asbi_err(ASB_EPROTOCOL, "the reply is not a list");
  size_t n = (size_t)cJSON_GetArraySize(arr), done = 0;
  char *v = calloc(n ? n : 1, elem_size);
  if (!v) return asbi_oom();
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    int rc = conv(it, v + done * elem_size);
    if (rc) {
      for (size_t i = 0; drop && i < done; i++) drop(v + i * elem_size);
      free(v);
      return rc;
    }
    done++;
  }
  *items = v;
  *count = done;
  return ASB_OK;
}

int asbi_json_member_items(const cJSON *obj, const char *key, const char *what, size_t elem_size,
                           asbi_item_from_json conv, asbi_item_drop drop, void **items,
                           size_t *count) {
  *items = NULL;
  *count = 0;
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsArray(arr))
    return asbi_err(ASB_EPROTOCOL, "%s: the reply has no \"%s\" list", what, key);
  return asbi_json_items(arr, elem_size, conv, drop, items, count);
}
