/* The dtype table, PyTorch's promotion rules and the 16-bit float conversions. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const mag_dtype_info_t dtype_infos[MAG_DTYPE__COUNT] = {
#define X(id, name, ctype, size, flags, lo, hi) [MAG_DTYPE_##id] = {name, size, flags, lo, hi},
#include "dtypes.def"
#undef X
};

const mag_dtype_info_t *mag_dtype_info(mag_dtype_t dt) {
    return (unsigned)dt < MAG_DTYPE__COUNT ? &dtype_infos[dt] : NULL;
}

static int float_rank(mag_dtype_t dt) {
    switch (dt) {
    case MAG_DTYPE_FLOAT16:
    case MAG_DTYPE_BFLOAT16: return 1;
    case MAG_DTYPE_FLOAT32: return 2;
    default: return 3;
    }
}

mag_dtype_t mag_dtype_promote(mag_dtype_t a, mag_dtype_t b) {
    if (a == b) return a;
    uint32_t fa = dtype_infos[a].flags, fb = dtype_infos[b].flags;
    if ((fa & MAG_DTF_FLOAT) && (fb & MAG_DTF_FLOAT)) {
        int ra = float_rank(a), rb = float_rank(b);
        if (ra == 1 && rb == 1) return MAG_DTYPE_FLOAT32; /* float16 + bfloat16 */
        return ra > rb ? a : b;
    }
    if (fa & MAG_DTF_FLOAT) return a;
    if (fb & MAG_DTF_FLOAT) return b;
    if (fa & MAG_DTF_BOOL) return b;
    if (fb & MAG_DTF_BOOL) return a;
    size_t sa = dtype_infos[a].size, sb = dtype_infos[b].size;
    if ((fa & MAG_DTF_SIGNED_INT) == (fb & MAG_DTF_SIGNED_INT)) return sa >= sb ? a : b;
    /* signed + unsigned: the signed type holding both ranges (NumPy's rule where PyTorch refuses) */
    mag_dtype_t s = (fa & MAG_DTF_SIGNED_INT) ? a : b, u = (fa & MAG_DTF_SIGNED_INT) ? b : a;
    size_t ss = dtype_infos[s].size, su = dtype_infos[u].size;
    if (ss > su) return s;
    switch (su) {
    case 1: return MAG_DTYPE_INT16;
    case 2: return MAG_DTYPE_INT32;
    case 4: return MAG_DTYPE_INT64;
    default: return MAG_DTYPE_FLOAT64;
    }
}

uint16_t mag_f32_to_bf16(float x) {
    uint32_t u = mag_fbits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, keep sign */
    u += 0x7fffu + ((u >> 16) & 1u);                                         /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float mag_bf16_to_f32(uint16_t h) { return mag_bitsf((uint32_t)h << 16); }

uint16_t mag_f32_to_f16(float x) {
    uint32_t u = mag_fbits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (a < 0x38800000u) {                                   /* result is subnormal or zero */
        /* adding 0.5 makes the FPU round the mantissa at the f16 subnormal position (RNE) */
        float r = mag_bitsf(a) + 0.5f;
        return (uint16_t)(sign | (mag_fbits(r) - 0x3f000000u));
    }
    uint32_t odd = (a >> 13) & 1u;
    a += 0xc8000fffu + odd; /* rebias exponent (-112 << 23) and round to nearest even */
    return (uint16_t)(sign | (a >> 13));
}

float mag_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return mag_bitsf(sign | 0x7f800000u | (m << 13)); /* inf / NaN */
    if (e == 0) {                                                    /* subnormal: m * 2^-24 */
        float r = (float)m * 5.9604644775390625e-8f;
        return sign ? -r : r;
    }
    return mag_bitsf(sign | ((e + 112) << 23) | (m << 13));
}
