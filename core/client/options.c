/* Options without struct layouts (options.h): every options struct made on
 * the heap by type name and filled member by member, for callers that load
 * the library at run time and do not know (or cannot express) the structs'
 * layouts.
 *
 * The members come from options_fields.h, which scripts/gen-bindings.py
 * generates from the headers, so a member added to a struct is settable
 * here without anyone remembering to list it. What asb_options_new returns
 * is a real struct (the calls take it as they are); the copies of the
 * strings it was given and the bookkeeping live in a record found through
 * a registry keyed by that pointer. The registry is what lets every setter
 * refuse, with ASB_EINVAL, a pointer that did not come from asb_options_new
 * (a struct on the caller's stack, a freed one) instead of reading memory
 * in front of it: a wrong pointer is an easy mistake across an FFI.
 *
 * SPDX-License-Identifier: Apache-2.0 */
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "internal.h"

enum field_kind {
  ASBI_OPT_INT,
  ASBI_OPT_UINT,
  ASBI_OPT_LONG,
  ASBI_OPT_STRING,
  ASBI_OPT_STRINGS,
  ASBI_OPT_BYTES,
  ASBI_OPT_LENGTH,
  ASBI_OPT_USERDATA,
  ASBI_OPT_CANCEL,
  ASBI_OPT_CALLBACK
};

typedef struct opt_field {
  const char *type; /* the struct's name */
  const char *name;
  size_t offset;
  enum field_kind kind;
  unsigned int since;    /* the options version that added it */
  size_t partner_offset; /* BYTES: its length member's; LENGTH: its buffer's */
} opt_field;

typedef struct opt_type {
  const char *name;
  size_t size;
  unsigned int version; /* the newest this library knows */
  int (*init)(void *opts, unsigned int version);
} opt_type;

/* One init wrapper per type, so each init function is called through its
 * own type. */
#define ASBI_OPTIONS_FIELD(type, member, kind, since, partner)
#define ASBI_OPTIONS_TYPE(type, version_macro, init_fn) \
  static int init_##type(void *o, unsigned int v) {     \
    return init_fn((type *)o, v);                       \
  }
#include "options_fields.h"
#undef ASBI_OPTIONS_TYPE
#undef ASBI_OPTIONS_FIELD

static const opt_type TYPES[] = {
#define ASBI_OPTIONS_FIELD(type, member, kind, since, partner)
#define ASBI_OPTIONS_TYPE(type, version_macro, init_fn) \
  {#type, sizeof(type), version_macro, init_##type},
#include "options_fields.h"
#undef ASBI_OPTIONS_TYPE
#undef ASBI_OPTIONS_FIELD
};

static const opt_field FIELDS[] = {
#define ASBI_OPTIONS_TYPE(type, version_macro, init_fn)
#define ASBI_OPTIONS_FIELD(type, member, kind, since, partner) \
  {#type, #member, offsetof(type, member), ASBI_OPT_##kind, since, offsetof(type, partner)},
#include "options_fields.h"
#undef ASBI_OPTIONS_TYPE
#undef ASBI_OPTIONS_FIELD
};

#define NTYPES (sizeof TYPES / sizeof TYPES[0])
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

/* What a heap options struct owns: per member, its string copy or its
 * array of copies. */
typedef struct slot {
  char *str;     /* STRING, BYTES: our copy, or NULL */
  char **arr;    /* STRINGS: NULL-ended copies */
  size_t n, cap; /* STRINGS: count, capacity (without the NULL) */
} slot;

typedef struct record {
  struct record *next; /* registry bucket */
  void *body;          /* the struct handed out */
  const opt_type *type;
  const opt_field *first; /* the type's first entry in FIELDS */
  size_t nfields;
  slot slots[];
} record;

#define BUCKETS 64
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static record *reg[BUCKETS];

static size_t bucket(const void *p) {
  return ((uintptr_t)p >> 4) % BUCKETS;
}

/* The record of p, or NULL. The caller holds reg_mu. */
static record *find_locked(const void *p) {
  for (record *r = reg[bucket(p)]; r; r = r->next)
    if (r->body == p) return r;
  return NULL;
}

/* A setter's record: one object is not meant to be set from two threads at
 * once (as a struct is not), so the record is used after the lock is let
 * go, as the struct itself is. */
static record *lookup(const void *p, const char *what) {
  if (!p) {
    asbi_err(ASB_EINVAL, "%s: options are NULL", what);
    return NULL;
  }
  pthread_mutex_lock(&reg_mu);
  record *r = find_locked(p);
  pthread_mutex_unlock(&reg_mu);
  if (!r) asbi_err(ASB_EINVAL, "%s: not options made by asb_options_new", what);
  return r;
}

int asb_options_new(void **out, const char *type, unsigned int version) {
  if (!out || !type) return asbi_err(ASB_EINVAL, "asb_options_new: bad arguments");
  const opt_type *t = NULL;
  for (size_t i = 0; i < NTYPES && !t; i++)
    if (strcmp(TYPES[i].name, type) == 0) t = &TYPES[i];
  if (!t) return asbi_err(ASB_EINVAL, "asb_options_new: no options type '%s'", type);
  size_t first = 0, n = 0;
  while (first < NFIELDS && strcmp(FIELDS[first].type, t->name) != 0) first++;
  while (first + n < NFIELDS && strcmp(FIELDS[first + n].type, t->name) == 0) n++;
  record *r = calloc(1, sizeof *r + n * sizeof r->slots[0]);
  void *body = calloc(1, t->size);
  if (!r || !body) {
    free(r);
    free(body);
    return asbi_oom();
  }
  int rc = t->init(body, version); /* ASB_EVERSION for unknown versions */
  if (rc) {
    free(r);
    free(body);
    return rc;
  }
  r->body = body;
  r->type = t;
  r->first = &FIELDS[first];
  r->nfields = n;
  pthread_mutex_lock(&reg_mu);
  size_t b = bucket(body);
  r->next = reg[b];
  reg[b] = r;
  pthread_mutex_unlock(&reg_mu);
  *out = body;
  return ASB_OK;
}

void asb_options_free(void *opts) {
  if (!opts) return;
  pthread_mutex_lock(&reg_mu);
  record **pp = &reg[bucket(opts)];
  while (*pp && (*pp)->body != opts) pp = &(*pp)->next;
  record *r = *pp;
  if (r) *pp = r->next;
  pthread_mutex_unlock(&reg_mu);
  if (!r) return; /* not ours: nothing to free (and nothing safe to do) */
  for (size_t i = 0; i < r->nfields; i++) {
    free(r->slots[i].str);
    for (size_t k = 0; k < r->slots[i].n; k++) free(r->slots[i].arr[k]);
    free(r->slots[i].arr);
  }
  free(r->body);
  free(r);
}

/* The member `name` of r's type, checked against the setter's kinds and
 * the version r was made with; NULL (the error recorded) if unusable. */
static const opt_field *field(record *r, const char *name, const char *setter, unsigned kinds,
                              size_t *index) {
  if (!name) {
    asbi_err(ASB_EINVAL, "%s: the member name is NULL", setter);
    return NULL;
  }
  for (size_t i = 0; i < r->nfields; i++) {
    const opt_field *f = &r->first[i];
    if (strcmp(f->name, name) != 0) continue;
    if (f->kind == ASBI_OPT_LENGTH) {
      const char *buffer = "?";
      for (size_t k = 0; k < r->nfields; k++)
        if (r->first[k].offset == f->partner_offset) buffer = r->first[k].name;
      asbi_err(ASB_EINVAL,
               "%s: %s.%s is the length of %s: set both with "
               "asb_options_set_bytes(opts, \"%s\", data, len)",
               setter, r->type->name, name, buffer, buffer);
      return NULL;
    }
    if (!(kinds & (1u << f->kind))) {
      static const char *const use[] = {[ASBI_OPT_INT] = "asb_options_set_int",
                                        [ASBI_OPT_UINT] = "asb_options_set_int",
                                        [ASBI_OPT_LONG] = "asb_options_set_int",
                                        [ASBI_OPT_STRING] = "asb_options_set_string",
                                        [ASBI_OPT_STRINGS] = "asb_options_add_string",
                                        [ASBI_OPT_BYTES] = "asb_options_set_bytes",
                                        [ASBI_OPT_LENGTH] = "asb_options_set_bytes",
                                        [ASBI_OPT_USERDATA] = "asb_options_set_pointer",
                                        [ASBI_OPT_CANCEL] = "asb_options_set_pointer",
                                        [ASBI_OPT_CALLBACK] = "asb_options_set_pointer"};
      asbi_err(ASB_EINVAL, "%s: %s.%s is set with %s", setter, r->type->name, name, use[f->kind]);
      return NULL;
    }
    unsigned int version = *(const unsigned int *)r->body;
    if (f->since > version) {
      asbi_err(ASB_EVERSION, "%s: %s.%s needs options version %u (these are version %u)", setter,
               r->type->name, name, f->since, version);
      return NULL;
    }
    *index = i;
    return f;
  }
  asbi_err(ASB_EINVAL, "%s: %s has no member '%s'%s", setter, r->type->name, name,
           strcmp(name, "version") == 0 ? " to set (asb_options_new sets it)" : "");
  return NULL;
}

#define KIND(k) (1u << ASBI_OPT_##k)

int asb_options_set_int(void *opts, const char *name, asb_int64 value) {
  record *r = lookup(opts, "asb_options_set_int");
  size_t i;
  const opt_field *f =
      r ? field(r, name, "asb_options_set_int", KIND(INT) | KIND(UINT) | KIND(LONG), &i) : NULL;
  if (!f) return asb_error_last()->code;
  char *m = (char *)opts + f->offset;
  int fits = f->kind == ASBI_OPT_INT    ? value >= INT_MIN && value <= INT_MAX
             : f->kind == ASBI_OPT_UINT ? value >= 0 && value <= UINT_MAX
                                        : value >= LONG_MIN && value <= LONG_MAX;
  if (!fits)
    return asbi_err(ASB_EINVAL, "asb_options_set_int: %s.%s cannot hold %lld", r->type->name, name,
                    (long long)value);
  if (f->kind == ASBI_OPT_INT) {
    int v = (int)value;
    memcpy(m, &v, sizeof v);
  } else if (f->kind == ASBI_OPT_UINT) {
    unsigned int v = (unsigned int)value;
    memcpy(m, &v, sizeof v);
  } else {
    long v = (long)value;
    memcpy(m, &v, sizeof v);
  }
  return ASB_OK;
}

int asb_options_set_string(void *opts, const char *name, const char *value) {
  record *r = lookup(opts, "asb_options_set_string");
  size_t i;
  const opt_field *f = r ? field(r, name, "asb_options_set_string", KIND(STRING), &i) : NULL;
  if (!f) return asb_error_last()->code;
  char *copy = NULL;
  if (value && !(copy = asbi_strdup(value))) return asbi_oom();
  const char *v = copy;
  memcpy((char *)opts + f->offset, &v, sizeof v);
  free(r->slots[i].str);
  r->slots[i].str = copy;
  return ASB_OK;
}

int asb_options_add_string(void *opts, const char *name, const char *value) {
  record *r = lookup(opts, "asb_options_add_string");
  size_t i;
  const opt_field *f = r ? field(r, name, "asb_options_add_string", KIND(STRINGS), &i) : NULL;
  if (!f) return asb_error_last()->code;
  if (!value)
    return asbi_err(ASB_EINVAL, "asb_options_add_string: %s.%s: the string is NULL", r->type->name,
                    name);
  slot *s = &r->slots[i];
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4;
    char **arr = realloc(s->arr, (cap + 1) * sizeof *arr);
    if (!arr) return asbi_oom();
    s->arr = arr;
    s->cap = cap;
  }
  if (!(s->arr[s->n] = asbi_strdup(value))) return asbi_oom();
  s->arr[++s->n] = NULL;
  const char *const *v = (const char *const *)s->arr;
  memcpy((char *)opts + f->offset, &v, sizeof v);
  return ASB_OK;
}

int asb_options_set_bytes(void *opts, const char *name, const void *data, size_t len) {
  record *r = lookup(opts, "asb_options_set_bytes");
  size_t i;
  const opt_field *f = r ? field(r, name, "asb_options_set_bytes", KIND(BYTES), &i) : NULL;
  if (!f) return asb_error_last()->code;
  if (!data && len)
    return asbi_err(ASB_EINVAL, "asb_options_set_bytes: %s.%s: %zu bytes at NULL", r->type->name,
                    name, len);
  char *copy = NULL;
  if (data && !(copy = malloc(len ? len : 1))) return asbi_oom();
  if (len) memcpy(copy, data, len);
  const void *v = copy;
  memcpy((char *)opts + f->offset, &v, sizeof v);
  memcpy((char *)opts + f->partner_offset, &len, sizeof len);
  free(r->slots[i].str);
  r->slots[i].str = copy;
  return ASB_OK;
}

int asb_options_set_pointer(void *opts, const char *name, void *value) {
  record *r = lookup(opts, "asb_options_set_pointer");
  size_t i;
  const opt_field *f = r ? field(r, name, "asb_options_set_pointer",
                                 KIND(USERDATA) | KIND(CANCEL) | KIND(CALLBACK), &i)
                         : NULL;
  if (!f) return asb_error_last()->code;
  char *m = (char *)opts + f->offset;
  if (f->kind == ASBI_OPT_CALLBACK) {
    /* A callback member is a function pointer: POSIX (dlsym) guarantees a
     * function's address survives the trip through a void *. Every
     * callback type has the same representation, so asb_data_fn stands in
     * for the member's own. */
    asb_data_fn fn;
    _Static_assert(sizeof fn == sizeof value, "function pointers are as wide as void *");
    memcpy(&fn, &value, sizeof fn);
    memcpy(m, &fn, sizeof fn);
  } else {
    memcpy(m, &value, sizeof value);
  }
  return ASB_OK;
}
