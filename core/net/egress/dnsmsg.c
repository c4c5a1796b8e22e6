/* DNS messages on libldns (dnsmsg.h). SPDX-License-Identifier: Apache-2.0 */
#include "dnsmsg.h"

#include <arpa/inet.h>
#include <ldns/ldns.h>
#include <stdlib.h>
#include <string.h>

#include "peek.h"

/* q's name from an ldns owner name: "example.com." -> "example.com". */
static void name_of(const ldns_rdf *owner, dnsmsg_query *q) {
  q->name[0] = 0;
  q->name_ok = 0;
  char *s = ldns_rdf2str(owner);
  if (!s) return;
  size_t n = strlen(s);
  if (n <= DNSMSG_NAME_MAX + 1) {
    memcpy(q->name, s, n + 1);
    if (strcmp(q->name, ".") == 0)
      q->name[0] = 0;
    else
      q->name_ok = peek_norm_name(q->name) == 0;
    if (!q->name_ok && q->name[0]) {
      /* keep a printable form only when it is a valid host name */
      q->name[0] = 0;
    }
  }
  free(s);
}

int dnsmsg_parse_query(const uint8_t *wire, size_t n, dnsmsg_query *q) {
  memset(q, 0, sizeof *q);
  ldns_pkt *p = NULL;
  if (n < 12 || ldns_wire2pkt(&p, wire, n) != LDNS_STATUS_OK) return -1;
  int rc = -1;
  ldns_rr_list *qs = ldns_pkt_question(p);
  if (!ldns_pkt_qr(p) && ldns_pkt_get_opcode(p) == LDNS_PACKET_QUERY && qs &&
      ldns_rr_list_rr_count(qs) == 1) {
    ldns_rr *rr = ldns_rr_list_rr(qs, 0);
    q->id = ldns_pkt_id(p);
    q->rd = ldns_pkt_rd(p);
    q->qtype = (uint16_t)ldns_rr_get_type(rr);
    q->qclass = (uint16_t)ldns_rr_get_class(rr);
    name_of(ldns_rr_owner(rr), q);
    rc = 0;
  }
  ldns_pkt_free(p);
  return rc;
}

int dnsmsg_parse_reply(const uint8_t *wire, size_t n, const dnsmsg_query *q, dnsmsg_addr *addrs,
                       size_t max, size_t *naddrs, int *tc) {
  *naddrs = 0;
  *tc = 0;
  ldns_pkt *p = NULL;
  if (n < 12 || ldns_wire2pkt(&p, wire, n) != LDNS_STATUS_OK) return -1;
  int rc = -1;
  ldns_rr_list *qs = ldns_pkt_question(p);
  if (!ldns_pkt_qr(p) || ldns_pkt_id(p) != q->id || !qs || ldns_rr_list_rr_count(qs) != 1) goto out;
  ldns_rr *qr = ldns_rr_list_rr(qs, 0);
  dnsmsg_query rq;
  memset(&rq, 0, sizeof rq);
  name_of(ldns_rr_owner(qr), &rq);
  if ((uint16_t)ldns_rr_get_type(qr) != q->qtype || rq.name_ok != q->name_ok ||
      strcmp(rq.name, q->name) != 0)
    goto out;
  *tc = ldns_pkt_tc(p);
  ldns_rr_list *an = ldns_pkt_answer(p);
  size_t cnt = an ? ldns_rr_list_rr_count(an) : 0;
  for (size_t i = 0; i < cnt && *naddrs < max; i++) {
    ldns_rr *rr = ldns_rr_list_rr(an, i);
    ldns_rr_type t = ldns_rr_get_type(rr);
    if ((t != LDNS_RR_TYPE_A && t != LDNS_RR_TYPE_AAAA) ||
        ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN || ldns_rr_rd_count(rr) != 1)
      continue;
    ldns_rdf *d = ldns_rr_rdf(rr, 0);
    size_t want = t == LDNS_RR_TYPE_A ? 4 : 16;
    if (!d || ldns_rdf_size(d) != want) continue;
    dnsmsg_addr *a = &addrs[(*naddrs)++];
    memset(a, 0, sizeof *a);
    a->family = t == LDNS_RR_TYPE_A ? AF_INET : AF_INET6;
    memcpy(a->addr, ldns_rdf_data(d), want);
    a->ttl = ldns_rr_ttl(rr);
  }
  rc = 0;
out:
  ldns_pkt_free(p);
  return rc;
}

/* A reply to the query wire[0..n): its id, RD and question, rcode; with
 * loopback 1 (a localhost name's, RFC 6761 6.3) authoritative, and for
 * class IN an A query gets 127.0.0.1 and an AAAA query ::1 (any other
 * type: no records, NOERROR: the name exists). */
static int make_reply(const uint8_t *wire, size_t n, int rcode, int loopback, uint8_t **out,
                      size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  ldns_pkt *p = NULL;
  if (n < 12 || ldns_wire2pkt(&p, wire, n) != LDNS_STATUS_OK) return -1;
  int rc = -1;
  ldns_pkt *r = ldns_pkt_new();
  ldns_rr_list *qs = ldns_pkt_question(p);
  if (r && qs && ldns_rr_list_rr_count(qs) == 1) {
    ldns_rr *q = ldns_rr_list_rr(qs, 0);
    ldns_rr *qrr = ldns_rr_clone(q);
    if (qrr) {
      ldns_pkt_set_id(r, ldns_pkt_id(p));
      ldns_pkt_set_qr(r, true);
      ldns_pkt_set_rd(r, ldns_pkt_rd(p));
      ldns_pkt_set_ra(r, true);
      ldns_pkt_set_opcode(r, ldns_pkt_get_opcode(p));
      ldns_pkt_set_rcode(r, (uint8_t)rcode);
      ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, qrr); /* r owns qrr now */
      int ok = 1;
      if (loopback) {
        ldns_pkt_set_aa(r, true);
        ldns_rr_type t = ldns_rr_get_type(q);
        if (ldns_rr_get_class(q) == LDNS_RR_CLASS_IN &&
            (t == LDNS_RR_TYPE_A || t == LDNS_RR_TYPE_AAAA)) {
          static const uint8_t v4[4] = {127, 0, 0, 1};
          static const uint8_t v6[16] = {[15] = 1};
          ldns_rr *a = ldns_rr_new();
          ldns_rdf *owner = ldns_rdf_clone(ldns_rr_owner(q));
          ldns_rdf *d = t == LDNS_RR_TYPE_A ? ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, 4, v4)
                                            : ldns_rdf_new_frm_data(LDNS_RDF_TYPE_AAAA, 16, v6);
          ok = a && owner && d;
          if (ok) {
            ldns_rr_set_owner(a, owner); /* a owns owner and d from here */
            ldns_rr_set_type(a, t);
            ldns_rr_set_class(a, LDNS_RR_CLASS_IN);
            ldns_rr_set_ttl(a, DNSMSG_LOOPBACK_TTL);
            if (!(ok = ldns_rr_push_rdf(a, d))) {
              ldns_rdf_deep_free(d);
              ldns_rr_free(a);
            } else if (!(ok = ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, a))) {
              ldns_rr_free(a);
            }
          } else {
            if (a) ldns_rr_free(a);
            if (owner) ldns_rdf_deep_free(owner);
            if (d) ldns_rdf_deep_free(d);
          }
        }
      }
      uint8_t *buf = NULL;
      size_t len = 0;
      if (ok && ldns_pkt2wire(&buf, r, &len) == LDNS_STATUS_OK) {
        *out = buf;
        *outlen = len;
        rc = 0;
      }
    }
  }
  if (r) ldns_pkt_free(r);
  ldns_pkt_free(p);
  return rc;
}

int dnsmsg_error_reply(const uint8_t *wire, size_t n, int rcode, uint8_t **out, size_t *outlen) {
  return make_reply(wire, n, rcode, 0, out, outlen);
}

int dnsmsg_is_localhost(const char *name) {
  size_t n = strlen(name);
  static const char suf[] = ".localhost";
  return !strcmp(name, "localhost") ||
         (n > sizeof suf - 1 && !strcmp(name + n - (sizeof suf - 1), suf));
}

int dnsmsg_loopback_reply(const uint8_t *wire, size_t n, uint8_t **out, size_t *outlen) {
  return make_reply(wire, n, 0, 1, out, outlen);
}
