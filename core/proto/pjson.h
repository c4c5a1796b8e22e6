/* proto3 JSON mapping helpers on top of cJSON. Internal.
 * Field lookups accept the lowerCamelCase JSON name and the original
 * snake_case proto name (both are legal input); output uses camelCase, int64
 * as decimal strings, bytes as padded standard base64, enums by name, and
 * omits zero values (0, "", false, empty bytes, the 0 enum).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_PJSON_H
#define ASB_PROTO_PJSON_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Parse exactly len bytes as one JSON value: rejects invalid UTF-8, trailing
 * garbage, nesting deeper than 64, and empty input; also raw control
 * characters in strings, "\u0000" (it would truncate a C string), unpaired
 * surrogates and numbers longer than 512 characters. Numbers keep their
 * source text so int64 values beyond 2^53 read back exactly. On failure
 * returns NULL and, if err is not NULL, points it at a static description. */
cJSON *asbi_pj_parse(const char *json, size_t len, const char **err);

/* Look up camel (e.g. "exitCode") or its snake_case twin ("exit_code").
 * NULL if absent or JSON null. obj may be NULL. */
const cJSON *asbi_pj_field(const cJSON *obj, const char *camel);

/* Getters: an absent field yields the proto3 default (0 / NULL / false) and
 * returns 0; a present field of the wrong type or out of range returns -1. */
int asbi_pj_get_i64(const cJSON *obj, const char *camel, int64_t *out);
int asbi_pj_get_u32(const cJSON *obj, const char *camel, uint32_t *out);
int asbi_pj_get_i32(const cJSON *obj, const char *camel, int32_t *out);
int asbi_pj_get_bool(const cJSON *obj, const char *camel, int *out);
/* *out points into obj (NULL if absent). */
int asbi_pj_get_str(const cJSON *obj, const char *camel, const char **out);
/* Base64 bytes (standard or URL-safe, padding optional) → malloc'd buffer
 * (NUL-terminated for convenience); absent → *out NULL, *len 0. */
int asbi_pj_get_bytes(const cJSON *obj, const char *camel, unsigned char **out, size_t *len);
/* The same bytes decoded straight onto the end of out (which stays
 * NUL-terminated); *len gets their count (0 if absent). Returns 0, -1 if the
 * field is not valid base64 bytes, or -2 if out cannot grow by
 * asbi_b64_decoded_max of the text (out of memory or out->max). On failure
 * out's contents are as they were. */
int asbi_pj_append_bytes(const cJSON *obj, const char *camel, asbi_buf *out, size_t *len);

/* Enum tables: {value, "NAME"} pairs ended by {0, NULL}. */
typedef struct asbi_pj_enum {
  int value;
  const char *name;
} asbi_pj_enum;
/* Accepts the name or the number; absent → 0. Unknown name → -1. */
int asbi_pj_get_enum(const cJSON *obj, const char *camel, const asbi_pj_enum *table, int *out);
const char *asbi_pj_enum_name(const asbi_pj_enum *table, int value);

/* Setters add the field to obj unless it holds the zero value. Each returns
 * 0, or -1 on allocation failure. asbi_pj_add_str replaces invalid UTF-8
 * with U+FFFD so the output is always valid JSON; enum values missing from
 * the table are written as numbers. */
int asbi_pj_add_i64(cJSON *obj, const char *camel, int64_t v);
int asbi_pj_add_u32(cJSON *obj, const char *camel, uint32_t v);
int asbi_pj_add_i32(cJSON *obj, const char *camel, int32_t v);
int asbi_pj_add_bool(cJSON *obj, const char *camel, int v);
int asbi_pj_add_str(cJSON *obj, const char *camel, const char *v);
int asbi_pj_add_bytes(cJSON *obj, const char *camel, const void *p, size_t n);
int asbi_pj_add_enum(cJSON *obj, const char *camel, const asbi_pj_enum *table, int value);
/* obj[key] = the Unix time ms as an RFC 3339 string (E2B's createdAt,
 * startedAt, ...). Unlike the setters above it adds a zero time too (the
 * epoch): a time field is always present. 0, or -1 on allocation failure. */
int asbi_pj_add_time(cJSON *obj, const char *key, int64_t ms);

/* Serialise compactly into a malloc'd string (cJSON_PrintUnformatted). */
char *asbi_pj_print(const cJSON *v);
/* The same (malloc'd, free()), with numbers as their source text from
 * asbi_pj_parse: 1.0 stays 1.0 and long digits stay as sent. */
char *asbi_pj_print_exact(const cJSON *v);

#endif
