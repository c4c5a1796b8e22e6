/* The Jupyter messaging protocol's wire format (version 5.3): multipart
 * messages [identities…] "<IDS|MSG>" signature header parent_header metadata
 * content [buffers…], signed with HMAC-SHA256 over the four JSON parts.
 * No sockets here: frames in, frames out. Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_JMSG_H
#define ASB_CODEINTERP_JMSG_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define CI_JMSG_DELIM "<IDS|MSG>"
#define CI_JMSG_VERSION "5.3"

enum {
  CI_JMSG_OK = 0,
  CI_JMSG_ENODELIM = -1, /* no "<IDS|MSG>" frame */
  CI_JMSG_ESHORT = -2,   /* fewer than five frames after the delimiter */
  CI_JMSG_ESIG = -3,     /* signature missing or wrong */
  CI_JMSG_EJSON = -4,    /* a part is not a JSON object */
  CI_JMSG_EFIELD = -5,   /* the header lacks msg_id or msg_type */
  CI_JMSG_ENOMEM = -6
};

typedef struct ci_frame {
  const void *data;
  size_t len;
} ci_frame;

/* A keyed HMAC-SHA256 signer; an empty key signs nothing and accepts any
 * signature, as the protocol says. */
typedef struct ci_hmac ci_hmac;
int ci_hmac_new(ci_hmac **out, const void *key, size_t key_len);
void ci_hmac_free(ci_hmac *h);
/* Lowercase hex digest of the four parts into out (65 bytes); "" without a
 * key. 0 or -1. */
int ci_hmac_sign(ci_hmac *h, const ci_frame parts[4], char out[65]);

typedef struct ci_jmsg {
  cJSON *header, *parent, *metadata, *content;
  const char *msg_type;  /* in header */
  const char *msg_id;    /* in header */
  const char *parent_id; /* in parent, or NULL */
  const char *date;      /* in header, or NULL */
  size_t nids;           /* routing identities before the delimiter */
  size_t nbuffers;       /* extra binary buffers after content */
  ci_frame raw_content;  /* the content frame, when it was left unparsed */
} ci_jmsg;

/* Parse and verify a received message. On success the caller frees it with
 * ci_jmsg_free; on failure *out is zeroed. A "\u0000" escape in a part is
 * read as U+FFFD (kernel output may hold NULs; strings here are C strings):
 * parts must therefore be writable, and are changed in place. */
int ci_jmsg_parse(ci_hmac *h, ci_frame *frames, size_t n, ci_jmsg *out);
/* The same, but a content frame longer than lazy_over bytes is verified and
 * left unparsed (content NULL, raw_content set): large output can then be
 * copied out of it without a parsed copy. ci_jmsg_content parses it later. */
int ci_jmsg_parse_lazy(ci_hmac *h, ci_frame *frames, size_t n, size_t lazy_over, ci_jmsg *out);
int ci_jmsg_content(ci_jmsg *m);

/* In the JSON object text s[0..n), the top-level member key whose value is
 * a string: *body points at that string's raw (still escaped) text between
 * its quotes. 0, or -1 if absent, not a string, or s is not an object.
 * Keys are compared as written (no unescaping). */
int ci_json_member_body(const char *s, size_t n, const char *key, const char **body, size_t *len);
void ci_jmsg_free(ci_jmsg *m);
const char *ci_jmsg_strerror(int rc);

/* A message to send: frames[0..5] = delimiter, signature, header, parent
 * header "{}", metadata "{}", content. */
typedef struct ci_jout {
  ci_frame frames[6];
  char msg_id[33];
  char sig[65];
  char *header;
  char *content;
} ci_jout;

/* content_json: the serialised content object (copied). */
int ci_jmsg_build(ci_hmac *h, const char *session, const char *msg_type, const char *content_json,
                  ci_jout *out);
void ci_jout_free(ci_jout *o);

#endif
