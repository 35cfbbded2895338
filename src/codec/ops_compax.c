/* COMPAX pair kernels: the group-wise loop of ops_groups.h with the COMPAX
 * coder (compax_impl.h) inlined, one kernel per operation. In a file of their
 * own: instantiated inside ops.c they made GCC inline less of the WAH kernels
 * there (WAH32 OR 25% slower on the real-data bench). */
#include "codec/ops_groups.h"
#include "codec/compax_impl.h"

#define OPCX_KERNEL(name, op)                                                              \
  static int name(const ba_bitmap_t *a, const ba_bitmap_t *b, uint64_t N, op_sink_t *s) { \
    return op_groups(op, a, b, N, s, cx_dec_next, cx_put, OPK_NONE);                      \
  }
OPCX_KERNEL(opcx_and, BA_OP_AND)
OPCX_KERNEL(opcx_or, BA_OP_OR)
OPCX_KERNEL(opcx_xor, BA_OP_XOR)
OPCX_KERNEL(opcx_andnot, BA_OP_ANDNOT)
OPCX_KERNEL(opcx_not, BA_OPX_NOT)
OPCX_KERNEL(opcx_copy, BA_OPX_COPY)

const op_fn ba_ops_compax_tab[6] = {opcx_and, opcx_or, opcx_xor, opcx_andnot, opcx_not, opcx_copy};
