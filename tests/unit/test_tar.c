/* Unit tests for core/proto/tar: the writer, the reader, and archives made
 * by GNU tar in its ustar, gnu and pax formats. SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/tar.h"
#include "testing.h"
#include "util/util.h"

static asbi_tar_entry E;

TEST(round_trip) {
  asbi_buf b = ASBI_BUF_INIT;
  char longdir[200], longname[400], flat[300];
  memset(longdir, 'd', 150);
  longdir[150] = 0;
  snprintf(longname, sizeof longname, "%s/file-with-a-name.txt", longdir);
  memset(flat, 'f', 250);
  flat[250] = 0;
  char *big = malloc(70000);
  for (int i = 0; i < 70000; i++) big[i] = (char)(i * 7);
  CHECK_INT(asbi_tar_add(&b, "template.yaml", ASBI_TAR_FILE, 0644, "name: x\n", 8, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, "src", ASBI_TAR_DIR, 0755, NULL, 0, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, "src/run.sh", ASBI_TAR_FILE, 0755, "#!/bin/sh\n", 10, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, "src/link", ASBI_TAR_SYMLINK, 0777, NULL, 0, "run.sh"), 0);
  CHECK_INT(asbi_tar_add(&b, "empty", ASBI_TAR_FILE, 0600, NULL, 0, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, longname, ASBI_TAR_FILE, 0644, "L", 1, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, flat, ASBI_TAR_FILE, 0644, "F", 1, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, "big.bin", ASBI_TAR_FILE, 0644, big, 70000, NULL), 0);
  CHECK_INT(asbi_tar_add(&b, "", ASBI_TAR_FILE, 0644, NULL, 0, NULL), -2);
  CHECK_INT(asbi_tar_add(&b, "l2", ASBI_TAR_SYMLINK, 0777, NULL, 0, NULL), -2);
  CHECK_INT(asbi_tar_finish(&b), 0);
  CHECK_INT(b.len % 512, 0);
  asbi_tar_reader r;
  asbi_tar_reader_init(&r, b.data, b.len);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, "template.yaml");
  CHECK_INT(E.type, ASBI_TAR_FILE);
  CHECK_INT(E.mode, 0644);
  CHECK_MEM(E.data, E.size, "name: x\n", 8);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, "src");
  CHECK_INT(E.type, ASBI_TAR_DIR);
  CHECK_INT(E.mode, 0755);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, "src/run.sh");
  CHECK_INT(E.mode, 0755);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, "src/link");
  CHECK_INT(E.type, ASBI_TAR_SYMLINK);
  CHECK_STR(E.linkname, "run.sh");
  CHECK_INT(E.size, 0);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, "empty");
  CHECK_INT(E.size, 0);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, longname);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, flat);
  CHECK_MEM(E.data, E.size, "F", 1);
  REQUIRE(asbi_tar_next(&r, &E) == 1);
  CHECK_STR(E.name, "big.bin");
  CHECK_MEM(E.data, E.size, big, 70000);
  CHECK_INT(asbi_tar_next(&r, &E), 0);
  CHECK_INT(asbi_tar_next(&r, &E), 0);
  /* deterministic: the same entries give the same bytes */
  asbi_buf b2 = ASBI_BUF_INIT;
  asbi_tar_add(&b2, "template.yaml", ASBI_TAR_FILE, 0644, "name: x\n", 8, NULL);
  CHECK_MEM(b.data, 1024, b2.data, 1024);
  asbi_buf_free(&b2);
  /* truncations and corruptions are errors, never overreads */
  for (size_t cut = 1; cut < b.len; cut += 509) {
    asbi_tar_reader_init(&r, b.data, cut);
    int rc;
    while ((rc = asbi_tar_next(&r, &E)) == 1) {
    }
    if (rc == 0 && cut % 512 && cut < b.len - 1024) ASBT_FAIL("cut %zu read cleanly", cut);
  }
  b.data[150] ^= 1; /* the checksum field of the first header */
  asbi_tar_reader_init(&r, b.data, b.len);
  CHECK_INT(asbi_tar_next(&r, &E), -1);
  CHECK_STR(r.err, "checksum mismatch");
  free(big);
  asbi_buf_free(&b);
}

/* Recompute the checksum of the header at hdr after a test forged it. */
static void reseal(char *hdr) {
  unsigned sum = 0;
  memset(hdr + 148, ' ', 8);
  for (int i = 0; i < 512; i++) sum += (unsigned char)hdr[i];
  snprintf(hdr + 148, 8, "%06o", sum);
}

/* Finish b, read its first entry into E, free b; asbi_tar_next's result. */
static int first_entry(asbi_buf *b) {
  asbi_tar_finish(b);
  asbi_tar_reader r;
  asbi_tar_reader_init(&r, b->data, b->len);
  int rc = asbi_tar_next(&r, &E);
  asbi_buf_free(b);
  return rc;
}

static int unsafe(const char *name) {
  asbi_buf b = ASBI_BUF_INIT;
  /* forge a header with the raw name, bypassing the writer's checks */
  asbi_tar_add(&b, "placeholder", ASBI_TAR_FILE, 0644, "x", 1, NULL);
  memset(b.data, 0, 100);
  memcpy(b.data, name, strlen(name));
  reseal(b.data);
  return first_entry(&b);
}

TEST(names) {
  CHECK_INT(unsafe("/etc/passwd"), -1);
  CHECK_INT(unsafe("../x"), -1);
  CHECK_INT(unsafe("a/../../x"), -1);
  CHECK_INT(unsafe("a/.."), -1);
  CHECK_INT(unsafe("./a//b/./c/"), 1);
  CHECK_STR(E.name, "a/b/c");
  CHECK_INT(unsafe("..."), 1);
  CHECK_STR(E.name, "...");
  CHECK_INT(unsafe("./"), 1);
  CHECK_STR(E.name, "");
}

/* A pax header (type 'x') with the raw record, then one file. */
static int pax_then_file(const char *record, size_t len) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_tar_add(&b, "pax", ASBI_TAR_FILE, 0644, record, len, NULL);
  b.data[156] = 'x';
  reseal(b.data);
  asbi_tar_add(&b, "plain.txt", ASBI_TAR_FILE, 0644, "x", 1, NULL);
  return first_entry(&b);
}

TEST(pax_names) {
  CHECK_INT(pax_then_file("15 path=a_evil\n", 15), 1);
  CHECK_STR(E.name, "a_evil");
  /* a NUL inside a pax path would cut the name short: refused, not cut */
  CHECK_INT(pax_then_file("15 path=a\0evil\n", 15), -1);
  CHECK_INT(pax_then_file("19 linkpath=a\0evil\n", 19), -1);
  CHECK_INT(pax_then_file("16 path=../evil\n", 16), -1);
  CHECK_INT(pax_then_file("99 path=x\n", 11), -1);
}

/* Reads an archive made by GNU tar from a small tree. */
static void gnu_tar(const char *format) {
  char dir[] = "/tmp/asb-tar-test-XXXXXX";
  REQUIRE(mkdtemp(dir));
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "cd %s && mkdir -p t/sub/%070d/%070d && printf hello > t/a.txt && "
           "printf x > t/sub/%070d/%070d/deep.txt && ln -s a.txt t/ln && "
           "tar --format=%s -cf out.tar -C t . 2>/dev/null",
           dir, 0, 0, 0, 0, format);
  REQUIRE(system(cmd) == 0);
  char path[300];
  snprintf(path, sizeof path, "%s/out.tar", dir);
  FILE *f = fopen(path, "rb");
  REQUIRE(f);
  asbi_buf b = ASBI_BUF_INIT;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) asbi_buf_append(&b, chunk, n);
  fclose(f);
  asbi_tar_reader r;
  asbi_tar_reader_init(&r, b.data, b.len);
  int seen_a = 0, seen_deep = 0, seen_ln = 0, rc;
  while ((rc = asbi_tar_next(&r, &E)) == 1) {
    if (!strcmp(E.name, "a.txt")) {
      seen_a = 1;
      CHECK_MEM(E.data, E.size, "hello", 5);
    }
    if (strstr(E.name, "/deep.txt")) {
      seen_deep = 1;
      CHECK_INT(strlen(E.name), 4 + 71 + 71 + 8);
      CHECK_MEM(E.data, E.size, "x", 1);
    }
    if (!strcmp(E.name, "ln")) {
      seen_ln = 1;
      CHECK_INT(E.type, ASBI_TAR_SYMLINK);
      CHECK_STR(E.linkname, "a.txt");
    }
  }
  if (rc != 0) ASBT_FAIL("%s: %s", format, r.err);
  CHECK(seen_a && seen_deep && seen_ln);
  asbi_buf_free(&b);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) ASBT_FAIL("cleanup");
}

TEST(gnu_tar_formats) {
  if (access("/usr/bin/tar", X_OK) != 0 && access("/bin/tar", X_OK) != 0) return;
  gnu_tar("ustar");
  gnu_tar("gnu");
  gnu_tar("pax");
}

/* A directory packs the same every time: names sorted at every level,
 * fifos skipped, symlinks kept, modes kept; limits and bad dirs say where. */
TEST(pack_dir) {
  char dir[] = "/tmp/asb-tar-pack-XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL);
  char p[512];
  const char *files[] = {"zeta.txt", "alpha.txt", "sub/b", "sub/a", "Capital"};
  snprintf(p, sizeof p, "%s/sub", dir);
  CHECK(mkdir(p, 0750) == 0);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    FILE *f = fopen(p, "w");
    REQUIRE(f != NULL);
    fputs(files[i], f);
    fclose(f);
  }
  snprintf(p, sizeof p, "%s/zeta.txt", dir);
  CHECK(chmod(p, 0755) == 0);
  snprintf(p, sizeof p, "%s/link", dir);
  CHECK(symlink("alpha.txt", p) == 0);
  snprintf(p, sizeof p, "%s/fifo", dir);
  CHECK(mkfifo(p, 0644) == 0);

  asbi_buf a = ASBI_BUF_INIT, b = ASBI_BUF_INIT;
  char err[512];
  CHECK_INT(asbi_tar_pack_dir(dir, &a, 1 << 20, err, sizeof err), 0);
  CHECK_INT(asbi_tar_pack_dir(dir, &b, 1 << 20, err, sizeof err), 0);
  CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
  const char *want[] = {"Capital", "alpha.txt", "link", "sub", "sub/a", "sub/b", "zeta.txt"};
  asbi_tar_reader r;
  asbi_tar_reader_init(&r, a.data, a.len);
  size_t k = 0;
  while (asbi_tar_next(&r, &E) == 1) {
    if (k < sizeof want / sizeof want[0]) CHECK_STR(E.name, want[k]);
    if (!strcmp(E.name, "link"))
      CHECK(E.type == ASBI_TAR_SYMLINK && !strcmp(E.linkname, "alpha.txt"));
    if (!strcmp(E.name, "sub")) CHECK(E.type == ASBI_TAR_DIR && E.mode == 0750);
    if (!strcmp(E.name, "zeta.txt")) CHECK(E.mode == 0755 && E.size == 8);
    k++;
  }
  CHECK_INT((int)k, (int)(sizeof want / sizeof want[0]));
  asbi_buf_free(&a);
  asbi_buf_free(&b);

  /* a file over the limit; an archive over its buffer's max; no such dir */
  CHECK_INT(asbi_tar_pack_dir(dir, &a, 4, err, sizeof err), -EFBIG);
  CHECK(strstr(err, "Capital") != NULL);
  asbi_buf_free(&a);
  asbi_buf_init(&a, 1024);
  CHECK_INT(asbi_tar_pack_dir(dir, &a, 1 << 20, err, sizeof err), -EFBIG);
  asbi_buf_free(&a);
  snprintf(p, sizeof p, "%s/nope", dir);
  CHECK_INT(asbi_tar_pack_dir(p, &a, 1 << 20, err, sizeof err), -ENOENT);
  CHECK(strstr(err, "nope") != NULL);
  asbi_buf_free(&a);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) ASBT_FAIL("cleanup");
}

int main(void) {
  RUN(round_trip);
  RUN(pack_dir);
  RUN(names);
  RUN(pax_names);
  RUN(gnu_tar_formats);
  TEST_MAIN_END();
}
