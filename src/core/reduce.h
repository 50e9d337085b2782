/*
 * The contract between the reduction front end (ops_reduce.c) and its kernels (cpu/kernels/reduce.c).
 *
 * A reduction kernel gets in0 = x and the attributes below. The dims of x whose bit is set in
 * MASK are reduced, the others are kept; the kernel writes one value per unit into the
 * contiguous out, where unit u = o * CHUNKS + c is chunk c of output o (outputs in row-major
 * order of the kept dims). Chunk c covers the flat range [n*c/C, n*(c+1)/C) of the n reduced
 * elements. With CHUNKS > 1 a unit's value is a partial state (sums in the accumulator dtype,
 * extremes in x's dtype) that a second pass over the (outputs, CHUNKS) partials combines; the
 * finishing step POST with its argument ARG runs only when CHUNKS == 1. CHUNKS depends on the
 * shapes alone, so results do not depend on the thread count.
 *
 * Extra inputs: in1 = the per-output center (accumulator dtype) for var/std (the mean) and
 * logsumexp (the max, infinities replaced by 0); for argmin/argmax with CHUNKS > 1, in1 receives
 * the partial extreme values (x's dtype) while out receives their indices.
 */
#ifndef MAG_REDUCE_H
#define MAG_REDUCE_H

#include "internal.h"

enum { MAG_RED_MASK, MAG_RED_CHUNKS, MAG_RED_POST, MAG_RED_ARG, MAG_RED_N_ATTRS };

typedef enum mag_red_post {
    MAG_RED_POST_NONE,
    MAG_RED_POST_DIV,      /* v / ARG (mean, var) */
    MAG_RED_POST_DIV_SQRT, /* sqrt(v / ARG) (std) */
    MAG_RED_POST_LOG_ADD,  /* log(v) + center (logsumexp) */
} mag_red_post_t;

/*
 * rms_norm and layer_norm (ops_norm.c, cpu/kernels/norm.c): in0 = x, then the weight and the bias
 * where given, contiguous, in x's dtype or (16-bit x) float32; out is contiguous like x. The last
 * DIMS dims of x are normalised, one row of their product at a time, each in the compute type
 * (float32 for 16-bit floats). ROUND_FIRST rounds the normalised value to x's dtype before the
 * weight and bias apply, as transformers' Llama-family RMSNorm does (torch's rounds once, at the end).
 */
enum { MAG_NORM_DIMS, MAG_NORM_EPS, MAG_NORM_HAS_WEIGHT, MAG_NORM_HAS_BIAS, MAG_NORM_ROUND_FIRST, MAG_NORM_N_ATTRS };

#endif
