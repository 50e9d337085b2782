/*
 * Fused scaled dot-product attention (semantics and work plan: core/ops_attention.c), in the
 * flash-attention manner: a work item holds up to ATT_R query rows (heads of one GQA group times
 * consecutive queries) and streams the keys in blocks of ATT_BK, keeping per row a running max m,
 * a running sum l and an unnormalised output o; a block whose max exceeds m rescales l and o by
 * exp(m_old - m_new). The score matrix never exists beyond one block.
 *
 * Everything computes in float32: q, k and v blocks are converted on the fly (16-bit K/V are read
 * in place, never copied whole). q is pre-multiplied by scale * log2(e) so that softmax uses exp2.
 * Scores are kept key-major, s[j][r], so the softmax steps run down the rows as vectors.
 * Two ways to get the scores:
 *  - wide (more than ATT_NARROW rows): q transposed once per item, qt[e][r]; each key element is
 *    broadcast against a vector of rows (no horizontal sums);
 *  - narrow (decode: a few rows): dot products along E, ATT_JT keys at a time.
 * The weighted sum o[r][:] += p[j][r] * v[j][:] runs in register tiles of rows x ATT_EC columns.
 * Split-K (phase 0 with a scratch input) leaves (m, l, o) per split; phase 1 merges them.
 */
#include "common.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define ATT_VL 16 /* float lanes of a vector register */
#define ATT_PV_ROWS 4
#define ATT_JT 4
#elif defined(__AVX__)
#define ATT_VL 8
#define ATT_PV_ROWS 2
#define ATT_JT 2
#else
#define ATT_VL 4
#define ATT_PV_ROWS 2
#define ATT_JT 2
#endif
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define ATT_FMA(a, b, c) fmaf(a, b, c)
#else
#define ATT_FMA(a, b, c) ((a) * (b) + (c))
#endif
#define ATT_INLINE static inline __attribute__((always_inline))

#define ATT_R 32            /* rows per work item: ATT_ROWS of the front end */
#define ATT_BK 64           /* keys per block */
#define ATT_EC (4 * ATT_VL) /* output columns per weighted-sum tile */
#define ATT_NARROW 4        /* items with at most this many rows take the dot-product path */

/* Row conversions: dst[i] = src[i * stride] * mul in float32, and back with rounding. */
typedef void (*att_ld_fn)(float *dst, const uint8_t *src, int64_t n, int64_t stride, float mul);
typedef void (*att_st_fn)(uint8_t *dst, int64_t stride, const float *src, int64_t n, float mul);

#define ATT_IO(ID, ST, CT)                                                                                             \
    static void att_ld_##ID(float *d, const uint8_t *src, int64_t n, int64_t stride, float mul) {                      \
        const ST *x = (const ST *)src;                                                                                 \
        if (stride == 1)                                                                                               \
            for (int64_t i = 0; i < n; ++i) d[i] = MAG_LD_##ID(x[i]) * mul;                                            \
        else                                                                                                           \
            for (int64_t i = 0; i < n; ++i) d[i] = MAG_LD_##ID(x[i * stride]) * mul;                                   \
    }                                                                                                                  \
    static void att_st_##ID(uint8_t *dst, int64_t stride, const float *s, int64_t n, float mul) {                      \
        ST *y = (ST *)dst;                                                                                             \
        for (int64_t i = 0; i < n; ++i) y[i * stride] = MAG_ST_##ID(s[i] * mul);                                       \
    }
#define ATT_DTYPES(X) X(FLOAT32, float, float) X(FLOAT16, uint16_t, float) X(BFLOAT16, uint16_t, float)
ATT_DTYPES(ATT_IO)
#undef ATT_IO

typedef struct att_plan {
    const mag_tensor_t *t[4]; /* q, k, v, out as (batch..., H, L, E) */
    int64_t nb, hq, hkv, g, lq, lk, e, ev, ep, evp;
    int64_t ng, ni, nhb, nib, rows, items, nsplit, chunk;
    int64_t offset;
    bool causal;
    float qmul;
    att_ld_fn ld;
    att_st_fn st;
} att_plan_t;

/* Per-thread scratch; the zero padding of q, k and v (columns e..ep, ev..evp) is set once. */
typedef struct att_ws {
    float *q;       /* narrow: ATT_R rows of ep; wide: e rows of ATT_R (transposed) */
    float *k, *v;   /* ATT_BK rows of ep / evp */
    float *s;       /* ATT_BK rows of ATT_R: scores, then probabilities */
    float *o;       /* ATT_R rows of evp */
    size_t bytes;
    float m[ATT_R], l[ATT_R], mu[ATT_R], alpha[ATT_R];
    int64_t lim[ATT_R];       /* keys row r sees: 0..lim-1 */
    const uint8_t *qrow[ATT_R];
    uint8_t *orow[ATT_R];     /* NULL for padding rows */
    const uint8_t *kbase, *vbase;
} att_ws_t;

static int64_t att_round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static void att_plan_init(att_plan_t *p, const mag_kernel_args_t *a, att_ld_fn ld, att_st_fn st) {
    const mag_tensor_t *q = a->in[0], *k = a->in[1], *v = a->in[2];
    int64_t nb = q->rank - 3;
    *p = (att_plan_t){.t = {q, k, v, a->out}, .nb = nb, .ld = ld, .st = st};
    p->hq = q->shape[nb], p->hkv = k->shape[nb], p->g = p->hq / p->hkv;
    p->lq = q->shape[nb + 1], p->lk = k->shape[nb + 1], p->e = q->shape[nb + 2], p->ev = v->shape[nb + 2];
    p->ep = att_round_up(p->e, ATT_VL), p->evp = att_round_up(p->ev, ATT_EC);
    p->qmul = (float)(mag_scalar_as_double(a->attrs[0]) * 1.4426950408889634);
    p->causal = mag_scalar_as_int(a->attrs[1]) != 0, p->offset = mag_scalar_as_int(a->attrs[2]);
    p->ng = mag_scalar_as_int(a->attrs[3]), p->ni = mag_scalar_as_int(a->attrs[4]);
    p->nsplit = mag_scalar_as_int(a->attrs[5]);
    p->nhb = (p->g + p->ng - 1) / p->ng, p->nib = (p->lq + p->ni - 1) / p->ni, p->rows = p->ng * p->ni;
    int64_t n_batch = 1;
    for (int64_t d = 0; d < nb; ++d) n_batch *= q->shape[d];
    p->items = n_batch * p->hkv * p->nhb * p->nib;
    p->chunk = att_round_up((p->lk + p->nsplit - 1) / p->nsplit, ATT_BK);
}

static bool att_ws_init(att_ws_t *w, const att_plan_t *p) {
    size_t n = (size_t)(ATT_R * p->ep + ATT_BK * p->ep + ATT_BK * p->evp + ATT_BK * ATT_R + ATT_R * p->evp);
    w->bytes = n * sizeof(float);
    w->q = mag_alloc(w->bytes);
    if (!w->q) return false;
    memset(w->q, 0, w->bytes);
    w->k = w->q + ATT_R * p->ep, w->v = w->k + ATT_BK * p->ep, w->s = w->v + ATT_BK * p->evp;
    w->o = w->s + ATT_BK * ATT_R;
    return true;
}

/* The rows of `item` (pointers, key limits) and its key/value head. */
static void att_item_rows(const att_plan_t *p, int64_t item, att_ws_t *w) {
    int64_t ib = item % p->nib, rest = item / p->nib, hb = rest % p->nhb;
    rest /= p->nhb;
    int64_t h = rest % p->hkv, b = rest / p->hkv;
    const uint8_t *base[4];
    for (int i = 0; i < 4; ++i) {
        const mag_tensor_t *t = p->t[i];
        int64_t off = t->offset, bi = b;
        for (int64_t d = p->nb - 1; d >= 0; --d) {
            off += bi % t->shape[d] * t->strides[d];
            bi /= t->shape[d];
        }
        base[i] = t->storage->data + off * (int64_t)mag_dtype_info(t->dtype)->size;
    }
    int64_t es = (int64_t)mag_dtype_info(p->t[0]->dtype)->size, nb = p->nb;
    const int64_t *qs = p->t[0]->strides + nb, *os = p->t[3]->strides + nb;
    w->kbase = base[1] + h * p->t[1]->strides[nb] * es;
    w->vbase = base[2] + h * p->t[2]->strides[nb] * es;
    for (int64_t r = 0; r < ATT_R; ++r) {
        int64_t gi = r / p->ni, i = ib * p->ni + r % p->ni, head = hb * p->ng + gi;
        bool live = r < p->rows && head < p->g && i < p->lq;
        int64_t hq = h * p->g + head, lim = p->causal ? i + p->offset + 1 : p->lk;
        w->lim[r] = !live ? 0 : lim < 0 ? 0 : lim > p->lk ? p->lk : lim;
        w->qrow[r] = live ? base[0] + (hq * qs[0] + i * qs[1]) * es : NULL;
        w->orow[r] = live ? (uint8_t *)base[3] + (hq * os[0] + i * os[1]) * es : NULL;
    }
}

/* 2^x for x <= 0 (or NaN, which passes through); results below 2^-126 flush to zero. */
ATT_INLINE float att_exp2(float x) {
    x = x < -127.0f ? -127.0f : x;
    x = x > 127.0f ? 127.0f : x;
    float t = x + 12582912.0f; /* 1.5 * 2^23: x rounded to an integer sits in t's low mantissa bits */
    float f = x - (t - 12582912.0f), sc;
    uint32_t bits;
    memcpy(&bits, &t, 4);
    bits = (bits - 0x4B400000u + 127u) << 23; /* 2^round(x) */
    memcpy(&sc, &bits, 4);
    /* 2^f on [-0.5, 0.5]: Taylor series of exp(f ln 2) to degree 7, relative error < 1e-8 */
    float y = 1.5252734e-05f;
    y = ATT_FMA(y, f, 1.5403530e-04f);
    y = ATT_FMA(y, f, 1.3333558e-03f);
    y = ATT_FMA(y, f, 9.6181291e-03f);
    y = ATT_FMA(y, f, 5.5504109e-02f);
    y = ATT_FMA(y, f, 2.4022651e-01f);
    y = ATT_FMA(y, f, 6.9314718e-01f);
    y = ATT_FMA(y, f, 1.0f);
    return y * sc;
}

ATT_INLINE float att_hsum(const float *v) {
#if defined(__AVX512F__)
    return _mm512_reduce_add_ps(_mm512_loadu_ps(v));
#else
    float t[ATT_VL];
    memcpy(t, v, sizeof(t));
    for (int w = ATT_VL / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) t[l] += t[l + w];
    return t[0];
#endif
}

/* Wide scores: s[j][0:ATT_R] = sum_x k[j][x] * qt[x][0:ATT_R], for the keys of a block. */
static void att_qk_wide(float *s, const float *k, int64_t ldk, const float *qt, int64_t e, int64_t nj) {
    for (int64_t j = 0; j < nj; j += ATT_JT) {
        float acc[ATT_JT][ATT_R] = {{0}};
        for (int64_t x = 0; x < e; ++x)
            for (int t = 0; t < ATT_JT; ++t) {
                float kx = k[(j + t) * ldk + x];
                for (int r = 0; r < ATT_R; ++r) acc[t][r] = ATT_FMA(kx, qt[x * ATT_R + r], acc[t][r]);
            }
        memcpy(s + j * ATT_R, acc, sizeof(acc));
    }
}

/* Narrow scores: s[j][r] = q[r] . k[j] for n rows (a constant after inlining). */
ATT_INLINE void att_qk_narrow(float *s, const float *k, const float *q, int64_t ep, int64_t nj, const int n) {
    for (int64_t j = 0; j < nj; j += ATT_JT) {
        float acc[ATT_JT][ATT_NARROW][ATT_VL] = {{{0}}};
        for (int64_t x = 0; x < ep; x += ATT_VL)
            for (int t = 0; t < ATT_JT; ++t)
                for (int r = 0; r < n; ++r)
                    for (int l = 0; l < ATT_VL; ++l)
                        acc[t][r][l] = ATT_FMA(q[r * ep + x + l], k[(j + t) * ep + x + l], acc[t][r][l]);
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < n; ++r) s[(j + t) * ATT_R + r] = att_hsum(acc[t][r]);
    }
}

/* o[r][:] += sum_j p[j][r] * v[j][:] for rows 0..rp-1, in tiles of n rows (a constant after inlining). */
ATT_INLINE void att_pv(float *o, int64_t evp, const float *p, const float *v, int64_t nj, int64_t rp, const int n) {
    for (int64_t r0 = 0; r0 < rp; r0 += n)
        for (int64_t c = 0; c < evp; c += ATT_EC) {
            float acc[ATT_PV_ROWS][ATT_EC];
            for (int r = 0; r < n; ++r) memcpy(acc[r], o + (r0 + r) * evp + c, sizeof(acc[r]));
            for (int64_t j = 0; j < nj; ++j)
                for (int r = 0; r < n; ++r) {
                    float pj = p[j * ATT_R + r0 + r];
                    for (int l = 0; l < ATT_EC; ++l) acc[r][l] = ATT_FMA(pj, v[j * evp + c + l], acc[r][l]);
                }
            for (int r = 0; r < n; ++r) memcpy(o + (r0 + r) * evp + c, acc[r], sizeof(acc[r]));
        }
}

static void att_scores(const att_plan_t *p, att_ws_t *w, int64_t nj) {
    switch (p->rows) {
    case 1: att_qk_narrow(w->s, w->k, w->q, p->ep, nj, 1); break;
    case 2: att_qk_narrow(w->s, w->k, w->q, p->ep, nj, 2); break;
    case 3: att_qk_narrow(w->s, w->k, w->q, p->ep, nj, 3); break;
    case 4: att_qk_narrow(w->s, w->k, w->q, p->ep, nj, 4); break;
    default: att_qk_wide(w->s, w->k, p->ep, w->q, p->e, nj); break;
    }
}

static void att_weighted_sum(const att_plan_t *p, att_ws_t *w, int64_t nj, int64_t rp) {
    switch (rp < ATT_PV_ROWS ? rp : ATT_PV_ROWS) {
    case 1: att_pv(w->o, p->evp, w->s, w->v, nj, rp, 1); break;
#if ATT_PV_ROWS > 2
    case 2: att_pv(w->o, p->evp, w->s, w->v, nj, rp, 2); break;
    case 3: att_pv(w->o, p->evp, w->s, w->v, nj, rp, 3); break;
#endif
    default: att_pv(w->o, p->evp, w->s, w->v, nj, rp, ATT_PV_ROWS); break;
    }
}

/* Online softmax over one block: mask, new maxima, probabilities in s, rescale l and o. */
static void att_softmax_block(const att_plan_t *p, att_ws_t *w, int64_t kb, int64_t nj, int64_t rp, int64_t minlim) {
    float *s = w->s, mb[ATT_R], sum[ATT_R] = {0};
    if (kb + nj > minlim) /* some row's limit falls inside the block */
        for (int64_t j = 0; j < nj; ++j)
            for (int64_t r = 0; r < rp; ++r) s[j * ATT_R + r] = kb + j >= w->lim[r] ? -INFINITY : s[j * ATT_R + r];
    memcpy(mb, w->m, sizeof(mb));
    for (int64_t j = 0; j < nj; ++j)
        for (int64_t r = 0; r < rp; ++r) mb[r] = s[j * ATT_R + r] > mb[r] ? s[j * ATT_R + r] : mb[r];
    for (int64_t r = 0; r < rp; ++r) {
        w->mu[r] = mb[r] == -INFINITY ? 0.0f : mb[r]; /* a row with nothing seen yet stays at zero */
        w->alpha[r] = att_exp2(w->m[r] - w->mu[r]);
        w->m[r] = mb[r];
    }
    for (int64_t j = 0; j < nj; ++j)
        for (int64_t r = 0; r < rp; ++r) {
            float e = att_exp2(s[j * ATT_R + r] - w->mu[r]);
            s[j * ATT_R + r] = e;
            sum[r] += e;
        }
    for (int64_t r = 0; r < rp; ++r) {
        w->l[r] = w->l[r] * w->alpha[r] + sum[r];
        if (w->alpha[r] != 1.0f)
            for (int64_t c = 0; c < p->ev; ++c) w->o[r * p->evp + c] *= w->alpha[r];
    }
}

static void att_load_q(const att_plan_t *p, att_ws_t *w) {
    const int64_t stride = p->t[0]->strides[p->nb + 2];
    for (int64_t r = 0; r < p->rows; ++r) {
        bool narrow = p->rows <= ATT_NARROW;
        float *row = narrow ? w->q + r * p->ep : w->k; /* wide: a staging row, transposed below */
        if (w->qrow[r]) p->ld(row, w->qrow[r], p->e, stride, p->qmul);
        else memset(row, 0, (size_t)p->e * sizeof(float));
        if (!narrow)
            for (int64_t x = 0; x < p->e; ++x) w->q[x * ATT_R + r] = row[x];
    }
}

/* One (item, split): the rows' softmax-weighted sum over keys [split * chunk, ...). */
static void att_unit(const att_plan_t *p, att_ws_t *w, int64_t item, int64_t split, float *partial) {
    att_item_rows(p, item, w);
    int64_t rp = p->rows <= ATT_NARROW ? p->rows : att_round_up(p->rows, ATT_PV_ROWS), maxlim = 0, minlim = p->lk;
    for (int64_t r = 0; r < rp; ++r) {
        maxlim = w->lim[r] > maxlim ? w->lim[r] : maxlim;
        minlim = w->lim[r] < minlim ? w->lim[r] : minlim;
        w->m[r] = -INFINITY, w->l[r] = 0;
        memset(w->o + r * p->evp, 0, (size_t)p->evp * sizeof(float));
    }
    int64_t k0 = split * p->chunk, k1 = k0 + p->chunk < maxlim ? k0 + p->chunk : maxlim;
    if (k0 < k1) att_load_q(p, w);
    const int64_t *ks = p->t[1]->strides + p->nb, *vs = p->t[2]->strides + p->nb;
    int64_t es = (int64_t)mag_dtype_info(p->t[0]->dtype)->size;
    for (int64_t kb = k0; kb < k1; kb += ATT_BK) {
        int64_t nj = k1 - kb < ATT_BK ? k1 - kb : ATT_BK;
        for (int64_t j = 0; j < nj; ++j) p->ld(w->k + j * p->ep, w->kbase + (kb + j) * ks[1] * es, p->e, ks[2], 1.0f);
        att_scores(p, w, nj);
        att_softmax_block(p, w, kb, nj, rp, minlim);
        for (int64_t j = 0; j < nj; ++j) p->ld(w->v + j * p->evp, w->vbase + (kb + j) * vs[1] * es, p->ev, vs[2], 1.0f);
        att_weighted_sum(p, w, nj, rp);
    }
    const int64_t ostride = p->t[3]->strides[p->nb + 2];
    for (int64_t r = 0; r < p->rows; ++r) {
        if (partial) {
            float *row = partial + ((item * p->nsplit + split) * p->rows + r) * (p->ev + 2);
            row[0] = w->m[r], row[1] = w->l[r];
            memcpy(row + 2, w->o + r * p->evp, (size_t)p->ev * sizeof(float));
        } else if (w->orow[r]) { /* a row that saw no key (l == 0) gives zeros; NaN stays NaN */
            p->st(w->orow[r], ostride, w->o + r * p->evp, p->ev, w->l[r] == 0 ? 0.0f : 1.0f / w->l[r]);
        }
    }
}

/* Merge the splits' partials of one item: rescale each to the common max, add, normalise. */
static void att_combine(const att_plan_t *p, att_ws_t *w, int64_t item, const float *partial) {
    att_item_rows(p, item, w);
    const int64_t ostride = p->t[3]->strides[p->nb + 2], width = p->ev + 2;
    for (int64_t r = 0; r < p->rows; ++r) {
        if (!w->orow[r]) continue;
        const float *row = partial + (item * p->nsplit * p->rows + r) * width, *part;
        float m = -INFINITY, l = 0, *o = w->o;
        for (int64_t sp = 0; sp < p->nsplit; ++sp) m = row[sp * p->rows * width] > m ? row[sp * p->rows * width] : m;
        float mu = m == -INFINITY ? 0.0f : m;
        memset(o, 0, (size_t)p->ev * sizeof(float));
        for (int64_t sp = 0; sp < p->nsplit; ++sp) {
            part = row + sp * p->rows * width;
            float f = att_exp2(part[0] - mu);
            l += part[1] * f;
            for (int64_t c = 0; c < p->ev; ++c) o[c] = ATT_FMA(part[2 + c], f, o[c]);
        }
        p->st(w->orow[r], ostride, o, p->ev, l == 0 ? 0.0f : 1.0f / l);
    }
}

static void att_run(const mag_kernel_args_t *a, int64_t ti, int64_t nt, att_ld_fn ld, att_st_fn st) {
    att_plan_t p;
    att_plan_init(&p, a, ld, st);
    att_ws_t w;
    if (!att_ws_init(&w, &p)) {
        atomic_store(a->status, MAG_ERR_MEMORY);
        return;
    }
    float *partial = a->n_in > 3 ? (float *)a->in[3]->storage->data + a->in[3]->offset : NULL;
    if (a->n_in > 3 && mag_scalar_as_int(a->attrs[6]) == 1) {
        for (int64_t item = ti; item < p.items; item += nt) att_combine(&p, &w, item, partial);
    } else { /* units interleave over threads: causal items late in the sequence cost more */
        for (int64_t u = ti; u < p.items * p.nsplit; u += nt) att_unit(&p, &w, u / p.nsplit, u % p.nsplit, partial);
    }
    mag_free(w.q, w.bytes);
}

#define ATT_KERNEL(ID, ST, CT)                                                                                         \
    static void k_sdpa_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                      \
        att_run(a, ti, nt, att_ld_##ID, att_st_##ID);                                                                  \
    }
ATT_DTYPES(ATT_KERNEL)
#undef ATT_KERNEL

#define ATT_REG(ID, ST, CT) t[MAG_OP_SDPA][MAG_DTYPE_##ID] = k_sdpa_##ID;
static void register_attention(mag_kernel_table_t t) { ATT_DTYPES(ATT_REG) }
#undef ATT_REG
#undef ATT_DTYPES
