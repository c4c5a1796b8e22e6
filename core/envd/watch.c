/* envd: directory watchers on inotify — the WatchDir stream and the
 * polling trio CreateWatcher / GetWatcherEvents / RemoveWatcher. A recursive
 * watch also covers directories created later. Event mapping follows
 * fsnotify (which E2B's envd uses): CREATE/MOVED_TO → CREATE, MODIFY →
 * WRITE, DELETE/DELETE_SELF → REMOVE, MOVED_FROM/MOVE_SELF → RENAME,
 * ATTRIB → CHMOD. SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "entry.h"
#include "path.h"
#include "proto/pjson.h"
#include "util/util.h"
#include "watch.h"

#define WMASK                                                                                   \
  (IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF | IN_DELETE | \
   IN_DELETE_SELF)
#define MAX_POLL_EVENTS 100000

typedef struct wdent {
  int wd;
  char *path;
} wdent;

typedef struct watch {
  int ifd;
  char *root;
  int recursive;
  int include_entry;
  wdent *wds;
  size_t nwd, cap;
} watch;

static void watch_close(watch *w) {
  if (w->ifd >= 0) close(w->ifd);
  for (size_t i = 0; i < w->nwd; i++) free(w->wds[i].path);
  free(w->wds);
  free(w->root);
  memset(w, 0, sizeof *w);
  w->ifd = -1;
}

static const char *wd_path(watch *w, int wd) {
  for (size_t i = 0; i < w->nwd; i++)
    if (w->wds[i].wd == wd) return w->wds[i].path;
  return NULL;
}

static void wd_forget(watch *w, int wd) {
  for (size_t i = 0; i < w->nwd; i++) {
    if (w->wds[i].wd == wd) {
      free(w->wds[i].path);
      w->wds[i] = w->wds[--w->nwd];
      return;
    }
  }
}

static int add_one(watch *w, const char *path) {
  int wd = inotify_add_watch(w->ifd, path, WMASK | IN_DONT_FOLLOW);
  if (wd < 0) return -1;
  for (size_t i = 0; i < w->nwd; i++) {
    if (w->wds[i].wd == wd) { /* same inode again (e.g. renamed) */
      free(w->wds[i].path);
      w->wds[i].path = asbi_strdup(path);
      return 0;
    }
  }
  if (w->nwd == w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 16;
    wdent *n = realloc(w->wds, nc * sizeof *n);
    if (!n) return -1;
    w->wds = n;
    w->cap = nc;
  }
  w->wds[w->nwd++] = (wdent){wd, asbi_strdup(path)};
  return 0;
}

static void add_event(watch *w, cJSON *arr, const char *full, int type);

/* Watch path and the directories under it. With arr (a directory that
 * appeared under a recursive watch), also report a CREATE for everything
 * already inside: a file made right after its directory, before the watch
 * on that directory existed, has no inotify event of its own (as watchdog
 * does; an entry made between the watch and the scan may be reported
 * twice, never not at all). */
static void add_tree(watch *w, const char *path, int depth, cJSON *arr) {
  if (add_one(w, path) != 0 || depth > 64) return;
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    char *sub = envd_path_join(path, de->d_name);
    struct stat st;
    if (sub && arr) add_event(w, arr, sub, 1);
    if (sub && lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) add_tree(w, sub, depth + 1, arr);
    free(sub);
  }
  closedir(d);
}

static int is_network_fs(const char *path) {
  struct statfs s;
  if (statfs(path, &s) != 0) return 0;
  switch ((unsigned long)s.f_type) {
    case 0x6969:     /* NFS */
    case 0xFF534D42: /* CIFS */
    case 0x517B:     /* SMB */
    case 0xFE534D42: /* SMB2 */
    case 0x65735546: /* FUSE */
      return 1;
    default:
      return 0;
  }
}

static int watch_open(watch *w, const envd_call *c, const cJSON *req, envd_err *e) {
  memset(w, 0, sizeof *w);
  w->ifd = -1;
  const char *path = NULL;
  int recursive = 0, include = 0, allow_net = 0;
  if (asbi_pj_get_str(req, "path", &path) != 0 ||
      asbi_pj_get_bool(req, "recursive", &recursive) != 0 ||
      asbi_pj_get_bool(req, "includeEntry", &include) != 0 ||
      asbi_pj_get_bool(req, "allowNetworkMounts", &allow_net) != 0) {
    envd_err_set(e, "invalid_argument", "invalid watch request");
    return -1;
  }
  const char *perr = NULL;
  char *rp = envd_resolve_path(path ? path : "", c->user, &perr);
  if (!rp) {
    envd_err_set(e, "invalid_argument", "failed to expand path '%s' for user '%s': %s",
                 path ? path : "", c->user->name, perr);
    return -1;
  }
  struct stat st;
  if (stat(rp, &st) != 0) {
    int err = errno;
    if (err == ENOENT)
      envd_err_set(e, "not_found",
                   "path %s not found: stat %s: no such file "
                   "or directory",
                   rp, rp);
    else
      envd_err_set(e, envd_errno_code(err), "error statting path %s: %s", rp, strerror(err));
    free(rp);
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    envd_err_set(e, "invalid_argument", "path %s not a directory", rp);
    free(rp);
    return -1;
  }
  if (!allow_net && is_network_fs(rp)) {
    envd_err_set(e, "invalid_argument", "cannot watch path on network filesystem: %s", rp);
    free(rp);
    return -1;
  }
  w->root = envd_path_clean(rp);
  free(rp);
  w->recursive = recursive;
  w->include_entry = include;
  w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->ifd < 0 || add_one(w, w->root) != 0) {
    int err = errno;
    envd_err_set(e, envd_errno_code(err), "error adding path %s to watcher: %s", w->root,
                 strerror(err));
    watch_close(w);
    return -1;
  }
  if (recursive) {
    DIR *d = opendir(w->root);
    if (d) {
      struct dirent *de;
      while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char *sub = envd_path_join(w->root, de->d_name);
        if (sub && lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) add_tree(w, sub, 1, NULL);
        free(sub);
      }
      closedir(d);
    }
  }
  return 0;
}

static char *rel_name(const watch *w, const char *full) {
  size_t rl = strlen(w->root);
  if (strcmp(full, w->root) == 0) return asbi_strdup(".");
  if (strcmp(w->root, "/") == 0) return asbi_strdup(full + 1);
  if (strncmp(full, w->root, rl) == 0 && full[rl] == '/') return asbi_strdup(full + rl + 1);
  return asbi_strdup(full);
}

static void add_event(watch *w, cJSON *arr, const char *full, int type) {
  static const asbi_pj_enum types[] = {{0, "EVENT_TYPE_UNSPECIFIED"},
                                       {1, "EVENT_TYPE_CREATE"},
                                       {2, "EVENT_TYPE_WRITE"},
                                       {3, "EVENT_TYPE_REMOVE"},
                                       {4, "EVENT_TYPE_RENAME"},
                                       {5, "EVENT_TYPE_CHMOD"},
                                       {0, NULL}};
  cJSON *o = cJSON_CreateObject();
  char *name = rel_name(w, full);
  asbi_pj_add_str(o, "name", name);
  free(name);
  asbi_pj_add_enum(o, "type", types, type);
  if (w->include_entry && (type == 1 || type == 2 || type == 5)) {
    envd_err e;
    cJSON *ent = envd_entry_info(full, &e);
    if (ent) cJSON_AddItemToObject(o, "entry", ent);
  }
  cJSON_AddItemToArray(arr, o);
}

/* Reads pending events into arr. -1 (and e) on queue overflow. */
static int watch_read(watch *w, cJSON *arr, envd_err *e) {
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(w->ifd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        envd_err_set(e, "internal", "watcher error: fsnotify: queue or buffer overflow");
        return -1;
      }
      const char *dir = wd_path(w, ev->wd);
      if (!dir) continue;
      int is_root = strcmp(dir, w->root) == 0;
      char *full = ev->len ? envd_path_join(dir, ev->name) : asbi_strdup(dir);
      uint32_t m = ev->mask;
      /* A subdirectory's own DELETE_SELF/MOVE_SELF duplicate the parent's
       * DELETE/MOVED_FROM. */
      if (!ev->len && !is_root) m &= ~(uint32_t)(IN_DELETE_SELF | IN_MOVE_SELF);
      if (m & (IN_CREATE | IN_MOVED_TO)) add_event(w, arr, full, 1);
      if (m & (IN_MOVE_SELF | IN_MOVED_FROM)) add_event(w, arr, full, 4);
      if (m & IN_ATTRIB) add_event(w, arr, full, 5);
      if (m & IN_MODIFY) add_event(w, arr, full, 2);
      if (m & (IN_DELETE_SELF | IN_DELETE)) add_event(w, arr, full, 3);
      if (w->recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
        add_tree(w, full, 1, arr);
      if (ev->mask & IN_IGNORED) wd_forget(w, ev->wd);
      free(full);
    }
  }
}

/* ---- WatchDir stream --------------------------------------------------- */
typedef struct wstream {
  envd_stream base;
  watch w;
  int started;
  int sock;
  int ka_ms;
  uint64_t next_ka;
  uint64_t deadline_ms;
} wstream;

static int ws_next(envd_stream *base, asbi_buf *out) {
  wstream *s = (wstream *)base;
  if (!s->started) {
    static const char st[] = "{\"start\":{}}";
    envd_env_msg(out, st, sizeof st - 1);
    s->started = 1;
    s->next_ka = asbi_now_ms() + (uint64_t)s->ka_ms;
    return 1;
  }
  for (;;) {
    uint64_t now = asbi_now_ms();
    if (s->deadline_ms && now >= s->deadline_ms) {
      envd_env_end(out, "deadline_exceeded", "context deadline exceeded");
      return 0;
    }
    cJSON *arr = cJSON_CreateArray();
    envd_err e = {0};
    int rc = watch_read(&s->w, arr, &e);
    cJSON *it;
    int any = 0;
    cJSON_ArrayForEach(it, arr) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemReferenceToObject(o, "filesystem", it);
      char *j = asbi_pj_print(o);
      if (j) envd_env_msg(out, j, strlen(j));
      free(j);
      cJSON_Delete(o);
      any = 1;
    }
    cJSON_Delete(arr);
    if (rc < 0) {
      envd_env_end(out, e.code, e.msg);
      return 0;
    }
    if (any) {
      s->next_ka = now + (uint64_t)s->ka_ms;
      return 1;
    }
    uint64_t until = s->next_ka;
    if (s->deadline_ms && s->deadline_ms < until) until = s->deadline_ms;
    int to = until > now ? (int)(until - now) : 0;
    if (envd_wait(s->w.ifd, s->sock, to) < 0) return -1;
    now = asbi_now_ms();
    if (now >= s->next_ka) {
      static const char ka[] = "{\"keepalive\":{}}";
      envd_env_msg(out, ka, sizeof ka - 1);
      s->next_ka = now + (uint64_t)s->ka_ms;
      return 1;
    }
  }
}

static void ws_destroy(envd_stream *base) {
  wstream *s = (wstream *)base;
  watch_close(&s->w);
  free(s);
}

static envd_stream *watch_stream(const envd_call *c, const cJSON *req, envd_err *e) {
  wstream *s = calloc(1, sizeof *s);
  if (!s) {
    envd_err_set(e, "internal", "out of memory");
    return NULL;
  }
  if (watch_open(&s->w, c, req, e) != 0) {
    free(s);
    return NULL;
  }
  s->base.next = ws_next;
  s->base.destroy = ws_destroy;
  s->sock = c->sock;
  s->ka_ms = c->keepalive_s * 1000;
  if (c->timeout_ms) s->deadline_ms = asbi_now_ms() + (uint64_t)c->timeout_ms;
  return &s->base;
}

/* ---- polling watchers -------------------------------------------------- */
typedef struct pwatch {
  struct pwatch *next;
  char id[32];
  watch w;
  envd_user user;
  int stopfd;
  int syncfd; /* GetWatcherEvents asks the reader to drain the queue */
  pthread_t thr;
  pthread_mutex_t lock;
  pthread_cond_t synced_cv;
  uint64_t sync_asked, synced; /* drains asked for / done (under lock) */
  int ended;                   /* the reader is gone (under lock) */
  cJSON *events;
  envd_err err;
  int failed;
} pwatch;

/* The polling watchers, by id: everything this file keeps process-wide. */
static struct {
  pthread_mutex_t lock;
  pwatch *list;
} g_watchers = {PTHREAD_MUTEX_INITIALIZER, NULL};

static void pw_end(pwatch *pw) {
  pthread_mutex_lock(&pw->lock);
  pw->ended = 1;
  pthread_cond_broadcast(&pw->synced_cv);
  pthread_mutex_unlock(&pw->lock);
}

/* The reader: inotify's queue into pw->events, as the events come and
 * whenever GetWatcherEvents asks (syncfd). The reader alone reads the
 * queue, as the watcher's user (the directories a recursive watch adds are
 * opened as that user); an ask is answered after a read that started after
 * it, so a poll holds every change made before it was sent (inotify queues
 * an event inside the syscall that made the change). */
static void *pw_main(void *arg) {
  pwatch *pw = arg;
  if (envd_creds_enter(&pw->user) != 0) {
    pw_end(pw);
    return NULL;
  }
  for (;;) {
    struct pollfd p[3] = {{pw->w.ifd, POLLIN, 0}, {pw->stopfd, POLLIN, 0}, {pw->syncfd, POLLIN, 0}};
    int rc = poll(p, 3, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || p[1].revents) break;
    uint64_t asked = 0;
    if (p[2].revents) {
      uint64_t v;
      if (read(pw->syncfd, &v, sizeof v) < 0) { /* EAGAIN: nothing asked */
      }
      pthread_mutex_lock(&pw->lock);
      asked = pw->sync_asked;
      pthread_mutex_unlock(&pw->lock);
    }
    cJSON *arr = cJSON_CreateArray();
    envd_err e = {0};
    int r = watch_read(&pw->w, arr, &e);
    pthread_mutex_lock(&pw->lock);
    cJSON *it;
    while ((it = cJSON_DetachItemFromArray(arr, 0)) != NULL) {
      if (cJSON_GetArraySize(pw->events) >= MAX_POLL_EVENTS) {
        cJSON_Delete(it);
        if (!pw->failed) {
          pw->failed = 1;
          envd_err_set(&pw->err, "resource_exhausted", "watcher holds more than %d unread events",
                       MAX_POLL_EVENTS);
        }
        continue;
      }
      cJSON_AddItemToArray(pw->events, it);
    }
    if (r < 0 && !pw->failed) {
      pw->failed = 1;
      pw->err = e;
    }
    if (asked > pw->synced) {
      pw->synced = asked;
      pthread_cond_broadcast(&pw->synced_cv);
    }
    pthread_mutex_unlock(&pw->lock);
    cJSON_Delete(arr);
    if (r < 0) break;
  }
  envd_creds_leave();
  pw_end(pw);
  return NULL;
}

/* Have the reader drain inotify's queue now, and wait (under pw->lock,
 * which it releases while waiting) until it has, for up to 5 s (the reader
 * does a directory scan at worst). */
static void pw_sync(pwatch *pw) {
  uint64_t want = ++pw->sync_asked, one = 1;
  if (write(pw->syncfd, &one, sizeof one) != (ssize_t)sizeof one) return;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += 5;
  while (pw->synced < want && !pw->ended)
    if (pthread_cond_timedwait(&pw->synced_cv, &pw->lock, &until) == ETIMEDOUT) break;
}

static void pw_free(pwatch *pw) {
  uint64_t one = 1;
  if (write(pw->stopfd, &one, sizeof one) < 0) { /* cannot fail */
  }
  pthread_join(pw->thr, NULL);
  close(pw->stopfd);
  close(pw->syncfd);
  watch_close(&pw->w);
  cJSON_Delete(pw->events);
  pthread_cond_destroy(&pw->synced_cv);
  pthread_mutex_destroy(&pw->lock);
  free(pw);
}

static int watcher_create(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  pwatch *pw = calloc(1, sizeof *pw);
  if (!pw) {
    envd_err_set(e, "internal", "out of memory");
    return -1;
  }
  if (watch_open(&pw->w, c, req, e) != 0) {
    free(pw);
    return -1;
  }
  pw->user = *c->user;
  pw->events = cJSON_CreateArray();
  pw->stopfd = eventfd(0, EFD_CLOEXEC);
  pw->syncfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_mutex_init(&pw->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&pw->synced_cv, &ca);
  pthread_condattr_destroy(&ca);
  char rnd[21];
  asbi_random_alnum(rnd, 20);
  snprintf(pw->id, sizeof pw->id, "w%s", rnd);
  int rc = -1;
  if (pw->stopfd >= 0 && pw->syncfd >= 0) {
    pthread_attr_t a;
    pthread_attr_init(&a);
#if !defined(__SANITIZE_ADDRESS__)
    pthread_attr_setstacksize(&a, 256u << 10);
#endif
    rc = pthread_create(&pw->thr, &a, pw_main, pw);
    pthread_attr_destroy(&a);
  }
  if (rc != 0) {
    if (pw->stopfd >= 0) close(pw->stopfd);
    if (pw->syncfd >= 0) close(pw->syncfd);
    watch_close(&pw->w);
    cJSON_Delete(pw->events);
    pthread_cond_destroy(&pw->synced_cv);
    pthread_mutex_destroy(&pw->lock);
    free(pw);
    envd_err_set(e, "internal", "error creating watcher");
    return -1;
  }
  pthread_mutex_lock(&g_watchers.lock);
  pw->next = g_watchers.list;
  g_watchers.list = pw;
  pthread_mutex_unlock(&g_watchers.lock);
  *resp = cJSON_CreateObject();
  cJSON_AddStringToObject(*resp, "watcherId", pw->id);
  return 0;
}

static const char *watcher_id(const cJSON *req, envd_err *e) {
  const char *id = NULL;
  if (asbi_pj_get_str(req, "watcherId", &id) != 0) {
    envd_err_set(e, "invalid_argument", "watcherId must be a string");
    return NULL;
  }
  return id ? id : "";
}

static int watcher_events(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  const char *id = watcher_id(req, e);
  if (!id) return -1;
  pthread_mutex_lock(&g_watchers.lock);
  pwatch *pw = g_watchers.list;
  while (pw && strcmp(pw->id, id) != 0) pw = pw->next;
  if (!pw) {
    pthread_mutex_unlock(&g_watchers.lock);
    envd_err_set(e, "not_found", "watcher with id %s not found", id);
    return -1;
  }
  pthread_mutex_lock(&pw->lock);
  pw_sync(pw);
  int rc = 0;
  if (pw->failed) {
    *e = pw->err;
    rc = -1;
  } else {
    cJSON *evs = pw->events;
    pw->events = cJSON_CreateArray();
    *resp = cJSON_CreateObject();
    if (cJSON_GetArraySize(evs))
      cJSON_AddItemToObject(*resp, "events", evs);
    else
      cJSON_Delete(evs);
  }
  pthread_mutex_unlock(&pw->lock);
  pthread_mutex_unlock(&g_watchers.lock);
  return rc;
}

static int watcher_remove(const envd_call *c, const cJSON *req, cJSON **resp, envd_err *e) {
  (void)c;
  const char *id = watcher_id(req, e);
  if (!id) return -1;
  pthread_mutex_lock(&g_watchers.lock);
  pwatch **pp = &g_watchers.list;
  while (*pp && strcmp((*pp)->id, id) != 0) pp = &(*pp)->next;
  pwatch *pw = *pp;
  if (pw) *pp = pw->next;
  pthread_mutex_unlock(&g_watchers.lock);
  if (!pw) {
    envd_err_set(e, "not_found", "watcher with id %s not found", id);
    return -1;
  }
  pw_free(pw);
  *resp = cJSON_CreateObject();
  return 0;
}

const envd_method envd_watch_methods[] = {
    {"/filesystem.Filesystem/WatchDir", ENVD_SERVER_STREAM, NULL, watch_stream, NULL, 1},
    {"/filesystem.Filesystem/CreateWatcher", ENVD_UNARY, watcher_create, NULL, NULL, 1},
    {"/filesystem.Filesystem/GetWatcherEvents", ENVD_UNARY, watcher_events, NULL, NULL, 1},
    {"/filesystem.Filesystem/RemoveWatcher", ENVD_UNARY, watcher_remove, NULL, NULL, 1},
    {NULL, 0, NULL, NULL, NULL, 0}};

void envd_watch_shutdown(void) {
  pthread_mutex_lock(&g_watchers.lock);
  pwatch *pw = g_watchers.list;
  g_watchers.list = NULL;
  pthread_mutex_unlock(&g_watchers.lock);
  while (pw) {
    pwatch *n = pw->next;
    pw_free(pw);
    pw = n;
  }
}
