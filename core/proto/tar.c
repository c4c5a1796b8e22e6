/* ustar/GNU/pax tar reader and a deterministic ustar writer.
 *
 * Why hand-written and not libarchive (checked against Debian 12's 3.6.2):
 * the reader sits on a trust boundary (archives uploaded by API clients for
 * template builds) and must refuse, not repair. libarchive cuts a pax
 * `path=a\0evil` to `a` and accepts a NUL in a pax `linkpath` without a way
 * for the caller to see it, and returns the entry after a malformed pax record
 * with only ARCHIVE_WARN -- the same status it gives a non-ASCII name in the C
 * locale, so "refuse on a warning" would also refuse names that are fine.
 * unit.tar's pax_names pins these refusals. The reader never extracts (tar(1)
 * does that inside the build sandbox) and is fuzzed (fuzz.tar). The writer is
 * deterministic (fixed mtimes/owners, sorted), which archive_write can do but
 * not with less code than this.
 * SPDX-License-Identifier: Apache-2.0 */
#include "tar.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512
#define NAME_MAX_LEN 4095

/* ---- writer -------------------------------------------------------------- */

static void octal(char *field, size_t width, uint64_t v) {
  /* width-1 digits, then NUL */
  char tmp[32];
  snprintf(tmp, sizeof tmp, "%0*llo", (int)(width - 1), (unsigned long long)v);
  memcpy(field, tmp, width - 1);
  field[width - 1] = '\0';
}

static void checksum(unsigned char *h) {
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < BLOCK; i++) sum += h[i];
  char tmp[16];
  snprintf(tmp, sizeof tmp, "%06o", sum);
  memcpy(h + 148, tmp, 6);
  h[154] = '\0';
  h[155] = ' ';
}

static int put_header(asbi_buf *out, const char *name, size_t nlen, const char *prefix, size_t plen,
                      int type, unsigned mode, uint64_t size, const char *linkname) {
  unsigned char h[BLOCK];
  memset(h, 0, sizeof h);
  memcpy(h, name, nlen);
  octal((char *)h + 100, 8, mode & 07777);
  octal((char *)h + 108, 8, 0);
  octal((char *)h + 116, 8, 0);
  if (size > 077777777777ull) { /* GNU base-256 */
    h[124] = 0x80;
    for (int i = 0; i < 8; i++) h[135 - i] = (unsigned char)(size >> (8 * i));
  } else {
    octal((char *)h + 124, 12, size);
  }
  octal((char *)h + 136, 12, 0);
  h[156] = (unsigned char)type;
  if (linkname) memcpy(h + 157, linkname, strlen(linkname));
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  octal((char *)h + 329, 8, 0);
  octal((char *)h + 337, 8, 0);
  if (plen) memcpy(h + 345, prefix, plen);
  checksum(h);
  return asbi_buf_append(out, h, sizeof h) ? -1 : 0;
}

static int put_data(asbi_buf *out, const void *data, size_t len) {
  if (len && asbi_buf_append(out, data, len)) return -1;
  size_t pad = (BLOCK - len % BLOCK) % BLOCK;
  static const char zeros[BLOCK];
  return pad && asbi_buf_append(out, zeros, pad) ? -1 : 0;
}

int asbi_tar_add(asbi_buf *out, const char *name, int type, unsigned mode, const void *data,
                 size_t len, const char *linkname) {
  if (!name || !*name || strlen(name) > NAME_MAX_LEN - 1) return -2;
  if (type == ASBI_TAR_SYMLINK && (!linkname || !*linkname || strlen(linkname) > 100)) return -2;
  if (type != ASBI_TAR_SYMLINK) linkname = NULL;
  if (type != ASBI_TAR_FILE) len = 0;
  char full[NAME_MAX_LEN + 2];
  snprintf(full, sizeof full, "%s%s", name, type == ASBI_TAR_DIR ? "/" : "");
  size_t n = strlen(full);
  size_t start = out->len;
  int rc = 0;
  if (n <= 100) {
    rc = put_header(out, full, n, NULL, 0, type, mode, len, linkname);
  } else {
    /* ustar prefix/name split at a '/' */
    size_t split = 0;
    for (size_t i = n - 1; i > 0; i--)
      if (full[i] == '/' && i <= 155 && n - i - 1 <= 100 && n - i - 1 > 0) {
        split = i;
        break;
      }
    if (split) {
      rc = put_header(out, full + split + 1, n - split - 1, full, split, type, mode, len, linkname);
    } else { /* GNU long name */
      rc = put_header(out, "././@LongLink", 13, NULL, 0, 'L', 0644, n + 1, NULL);
      if (!rc) rc = put_data(out, full, n + 1);
      if (!rc) rc = put_header(out, full, 100, NULL, 0, type, mode, len, linkname);
    }
  }
  if (!rc && type == ASBI_TAR_FILE) rc = put_data(out, data, len);
  if (rc) {
    out->len = start; /* leave the archive as it was */
    if (out->data) out->data[start] = '\0';
  }
  return rc;
}

int asbi_tar_finish(asbi_buf *out) {
  static const char zeros[2 * BLOCK];
  return asbi_buf_append(out, zeros, sizeof zeros) ? -1 : 0;
}

/* ---- reader -------------------------------------------------------------- */

void asbi_tar_reader_init(asbi_tar_reader *r, const char *buf, size_t len) {
  memset(r, 0, sizeof *r);
  r->buf = buf;
  r->len = len;
}

static int fail(asbi_tar_reader *r, const char *why) {
  r->err = why;
  return -1;
}

static int parse_num(const unsigned char *f, size_t width, uint64_t *out) {
  if (f[0] & 0x80) { /* base-256 (positive only) */
    if (f[0] != 0x80) return -1;
    uint64_t v = 0;
    for (size_t i = 1; i < width; i++) {
      if (v >> 56) return -1;
      v = (v << 8) | f[i];
    }
    *out = v;
    return 0;
  }
  size_t i = 0;
  while (i < width && f[i] == ' ') i++;
  uint64_t v = 0;
  int digits = 0;
  for (; i < width && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v >> 60) return -1;
    v = v * 8 + (uint64_t)(f[i] - '0');
  }
  for (; i < width; i++)
    if (f[i] != ' ' && f[i] != '\0') return -1;
  (void)digits;
  *out = v;
  return 0;
}

static int zero_block(const unsigned char *h) {
  for (int i = 0; i < BLOCK; i++)
    if (h[i]) return 0;
  return 1;
}

/* "./a//b/" → "a/b"; -1 for absolute names or ".." components. */
static int normalise(const char *in, size_t n, char *out, size_t cap) {
  if (n && in[0] == '/') return -1;
  size_t o = 0, i = 0;
  while (i < n) {
    while (i < n && in[i] == '/') i++;
    size_t s = i;
    while (i < n && in[i] != '/') i++;
    size_t k = i - s;
    if (k == 0 || (k == 1 && in[s] == '.')) continue;
    if (k == 2 && in[s] == '.' && in[s + 1] == '.') return -1;
    if (o + k + 2 > cap) return -1;
    if (o) out[o++] = '/';
    memcpy(out + o, in + s, k);
    o += k;
  }
  out[o] = '\0';
  return 0;
}

static size_t field_len(const unsigned char *f, size_t width) {
  size_t n = 0;
  while (n < width && f[n]) n++;
  return n;
}

/* pax records "LEN key=value\n": takes path and linkpath. */
static int parse_pax(asbi_tar_reader *r, const char *p, size_t n, char *path, int *have_path,
                     char *link, int *have_link) {
  size_t i = 0;
  while (i < n) {
    size_t j = i, len = 0;
    while (j < n && p[j] >= '0' && p[j] <= '9') {
      len = len * 10 + (size_t)(p[j] - '0');
      if (len > n) return fail(r, "malformed pax header");
      j++;
    }
    if (j == i || j >= n || p[j] != ' ' || len < 3 || i + len > n || p[i + len - 1] != '\n')
      return fail(r, "malformed pax header");
    const char *kv = p + j + 1, *end = p + i + len - 1;
    const char *eq = memchr(kv, '=', (size_t)(end - kv));
    if (!eq) return fail(r, "malformed pax record");
    size_t kl = (size_t)(eq - kv), vl = (size_t)(end - eq - 1);
    if (vl > NAME_MAX_LEN) return fail(r, "pax value too long");
    if (memchr(eq + 1, '\0', vl)) return fail(r, "NUL in a pax value");
    if (kl == 4 && memcmp(kv, "path", 4) == 0) {
      memcpy(path, eq + 1, vl);
      path[vl] = '\0';
      *have_path = 1;
    } else if (kl == 8 && memcmp(kv, "linkpath", 8) == 0) {
      memcpy(link, eq + 1, vl);
      link[vl] = '\0';
      *have_link = 1;
    }
    i += len;
  }
  return 0;
}

int asbi_tar_next(asbi_tar_reader *r, asbi_tar_entry *e) {
  char longname[NAME_MAX_LEN + 1], longlink[NAME_MAX_LEN + 1];
  int have_name = 0, have_link = 0;
  if (r->ended) return 0;
  for (;;) {
    if (r->len - r->off < BLOCK) {
      /* no end marker: accept a clean end (some writers omit it) */
      if (r->off == r->len && !have_name && !have_link) {
        r->ended = 1;
        return 0;
      }
      return fail(r, "truncated archive");
    }
    const unsigned char *h = (const unsigned char *)r->buf + r->off;
    if (zero_block(h)) {
      r->ended = 1;
      if (have_name || have_link) return fail(r, "long name without an entry");
      return 0;
    }
    /* checksum: unsigned sum with the field as spaces */
    uint64_t want;
    if (parse_num(h + 148, 8, &want)) return fail(r, "bad checksum field");
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
    if (sum != want) return fail(r, "checksum mismatch");
    uint64_t size, mode;
    if (parse_num(h + 124, 12, &size) || parse_num(h + 100, 8, &mode))
      return fail(r, "bad size or mode field");
    int type = h[156];
    if (type == '\0' || type == '7') type = ASBI_TAR_FILE;
    /* only regular files (and these metadata entries) carry data here */
    uint64_t dsize =
        (type == ASBI_TAR_FILE || type == 'L' || type == 'K' || type == 'x' || type == 'g') ? size
                                                                                            : 0;
    size_t avail = r->len - r->off - BLOCK;
    if (dsize > avail) return fail(r, "entry data past the end of the archive");
    uint64_t padded = (dsize + BLOCK - 1) / BLOCK * BLOCK;
    if (padded > avail) return fail(r, "truncated archive");
    const char *data = r->buf + r->off + BLOCK;
    r->off += BLOCK + (size_t)padded;
    if (type == 'L' || type == 'K') {
      if (size == 0 || size > NAME_MAX_LEN + 1) return fail(r, "bad GNU long name");
      char *dst = type == 'L' ? longname : longlink;
      size_t n = (size_t)size;
      while (n && data[n - 1] == '\0') n--;
      memcpy(dst, data, n);
      dst[n] = '\0';
      if (memchr(dst, '\0', n)) return fail(r, "NUL in a long name");
      if (type == 'L')
        have_name = 1;
      else
        have_link = 1;
      continue;
    }
    if (type == 'x') {
      if (parse_pax(r, data, (size_t)size, longname, &have_name, longlink, &have_link)) return -1;
      continue;
    }
    if (type == 'g') continue; /* global pax header */
    memset(e, 0, sizeof *e);
    char raw[NAME_MAX_LEN + 1];
    if (have_name) {
      snprintf(raw, sizeof raw, "%s", longname);
    } else {
      size_t nl = field_len(h, 100), pl = 0;
      if (memcmp(h + 257, "ustar\0", 6) == 0) pl = field_len(h + 345, 155);
      if (pl)
        snprintf(raw, sizeof raw, "%.*s/%.*s", (int)pl, (const char *)h + 345, (int)nl,
                 (const char *)h);
      else
        snprintf(raw, sizeof raw, "%.*s", (int)nl, (const char *)h);
    }
    if (normalise(raw, strlen(raw), e->name, sizeof e->name))
      return fail(r, "unsafe or malformed entry name");
    if (have_link)
      snprintf(e->linkname, sizeof e->linkname, "%s", longlink);
    else
      snprintf(e->linkname, sizeof e->linkname, "%.*s", (int)field_len(h + 157, 100),
               (const char *)h + 157);
    e->type = type;
    e->mode = (unsigned)(mode & 07777);
    e->size = dsize;
    e->data = data;
    return 1;
  }
}

/* ---- packing a directory ---------------------------------------------------------- */

#define PACK_MAX_DEPTH 32

static int pack_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int pack_fail(char *err, size_t errlen, int rc, const char *path, const char *why) {
  snprintf(err, errlen, "%s: %s", path, why ? why : strerror(-rc));
  return rc;
}

static int pack_read(const char *path, asbi_buf *out, size_t max) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return -errno;
  char chunk[65536];
  ssize_t n;
  int rc = 0;
  while ((n = read(fd, chunk, sizeof chunk)) > 0) {
    if (out->len + (size_t)n > max) {
      rc = -EFBIG;
      break;
    }
    if (asbi_buf_append(out, chunk, (size_t)n)) {
      rc = -ENOMEM;
      break;
    }
  }
  if (n < 0 && !rc) rc = -errno;
  close(fd);
  return rc;
}

static int pack_level(const char *root, const char *rel, asbi_buf *tar, size_t file_max, int depth,
                      char *err, size_t errlen) {
  char path[8192];
  snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
  if (depth > PACK_MAX_DEPTH) return pack_fail(err, errlen, -ELOOP, path, "nests too deep");
  DIR *d = opendir(path);
  if (!d) return pack_fail(err, errlen, -errno, path, NULL);
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **v = realloc(names, cap * sizeof *v);
      if (!v) {
        rc = pack_fail(err, errlen, -ENOMEM, path, NULL);
        break;
      }
      names = v;
    }
    if (!(names[n] = strdup(de->d_name))) {
      rc = pack_fail(err, errlen, -ENOMEM, path, NULL);
      break;
    }
    n++;
  }
  closedir(d);
  if (!rc && n) qsort(names, n, sizeof *names, pack_cmp);
  asbi_buf data = ASBI_BUF_INIT;
  for (size_t i = 0; !rc && i < n; i++) {
    char child[8192], full[16400];
    snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", names[i]);
    snprintf(full, sizeof full, "%s/%s", root, child);
    struct stat st;
    if (lstat(full, &st) != 0) {
      rc = pack_fail(err, errlen, -errno, full, NULL);
      break;
    }
    int t;
    if (S_ISDIR(st.st_mode)) {
      t = asbi_tar_add(tar, child, ASBI_TAR_DIR, st.st_mode & 07777, NULL, 0, NULL);
      if (!t) rc = pack_level(root, child, tar, file_max, depth + 1, err, errlen);
    } else if (S_ISREG(st.st_mode)) {
      asbi_buf_clear(&data);
      int r = pack_read(full, &data, file_max);
      if (r) {
        rc = pack_fail(err, errlen, r, full, r == -EFBIG ? "file too big" : NULL);
        break;
      }
      t = asbi_tar_add(tar, child, ASBI_TAR_FILE, st.st_mode & 07777, data.data, data.len, NULL);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t k = readlink(full, target, sizeof target - 1);
      if (k < 0) {
        rc = pack_fail(err, errlen, -errno, full, NULL);
        break;
      }
      target[k] = '\0';
      t = asbi_tar_add(tar, child, ASBI_TAR_SYMLINK, 0777, NULL, 0, target);
    } else {
      continue; /* sockets, fifos, devices: not part of a template */
    }
    if (!rc && t == -2)
      rc = pack_fail(err, errlen, -ENAMETOOLONG, full, "name or link too long");
    else if (!rc && t)
      rc = tar->max && tar->len + BUFSIZ > tar->max
               ? pack_fail(err, errlen, -EFBIG, root, "the archive is too big")
               : pack_fail(err, errlen, -ENOMEM, full, NULL);
  }
  asbi_buf_free(&data);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
}

int asbi_tar_pack_dir(const char *root, asbi_buf *tar, size_t file_max, char *err, size_t errlen) {
  if (errlen) err[0] = '\0';
  return pack_level(root, "", tar, file_max, 0, err, errlen);
}
