/* The filter parser's shared pieces: the lexer state, token helpers and the
 * scanners for numbers, ranges and addresses (parse_lex.c), used by the
 * grammar (parse.c) and nfdump's extended primitives (parse_ext.c). */
#ifndef BA_QUERY_PARSE_INT_H
#define BA_QUERY_PARSE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "query/query_internal.h"

typedef enum { T_END, T_WORD, T_LP, T_RP, T_LB, T_RB, T_COMMA, T_CMP, T_AND, T_OR, T_NOT, T_BAD } ttype_t;

typedef struct tok {
  ttype_t t;
  size_t pos, len;
} tok_t;

typedef struct parser {
  const char *s;
  size_t n;
  size_t pos;   /* next unread byte */
  tok_t cur;    /* current lookahead */
  ba_query_t *q;
  int depth;
} parser_t;

#define QP_MAX_DEPTH 200

void qp_next(parser_t *p);
/* Re-lex from byte offset `at` (after a raw scan). */
void qp_reset(parser_t *p, size_t at);
/* Syntax error: fmt has one %s that gets `what` (wlen bytes); col is the byte column. */
int qp_fail_at(parser_t *p, size_t col, const char *fmt, const char *what, size_t wlen);
/* Syntax error naming the current token. */
int qp_fail(parser_t *p, const char *why);
int qp_word(const parser_t *p, const char *kw);
/* decimal | 0xHEX, optional k/m/g/t suffix (x1000); -1 if not a number. */
int qp_num_text(const char *s, size_t len, uint64_t *out);
int qp_expect_num(parser_t *p, uint64_t max, uint64_t *out);
/* Optional comparator; default '=='. */
int qp_cmp(parser_t *p, qcmp_t *c);
void qp_ranges_normalize(qrange_t *r, size_t *n);
int qp_ranges_push(qnode_t *nd, size_t *cap, uint32_t lo, uint32_t hi);
int qp_ranges_from_cmp(qnode_t *nd, size_t *cap, qcmp_t c, uint64_t v, uint32_t max);
/* "a" or "a-b" inside a list word. */
int qp_range_text(const char *s, size_t len, uint32_t max, uint32_t *lo, uint32_t *hi);
/* '[' item (','? item)* ']' where item = num | num-num. */
int qp_num_list(parser_t *p, qnode_t *nd, size_t *cap, uint32_t max);
int qp_scan_addr(parser_t *p, size_t at, qaddr_t *out, size_t *end, int allow_len, int *has_len);
int qp_addrs_push(qnode_t *nd, size_t *cap, const qaddr_t *a);
/* Address list: '[' (addr ','?)* ']' scanned raw. */
int qp_addr_list(parser_t *p, qnode_t *nd, size_t *cap);
int qp_mask_len(const char *s, size_t len);
void qp_prefix4(qaddr_t *a, uint32_t v4, unsigned len);
/* ISO time, or N<unit> 'ago'. */
int qp_time(parser_t *p, uint64_t *ns);
qnode_t *qp_mk(qnode_kind_t k, size_t col);

/* window.c: YYYY-MM-DD[Thh[:mm[:ss[.fff]]]][Z] (also '/' and '.'), UTC; "3h" -> ns. */
int qp_parse_iso(const char *s, size_t len, uint64_t *ns);
int qp_parse_rel(const char *s, size_t len, uint64_t *ns);

/* parse_ext.c: nfdump's primitives on fields the index does not hold (next
 * hop, router, masks, NAT/NSEL, MPLS, MAC, ...). `dir` is what qp_dir read
 * (has_dir: whether one was given). 1 = the current word starts none of them
 * (nothing consumed). */
int qp_ext_term(parser_t *p, qdir_t dir, int has_dir, int inout, size_t col, qnode_t **out);

#endif
