/* A small tar (ustar) codec for template build contexts: the client packs a
 * template directory, the engine reads the archive to find template.yaml
 * and hash the inputs (extraction happens inside the build sandbox, by
 * tar(1) there). Internal.
 *
 * Writer: deterministic archives (the caller orders entries; owner 0:0,
 * mtime 0, no user/group names), names up to 255 bytes in ustar
 * prefix/name form, longer ones with a GNU long-name entry.
 * Reader: ustar and GNU tar (long names 'L'/'K'), pax headers (path and
 * linkpath; other keys ignored); verifies checksums; names come back
 * normalised ("./a//b/" → "a/b") and names that escape (absolute, "..")
 * are refused.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_PROTO_TAR_H
#define ASB_PROTO_TAR_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define ASBI_TAR_FILE '0'
#define ASBI_TAR_SYMLINK '2'
#define ASBI_TAR_DIR '5'

/* Appends one entry. type ASBI_TAR_FILE (data, len), ASBI_TAR_DIR or
 * ASBI_TAR_SYMLINK (linkname). mode: permission bits (& 07777). Returns 0,
 * -1 (memory / out->max) or -2 (invalid name or linkname: empty, over 4095
 * bytes, or a symlink target over 100 bytes). */
int asbi_tar_add(asbi_buf *out, const char *name, int type, unsigned mode, const void *data,
                 size_t len, const char *linkname);
/* The end-of-archive marker (two zero blocks). 0 or -1. */
int asbi_tar_finish(asbi_buf *out);

/* Packs the directory `root` and everything under it (not root itself):
 * entries named relative to it, names sorted bytewise at every level so the
 * same directory always gives the same archive (the client's template
 * builds and the engine's bundled templates hash what this makes); regular
 * files, directories and symlinks with their permission bits; sockets,
 * fifos and devices skipped; symlinks not followed. Does not write the end
 * marker. Returns 0 or a negative errno with "<path>: <reason>" in err:
 * -EFBIG (a file over file_max, or tar->max reached), -ENAMETOOLONG,
 * -ELOOP (nested over 32 deep), -ENOMEM, or what the filesystem said. */
int asbi_tar_pack_dir(const char *root, asbi_buf *tar, size_t file_max, char *err, size_t errlen);

typedef struct asbi_tar_entry {
  char name[4096];     /* normalised, relative, no trailing '/' */
  char linkname[4096]; /* symlinks and hard links */
  int type;            /* '0' file ('\0' and '7' read as '0'), '1' hard
                          link, '2' symlink, '5' dir, others as found */
  unsigned mode;
  uint64_t size;
  const char *data; /* file contents (into the archive), size bytes */
} asbi_tar_entry;

typedef struct asbi_tar_reader {
  const char *buf;
  size_t len, off;
  const char *err; /* static reason after -1 */
  int ended;
} asbi_tar_reader;

void asbi_tar_reader_init(asbi_tar_reader *r, const char *buf, size_t len);
/* Next entry: 1 (filled e), 0 at the end of the archive, -1 on a malformed
 * archive (r->err says why). Global pax headers are skipped. */
int asbi_tar_next(asbi_tar_reader *r, asbi_tar_entry *e);

#endif
