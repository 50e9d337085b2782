/*
 * Scalar helpers of the elementwise kernels, with PyTorch's semantics where C's differ
 * (rounding half to even, floor division and modulo, NaN-propagating maximum, integer
 * division by zero, shifts past the width). Float helpers exist for float and double from one
 * body; MAG_FLT(fn, x) picks the one matching x's type. Integer helpers compute in 32 or 64
 * bits: the rows truncate on store, which gives the same bits as wrapping arithmetic in the
 * narrow type.
 */
#ifndef MAG_CPU_KERNELS_EW_MATH_H
#define MAG_CPU_KERNELS_EW_MATH_H

#include "dtype_ops.h"
#include "vmath.h"

#include <tgmath.h>

#define MAG_FLT(fn, x) _Generic((x), float: fn##_f32, default: fn##_f64)

/*
 * BIG is the first power of two from which every value of T is an integer. Rounding goes
 * through (|x| + BIG) - BIG, which the FPU rounds half to even; it needs no libm call. The
 * helpers compute every candidate and then select, without branches around arithmetic: the
 * compiler may not speculate FP operations (-ftrapping-math), so branches would keep the loops
 * scalar. copysign keeps the sign of zero results (ceil(-0.5) == -0.0), as C does.
 */
#define MAG_EW_FLOAT_HELPERS(T, S, BIG)                                                                                \
    static inline T mag_rint_##S(T x) {                                                                                \
        T ax = fabs(x), r = copysign((ax + BIG) - BIG, x);                                                             \
        return ax < BIG ? r : x;                                                                                       \
    }                                                                                                                  \
    static inline T mag_floor_##S(T x) {                                                                               \
        T r = mag_rint_##S(x);                                                                                         \
        return copysign(r - (T)(r > x), x);                                                                            \
    }                                                                                                                  \
    static inline T mag_ceil_##S(T x) {                                                                                \
        T r = mag_rint_##S(x);                                                                                         \
        return copysign(r + (T)(r < x), x);                                                                            \
    }                                                                                                                  \
    static inline T mag_trunc_##S(T x) {                                                                               \
        T r = fabs(mag_rint_##S(x));                                                                                   \
        return copysign(r - (T)(r > fabs(x)), x);                                                                      \
    }                                                                                                                  \
    static inline T mag_hard_sigmoid_##S(T x) { /* relu6(x + 3) / 6, NaN stays NaN */                                  \
        T t = x + 3;                                                                                                   \
        t = t < 0 ? 0 : t;                                                                                             \
        return (t > 6 ? 6 : t) / 6;                                                                                    \
    }                                                                                                                  \
    /* IEEE 754-2019 maximum/minimum: NaN wins (either operand) and -0.0 < +0.0 */                                     \
    static inline T mag_maximum_##S(T x, T y) {                                                                        \
        return x != x ? x : y != y ? y : ((x < y) | ((x == y) & (signbit(x) != 0))) ? y : x;                           \
    }                                                                                                                  \
    static inline T mag_minimum_##S(T x, T y) {                                                                        \
        return x != x ? x : y != y ? y : ((y < x) | ((x == y) & (signbit(y) != 0))) ? y : x;                           \
    }                                                                                                                  \
    /* x itself when lo <= x <= hi (so -0.0 stays in [0, 1]); a NaN operand or bound gives NaN */                      \
    static inline T mag_clamp_##S(T x, T lo, T hi) {                                                                   \
        T t = lo != lo ? lo : x < lo ? lo : x;                                                                         \
        return hi != hi ? hi : t > hi ? hi : t;                                                                        \
    }                                                                                                                  \
    /* Python's %: the result takes the divisor's sign; x % 0 is NaN */                                                \
    static inline T mag_mod_##S(T x, T y) {                                                                            \
        T r = fmod(x, y);                                                                                              \
        return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;                                                             \
    }                                                                                                                  \
    /* Python's //: floor of the exact quotient, computed from fmod so it is correctly rounded; x // 0 is x / 0 */     \
    static inline T mag_floordiv_##S(T x, T y) {                                                                       \
        if (y == 0) return x / y;                                                                                      \
        T r = fmod(x, y), q = (x - r) / y;                                                                             \
        if (r != 0 && (r < 0) != (y < 0)) q -= 1;                                                                      \
        if (q == 0) return copysign((T)0, x / y);                                                                      \
        T f = floor(q);                                                                                                \
        return q - f > (T)0.5 ? f + 1 : f;                                                                             \
    }
MAG_EW_FLOAT_HELPERS(float, f32, 0x1p23f)
MAG_EW_FLOAT_HELPERS(double, f64, 0x1p52)

/* float32 transcendentals come from vmath.h; float64 keeps the C library's */
#define MAG_EW_LIBM_F64(fn)                                                                                            \
    static inline double mag_##fn##_f64(double x) { return fn(x); }
MAG_EW_LIBM_F64(exp)
MAG_EW_LIBM_F64(exp2)
MAG_EW_LIBM_F64(expm1)
MAG_EW_LIBM_F64(log)
MAG_EW_LIBM_F64(log2)
MAG_EW_LIBM_F64(log10)
MAG_EW_LIBM_F64(log1p)
MAG_EW_LIBM_F64(tanh)
MAG_EW_LIBM_F64(erf)
MAG_EW_LIBM_F64(erfc)
#undef MAG_EW_LIBM_F64
static inline double mag_sigmoid_f64(double x) { return 1 / (1 + exp(-x)); }
static inline double mag_silu_f64(double x) { return x / (1 + exp(-x)); }
/* x * Phi(x) through erfc: 1 + erf(x / sqrt 2) would cancel for negative x */
static inline double mag_gelu_f64(double x) { return x * 0.5 * erfc(x * -0.70710678118654752440); }
static inline double mag_gelu_approx_f64(double x) { /* tanh form: sqrt(2/pi) * (x + 0.044715 x^3) */
    return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

#define MAG_IMAX(x, y) ((x) < (y) ? (y) : (x))
#define MAG_IMIN(x, y) ((y) < (x) ? (y) : (x))

/*
 * Integer floor division and modulo, in the operands' width (a 64-bit divide is several times
 * slower than a 32-bit one); narrower types use the 32-bit helpers. A zero divisor sets *err
 * instead of trapping; MIN // -1 wraps to MIN and MIN % -1 is 0, where the hardware would trap.
 */
#define MAG_EW_SIGNED_DIV(T, U, S)                                                                                     \
    static inline T mag_floordiv_##S(T x, T y, int *err) {                                                             \
        if (y == 0) {                                                                                                  \
            *err = MAG_ERR_ZERO_DIVISION;                                                                              \
            return 0;                                                                                                  \
        }                                                                                                              \
        if (y == -1) return (T)(0 - (U)x);                                                                             \
        T q = x / y;                                                                                                   \
        return (x % y != 0 && (x < 0) != (y < 0)) ? q - 1 : q;                                                         \
    }                                                                                                                  \
    static inline T mag_mod_##S(T x, T y, int *err) {                                                                  \
        if (y == 0) {                                                                                                  \
            *err = MAG_ERR_ZERO_DIVISION;                                                                              \
            return 0;                                                                                                  \
        }                                                                                                              \
        if (y == -1) return 0;                                                                                         \
        T r = x % y;                                                                                                   \
        return (r != 0 && (r < 0) != (y < 0)) ? r + y : r;                                                             \
    }
#define MAG_EW_UNSIGNED_DIV(T, S)                                                                                      \
    static inline T mag_floordiv_##S(T x, T y, int *err) {                                                             \
        if (y == 0) {                                                                                                  \
            *err = MAG_ERR_ZERO_DIVISION;                                                                              \
            return 0;                                                                                                  \
        }                                                                                                              \
        return x / y;                                                                                                  \
    }                                                                                                                  \
    static inline T mag_mod_##S(T x, T y, int *err) {                                                                  \
        if (y == 0) {                                                                                                  \
            *err = MAG_ERR_ZERO_DIVISION;                                                                              \
            return 0;                                                                                                  \
        }                                                                                                              \
        return x % y;                                                                                                  \
    }
MAG_EW_SIGNED_DIV(int32_t, uint32_t, i32)
MAG_EW_SIGNED_DIV(int64_t, uint64_t, i64)
MAG_EW_UNSIGNED_DIV(uint32_t, u32)
MAG_EW_UNSIGNED_DIV(uint64_t, u64)
/* The helper of x's integer type: 8- and 16-bit values widen to the 32-bit one of their signedness. */
#define MAG_INT(fn, x)                                                                                                 \
    _Generic((x),                                                                                                      \
        int64_t: fn##_i64,                                                                                             \
        uint64_t: fn##_u64,                                                                                            \
        uint32_t: fn##_u32,                                                                                            \
        uint16_t: fn##_u32,                                                                                            \
        uint8_t: fn##_u32,                                                                                             \
        default: fn##_i32)

/* Integer powers wrap like repeated multiplication. */
static inline uint64_t mag_ipow_u64(uint64_t b, uint64_t e) {
    uint64_t r = 1;
    for (; e; e >>= 1, b *= b)
        if (e & 1) r *= b;
    return r;
}
/* A negative exponent gives the truncated value of 1 / b**|e|, as PyTorch does for tensor exponents. */
static inline int64_t mag_ipow_i64(int64_t b, int64_t e) {
    if (e >= 0) return (int64_t)mag_ipow_u64((uint64_t)b, (uint64_t)e);
    if (b == 1) return 1;
    if (b == -1) return (e & 1) ? -1 : 1;
    return 0;
}

/*
 * Shifts by a count outside [0, bits) are undefined in C; PyTorch gives 0 for left shifts and
 * the sign fill (0 or -1) for right shifts. `bits` is the width of the element type.
 */
static inline int64_t mag_shl_i64(int64_t x, int64_t s, int64_t bits) {
    return (s < 0 || s >= bits) ? 0 : (int64_t)((uint64_t)x << s);
}
static inline int64_t mag_shr_i64(int64_t x, int64_t s, int64_t bits) {
    return (s < 0 || s >= bits) ? (x < 0 ? -1 : 0) : x >> s;
}
static inline uint64_t mag_shl_u64(uint64_t x, uint64_t s, int64_t bits) {
    return s >= (uint64_t)bits ? 0 : x << s;
}
static inline uint64_t mag_shr_u64(uint64_t x, uint64_t s, int64_t bits) {
    return s >= (uint64_t)bits ? 0 : x >> s;
}

#endif
