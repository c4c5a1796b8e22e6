/* Named sessions on disk (see session.h for the format and locking).
 * SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/pjson.h"
#include "util/util.h"
#include "envd.h"

#define MAX_SESSION_FILE (1u << 20)

struct asb_session {
  char *name, *sandbox_id, *template_id, *api_url;
  int64_t created;
  cJSON *metadata;
};

struct asb_session_list {
  asb_session **v;
  size_t n;
};

static int valid_name(const char *n) {
  if (!n || !*n || strlen(n) > 128 || n[0] == '.') return 0;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-'))
      return 0;
  return 1;
}

static int mkdirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    int rc = mkdir(path, 0700);
    *p = '/';
    if (rc != 0 && errno != EEXIST) return -1;
  }
  return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* The session dir (created); malloc'd. */
static char *session_dir(void) {
  asbi_buf b = ASBI_BUF_INIT;
  const char *d = asbi_getenv("ASB_SESSION_DIR");
  if (d) {
    asbi_buf_puts(&b, d);
  } else if ((d = asbi_getenv("XDG_STATE_HOME"))) {
    asbi_buf_printf(&b, "%s/agent-sandbox/sessions", d);
  } else {
    const char *home = asbi_getenv("HOME");
    asbi_buf_printf(&b, "%s/.local/state/agent-sandbox/sessions", home ? home : "/tmp");
  }
  char *dir = asbi_buf_detach(&b, NULL);
  if (!dir) {
    asbi_oom();
    return NULL;
  }
  if (mkdirs(dir) != 0) {
    asbi_err(ASB_EPERM, "session: cannot create %s: %s", dir, strerror(errno));
    free(dir);
    return NULL;
  }
  return dir;
}

/* flock on <dir>/.lock; returns the fd or -1 (error recorded). */
static int lock_dir(const char *dir, int exclusive) {
  char path[4200];
  snprintf(path, sizeof path, "%s/.lock", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0) {
    asbi_err(ASB_EPERM, "session: cannot lock %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static void unlock_dir(int fd) {
  if (fd >= 0) {
    flock(fd, LOCK_UN);
    close(fd);
  }
}

void asb_session_free(asb_session *s) {
  if (!s) return;
  free(s->name);
  free(s->sandbox_id);
  free(s->template_id);
  free(s->api_url);
  cJSON_Delete(s->metadata);
  free(s);
}

static asb_session *read_session(const char *dir, const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  asbi_buf b = ASBI_BUF_INIT;
  int frc = asbi_buf_read_file(&b, path, MAX_SESSION_FILE);
  if (frc == -ENOENT) {
    asbi_buf_free(&b);
    asbi_err(ASB_ENOTFOUND, "no session named '%s'", name);
    return NULL;
  }
  if (frc && frc != -EFBIG) {
    asbi_buf_free(&b);
    asbi_err(ASB_EPERM, "session '%s': %s", name, strerror(-frc));
    return NULL;
  }
  cJSON *j = b.data && !frc ? asbi_pj_parse(b.data, b.len, NULL) : NULL;
  asbi_buf_free(&b);
  const char *id = NULL, *tmpl = NULL, *url = NULL, *nm = NULL;
  int64_t created = 0;
  asbi_pj_get_str(j, "name", &nm);
  asbi_pj_get_str(j, "sandboxID", &id);
  asbi_pj_get_str(j, "templateID", &tmpl);
  asbi_pj_get_str(j, "apiUrl", &url);
  asbi_pj_get_i64(j, "createdAt", &created);
  if (!j || !id || !nm || strcmp(nm, name) != 0) {
    cJSON_Delete(j);
    asbi_err(ASB_EPROTOCOL, "session '%s': %s is not a valid session file", name, path);
    return NULL;
  }
  asb_session *s = calloc(1, sizeof *s);
  if (s) {
    s->name = asbi_strdup(name);
    s->sandbox_id = asbi_strdup(id);
    s->template_id = asbi_strdup(tmpl ? tmpl : "");
    s->api_url = asbi_strdup(url ? url : "");
    s->created = created;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    s->metadata = cJSON_IsObject(m) ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
  }
  cJSON_Delete(j);
  if (!s || !s->name || !s->sandbox_id || !s->template_id || !s->api_url || !s->metadata) {
    asb_session_free(s);
    asbi_oom();
    return NULL;
  }
  return s;
}

int asb_session_save(const char *name, const asb_sandbox *sb, const char *const *metadata) {
  if (!valid_name(name))
    return asbi_err(ASB_EINVAL, "session: invalid name '%s' (letters, digits, . _ -)",
                    name ? name : "(null)");
  if (!sb) return asbi_err(ASB_EINVAL, "session.save: sandbox is NULL");
  cJSON *j = cJSON_CreateObject();
  cJSON *meta = j ? cJSON_AddObjectToObject(j, "metadata") : NULL;
  if (!meta) {
    cJSON_Delete(j);
    return asbi_oom();
  }
  for (; metadata && *metadata; metadata++) {
    const char *eq = strchr(*metadata, '=');
    if (!eq || eq == *metadata) {
      cJSON_Delete(j);
      return asbi_err(ASB_EINVAL, "session.save: '%s' is not key=value", *metadata);
    }
    char *k = asbi_strndup(*metadata, (size_t)(eq - *metadata));
    if (k) cJSON_AddStringToObject(meta, k, eq + 1);
    free(k);
  }
  cJSON_AddStringToObject(j, "name", name);
  cJSON_AddStringToObject(j, "sandboxID", sb->id);
  cJSON_AddStringToObject(j, "templateID", sb->template_id ? sb->template_id : "");
  cJSON_AddStringToObject(j, "apiUrl", sb->client->api_url);
  cJSON_AddStringToObject(j, "domain", sb->domain);
  cJSON_AddNumberToObject(j, "createdAt", (double)time(NULL));
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  if (!text) return asbi_oom();
  char *dir = session_dir();
  if (!dir) {
    free(text);
    return asb_error_last()->code;
  }
  int lk = lock_dir(dir, 1);
  int rc = lk < 0 ? asb_error_last()->code : ASB_OK;
  if (!rc) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, name, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t n = strlen(text);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n || fsync(fd) != 0 || close(fd) != 0 ||
        rename(tmp, path) != 0) {
      rc = asbi_err(ASB_EPERM, "session.save: cannot write %s: %s", path, strerror(errno));
      if (fd >= 0) close(fd);
      unlink(tmp);
    }
  }
  unlock_dir(lk);
  free(dir);
  free(text);
  return rc;
}

int asb_session_get(asb_session **out, const char *name) {
  if (!out) return asbi_err(ASB_EINVAL, "session.get: out is NULL");
  if (!valid_name(name)) return asbi_err(ASB_EINVAL, "session: invalid name");
  char *dir = session_dir();
  if (!dir) return asb_error_last()->code;
  int lk = lock_dir(dir, 0);
  asb_session *s = lk < 0 ? NULL : read_session(dir, name);
  unlock_dir(lk);
  free(dir);
  if (!s) return asb_error_last()->code;
  *out = s;
  return ASB_OK;
}

int asb_session_load(asb_sandbox **out, asb_client *c, const char *name, long timeout_ms,
                     const asb_call_options *call) {
  ASBI_CLIENT_CALL(c);
  if (!c || !out) return asbi_err(ASB_EINVAL, "session.load: bad arguments");
  asb_session *s = NULL;
  int rc = asb_session_get(&s, name);
  if (rc) return rc;
  rc = asb_sandbox_connect(out, c, s->sandbox_id, timeout_ms, call);
  if (rc) asbi_err_prefix("session '%s'", name);
  asb_session_free(s);
  return rc;
}

int asb_session_delete(const char *name) {
  if (!valid_name(name)) return asbi_err(ASB_EINVAL, "session: invalid name");
  char *dir = session_dir();
  if (!dir) return asb_error_last()->code;
  int lk = lock_dir(dir, 1);
  int rc = lk < 0 ? asb_error_last()->code : ASB_OK;
  if (!rc) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    if (unlink(path) != 0)
      rc = errno == ENOENT ? asbi_err(ASB_ENOTFOUND, "no session named '%s'", name)
                           : asbi_err(ASB_EPERM, "session.delete: %s", strerror(errno));
  }
  unlock_dir(lk);
  free(dir);
  return rc;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(asb_session *const *)a)->name, (*(asb_session *const *)b)->name);
}

int asb_sessions_list(asb_session_list **out) {
  if (!out) return asbi_err(ASB_EINVAL, "session.list: out is NULL");
  char *dir = session_dir();
  if (!dir) return asb_error_last()->code;
  int lk = lock_dir(dir, 0);
  int rc = lk < 0 ? asb_error_last()->code : ASB_OK;
  asb_session_list *l = rc ? NULL : calloc(1, sizeof *l);
  if (!rc && !l) rc = asbi_oom();
  DIR *d = rc ? NULL : opendir(dir);
  struct dirent *de;
  size_t cap = 0;
  while (d && (de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (de->d_name[0] == '.' || n < 6 || strcmp(de->d_name + n - 5, ".json") != 0) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(n - 5), de->d_name);
    if (!valid_name(name)) continue;
    asb_session *s = read_session(dir, name);
    if (!s) continue; /* a stray or corrupt file is skipped, not fatal */
    if (l->n == cap) {
      cap = cap ? cap * 2 : 16;
      asb_session **v = realloc(l->v, cap * sizeof *v);
      if (!v) {
        asb_session_free(s);
        rc = asbi_oom();
        break;
      }
      l->v = v;
    }
    l->v[l->n++] = s;
  }
  if (d) closedir(d);
  unlock_dir(lk);
  free(dir);
  if (rc) {
    asb_session_list_free(l);
    return rc;
  }
  if (l->n) qsort(l->v, l->n, sizeof *l->v, by_name);
  asb_error_clear();
  *out = l;
  return ASB_OK;
}

size_t asb_session_list_count(const asb_session_list *l) {
  return l ? l->n : 0;
}
const asb_session *asb_session_list_get(const asb_session_list *l, size_t i) {
  return l && i < l->n ? l->v[i] : NULL;
}
void asb_session_list_free(asb_session_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) asb_session_free(l->v[i]);
  free(l->v);
  free(l);
}

const char *asb_session_name(const asb_session *s) {
  return s ? s->name : NULL;
}
const char *asb_session_sandbox_id(const asb_session *s) {
  return s ? s->sandbox_id : NULL;
}
const char *asb_session_template_id(const asb_session *s) {
  return s ? s->template_id : NULL;
}
const char *asb_session_api_url(const asb_session *s) {
  return s ? s->api_url : NULL;
}
asb_int64 asb_session_created_at(const asb_session *s) {
  return s ? s->created : 0;
}
const char *asb_session_metadata(const asb_session *s, const char *key) {
  const cJSON *v = s && key ? cJSON_GetObjectItemCaseSensitive(s->metadata, key) : NULL;
  return cJSON_IsString(v) ? v->valuestring : NULL;
}
