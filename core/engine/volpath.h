/* Paths of volumes (volpath.c): a path inside a volume as the content API
 * takes it, and a volume's mount path in a sandbox (volumeMounts). Pure
 * string checks, no filesystem (fuzzed: tests/fuzz/fuzz_volpath.c).
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENGINE_VOLPATH_H
#define ASB_ENGINE_VOLPATH_H

#include <stddef.h>

/* A path in a volume: "/"-separated, absolute or not, no "." or ".."
 * component; normalised into out ("/a/b", "/" for the root; repeated and
 * trailing slashes dropped). 0, or -1 (such a component, or it does not
 * fit in len). */
int volpath_norm(const char *in, char *out, size_t len);

/* A volume mount path: absolute, at most 512 bytes, normalised into out,
 * not "/", and not at, under or above where the sandbox's system lives
 * (/proc, /sys, /dev, /run, /.asb, /usr, /etc, /bin, /sbin, /lib, /lib64).
 * 0, or -1 with why. */
int volpath_mount(const char *in, char *out, size_t len, char *why, size_t whylen);

/* 1 if a and b (normalised) are the same path or one is below the other. */
int volpath_overlap(const char *a, const char *b);

#endif
