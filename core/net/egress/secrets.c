/* The secrets store (secrets.h). SPDX-License-Identifier: Apache-2.0 */
#include "secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define MARK "${e2b.secrets."
#define MAX_SECRETS 1000
#define MAX_VALUE (64 * 1024)

typedef struct secret {
  char id[32], name[129];
  char *value;
  long long version;
  cJSON *metadata; /* object of strings */
  char created[40], updated[40];
} secret;

struct asbn_secrets {
  pthread_mutex_t mu;
  int dirfd;
  secret *v;
  size_t n;
};

void asbn_secrets_wipe(char *v) {
  if (!v) return;
  volatile char *p = v;
  while (*p) *p++ = 0;
  free(v);
}

static void secret_clear(secret *x) {
  asbn_secrets_wipe(x->value);
  cJSON_Delete(x->metadata);
  memset(x, 0, sizeof *x);
}

static int name_ok(const char *n) {
  size_t l = strlen(n);
  if (l < 1 || l > 128 || strncmp(n, "sec_", 4) == 0) return 0;
  for (const char *c = n; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '-'))
      return 0;
  return 1;
}

static int value_ok(const char *v) {
  size_t l = strlen(v);
  if (l > MAX_VALUE) return 0;
  for (const char *c = v; *c; c++) /* it goes into an HTTP header */
    if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) return 0;
  return 1;
}

static int metadata_ok(const cJSON *m) {
  if (!m) return 1;
  if (!cJSON_IsObject(m)) return 0;
  size_t n = 0, total = 0;
  for (const cJSON *e = m->child; e; e = e->next) {
    if (!cJSON_IsString(e) || !e->string || strlen(e->string) > 128 ||
        strlen(e->valuestring) > 1024)
      return 0;
    total += strlen(e->string) + strlen(e->valuestring);
    if (++n > 32 || total > 8192) return 0;
  }
  return 1;
}

static void lower(char *s) {
  for (; *s; s++)
    if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

static secret *find(asbn_secrets *s, const char *id_or_name) {
  char key[130];
  if (strlen(id_or_name) >= sizeof key) return NULL;
  strcpy(key, id_or_name);
  lower(key);
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i].id, id_or_name) == 0 || strcmp(s->v[i].name, key) == 0) return &s->v[i];
  return NULL;
}

static cJSON *info_of(const secret *x) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "secretID", x->id);
  cJSON_AddStringToObject(o, "name", x->name);
  cJSON_AddNumberToObject(o, "currentVersion", (double)x->version);
  cJSON_AddItemToObject(o, "metadata",
                        x->metadata ? cJSON_Duplicate(x->metadata, 1) : cJSON_CreateObject());
  cJSON_AddStringToObject(o, "createdAt", x->created);
  cJSON_AddStringToObject(o, "updatedAt", x->updated);
  return o;
}

/* The whole store to secrets.json.tmp (0600), fsync, rename. */
static int save(asbn_secrets *s) {
  cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "secrets");
  for (size_t i = 0; i < s->n; i++) {
    cJSON *o = info_of(&s->v[i]);
    cJSON_AddStringToObject(o, "value", s->v[i].value);
    cJSON_AddItemToArray(arr, o);
  }
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root); /* the values in it are wiped below with text */
  if (!text) return -1;
  int rc = -1;
  unlinkat(s->dirfd, "secrets.json.tmp", 0);
  int fd = openat(s->dirfd, "secrets.json.tmp",
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    size_t len = strlen(text), at = 0;
    while (at < len) {
      ssize_t k = write(fd, text + at, len - at);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      at += (size_t)k;
    }
    if (at == len && fchmod(fd, 0600) == 0 && fsync(fd) == 0 &&
        renameat(s->dirfd, "secrets.json.tmp", s->dirfd, "secrets.json") == 0)
      rc = 0;
    close(fd);
    if (rc) unlinkat(s->dirfd, "secrets.json.tmp", 0);
  }
  asbn_secrets_wipe(text);
  return rc;
}

static int load(asbn_secrets *s, char *err, size_t errlen) {
  int fd = openat(s->dirfd, "secrets.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    snprintf(err, errlen, "secrets: cannot open secrets.json: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 256L * 1024 * 1024) {
    close(fd);
    snprintf(err, errlen, "secrets: secrets.json is not a regular file of a sane size");
    return -1;
  }
  if (st.st_mode & 077) fchmod(fd, 0600);
  char *text = calloc(1, (size_t)st.st_size + 1);
  size_t at = 0;
  while (text && at < (size_t)st.st_size) {
    ssize_t k = read(fd, text + at, (size_t)st.st_size - at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    at += (size_t)k;
  }
  close(fd);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  if (text) {
    memset(text, 0, (size_t)st.st_size);
    free(text);
  }
  cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "secrets");
  if (!cJSON_IsArray(arr)) {
    cJSON_Delete(root);
    snprintf(err, errlen, "secrets: secrets.json does not parse");
    return -1;
  }
  int n = cJSON_GetArraySize(arr);
  s->v = calloc(n ? (size_t)n : 1, sizeof *s->v);
  for (cJSON *o = arr->child; s->v && o; o = o->next) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "secretID"),
                *nm = cJSON_GetObjectItemCaseSensitive(o, "name"),
                *val = cJSON_GetObjectItemCaseSensitive(o, "value"),
                *ver = cJSON_GetObjectItemCaseSensitive(o, "currentVersion"),
                *md = cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                *ca = cJSON_GetObjectItemCaseSensitive(o, "createdAt"),
                *ua = cJSON_GetObjectItemCaseSensitive(o, "updatedAt");
    if (!cJSON_IsString(id) || !cJSON_IsString(nm) || !cJSON_IsString(val) ||
        strlen(id->valuestring) >= 32 || !name_ok(nm->valuestring))
      continue;
    secret *x = &s->v[s->n++];
    snprintf(x->id, sizeof x->id, "%s", id->valuestring);
    snprintf(x->name, sizeof x->name, "%s", nm->valuestring);
    x->value = strdup(val->valuestring);
    x->version = cJSON_IsNumber(ver) ? (long long)ver->valuedouble : 1;
    x->metadata = cJSON_IsObject(md) ? cJSON_Duplicate(md, 1) : cJSON_CreateObject();
    snprintf(x->created, sizeof x->created, "%s", cJSON_IsString(ca) ? ca->valuestring : "");
    snprintf(x->updated, sizeof x->updated, "%s", cJSON_IsString(ua) ? ua->valuestring : "");
  }
  /* Wipe the values the parse tree holds. */
  for (cJSON *o = arr->child; o; o = o->next) {
    cJSON *val = cJSON_GetObjectItemCaseSensitive(o, "value");
    if (cJSON_IsString(val)) memset(val->valuestring, 0, strlen(val->valuestring));
  }
  cJSON_Delete(root);
  return 0;
}

int asbn_secrets_open(const char *state_dir, asbn_secrets **out, char *err, size_t errlen) {
  *out = NULL;
  asbn_secrets *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "secrets: out of memory");
    return -1;
  }
  s->dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s->dirfd < 0) {
    snprintf(err, errlen, "secrets: cannot open %s: %s", state_dir, strerror(errno));
    free(s);
    return -1;
  }
  if (load(s, err, errlen) < 0) {
    close(s->dirfd);
    free(s);
    return -1;
  }
  pthread_mutex_init(&s->mu, NULL);
  *out = s;
  return 0;
}

void asbn_secrets_close(asbn_secrets *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) secret_clear(&s->v[i]);
  free(s->v);
  close(s->dirfd);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static int fail(char *err, size_t errlen, int status, const char *msg) {
  if (err) snprintf(err, errlen, "%s", msg);
  return status;
}

/* A new version's value and metadata: 0, or 400 with why in err. */
static int check_value(const char *value, const cJSON *metadata, char *err, size_t errlen) {
  if (!value || !value_ok(value))
    return fail(err, errlen, 400,
                "value must be a string without control characters (64 KiB at most)");
  if (!metadata_ok(metadata))
    return fail(err, errlen, 400,
                "metadata: at most 32 string entries (keys 128, values 1024, 8192 bytes in all)");
  return 0;
}

int asbn_secrets_create(asbn_secrets *s, const char *name, const char *value, const cJSON *metadata,
                        cJSON **info, char *err, size_t errlen) {
  if (info) *info = NULL;
  if (!name || !name_ok(name))
    return fail(err, errlen, 400, "name must be 1-128 of [a-zA-Z0-9_-], not starting with sec_");
  if (check_value(value, metadata, err, errlen)) return 400;
  pthread_mutex_lock(&s->mu);
  int st;
  char lname[129];
  snprintf(lname, sizeof lname, "%s", name);
  lower(lname);
  if (find(s, lname))
    st = fail(err, errlen, 409, "a secret with this name exists");
  else if (s->n >= MAX_SECRETS)
    st = fail(err, errlen, 400, "too many secrets");
  else {
    secret *nv = realloc(s->v, (s->n + 1) * sizeof *s->v);
    st = 500;
    if (nv) {
      s->v = nv;
      secret *x = &s->v[s->n];
      memset(x, 0, sizeof *x);
      uint8_t rnd[10];
      if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) memset(rnd, 0, sizeof rnd);
      int at = snprintf(x->id, sizeof x->id, "sec_");
      for (size_t i = 0; i < sizeof rnd; i++)
        at += snprintf(x->id + at, sizeof x->id - (size_t)at, "%02x", rnd[i]);
      strcpy(x->name, lname);
      x->value = strdup(value);
      x->version = 1;
      x->metadata = metadata ? cJSON_Duplicate(metadata, 1) : cJSON_CreateObject();
      asbi_rfc3339_now(x->created);
      strcpy(x->updated, x->created);
      s->n++;
      if (!x->value || save(s) < 0) {
        s->n--;
        secret_clear(x);
        st = fail(err, errlen, 500, "the secrets store could not be written");
      } else {
        st = 201;
        if (info) *info = info_of(x);
      }
    }
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

int asbn_secrets_update(asbn_secrets *s, const char *id_or_name, const char *value,
                        const cJSON *metadata, cJSON **info, char *err, size_t errlen) {
  if (info) *info = NULL;
  if (check_value(value, metadata, err, errlen)) return 400;
  pthread_mutex_lock(&s->mu);
  int st;
  secret *x = find(s, id_or_name);
  char *nv = x ? strdup(value) : NULL;
  if (!x)
    st = fail(err, errlen, 404, "no such secret");
  else if (!nv)
    st = fail(err, errlen, 500, "out of memory");
  else {
    secret old = *x;
    x->value = nv;
    x->version++;
    if (metadata) x->metadata = cJSON_Duplicate(metadata, 1);
    asbi_rfc3339_now(x->updated);
    if (save(s) < 0) {
      if (x->metadata != old.metadata) cJSON_Delete(x->metadata);
      asbn_secrets_wipe(nv);
      *x = old;
      st = fail(err, errlen, 500, "the secrets store could not be written");
    } else {
      asbn_secrets_wipe(old.value);
      if (x->metadata != old.metadata) cJSON_Delete(old.metadata);
      st = 200;
      if (info) *info = info_of(x);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

int asbn_secrets_get(asbn_secrets *s, const char *id_or_name, cJSON **info) {
  pthread_mutex_lock(&s->mu);
  secret *x = find(s, id_or_name);
  if (x && info) *info = info_of(x);
  pthread_mutex_unlock(&s->mu);
  return x ? 200 : 404;
}

int asbn_secrets_delete(asbn_secrets *s, const char *id_or_name, char *err, size_t errlen) {
  pthread_mutex_lock(&s->mu);
  secret *x = find(s, id_or_name);
  int st = 404;
  if (!x)
    fail(err, errlen, 404, "no such secret");
  else {
    secret gone = *x;
    size_t i = (size_t)(x - s->v);
    memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
    s->n--;
    if (save(s) < 0) { /* put it back: nothing lost */
      memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
      s->v[i] = gone;
      s->n++;
      st = fail(err, errlen, 500, "the secrets store could not be written");
    } else {
      secret_clear(&gone);
      st = 204;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

cJSON *asbn_secrets_list(asbn_secrets *s) {
  cJSON *arr = cJSON_CreateArray();
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->n; i++) cJSON_AddItemToArray(arr, info_of(&s->v[i]));
  pthread_mutex_unlock(&s->mu);
  return arr;
}

int asbn_secrets_resolve(asbn_secrets *s, const char *tmpl, char **out) {
  *out = NULL;
  size_t cap = strlen(tmpl) + 1, len = 0;
  char *o = malloc(cap);
  if (!o) return -1;
  if (s) pthread_mutex_lock(&s->mu);
  int rc = 0;
  const char *p = tmpl;
  while (*p) {
    const char *m = strstr(p, MARK);
    size_t lit = m ? (size_t)(m - p) : strlen(p);
    const char *val = NULL;
    size_t skip = lit;
    if (m) {
      const char *nm = m + strlen(MARK), *close = strchr(nm, '}');
      char name[130];
      secret *x = NULL;
      if (close && (size_t)(close - nm) < sizeof name) {
        memcpy(name, nm, (size_t)(close - nm));
        name[close - nm] = 0;
        x = s ? find(s, name) : NULL;
      }
      if (!x) {
        rc = -1;
        break;
      }
      val = x->value;
      skip = (size_t)(close + 1 - p);
    }
    size_t vl = val ? strlen(val) : 0;
    if (len + lit + vl + 1 > cap) {
      size_t ncap = (len + lit + vl + 1) * 2;
      char *g = malloc(ncap); /* not realloc: the old copy is wiped */
      if (!g) {
        rc = -1;
        break;
      }
      memcpy(g, o, len);
      memset(o, 0, cap);
      free(o);
      o = g;
      cap = ncap;
    }
    memcpy(o + len, p, lit);
    len += lit;
    if (val) {
      memcpy(o + len, val, vl);
      len += vl;
    }
    p += skip;
  }
  if (s) pthread_mutex_unlock(&s->mu);
  if (rc) {
    memset(o, 0, cap);
    free(o);
    return -1;
  }
  o[len] = 0;
  *out = o;
  return 0;
}
