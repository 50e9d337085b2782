/*
 * float32 math for the vectoriser: exp, exp2, expm1, log, log2, log10, log1p, tanh, erf, erfc
 * and the activations built on them. Every function is straight-line code: range reduction,
 * a polynomial, bit tricks through unsigned integers, and selects instead of branches, so
 * that a loop calling it compiles to SIMD code at each variant's ISA level (the variants are
 * built with -fno-trapping-math, which lets the compiler evaluate both sides of a select).
 * Contiguous, strided and tail elements all run the same code, so results never depend on
 * the layout or the thread split. Accuracy: within about 2 ulp of the correctly rounded
 * result over all float32 inputs (erfc and gelu's far tail about 5), with C's special values.
 *
 * The polynomial coefficients are minimax fits computed for these ranges (Lawson's
 * iteration on Chebyshev nodes, 40-digit arithmetic, rounded to float32).
 */
#ifndef MAG_CPU_KERNELS_VMATH_H
#define MAG_CPU_KERNELS_VMATH_H

#include "dtype_ops.h"

#define MAG_VM_LOG2E 1.44269504088896341f
#define MAG_VM_LN2_HI 0.693145751953125f /* 16 significant bits: n * LN2_HI is exact for |n| < 256 */
#define MAG_VM_LN2_LO 1.42860682030941723212e-6f
#define MAG_VM_SHIFT 0x1.8p23f /* x + SHIFT rounds x to an integer held in the low mantissa bits */

/* a * b + c, fused (one rounding) where the ISA has FMA: the variants may differ in the last bit */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define MAG_VM_HAS_FMA 1
#else
#define MAG_VM_HAS_FMA 0
#endif
MAG_INLINE float mag_vm_fma(float a, float b, float c) {
#if MAG_VM_HAS_FMA
    return fmaf(a, b, c);
#else
    return a * b + c;
#endif
}
#define MAG_VM_FMA mag_vm_fma

MAG_INLINE float mag_vm_min(float x, float hi) { return x > hi ? hi : x; } /* NaN stays NaN */

/* expm1(r) for |r| <= ln2 / 2 */
MAG_INLINE float mag_vm_expm1_poly(float r) {
    float q = MAG_VM_FMA(r, MAG_VM_FMA(r, MAG_VM_FMA(r, MAG_VM_FMA(r, 0.00138825225f, 0.00836651586f), 0.0416672006f),
                                       0.166665435f),
                         0.49999997f);
    return MAG_VM_FMA(r * r, q, r);
}

/* y * 2^n with n in [-151, 129] given as n + SHIFT's bits (t): two steps, so that neither
 * factor over- or underflows and a subnormal result is rounded once */
MAG_INLINE float mag_vm_scale(float y, float t) {
    uint32_t n = mag_fbits(t) - mag_fbits(MAG_VM_SHIFT) + 256u; /* n + 256 > 0 */
    uint32_t h = n >> 1;                                         /* floor(n / 2) + 128 */
    return y * mag_bitsf((h - 1u) << 23) * mag_bitsf((n - h - 1u) << 23);
}

/* r = x - n ln2 in two steps (Cody and Waite), exact in the first */
MAG_INLINE float mag_vm_reduce(float x, float n) {
    return MAG_VM_FMA(n, -MAG_VM_LN2_LO, MAG_VM_FMA(n, -MAG_VM_LN2_HI, x));
}

/*
 * exp(hi + lo) where lo is a small correction to hi (lo = -0.0, which adds nothing: plain exp),
 * for hi + lo in [-150 ln 2, 88.8]: there the scaling itself over- and underflows to inf and 0.
 */
MAG_INLINE float mag_vm_exp_in_range(float hi, float lo) {
    float t = MAG_VM_FMA(hi + lo, MAG_VM_LOG2E, MAG_VM_SHIFT), n = t - MAG_VM_SHIFT;
    return mag_vm_scale(1.0f + mag_vm_expm1_poly(mag_vm_reduce(hi, n) + lo), t);
}
/* beyond that range, where the reduction would be wrong, selects give inf and 0 (NaN falls through) */
MAG_INLINE float mag_exp_hl_f32(float hi, float lo) {
    float y = mag_vm_exp_in_range(hi, lo);
    y = hi > 88.8f ? INFINITY : y;
    return hi < -104.0f ? 0.0f : y;
}
MAG_INLINE float mag_exp_f32(float x) { return mag_exp_hl_f32(x, -0.0f); }

MAG_INLINE float mag_exp2_f32(float x) {
    float t = x + MAG_VM_SHIFT, n = t - MAG_VM_SHIFT;
    float y = mag_vm_scale(1.0f + mag_vm_expm1_poly((x - n) * 0.693147180559945309f), t);
    y = x > 129.0f ? INFINITY : y;
    return x < -151.0f ? 0.0f : y;
}

/* 2^n (s - 1) + (2^n - 1) has no cancellation for small n; from 2^25 on, exp(x) - 1 rounds fine */
MAG_INLINE float mag_expm1_f32(float x) {
    float t = MAG_VM_FMA(x, MAG_VM_LOG2E, MAG_VM_SHIFT), n = t - MAG_VM_SHIFT;
    float p = mag_vm_expm1_poly(mag_vm_reduce(x, n));
    float s = mag_bitsf((mag_fbits(t) - mag_fbits(MAG_VM_SHIFT) + 127u) << 23); /* 2^n, used for n <= 24 */
    float y = n > 24.0f ? mag_vm_scale(1.0f + p, t) - 1.0f : MAG_VM_FMA(s, p, s - 1.0f);
    y = x > 88.8f ? INFINITY : y;
    y = x < -30.0f ? -1.0f : y; /* expm1(-30) is -1 in float */
    return x == 0.0f ? x : y;   /* keeps -0.0 */
}

/*
 * log(x) = e ln2 + log1p(f), x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)); *e gets e.
 * log1p(f) = 2 atanh(s) with s = f / (2 + f), written as f - s (f - R(s^2)) so that f enters
 * exactly. Subnormal x is scaled by 2^23 first. Only meaningful for finite x > 0.
 */
MAG_INLINE float mag_vm_log_parts(float x, float *e) {
    int sub = x < 0x1p-126f;
    uint32_t ix = mag_fbits(sub ? x * 0x1p23f : x) + (0x3f800000u - 0x3f3504f3u);
    *e = (float)(int32_t)(ix >> 23) - (sub ? 150.0f : 127.0f);
    float f = mag_bitsf((ix & 0x7fffffu) + 0x3f3504f3u) - 1.0f;
    float s = f / (2.0f + f), z = s * s;
    float r = z * MAG_VM_FMA(z, MAG_VM_FMA(z, 0.298710734f, 0.399775684f), 0.666667759f);
    return MAG_VM_FMA(-s, f - r, f);
}
/* C's special values of log: x < 0 -> NaN, +-0 -> -inf, +inf and NaN -> themselves */
MAG_INLINE float mag_vm_log_special(float x, float y) {
    y = x < 0.0f ? NAN : y;
    y = x == 0.0f ? -INFINITY : y;
    return x < INFINITY ? y : x;
}
MAG_INLINE float mag_log_f32(float x) {
    float e, l = mag_vm_log_parts(x, &e);
    return mag_vm_log_special(x, MAG_VM_FMA(e, MAG_VM_LN2_HI, MAG_VM_FMA(e, MAG_VM_LN2_LO, l)));
}
MAG_INLINE float mag_log2_f32(float x) {
    float e, l = mag_vm_log_parts(x, &e);
    return mag_vm_log_special(x, MAG_VM_FMA(l, 1.44269504088896341f, e));
}
MAG_INLINE float mag_log10_f32(float x) {
    float e, l = mag_vm_log_parts(x, &e);
    /* log10(2) = 0.30102539 (11 bits, e * it exact) + 4.6050389e-6 */
    return mag_vm_log_special(
        x, MAG_VM_FMA(e, 0.30102539062f, MAG_VM_FMA(l, 0.434294481903251828f, e * 4.60503898119521373e-6f)));
}
/* log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the quotient restores what the rounding lost */
MAG_INLINE float mag_log1p_f32(float x) {
    float u = 1.0f + x, e, l = mag_vm_log_parts(u, &e);
    float c = (x - (u - 1.0f)) / u;
    float y = mag_vm_log_special(u, MAG_VM_FMA(e, MAG_VM_LN2_HI, l + MAG_VM_FMA(e, MAG_VM_LN2_LO, c)));
    return x == 0.0f ? x : y;
}

/* tanh(x) = expm1(2x) / (expm1(2x) + 2) on |x|, sign restored; from |x| = 9.5 on it is 1 */
MAG_INLINE float mag_tanh_f32(float x) {
    float m = mag_expm1_f32(2.0f * mag_vm_min(fabsf(x), 9.5f));
    return copysignf(m / (m + 2.0f), x);
}

/* erf(x) = x P(x^2) for |x| < 0.875 */
MAG_INLINE float mag_vm_erf_small(float x) {
    float z = x * x;
    float p = MAG_VM_FMA(z, MAG_VM_FMA(z, -0.000620325445f, 0.00503218127f), -0.0267914627f);
    return x * MAG_VM_FMA(z, MAG_VM_FMA(z, MAG_VM_FMA(z, p, 0.112824552f), -0.376125515f), 1.12837911f);
}
/*
 * erfc(z) for z >= 0.5: t exp(-z^2 + P(t)), t = 2 / (2 + z). The caller passes -z^2 as an exact
 * high part plus a small low part (mag_vm_neg_sq), so that no rounding of z^2 (~100 at the far
 * end) reaches the exponent. From z = 10.06 on the result underflows to 0.
 */
MAG_INLINE float mag_vm_erfc_big(float z, float sq_hi, float sq_lo) {
    float t = 2.0f / (2.0f + mag_vm_min(z, 10.5f)), u = t - 0.48291874f;
    float p = MAG_VM_FMA(u, MAG_VM_FMA(u, MAG_VM_FMA(u, 0.256200075f, -0.0908452943f), -0.281749904f), 0.147838071f);
    p = MAG_VM_FMA(u, MAG_VM_FMA(u, MAG_VM_FMA(u, p, 0.26860404f), -0.181529f), -0.363552302f);
    p = MAG_VM_FMA(u, MAG_VM_FMA(u, MAG_VM_FMA(u, p, 0.208307549f), 1.3384918f), -0.694716156f);
    return t * mag_vm_exp_in_range(sq_hi, sq_lo + p); /* sq_hi >= -10.5^2 */
}
/* -x^2 = the returned high part + *lo exactly (FMA gives the product's rounding error; without
 * it, the high part is x's top 12 bits squared) */
MAG_INLINE float mag_vm_neg_sq(float x, float *lo) {
#if MAG_VM_HAS_FMA
    float hi = -(x * x);
    *lo = -MAG_VM_FMA(x, x, hi);
    return hi;
#else
    float xh = mag_bitsf(mag_fbits(x) & 0xfffff000u);
    *lo = -((x - xh) * (x + xh));
    return -(xh * xh);
#endif
}
MAG_INLINE float mag_erf_f32(float x) {
    float ax = fabsf(x), lo, hi = mag_vm_neg_sq(mag_vm_min(ax, 10.5f), &lo);
    return ax < 0.875f ? mag_vm_erf_small(x) : copysignf(1.0f - mag_vm_erfc_big(ax, hi, lo), x);
}
/* erfc(-|x|) = 2 - erfc(|x|) */
MAG_INLINE float mag_vm_erfc_with(float x, float ax, float big) {
    return ax < 0.5f ? 1.0f - mag_vm_erf_small(x) : x < 0.0f ? 2.0f - big : big;
}
MAG_INLINE float mag_erfc_f32(float x) {
    float ax = fabsf(x), lo, hi = mag_vm_neg_sq(mag_vm_min(ax, 10.5f), &lo);
    return mag_vm_erfc_with(x, ax, mag_vm_erfc_big(ax, hi, lo));
}

/* sigmoid from e = exp(-|x|), which cannot overflow: 1 / (1 + e) for x >= 0, e / (1 + e) below */
MAG_INLINE float mag_sigmoid_f32(float x) {
    float e = mag_exp_f32(-fabsf(x));
    return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}
MAG_INLINE float mag_silu_f32(float x) { return x * mag_sigmoid_f32(x); }
/*
 * x Phi(x) = x/2 erfc(-x / sqrt 2) (1 + erf(x / sqrt 2) would cancel for negative x), with
 * -(x / sqrt 2)^2 = -x^2 / 2 taken exactly from x rather than from the rounded quotient.
 */
MAG_INLINE float mag_gelu_f32(float x) {
    float z = x * -0.707106781186547524f, az = fabsf(z), lo, hi = mag_vm_neg_sq(mag_vm_min(fabsf(x), 14.8f), &lo);
    return x * 0.5f * mag_vm_erfc_with(z, az, mag_vm_erfc_big(az, hi * 0.5f, lo * 0.5f));
}
/* 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation for x < 0 */
MAG_INLINE float mag_gelu_approx_f32(float x) {
    float u = 0.797884560802865356f * (x + 0.044715f * x * x * x);
    return x * mag_sigmoid_f32(2.0f * u);
}

#endif
