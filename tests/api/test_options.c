/* Options without struct layouts (options.h) and the error getters, through
 * the public header and the shared library: every member of every options
 * struct — the list generated from the headers (bindings/gen/api_table.h),
 * so a member added later is tested too — set through its setter lands in
 * the struct at that member, as the struct's own type reads it; the wrong
 * setter, unknown members and types, versions and pointers that are not
 * heap options are refused with a clear error; and heap options work in a
 * real call.
 * SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "asb_testing.h"
#include "gen/api_table.h"

/* Something to point the pointer members at. */
static int sentinel_data;
static int sentinel_fn(const char *data, size_t len, void *userdata) {
  (void)data;
  (void)len;
  (void)userdata;
  return 0;
}

/* An integer member (int, unsigned int or long) set to 42 reads 42 as its
 * own type; a value beyond its type's range is refused. */
static void check_int_member(void *o, const char *type, const char *member, const void *at,
                             size_t size) {
  if (asb_options_set_int(o, member, 42) != ASB_OK) {
    ASBT_FAIL("%s.%s: set_int(42): %s", type, member, asb_error_message(NULL));
    return;
  }
  long long got = size == sizeof(int) ? (long long)*(const int *)at : (long long)*(const long *)at;
  if (got != 42) ASBT_FAIL("%s.%s: set_int(42) stored %lld", type, member, got);
  if (size == sizeof(int) && asb_options_set_int(o, member, (asb_int64)UINT_MAX + 1) != ASB_EINVAL)
    ASBT_FAIL("%s.%s: set_int(UINT_MAX + 1) not refused", type, member);
  /* -1: an int or long takes it, an unsigned int refuses it and keeps 42 */
  int rc = asb_options_set_int(o, member, -1);
  got = size == sizeof(int) ? (long long)*(const int *)at : (long long)*(const long *)at;
  if (!((rc == ASB_OK && got == -1) || (rc == ASB_EINVAL && got == 42)))
    ASBT_FAIL("%s.%s: set_int(-1) returned %d and stored %lld", type, member, rc, got);
}

/* A byte buffer and its length member are set together (and the length
 * member only so); at is the member named, the buffer or the length. */
static void bytes_member(void *o, const char *type, const char *member, const void *at) {
  char data[] = {'a', 0, 'b'};
  int rc = asb_options_set_bytes(o, member, data, sizeof data);
  if (rc == ASB_EINVAL && strstr(asb_error_message(NULL), "is the length of"))
    return; /* the length member: refused, it comes with its buffer */
  if (rc != ASB_OK) {
    ASBT_FAIL("%s.%s: set_bytes: %s", type, member, asb_error_message(NULL));
    return;
  }
  data[0] = 'X'; /* copied */
  const char *p;
  memcpy(&p, at, sizeof p);
  if (!p || memcmp(p, "a\0b", 3) != 0)
    ASBT_FAIL("%s.%s: set_bytes did not store a copy", type, member);
  CHECK_RC(asb_options_set_bytes(o, member, NULL, 3), ASB_EINVAL);
  CHECK_RC(asb_options_set_bytes(o, member, NULL, 0), ASB_OK);
  memcpy(&p, at, sizeof p);
  CHECK(p == NULL);
  CHECK_RC(asb_options_set_int(o, member, 1), ASB_EINVAL);
}

TEST(every_member_of_every_options_struct) {
  int members = 0;
#define ONE_FIELD(type, member, kind, since)                                                       \
  do {                                                                                             \
    void *o = NULL;                                                                                \
    /* a member newer than the options' version: refused by its setter */                          \
    if (since > 1 && asb_options_new(&o, #type, since - 1) == ASB_OK) {                            \
      int rc_ = kind == ASB_API_FIELD_INT       ? asb_options_set_int(o, #member, 1)               \
                : kind == ASB_API_FIELD_STRING  ? asb_options_set_string(o, #member, "x")          \
                : kind == ASB_API_FIELD_STRINGS ? asb_options_add_string(o, #member, "x")          \
                : kind == ASB_API_FIELD_BYTES   ? asb_options_set_bytes(o, #member, "x", 1)        \
                                                : asb_options_set_pointer(o, #member, NULL);         \
      if (rc_ != ASB_EVERSION && !(kind == ASB_API_FIELD_BYTES && rc_ == ASB_EINVAL))              \
        ASBT_FAIL("%s.%s (since %d) set on version %d: %d", #type, #member, since, since - 1,      \
                  rc_);                                                                            \
      asb_options_free(o);                                                                         \
    }                                                                                              \
    if (asb_options_new(&o, #type, since) != ASB_OK) {                                             \
      ASBT_FAIL("asb_options_new(%s, %d): %s", #type, since, asb_error_message(NULL));             \
      break;                                                                                       \
    }                                                                                              \
    type *s = (type *)o;                                                                           \
    members++;                                                                                     \
    CHECK_INT(s->version, since);                                                                  \
    if (kind == ASB_API_FIELD_INT) {                                                               \
      check_int_member(o, #type, #member, &s->member, sizeof s->member);                           \
      CHECK_RC(asb_options_set_string(o, #member, "x"), ASB_EINVAL);                               \
    } else if (kind == ASB_API_FIELD_STRING) {                                                     \
      char value[] = "a value";                                                                    \
      REQUIRE_RC(asb_options_set_string(o, #member, value), ASB_OK);                               \
      value[0] = 'X'; /* copied: the caller's buffer may change */                                 \
      const void *p;                                                                               \
      memcpy(&p, &s->member, sizeof p);                                                            \
      CHECK_STR((const char *)p, "a value");                                                       \
      REQUIRE_RC(asb_options_set_string(o, #member, "another"), ASB_OK);                           \
      memcpy(&p, &s->member, sizeof p);                                                            \
      CHECK_STR((const char *)p, "another");                                                       \
      REQUIRE_RC(asb_options_set_string(o, #member, NULL), ASB_OK);                                \
      memcpy(&p, &s->member, sizeof p);                                                            \
      CHECK(p == NULL);                                                                            \
      CHECK_RC(asb_options_set_int(o, #member, 1), ASB_EINVAL);                                    \
      CHECK(strstr(asb_error_message(NULL), "asb_options_set_string") != NULL);                    \
    } else if (kind == ASB_API_FIELD_STRINGS) {                                                    \
      REQUIRE_RC(asb_options_add_string(o, #member, "A=1"), ASB_OK);                               \
      for (int k = 0; k < 9; k++) REQUIRE_RC(asb_options_add_string(o, #member, "B=2"), ASB_OK);   \
      const char *const *arr;                                                                      \
      memcpy(&arr, &s->member, sizeof arr);                                                        \
      REQUIRE(arr != NULL);                                                                        \
      CHECK_STR(arr[0], "A=1");                                                                    \
      CHECK_STR(arr[9], "B=2");                                                                    \
      CHECK(arr[10] == NULL);                                                                      \
      CHECK_RC(asb_options_add_string(o, #member, NULL), ASB_EINVAL);                              \
      CHECK_RC(asb_options_set_string(o, #member, "x"), ASB_EINVAL);                               \
    } else if (kind == ASB_API_FIELD_BYTES) {                                                      \
      bytes_member(o, #type, #member, &s->member);                                                 \
    } else {                                                                                       \
      void *want = strncmp(#member, "on_", 3) == 0 ? (void *)sentinel_fn : (void *)&sentinel_data; \
      REQUIRE_RC(asb_options_set_pointer(o, #member, want), ASB_OK);                               \
      CHECK(sizeof s->member == sizeof want && memcmp(&s->member, &want, sizeof want) == 0);       \
      CHECK_RC(asb_options_set_int(o, #member, 1), ASB_EINVAL);                                    \
      CHECK(strstr(asb_error_message(NULL), "asb_options_set_pointer") != NULL);                   \
    }                                                                                              \
    asb_options_free(o);                                                                           \
  } while (0);
  ASB_API_OPTION_FIELDS(ONE_FIELD)
#undef ONE_FIELD
  CHECK(members > 0);
}

/* The length member of a buffer follows it. */
TEST(bytes_and_their_length) {
  void *o = NULL;
  REQUIRE_RC(asb_options_new(&o, "asb_command_options", 2), ASB_OK);
  asb_command_options *c = o;
  REQUIRE_RC(asb_options_set_bytes(o, "stdin_data", "hello", 5), ASB_OK);
  CHECK_INT(c->stdin_len, 5);
  CHECK(c->stdin_data && memcmp(c->stdin_data, "hello", 5) == 0);
  CHECK_RC(asb_options_set_int(o, "stdin_len", 3), ASB_EINVAL);
  CHECK_RC(asb_options_set_bytes(o, "stdin_len", "x", 1), ASB_EINVAL);
  REQUIRE_RC(asb_options_set_bytes(o, "stdin_data", "", 0), ASB_OK); /* empty input */
  CHECK_INT(c->stdin_len, 0);
  CHECK(c->stdin_data != NULL);
  asb_options_free(o);
}

/* Freshly made heap options hold exactly what their _init gives (every
 * options struct of this library has a member, so the member list names
 * them all; the init function of asb_x_options is asb_x_options_init). */
TEST(defaults_are_the_init_functions) {
  const char *last = "";
  int types = 0;
#define ONE_TYPE(type, member, kind, since)                           \
  if (strcmp(last, #type) != 0) {                                     \
    last = #type;                                                     \
    types++;                                                          \
    void *o = NULL;                                                   \
    type want;                                                        \
    memset(&want, 0, sizeof want);                                    \
    REQUIRE_RC(type##_init(&want, 1), ASB_OK);                        \
    REQUIRE_RC(asb_options_new(&o, #type, 1), ASB_OK);                \
    CHECK(memcmp(o, &want, sizeof want) == 0);                        \
    asb_options_free(o);                                              \
    /* version 0 and newer than the library knows: nothing written */ \
    o = &want;                                                        \
    CHECK_RC(asb_options_new(&o, #type, 0), ASB_EVERSION);            \
    CHECK_RC(asb_options_new(&o, #type, 1000), ASB_EVERSION);         \
    CHECK(o == &want);                                                \
  }
  ASB_API_OPTION_FIELDS(ONE_TYPE)
#undef ONE_TYPE
  /* ... and they are every options struct of the description but the
   * server SDK's */
  int described = 0;
#define COUNT(type, version_macro, init_fn) described += strncmp(#type, "asb_server_", 11) != 0;
  ASB_API_OPTIONS(COUNT)
#undef COUNT
  CHECK_INT(types, described);
}

TEST(refused) {
  void *o = NULL;
  CHECK_RC(asb_options_new(&o, "asb_nothing_options", 1), ASB_EINVAL);
  CHECK(strstr(asb_error_message(NULL), "asb_nothing_options") != NULL);
  CHECK_RC(asb_options_new(&o, "asb_server_options", 1), ASB_EINVAL); /* the server SDK's */
  CHECK_RC(asb_options_new(&o, NULL, 1), ASB_EINVAL);
  CHECK_RC(asb_options_new(NULL, "asb_command_options", 1), ASB_EINVAL);
  CHECK(o == NULL);
  REQUIRE_RC(asb_options_new(&o, "asb_command_options", ASB_COMMAND_OPTIONS_VERSION), ASB_OK);
  CHECK_RC(asb_options_set_int(o, "no_such_member", 1), ASB_EINVAL);
  CHECK(strstr(asb_error_message(NULL), "no_such_member") != NULL);
  CHECK_RC(asb_options_set_int(o, "version", 2), ASB_EINVAL);
  CHECK_INT(((asb_command_options *)o)->version, ASB_COMMAND_OPTIONS_VERSION);
  CHECK_RC(asb_options_set_int(o, NULL, 1), ASB_EINVAL);
  CHECK_RC(asb_options_set_int(o, "stdin_enabled", (asb_int64)INT_MAX + 1), ASB_EINVAL);
  CHECK_RC(asb_options_set_int(o, "stdin_enabled", (asb_int64)INT_MIN - 1), ASB_EINVAL);
  CHECK_RC(asb_options_set_int(o, "timeout_ms", -1), ASB_OK); /* long: negative = none */
  CHECK_INT(((asb_command_options *)o)->timeout_ms, -1);
  /* A struct that asb_options_new did not make (here: on the stack) is
   * refused, not written through. */
  asb_command_options stack = ASB_COMMAND_OPTIONS_INIT;
  CHECK_RC(asb_options_set_string(&stack, "cwd", "/tmp"), ASB_EINVAL);
  CHECK(strstr(asb_error_message(NULL), "asb_options_new") != NULL);
  CHECK(stack.cwd == NULL);
  CHECK_RC(asb_options_set_int(NULL, "timeout_ms", 1), ASB_EINVAL);
  asb_options_free(&stack); /* not ours: ignored */
  asb_options_free(NULL);
  asb_options_free(o);
  /* freed: no longer heap options */
  CHECK_RC(asb_options_set_int(o, "timeout_ms", 1), ASB_EINVAL);
}

/* Many live at once (the registry's buckets chain), each its own. */
TEST(many_at_once) {
  enum { N = 300 };
  void **all = calloc(N, sizeof *all);
  REQUIRE(all != NULL);
  for (int i = 0; i < N; i++) {
    REQUIRE_RC(asb_options_new(&all[i], "asb_call_options", 1), ASB_OK);
    REQUIRE_RC(asb_options_set_int(all[i], "timeout_ms", i + 1), ASB_OK);
  }
  for (int i = 0; i < N; i += 2) asb_options_free(all[i]);
  for (int i = 1; i < N; i += 2) {
    CHECK_INT(((asb_call_options *)all[i])->timeout_ms, i + 1);
    CHECK_RC(asb_options_set_int(all[i], "timeout_ms", 7), ASB_OK);
    asb_options_free(all[i]);
  }
  free(all);
}

/* Heap options are the struct: a real call takes them. */
TEST(in_a_call) {
  void *o = NULL;
  REQUIRE_RC(asb_options_new(&o, "asb_client_options", ASB_CLIENT_OPTIONS_VERSION), ASB_OK);
  REQUIRE_RC(asb_options_set_string(o, "api_url", "https://api.example.test/"), ASB_OK);
  REQUIRE_RC(asb_options_set_string(o, "api_key", "k"), ASB_OK);
  REQUIRE_RC(asb_options_add_string(o, "headers", "X-One: 1"), ASB_OK);
  REQUIRE_RC(asb_options_set_int(o, "request_timeout_ms", 1234), ASB_OK);
  asb_client *c = NULL;
  REQUIRE_RC(asb_client_new(&c, o), ASB_OK);
  asb_options_free(o); /* the client copied what it keeps */
  CHECK_STR(asb_client_api_url(c), "https://api.example.test");
  CHECK_INT(asb_client_request_timeout_ms(c), 1234);
  CHECK_INT(asb_client_has_api_key(c), 1);
  asb_client_free(c);
  /* a bad header is still refused by the call itself */
  REQUIRE_RC(asb_options_new(&o, "asb_client_options", 1), ASB_OK);
  REQUIRE_RC(asb_options_add_string(o, "headers", "no colon"), ASB_OK);
  CHECK_RC(asb_client_new(&c, o), ASB_EINVAL);
  asb_options_free(o);
}

TEST(error_getters) {
  asb_client_options bad = ASB_CLIENT_OPTIONS_INIT;
  bad.api_url = "ftp://nope";
  asb_client *c = NULL;
  CHECK_RC(asb_client_new(&c, &bad), ASB_EINVAL);
  const asb_error *e = asb_error_last();
  CHECK_INT(asb_error_code(e), ASB_EINVAL);
  CHECK_INT(asb_error_code(NULL), ASB_EINVAL);
  CHECK(asb_error_message(e) == e->message);
  CHECK(asb_error_message(NULL) == e->message);
  CHECK(strstr(asb_error_message(NULL), "ftp://nope") != NULL);
  CHECK(asb_error_remote_code(NULL) == e->remote_code);
  CHECK(asb_error_reason(NULL) == e->reason);
  CHECK_INT(asb_error_http_status(NULL), e->http_status);
  CHECK_INT(asb_error_retry_after(NULL), e->retry_after);
  asb_error copy = *e; /* any asb_error, not only the last */
  copy.code = ASB_ERATELIMIT;
  copy.retry_after = 9;
  copy.http_status = 429;
  CHECK_INT(asb_error_code(&copy), ASB_ERATELIMIT);
  CHECK_INT(asb_error_retry_after(&copy), 9);
  CHECK_INT(asb_error_http_status(&copy), 429);
  asb_error_clear();
  CHECK_INT(asb_error_code(NULL), ASB_OK);
  CHECK_STR(asb_error_message(NULL), "");
  CHECK_STR(asb_error_remote_code(NULL), "");
  CHECK_STR(asb_error_reason(NULL), "");
}

int main(void) {
  RUN(every_member_of_every_options_struct);
  RUN(bytes_and_their_length);
  RUN(defaults_are_the_init_functions);
  RUN(refused);
  RUN(many_at_once);
  RUN(in_a_call);
  RUN(error_getters);
  TEST_MAIN_END();
}
