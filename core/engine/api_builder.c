/* E2B's Template builder API (what `Template.build()` in E2B's SDKs calls),
 * docs/templates.md "E2B's Template builder":
 *
 *   POST   /v3/templates                          {name, tags, cpuCount, memoryMB}
 *                                                 → 202 {templateID, buildID, ...}
 *   GET    /templates/{id}/files/{hash}           → 201 {present, url}
 *   PUT    /templates/{id}/files/{hash}?token=…   the archive (tar or tar.gz)
 *   POST   /v2/templates/{id}/builds/{buildID}    TemplateBuildStartV2 → 202
 *   GET    /templates/{id}/builds/{buildID}/status[?logsOffset=]
 *   GET    /templates/aliases/{alias}
 *   POST   /templates/tags, DELETE /templates/tags, GET /templates/{id}/tags
 *
 * The steps become a template.yaml (builder.c) and the files a build
 * context tar, built by build.c like any template.yaml, on a thread of its
 * own so the SDK can poll the status. What E2B keeps in its database (the
 * requested builds, their status, reason and bounded logs, tags) lives here
 * in memory and, written on each change, in <state>/builder/<id>.json
 * (builder_rec.c), read back when the engine starts: a build under way
 * when its engine ended comes back as "error" saying so. The built
 * template itself is on disk like every other.
 * Uploads go to <state>/builder-files/<hash>, a plain tar, checked.
 * SPDX-License-Identifier: Apache-2.0 */
#include "api_builder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
#include "builder.h"
#include "builder_rec.h"
#include "bundled.h"
#include "httpd/httpd.h"
#include "proto/pjson.h"
#include "proto/tar.h"
#include "registry.h"
#include "templates.h"
#include "util/log.h"
#include "util/util.h"

#define MAX_ENTRIES_PER_CALL 100 /* E2B's page of log entries */
#define MAX_TAGS BREC_MAX_TAGS
#define MAX_BUILDS_KEPT BREC_MAX_BUILDS
#define MAX_TEMPLATES 1024 /* template names recorded (the least recently used go) */
#define BUILD_CONTEXT_MAX (BUILDER_UNPACKED_MAX + (1u << 20))
#define STOPPED_REASON                                                                      \
  "the engine stopped while this build ran (the engine that ran it ended before the build " \
  "did); start a new build"

typedef struct builder {
  pthread_mutex_t mu;
  btmpl *list;
  pthread_cond_t done; /* a build thread ended (running went down) */
  int running;         /* build threads (detached) not ended yet */
  int dfd;             /* <state>/builder (the records), -1: none kept */
} builder;

/* ---- the records (builder_rec.c) in <state>/builder ------------------------------------ */

/* t's record to <id>.json: a new file renamed over the old (a reader
 * never sees half of one), in the directory's fd, without following
 * links, 0600. Under b->mu; a failure is logged (the state in memory
 * stands for this engine run). */
static void save_rec(builder *b, btmpl *t) {
  if (!b || b->dfd < 0 || !t) return;
  t->updated_ms = asbi_unix_ms();
  cJSON *j = brec_to_json(t);
  char *text = j ? asbi_pj_print(j) : NULL;
  cJSON_Delete(j);
  char name[64], tmp[96], rnd[9] = "";
  snprintf(name, sizeof name, "%s.json", t->id);
  asbi_random_alnum(rnd, 8);
  snprintf(tmp, sizeof tmp, ".%s.%s.tmp", name, rnd);
  int rc = text ? 0 : -ENOMEM, fd = -1;
  if (!rc &&
      (fd = openat(b->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
    rc = -errno;
  size_t len = text ? strlen(text) : 0, at = 0;
  while (!rc && at < len) {
    ssize_t n = write(fd, text + at, len - at);
    if (n < 0 && errno != EINTR) rc = -errno;
    if (n > 0) at += (size_t)n;
  }
  if (!rc && fsync(fd) < 0) rc = -errno;
  if (fd >= 0) close(fd);
  if (!rc && renameat(b->dfd, tmp, b->dfd, name) < 0) rc = -errno;
  if (!rc) (void)fsync(b->dfd); /* the rename itself, across a power loss */
  if (rc && fd >= 0) unlinkat(b->dfd, tmp, 0);
  if (rc) asbi_log("builder: cannot store the record of template %s: %s", t->id, strerror(-rc));
  free(text);
}

static void forget(builder *b, btmpl *t) {
  char name[64];
  snprintf(name, sizeof name, "%s.json", t->id);
  if (b->dfd >= 0 && unlinkat(b->dfd, name, 0) < 0 && errno != ENOENT)
    asbi_log("builder: cannot remove the record of template %s: %s", t->id, strerror(errno));
}

/* One record file (a regular file, not a link, of ours) into b->list, or
 * logged and skipped. */
static void load_one(builder *b, const char *name) {
  size_t nl = strlen(name);
  if (nl != BREC_ID_LEN + 5 || strcmp(name + BREC_ID_LEN, ".json")) {
    if (name[0] == '.' && nl > 4 && !strcmp(name + nl - 4, ".tmp")) /* a write cut short */
      unlinkat(b->dfd, name, 0);
    else
      asbi_log("builder: %s in the records is no record; left alone", name);
    return;
  }
  char why[256] = "";
  btmpl *t = NULL;
  int fd = openat(b->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) {
    snprintf(why, sizeof why, "cannot open it: %s", strerror(errno));
  } else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, sizeof why, "not a regular file");
  } else if (st.st_uid != geteuid() || (st.st_mode & 077)) {
    snprintf(why, sizeof why, "not the engine's own (owner %u, mode %o)", (unsigned)st.st_uid,
             (unsigned)(st.st_mode & 07777));
  } else if ((uint64_t)st.st_size > BREC_FILE_MAX) {
    snprintf(why, sizeof why, "%lld bytes, over %u MiB", (long long)st.st_size,
             BREC_FILE_MAX >> 20);
  } else {
    asbi_buf f = ASBI_BUF_INIT;
    asbi_buf_init(&f, BREC_FILE_MAX + 1);
    char chunk[65536];
    ssize_t n;
    int bad = 0;
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || asbi_buf_append(&f, chunk, (size_t)n)) {
        bad = 1;
        break;
      }
    }
    if (bad)
      snprintf(why, sizeof why, "cannot read it");
    else
      t = brec_from_json(f.data ? f.data : "", f.len, STOPPED_REASON, why, sizeof why);
    asbi_buf_free(&f);
    if (t && strncmp(name, t->id, BREC_ID_LEN)) {
      snprintf(why, sizeof why, "it is the record of template %s", t->id);
      brec_free(t);
      t = NULL;
    }
    for (btmpl *u = b->list; t && u; u = u->next)
      if (!strcmp(u->name, t->name)) {
        snprintf(why, sizeof why, "template %s (%s) has a record already", t->name, u->id);
        brec_free(t);
        t = NULL;
      }
  }
  if (fd >= 0) close(fd);
  if (!t) {
    asbi_log("builder: record %s skipped: %s", name, why);
    return;
  }
  t->next = b->list;
  b->list = t;
  if (t->interrupted) { /* their end, stored once */
    asbi_log("builder: template %s: %d build(s) the last engine stopped during: error now", t->name,
             t->interrupted);
    t->interrupted = 0;
    save_rec(b, t);
  }
}

/* Opens (creating, 0700) <state>/builder and reads the records in it. */
static void load(engine *e, builder *b) {
  b->dfd = -1;
  if (!e->state_dir) return;
  int sfd = open(e->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sfd < 0) return;
  if (mkdirat(sfd, "builder", 0700) < 0 && errno != EEXIST)
    asbi_log("builder: cannot make %s/builder: %s", e->state_dir, strerror(errno));
  b->dfd = openat(sfd, "builder", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  close(sfd);
  struct stat st;
  if (b->dfd >= 0 && (fstat(b->dfd, &st) < 0 || st.st_uid != geteuid())) {
    asbi_log("builder: %s/builder is not the engine's; its builds are not kept", e->state_dir);
    close(b->dfd);
    b->dfd = -1;
  }
  if (b->dfd < 0) return;
  if ((st.st_mode & 077) && fchmod(b->dfd, 0700) < 0)
    asbi_log("builder: cannot make %s/builder 0700: %s", e->state_dir, strerror(errno));
  int dd = dup(b->dfd);
  DIR *d = dd >= 0 ? fdopendir(dd) : NULL;
  if (!d && dd >= 0) close(dd);
  struct dirent *de;
  size_t n = 0;
  while (d && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    load_one(b, de->d_name);
    n++;
  }
  if (d) closedir(d);
  size_t kept = 0;
  for (btmpl *t = b->list; t; t = t->next) kept++;
  if (n) asbi_log("builder: %zu template records kept from before", kept);
}

static builder *B(engine *e) {
  pthread_mutex_lock(&e->mu);
  if (!e->builder) {
    builder *b = calloc(1, sizeof *b);
    if (b) {
      pthread_mutex_init(&b->mu, NULL);
      pthread_cond_init(&b->done, NULL);
      load(e, b);
      __atomic_store_n(&e->builder, (void *)b, __ATOMIC_RELEASE);
      __atomic_store_n(&e->tag_build, api_builder_tag_build, __ATOMIC_RELEASE);
    }
  }
  builder *b = e->builder;
  pthread_mutex_unlock(&e->mu);
  return b;
}

void api_builder_open(engine *e) {
  (void)B(e);
}

static void build_free(bbuild *x) {
  brec_build_free(x);
}

int api_builder_building(engine *e, const char *id, char *build_id, size_t len) {
  builder *b = __atomic_load_n(&e->builder, __ATOMIC_ACQUIRE);
  int found = 0;
  if (!b) return 0;
  pthread_mutex_lock(&b->mu);
  for (btmpl *t = b->list; t && !found; t = t->next) {
    if (strcmp(t->id, id)) continue;
    for (bbuild *x = t->builds; x && !found; x = x->next)
      if (!strcmp(x->status, "building")) {
        snprintf(build_id, len, "%s", x->id);
        found = 1;
      }
  }
  pthread_mutex_unlock(&b->mu);
  return found;
}

void api_builder_close(engine *e) {
  builder *b = e->builder;
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  while (b->running > 0) pthread_cond_wait(&b->done, &b->mu);
  pthread_mutex_unlock(&b->mu);
  while (b->list) {
    btmpl *t = b->list;
    b->list = t->next;
    brec_free(t);
  }
  if (b->dfd >= 0) close(b->dfd);
  __atomic_store_n(&e->tag_build, NULL, __ATOMIC_RELEASE);
  pthread_cond_destroy(&b->done);
  pthread_mutex_destroy(&b->mu);
  free(b);
  e->builder = NULL;
}

/* Under b->mu. */
static btmpl *find_tmpl(builder *b, const char *id_or_name) {
  for (btmpl *t = b->list; t; t = t->next)
    if (!strcmp(t->id, id_or_name) || !strcmp(t->name, id_or_name)) return t;
  return NULL;
}
static bbuild *find_build(btmpl *t, const char *id) {
  for (bbuild *x = t ? t->builds : NULL; x; x = x->next)
    if (!strcmp(x->id, id)) return x;
  return NULL;
}

static void log_entry(bbuild *x, const char *level, const char *msg) {
  cJSON *j = cJSON_CreateObject();
  char ts[40];
  asbi_rfc3339_ms(asbi_unix_ms(), ts);
  cJSON_AddStringToObject(j, "timestamp", ts);
  cJSON_AddStringToObject(j, "message", msg);
  cJSON_AddStringToObject(j, "level", level);
  cJSON_AddItemToArray(x->entries, j);
}

static void uuid4(char out[37]) {
  unsigned char r[16];
  asbi_random_bytes(r, sizeof r);
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0],
           r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
           r[15]);
}

/* The path's segments after the leading '/': up to max, 0 if more. */
static size_t split(const char *path, char seg[][256], size_t max) {
  size_t n = 0;
  const char *p = path;
  while (*p == '/') p++;
  while (*p) {
    const char *s = strchr(p, '/');
    size_t l = s ? (size_t)(s - p) : strlen(p);
    if (n == max || l == 0 || l >= 256) return 0;
    memcpy(seg[n], p, l);
    seg[n][l] = '\0';
    n++;
    p += l;
    if (*p == '/') p++;
  }
  return n;
}

#define name_ok brec_name_ok
#define tag_ok brec_tag_ok

static cJSON *parse_body(api_req *q, api_reply *r) {
  cJSON *j = q->body && q->body_len ? asbi_pj_parse(q->body, q->body_len, NULL) : NULL;
  if (!cJSON_IsObject(j)) {
    cJSON_Delete(j);
    api_error(r, 400, "the body must be a JSON object");
    return NULL;
  }
  return j;
}

/* At MAX_TEMPLATES names: the record of the least recently used one
 * with no build waiting or under way goes (its builds' status and its
 * tags; the template itself stays). 1 if one went. Under b->mu. */
static int evict(builder *b) {
  btmpl **best = NULL;
  for (btmpl **pp = &b->list; *pp; pp = &(*pp)->next) {
    int busy = 0;
    for (bbuild *x = (*pp)->builds; x && !busy; x = x->next)
      busy = !strcmp(x->status, "waiting") || !strcmp(x->status, "building");
    if (!busy && (!best || (*pp)->updated_ms < (*best)->updated_ms)) best = pp;
  }
  if (!best) return 0;
  btmpl *t = *best;
  *best = t->next;
  asbi_log("builder: %d template names recorded: forgetting the builds and tags of %s (%s)",
           MAX_TEMPLATES, t->name, t->id);
  forget(b, t);
  brec_free(t);
  return 1;
}

/* ---- POST /v3/templates ------------------------------------------------------------ */

static void request_build(engine *e, api_req *q, api_reply *r) {
  cJSON *j = parse_body(q, r);
  if (!j) return;
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "name");
  if (!cJSON_IsString(nm)) nm = cJSON_GetObjectItemCaseSensitive(j, "alias");
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(j, "tags");
  const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(j, "cpuCount");
  const cJSON *mem = cJSON_GetObjectItemCaseSensitive(j, "memoryMB");
  char name[256] = "", tag[256] = "";
  if (cJSON_IsString(nm)) {
    const char *c = strchr(nm->valuestring, ':');
    snprintf(name, sizeof name, "%.*s", c ? (int)(c - nm->valuestring) : 255, nm->valuestring);
    if (c) snprintf(tag, sizeof tag, "%s", c + 1);
  }
  int ncpu = cJSON_IsNumber(cpu) ? cpu->valueint : 2;
  int nmem = cJSON_IsNumber(mem) ? mem->valueint : 1024;
  if (!name_ok(name)) {
    api_error(r, 400,
              "name: 1..63 of a-z 0-9 . _ -, starting with a letter or digit, optionally "
              "followed by :tag (got '%s')",
              cJSON_IsString(nm) ? nm->valuestring : "");
  } else if (*tag && !tag_ok(tag)) {
    api_error(r, 400, "tag '%s': 1..128 of A-Z a-z 0-9 . _ -", tag);
  } else if ((cpu && !cJSON_IsNumber(cpu)) || ncpu < 1 || ncpu > 64 ||
             (cpu && cpu->valuedouble != ncpu)) {
    api_error(r, 400, "cpuCount: a whole number 1..64");
  } else if ((mem && !cJSON_IsNumber(mem)) || nmem < 64 || nmem > (1 << 20) ||
             (mem && mem->valuedouble != nmem)) {
    api_error(r, 400, "memoryMB: a whole number 64..1048576");
  } else if (tags && !cJSON_IsArray(tags) && !cJSON_IsNull(tags)) {
    api_error(r, 400, "tags: expected a list of strings");
  } else {
    const cJSON *it;
    int bad = 0, nt = 0;
    cJSON_ArrayForEach(it, tags) {
      nt++;
      if (!cJSON_IsString(it) || !tag_ok(it->valuestring)) bad = 1;
    }
    template_info *ex = templates_find(e, name);
    builder *b = B(e);
    if (bad || nt > MAX_TAGS) {
      api_error(r, 400, "tags: at most %d, each 1..128 of A-Z a-z 0-9 . _ -", MAX_TAGS);
    } else if (ex && ex->builtin) {
      api_error(r, 400, "'%s' is a built-in template; choose another name", name);
    } else if (ex && strcmp(ex->alias, name)) {
      api_error(r, 400, "'%s' is the id of template '%s'; choose another name", name, ex->alias);
    } else if (!b) {
      api_error(r, 500, "out of memory");
    } else {
      pthread_mutex_lock(&b->mu);
      btmpl *t = find_tmpl(b, name);
      size_t nt_all = 0;
      for (btmpl *u = b->list; u; u = u->next) nt_all++;
      if (!t && nt_all >= MAX_TEMPLATES && evict(b)) nt_all--;
      bbuild *x = t || nt_all < MAX_TEMPLATES ? calloc(1, sizeof *x) : NULL;
      if (!t && x && (t = calloc(1, sizeof *t))) {
        if (ex)
          snprintf(t->id, sizeof t->id, "%s", ex->id);
        else
          asbi_random_alnum(t->id, ENGINE_ID_LEN);
        snprintf(t->name, sizeof t->name, "%s", name);
        t->next = b->list;
        b->list = t;
      }
      if (!t || !x || !(x->entries = cJSON_CreateArray()) ||
          !(x->tags = calloc((size_t)nt + 2, sizeof *x->tags))) {
        if (x) build_free(x);
        pthread_mutex_unlock(&b->mu);
        if (!t && nt_all >= MAX_TEMPLATES)
          api_error(r, 429,
                    "%d template names have builds waiting or under way; wait for one to end",
                    MAX_TEMPLATES);
        else
          api_error(r, 500, "out of memory");
      } else {
        t->cpu = ncpu;
        t->memory_mb = nmem;
        uuid4(x->id);
        x->created_ms = x->updated_ms = asbi_unix_ms();
        snprintf(x->status, sizeof x->status, "waiting");
        x->reason_step = -1;
        cJSON *out = cJSON_CreateObject();
        cJSON *ta = cJSON_CreateArray();
        if (*tag) x->tags[x->ntags++] = asbi_strdup(tag);
        cJSON_ArrayForEach(it, tags) {
          x->tags[x->ntags++] = asbi_strdup(it->valuestring);
        }
        if (!x->ntags) x->tags[x->ntags++] = asbi_strdup("default");
        for (size_t i = 0; i < x->ntags; i++)
          cJSON_AddItemToArray(ta, cJSON_CreateString(x->tags[i]));
        x->next = t->builds;
        t->builds = x;
        /* forget the oldest builds not under way (a build thread finds its
           own by id, so a forgotten one is simply not updated; a waiting one
           that was never started is gone) */
        size_t kept = 0;
        for (bbuild **pp = &t->builds; *pp;) {
          bbuild *y = *pp;
          int done_ = strcmp(y->status, "building") != 0;
          if (++kept > MAX_BUILDS_KEPT && done_) {
            *pp = y->next;
            build_free(y);
          } else {
            pp = &y->next;
          }
        }
        cJSON_AddStringToObject(out, "templateID", t->id);
        cJSON_AddStringToObject(out, "buildID", x->id);
        cJSON_AddBoolToObject(out, "public", 0);
        cJSON *names = cJSON_AddArrayToObject(out, "names");
        cJSON_AddItemToArray(names, cJSON_CreateString(name));
        cJSON *aliases = cJSON_AddArrayToObject(out, "aliases");
        cJSON_AddItemToArray(aliases, cJSON_CreateString(name));
        cJSON_AddItemToObject(out, "tags", ta);
        save_rec(b, t);
        pthread_mutex_unlock(&b->mu);
        api_reply_json(r, 202, out);
      }
    }
    templates_put(e, ex);
  }
  cJSON_Delete(j);
}

/* ---- files ---------------------------------------------------------------------------- */

static void upload_token(engine *e, const char *id, const char *hash, char out[65]) {
  unsigned char mac[32];
  unsigned len = 0;
  char msg[512];
  int n = snprintf(msg, sizeof msg, "asb-template-upload\n%s\n%s", id, hash);
  HMAC(EVP_sha256(), e->api_key, (int)strlen(e->api_key), (const unsigned char *)msg, (size_t)n,
       mac, &len);
  for (unsigned i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", mac[i]);
}

static void file_path(engine *e, const char *hash, char *out, size_t len) {
  snprintf(out, len, "%s/builder-files/%s", e->state_dir, hash);
}

/* 1 if the template id is one the builder handed out. */
static int known_id(engine *e, const char *id) {
  builder *b = B(e);
  if (!b) return 0;
  pthread_mutex_lock(&b->mu);
  btmpl *t = find_tmpl(b, id);
  int ok = t && !strcmp(t->id, id);
  pthread_mutex_unlock(&b->mu);
  return ok;
}

static void file_link(engine *e, const char *id, const char *hash, api_reply *r) {
  if (!known_id(e, id)) return api_error(r, 404, "template \"%s\" not found", id);
  if (!builder_hash_ok(hash))
    return api_error(r, 400, "hash '%.80s': expected the 64 hex digits of the files' SHA-256",
                     hash);
  char path[4400], tok[65];
  file_path(e, hash, path, sizeof path);
  upload_token(e, id, hash, tok);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddBoolToObject(j, "present", access(path, F_OK) == 0);
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/templates/%s/files/%s?token=%s", e->listen_port,
           id, hash, tok);
  cJSON_AddStringToObject(j, "url", url);
  api_reply_json(r, 201, j);
}

int api_builder_upload_ok(engine *e, const char *method, const char *url, const char *raw_uri) {
  char seg[5][256];
  if (strcmp(method, "PUT") || split(url, seg, 5) != 4 || strcmp(seg[0], "templates") ||
      strcmp(seg[2], "files") || !builder_hash_ok(seg[3]))
    return 0;
  const char *qs = raw_uri ? strchr(raw_uri, '?') : NULL;
  const char *t = qs ? strstr(qs, "token=") : NULL;
  if (!t || (t[-1] != '?' && t[-1] != '&')) return 0;
  t += 6;
  char given[65];
  size_t n = strcspn(t, "&");
  if (n != 64) return 0;
  memcpy(given, t, 64);
  given[64] = '\0';
  char want[65];
  upload_token(e, seg[1], seg[3], want);
  return asbi_httpd_token_eq(given, want);
}

static void file_put(engine *e, api_req *q, const char *id, const char *hash, api_reply *r) {
  if (!known_id(e, id)) return api_error(r, 404, "template \"%s\" not found", id);
  if (!builder_hash_ok(hash))
    return api_error(r, 400, "hash '%.80s': expected the 64 hex digits of the files' SHA-256",
                     hash);
  if (!q->body_len) return api_error(r, 400, "the body must be a tar (or tar.gz) archive");
  asbi_buf tar;
  asbi_buf_init(&tar, BUILDER_UNPACKED_MAX + (1u << 20));
  char why[512];
  if (builder_archive_repack(q->body, q->body_len, "", &tar, why, sizeof why) ||
      asbi_tar_finish(&tar)) {
    asbi_buf_free(&tar);
    return api_error(r, 400, "the uploaded files: %s", why);
  }
  char dir[4300], path[4400], tmp[4500];
  snprintf(dir, sizeof dir, "%s/builder-files", e->state_dir);
  file_path(e, hash, path, sizeof path);
  char rnd[9] = "";
  asbi_random_alnum(rnd, 8); /* concurrent PUTs of one hash: a file each */
  snprintf(tmp, sizeof tmp, "%s.%s.tmp", path, rnd);
  int fd = -1, rc = 0;
  if ((mkdir(dir, 0700) && errno != EEXIST) ||
      (fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
    rc = -errno;
  if (!rc && (write(fd, tar.data, tar.len) != (ssize_t)tar.len || fsync(fd))) rc = -EIO;
  if (fd >= 0) close(fd);
  if (!rc && rename(tmp, path)) rc = -errno;
  if (rc) unlink(tmp);
  asbi_buf_free(&tar);
  if (rc) return api_error(r, 500, "cannot store the files: %s", strerror(-rc));
  r->status = 201;
}

/* ---- the build ------------------------------------------------------------------------- */

typedef struct job {
  engine *e;
  char id[ENGINE_ID_LEN + 1], name[64], build_id[40];
  asbi_buf ctx;
  int force;
  int *step_of;
  char **step_label;
  size_t nsteps;
} job;

static void job_free(job *j) {
  asbi_buf_free(&j->ctx);
  free(j->step_of);
  for (size_t i = 0; j->step_label && i < j->nsteps; i++) free(j->step_label[i]);
  free(j->step_label);
  free(j);
}

/* A failed step named as the program wrote it, not by the line of the
 * template.yaml generated from it (build.c's message): "template app:
 * step 3 (RUN apt-get install foo) failed with exit code 100:\n<output's
 * tail>", 3 being E2B's step number (reason.step). NULL if the step is
 * unknown (then build.c's message stands). */
#define STEP_ERROR_TAIL 3000
static char *step_message(const job *j, const build_report *rep) {
  if (rep->step <= 0 || (size_t)rep->step > j->nsteps || !rep->why) return NULL;
  const char *out = rep->output ? rep->output : "";
  size_t n = strlen(out);
  const char *tail = n > STEP_ERROR_TAIL ? out + n - STEP_ERROR_TAIL : out;
  asbi_buf m = ASBI_BUF_INIT;
  asbi_buf_printf(&m, "template %s: step %d (%s) %s%s%s", j->name, j->step_of[rep->step - 1],
                  j->step_label[rep->step - 1], rep->why, *tail ? ":\n" : "", tail);
  return asbi_buf_detach(&m, NULL);
}

/* build.c's "==> step 2/5 (template.yaml:1) <the generated command>" of
 * a builder build as "==> step 2/5: RUN make (E2B's step 3)": the program's
 * step, not the template.yaml made from it. NULL: l stays as it is. */
static char *step_line(const job *j, const char *l) {
  int k = 0, n = 0, end = 0;
  if (sscanf(l, "==> step %d/%d (template.yaml:%*d)%n", &k, &n, &end) != 2 || end <= 0 || k < 1 ||
      (size_t)k > j->nsteps)
    return NULL;
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "==> step %d/%d: %s (E2B's step %d)", k, n, j->step_label[k - 1],
                  j->step_of[k - 1]);
  return asbi_buf_detach(&b, NULL);
}

static void *run_job(void *arg) {
  job *j = arg;
  engine *e = j->e;
  builder *b = e->builder;
  pthread_mutex_lock(&b->mu);
  bbuild *x = find_build(find_tmpl(b, j->id), j->build_id);
  if (x) {
    snprintf(x->status, sizeof x->status, "building");
    log_entry(x, "info", "building on the engine's template build (one build at a time)");
    /* not stored here: trigger stored "building", the end stores the rest
     * (and a write here would delay this build's turn behind one triggered
     * right after it) */
  }
  pthread_mutex_unlock(&b->mu);
  template_info *t = NULL;
  build_report rep;
  eng_err err;
  int rc =
      build_run_as(e, j->ctx.data, j->ctx.len, j->force, bundled_ensure, j->id, &t, &rep, &err);
  /* our hold of the template goes before "ready" is published: an SDK that
   * deletes the template on seeing it would find it in use otherwise */
  char ours[40] = "";
  if (rc == 0 && t) snprintf(ours, sizeof ours, "%s", t->build_id);
  templates_put(e, t);
  t = NULL;
  pthread_mutex_lock(&b->mu);
  btmpl *bt = find_tmpl(b, j->id);
  x = find_build(bt, j->build_id);
  if (x) {
    char *save = NULL;
    for (char *l = strtok_r(rep.log, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      char *named = step_line(j, l);
      log_entry(x, "info", named ? named : l);
      free(named);
    }
    if (rc == 0) {
      snprintf(x->status, sizeof x->status, "ready");
      snprintf(x->ours, sizeof x->ours, "%s", ours);
      for (size_t i = 0; i < x->ntags && bt; i++) {
        size_t k = 0;
        while (k < bt->ntags && strcmp(bt->tags[k].tag, x->tags[i])) k++;
        if (k == bt->ntags && k < MAX_TAGS) bt->ntags++;
        if (k < MAX_TAGS) {
          snprintf(bt->tags[k].tag, sizeof bt->tags[k].tag, "%s", x->tags[i]);
          snprintf(bt->tags[k].build_id, sizeof bt->tags[k].build_id, "%s", x->id);
          snprintf(bt->tags[k].ours, sizeof bt->tags[k].ours, "%s", x->ours);
          bt->tags[k].at_ms = asbi_unix_ms();
        }
      }
    } else {
      snprintf(x->status, sizeof x->status, "error");
      free(x->reason);
      x->reason = err.status == ENG_EFAILED ? step_message(j, &rep) : NULL;
      if (!x->reason) x->reason = asbi_strdup(err.message);
      if (err.status == ENG_EFAILED && rep.step > 0 && (size_t)rep.step <= j->nsteps)
        x->reason_step = j->step_of[rep.step - 1];
      log_entry(x, "error", x->reason ? x->reason : err.message);
    }
    brec_trim_log(x);
    x->updated_ms = x->finished_ms = asbi_unix_ms();
    save_rec(b, bt);
  }
  pthread_mutex_unlock(&b->mu);
  asbi_log("template %s: builder build %s %s", j->name, j->build_id, rc ? "failed" : "ready");
  build_report_free(&rep);
  job_free(j);
  /* last: api_builder_close may free b once running is 0 */
  pthread_mutex_lock(&b->mu);
  b->running--;
  pthread_cond_broadcast(&b->done);
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

static void trigger(engine *e, api_req *q, const char *id, const char *build_id, api_reply *r) {
  builder *b = B(e);
  if (!b) return api_error(r, 500, "out of memory");
  pthread_mutex_lock(&b->mu);
  btmpl *t = find_tmpl(b, id);
  bbuild *x = t && !strcmp(t->id, id) ? find_build(t, build_id) : NULL;
  char name[64] = "", st[12] = "";
  int cpu = 0, mem = 0;
  if (x) {
    snprintf(name, sizeof name, "%s", t->name);
    snprintf(st, sizeof st, "%s", x->status);
    cpu = t->cpu;
    mem = t->memory_mb;
  }
  pthread_mutex_unlock(&b->mu);
  if (!x) return api_error(r, 404, "build \"%s\" of template \"%s\" not found", build_id, id);
  if (strcmp(st, "waiting"))
    return api_error(r, 409, "build \"%s\" was started already (%s)", build_id, st);
  cJSON *body = parse_body(q, r);
  if (!body) return;
  builder_plan p;
  char why[1024];
  if (builder_translate(body, name, cpu, mem, &p, why, sizeof why)) {
    cJSON_Delete(body);
    return api_error(r, 400, "%s", why);
  }
  cJSON_Delete(body);
  job *j = calloc(1, sizeof *j);
  const char *yaml = p.yaml;
  int rc = j ? 0 : -1;
  if (!rc) {
    asbi_buf_init(&j->ctx, BUILD_CONTEXT_MAX);
    rc = asbi_tar_add(&j->ctx, "template.yaml", ASBI_TAR_FILE, 0644, yaml, strlen(yaml), NULL);
  }
  char err[600] = "";
  for (size_t i = 0; !rc && i < p.nhashes; i++) {
    char path[4400], prefix[128];
    file_path(e, p.hashes[i], path, sizeof path);
    snprintf(prefix, sizeof prefix, BUILDER_FILES_DIR "/%s/", p.hashes[i]);
    asbi_buf f = ASBI_BUF_INIT;
    if (asbi_buf_read_file(&f, path, BUILDER_UNPACKED_MAX + (1u << 20))) {
      snprintf(err, sizeof err,
               "the files of a COPY step (filesHash %s) were not uploaded: GET "
               "/templates/%s/files/%s gives the upload URL",
               p.hashes[i], id, p.hashes[i]);
      rc = -1;
    } else if (builder_archive_repack(f.data, f.len, prefix, &j->ctx, why, sizeof why)) {
      snprintf(err, sizeof err, "the files %s: %s", p.hashes[i], why);
      rc = -1;
    }
    asbi_buf_free(&f);
  }
  if (!rc) rc = asbi_tar_finish(&j->ctx);
  if (rc) {
    if (j) asbi_buf_free(&j->ctx);
    free(j);
    builder_plan_free(&p);
    if (*err) return api_error(r, 400, "%s", err);
    return api_error(r, 413, "the build context is over %u MiB", BUILD_CONTEXT_MAX >> 20);
  }
  j->e = e;
  snprintf(j->id, sizeof j->id, "%s", id);
  snprintf(j->name, sizeof j->name, "%s", name);
  snprintf(j->build_id, sizeof j->build_id, "%s", build_id);
  j->force = p.force;
  j->step_of = p.step_of;
  j->step_label = p.step_label;
  j->nsteps = p.nsteps;
  p.step_of = NULL;
  p.step_label = NULL;
  p.nsteps = 0;
  builder_plan_free(&p);
  pthread_mutex_lock(&b->mu);
  int started = 0;
  x = find_build(find_tmpl(b, id), build_id);
  pthread_attr_t at;
  pthread_t tid;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  if (x && !strcmp(x->status, "waiting") && pthread_create(&tid, &at, run_job, j) == 0) {
    b->running++; /* under b->mu: the thread's first lock waits for us */
    snprintf(x->status, sizeof x->status, "building");
    x->updated_ms = asbi_unix_ms();
    save_rec(b, find_tmpl(b, id));
    started = 1;
  }
  pthread_mutex_unlock(&b->mu);
  pthread_attr_destroy(&at);
  if (!started) {
    job_free(j);
    return api_error(r, 409, "build \"%s\" was started already", build_id);
  }
  r->status = 202;
}

static void status(engine *e, api_req *q, const char *id, const char *build_id, api_reply *r) {
  builder *b = B(e);
  if (!b) return api_error(r, 500, "out of memory");
  const char *off_q = api_query(q, "logsOffset");
  int64_t off = 0;
  if (off_q && (asbi_parse_i64(off_q, strlen(off_q), &off) || off < 0))
    return api_error(r, 400, "logsOffset: expected a whole number >= 0");
  pthread_mutex_lock(&b->mu);
  btmpl *t = find_tmpl(b, id);
  bbuild *x = t && !strcmp(t->id, id) ? find_build(t, build_id) : NULL;
  if (!x) {
    pthread_mutex_unlock(&b->mu);
    return api_error(r, 404, "build \"%s\" of template \"%s\" not found", build_id, id);
  }
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "templateID", t->id);
  cJSON_AddStringToObject(j, "buildID", x->id);
  cJSON_AddStringToObject(j, "status", x->status);
  cJSON *logs = cJSON_AddArrayToObject(j, "logs");
  cJSON *ents = cJSON_AddArrayToObject(j, "logEntries");
  int n = cJSON_GetArraySize(x->entries), k = 0;
  for (int i = (int)(off < n ? off : n); i < n && k < MAX_ENTRIES_PER_CALL; i++, k++) {
    const cJSON *en = cJSON_GetArrayItem(x->entries, i);
    cJSON_AddItemToArray(ents, cJSON_Duplicate(en, 1));
    const char *m = NULL;
    asbi_pj_get_str(en, "message", &m);
    cJSON_AddItemToArray(logs, cJSON_CreateString(m ? m : ""));
  }
  if (!strcmp(x->status, "error")) {
    cJSON *rs = cJSON_AddObjectToObject(j, "reason");
    cJSON_AddStringToObject(rs, "message", x->reason ? x->reason : "the build failed");
    if (x->reason_step >= 0) {
      char s[16];
      snprintf(s, sizeof s, "%d", x->reason_step);
      cJSON_AddStringToObject(rs, "step", s);
    }
    cJSON_AddArrayToObject(rs, "logEntries");
  }
  pthread_mutex_unlock(&b->mu);
  api_reply_json(r, 200, j);
}

/* ---- aliases and tags ----------------------------------------------------------------- */

static void alias(engine *e, const char *name, api_reply *r) {
  template_info *t = templates_find(e, name);
  if (!t || strcmp(t->alias, name)) {
    templates_put(e, t);
    return api_error(r, 404, "template alias \"%s\" not found", name);
  }
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "templateID", t->id);
  cJSON_AddBoolToObject(j, "public", t->builtin);
  templates_put(e, t);
  api_reply_json(r, 200, j);
}

/* tags: a non-empty list of valid tags; 0, or -1 having answered 400. */
static int tags_ok(const cJSON *tags, api_reply *r) {
  const cJSON *it;
  int n = 0;
  cJSON_ArrayForEach(it, tags) {
    n++;
    if (!cJSON_IsString(it) || !tag_ok(it->valuestring)) n = MAX_TAGS + 1;
  }
  if (!cJSON_IsArray(tags) || n == 0 || n > MAX_TAGS) {
    api_error(r, 400, "tags: a list of 1..%d tags, each 1..128 of A-Z a-z 0-9 . _ -", MAX_TAGS);
    return -1;
  }
  return 0;
}

static void tags_assign(engine *e, api_req *q, api_reply *r) {
  cJSON *j = parse_body(q, r);
  if (!j) return;
  const cJSON *target = cJSON_GetObjectItemCaseSensitive(j, "target");
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(j, "tags");
  builder *b = B(e);
  char name[256] = "", from[256] = "";
  if (cJSON_IsString(target)) {
    const char *c = strchr(target->valuestring, ':');
    snprintf(name, sizeof name, "%.*s", c ? (int)(c - target->valuestring) : 255,
             target->valuestring);
    snprintf(from, sizeof from, "%s", c ? c + 1 : "default");
  }
  if (!*name) {
    api_error(r, 400, "target: \"name\" or \"name:tag\"");
  } else if (!b) {
    api_error(r, 500, "out of memory");
  } else if (!tags_ok(tags, r)) {
    pthread_mutex_lock(&b->mu);
    btmpl *t = find_tmpl(b, name);
    size_t k = 0;
    while (t && k < t->ntags && strcmp(t->tags[k].tag, from)) k++;
    if (!t || k == t->ntags) {
      pthread_mutex_unlock(&b->mu);
      api_error(r, 404, "template \"%s\" with tag \"%s\" not found", name, from);
    } else {
      char bid[40], ours[40];
      snprintf(bid, sizeof bid, "%s", t->tags[k].build_id);
      snprintf(ours, sizeof ours, "%s", t->tags[k].ours);
      const cJSON *it;
      cJSON *out = cJSON_CreateObject();
      cJSON *ta = cJSON_AddArrayToObject(out, "tags");
      cJSON_ArrayForEach(it, tags) {
        size_t i = 0;
        while (i < t->ntags && strcmp(t->tags[i].tag, it->valuestring)) i++;
        if (i == MAX_TAGS) continue;
        if (i == t->ntags) t->ntags++;
        snprintf(t->tags[i].tag, sizeof t->tags[i].tag, "%s", it->valuestring);
        snprintf(t->tags[i].build_id, sizeof t->tags[i].build_id, "%s", bid);
        snprintf(t->tags[i].ours, sizeof t->tags[i].ours, "%s", ours);
        t->tags[i].at_ms = asbi_unix_ms();
        cJSON_AddItemToArray(ta, cJSON_CreateString(it->valuestring));
      }
      cJSON_AddStringToObject(out, "buildID", bid);
      save_rec(b, t);
      pthread_mutex_unlock(&b->mu);
      api_reply_json(r, 201, out);
    }
  }
  cJSON_Delete(j);
}

static void tags_delete(engine *e, api_req *q, api_reply *r) {
  cJSON *j = parse_body(q, r);
  if (!j) return;
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "name");
  const cJSON *tags = cJSON_GetObjectItemCaseSensitive(j, "tags");
  builder *b = B(e);
  if (!cJSON_IsString(nm) || !*nm->valuestring) {
    api_error(r, 400, "name: the template's name");
  } else if (!b) {
    api_error(r, 500, "out of memory");
  } else if (!tags_ok(tags, r)) {
    pthread_mutex_lock(&b->mu);
    btmpl *t = find_tmpl(b, nm->valuestring);
    if (!t) {
      pthread_mutex_unlock(&b->mu);
      api_error(r, 404, "template \"%s\" not found", nm->valuestring);
    } else {
      const cJSON *it;
      cJSON_ArrayForEach(it, tags) {
        for (size_t i = 0; i < t->ntags; i++)
          if (!strcmp(t->tags[i].tag, it->valuestring)) {
            t->tags[i] = t->tags[--t->ntags];
            break;
          }
      }
      save_rec(b, t);
      pthread_mutex_unlock(&b->mu);
      r->status = 204;
    }
  }
  cJSON_Delete(j);
}

static void tags_list(engine *e, const char *id, api_reply *r) {
  builder *b = B(e);
  if (!b) return api_error(r, 500, "out of memory");
  pthread_mutex_lock(&b->mu);
  btmpl *t = find_tmpl(b, id);
  if (!t) {
    pthread_mutex_unlock(&b->mu);
    return api_error(r, 404, "template \"%s\" not found", id);
  }
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < t->ntags; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tag", t->tags[i].tag);
    cJSON_AddStringToObject(o, "buildID", t->tags[i].build_id);
    asbi_pj_add_time(o, "createdAt", t->tags[i].at_ms);
    cJSON_AddItemToArray(a, o);
  }
  pthread_mutex_unlock(&b->mu);
  api_reply_json(r, 200, a);
}

int api_builder_tag_build(engine *e, const char *name, const char *tag, char *out, size_t len) {
  /* without e->mu: templates_find (our caller) may run under it */
  builder *b = __atomic_load_n(&e->builder, __ATOMIC_ACQUIRE);
  int rc = -1;
  if (!b) return -1;
  pthread_mutex_lock(&b->mu);
  btmpl *t = find_tmpl(b, name);
  for (size_t i = 0; t && i < t->ntags && rc; i++)
    if (!strcmp(t->tags[i].tag, tag)) {
      snprintf(out, len, "%s", t->tags[i].ours);
      rc = 0;
    }
  pthread_mutex_unlock(&b->mu);
  return rc;
}

/* ---- routes ------------------------------------------------------------------------------ */

int api_builder_handle(engine *e, api_req *q, api_reply *r) {
  const char *m = q->method;
  if (!strcmp(q->path, "/v3/templates")) {
    if (strcmp(m, "POST"))
      api_error(r, 405, "method %s not allowed on %s", m, q->path);
    else
      request_build(e, q, r);
    return 1;
  }
  if (!strcmp(q->path, "/templates/tags")) {
    if (!strcmp(m, "POST"))
      tags_assign(e, q, r);
    else if (!strcmp(m, "DELETE"))
      tags_delete(e, q, r);
    else
      api_error(r, 405, "method %s not allowed on %s", m, q->path);
    return 1;
  }
  char s[7][256];
  size_t n = split(q->path, s, 6);
  if (n == 3 && !strcmp(s[0], "templates") && !strcmp(s[1], "aliases") && !strcmp(m, "GET")) {
    alias(e, s[2], r);
    return 1;
  }
  if (n == 4 && !strcmp(s[0], "templates") && !strcmp(s[2], "files")) {
    if (!strcmp(m, "GET"))
      file_link(e, s[1], s[3], r);
    else if (!strcmp(m, "PUT"))
      file_put(e, q, s[1], s[3], r);
    else
      api_error(r, 405, "method %s not allowed on %s", m, q->path);
    return 1;
  }
  if (n == 5 && !strcmp(s[0], "templates") && !strcmp(s[2], "builds") && !strcmp(s[4], "status") &&
      !strcmp(m, "GET")) {
    status(e, q, s[1], s[3], r);
    return 1;
  }
  if (n == 5 && !strcmp(s[0], "v2") && !strcmp(s[1], "templates") && !strcmp(s[3], "builds") &&
      !strcmp(m, "POST")) {
    trigger(e, q, s[2], s[4], r);
    return 1;
  }
  if (n == 3 && !strcmp(s[0], "templates") && !strcmp(s[2], "tags") && !strcmp(m, "GET")) {
    tags_list(e, s[1], r);
    return 1;
  }
  return 0;
}
