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

MAG_INLINE float mag_vm_min(float x, float hi) { return x > hi ? hi : x; } /* NaN stays NaN */
MAG_INLINE float mag_vm_max(float x, float lo) { return x < lo ? lo : x; }

/* expm1(r) for |r| <= ln2 / 2 */
MAG_INLINE float mag_vm_expm1_poly(float r) {
    float q = 0.49999997f + r * (0.166665435f + r * (0.0416672006f + r * (0.00836651586f + r * 0.00138825225f)));
    return r + r * r * q;
}

/* y * 2^n with n in [-151, 129] given as n + SHIFT's bits (t): two steps, so that neither
 * factor over- or underflows and a subnormal result is rounded once */
MAG_INLINE float mag_vm_scale(float y, float t) {
    uint32_t n = mag_fbits(t) - mag_fbits(MAG_VM_SHIFT) + 256u; /* n + 256 > 0 */
    uint32_t h = n >> 1;                                         /* floor(n / 2) + 128 */
    return y * mag_bitsf((h - 1u) << 23) * mag_bitsf((n - h - 1u) << 23);
}

/* exp(hi + lo) where lo is a small correction to hi (lo = 0: plain exp) */
MAG_INLINE float mag_exp_hl_f32(float hi, float lo) {
    hi = mag_vm_max(mag_vm_min(hi, 89.0f), -104.0f); /* beyond: inf and 0 (through the scaling) */
    float t = (hi + lo) * MAG_VM_LOG2E + MAG_VM_SHIFT, n = t - MAG_VM_SHIFT;
    float r = (hi - n * MAG_VM_LN2_HI) - n * MAG_VM_LN2_LO + lo;
    return mag_vm_scale(1.0f + mag_vm_expm1_poly(r), t);
}
MAG_INLINE float mag_exp_f32(float x) { return mag_exp_hl_f32(x, 0.0f); }

MAG_INLINE float mag_exp2_f32(float x) {
    x = mag_vm_max(mag_vm_min(x, 129.0f), -151.0f);
    float t = x + MAG_VM_SHIFT, n = t - MAG_VM_SHIFT;
    return mag_vm_scale(1.0f + mag_vm_expm1_poly((x - n) * 0.693147180559945309f), t);
}

/* 2^n (s - 1) + (2^n - 1) has no cancellation for small n; from 2^25 on, exp(x) - 1 rounds fine */
MAG_INLINE float mag_expm1_f32(float x) {
    float xc = mag_vm_max(mag_vm_min(x, 89.0f), -30.0f); /* expm1(-30) is -1 in float */
    float t = xc * MAG_VM_LOG2E + MAG_VM_SHIFT, n = t - MAG_VM_SHIFT;
    float p = mag_vm_expm1_poly((xc - n * MAG_VM_LN2_HI) - n * MAG_VM_LN2_LO);
    float s = mag_bitsf((mag_fbits(t) - mag_fbits(MAG_VM_SHIFT) + 127u) << 23); /* 2^n, used for n <= 24 */
    float y = n > 24.0f ? mag_vm_scale(1.0f + p, t) - 1.0f : s * p + (s - 1.0f);
    return x == 0.0f ? x : y; /* keeps -0.0 */
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
    float r = z * (0.666667759f + z * (0.399775684f + z * 0.298710734f));
    return f - s * (f - r);
}
/* C's special values of log: x < 0 -> NaN, +-0 -> -inf, +inf and NaN -> themselves */
MAG_INLINE float mag_vm_log_special(float x, float y) {
    y = x < 0.0f ? NAN : y;
    y = x == 0.0f ? -INFINITY : y;
    return x < INFINITY ? y : x;
}
MAG_INLINE float mag_log_f32(float x) {
    float e, l = mag_vm_log_parts(x, &e);
    return mag_vm_log_special(x, e * MAG_VM_LN2_HI + (l + e * MAG_VM_LN2_LO));
}
MAG_INLINE float mag_log2_f32(float x) {
    float e, l = mag_vm_log_parts(x, &e);
    return mag_vm_log_special(x, e + l * 1.44269504088896341f);
}
MAG_INLINE float mag_log10_f32(float x) {
    float e, l = mag_vm_log_parts(x, &e);
    /* log10(2) = 0.30102539 (11 bits, e * it exact) + 4.6050389e-6 */
    return mag_vm_log_special(x, e * 0.30102539062f + (l * 0.434294481903251828f + e * 4.60503898119521373e-6f));
}
/* log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the quotient restores what the rounding lost */
MAG_INLINE float mag_log1p_f32(float x) {
    float u = 1.0f + x, e, l = mag_vm_log_parts(u, &e);
    float c = (x - (u - 1.0f)) / u;
    float y = mag_vm_log_special(u, e * MAG_VM_LN2_HI + (l + (e * MAG_VM_LN2_LO + c)));
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
    return x * (1.12837911f +
                z * (-0.376125515f + z * (0.112824552f + z * (-0.0267914627f + z * (0.00503218127f + z * -0.000620325445f)))));
}
/*
 * erfc(z) for z >= 0.5: t exp(-z^2 + P(t)), t = 2 / (2 + z). The caller passes -z^2 as an exact
 * high part plus a small low part (mag_vm_neg_sq), so that no rounding of z^2 (~100 at the far
 * end) reaches the exponent. From z = 10.06 on the result underflows to 0.
 */
MAG_INLINE float mag_vm_erfc_big(float z, float sq_hi, float sq_lo) {
    float t = 2.0f / (2.0f + mag_vm_min(z, 10.5f)), u = t - 0.48291874f;
    float p = -0.694716156f +
              u * (1.3384918f +
                   u * (0.208307549f +
                        u * (-0.363552302f +
                             u * (-0.181529f +
                                  u * (0.26860404f +
                                       u * (0.147838071f + u * (-0.281749904f + u * (-0.0908452943f + u * 0.256200075f))))))));
    return t * mag_exp_hl_f32(sq_hi, sq_lo + p);
}
/* -x^2 = *lo + the returned high part, which is exact: x's top 12 bits squared */
MAG_INLINE float mag_vm_neg_sq(float x, float *lo) {
    float xh = mag_bitsf(mag_fbits(x) & 0xfffff000u);
    *lo = -((x - xh) * (x + xh));
    return -(xh * xh);
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
