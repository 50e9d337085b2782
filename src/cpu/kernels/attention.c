/*
 * Fused scaled dot-product attention (semantics and work plan: core/ops_attention.c), in the
 * flash-attention manner: a work item holds up to ATT_R query rows (heads of one GQA group times
 * consecutive queries) and streams the keys in blocks of ATT_BK, keeping per row a running max m,
 * a running sum l and an unnormalised output o; a block whose max exceeds m rescales l and o by
 * exp(m_old - m_new). The score matrix never exists beyond one block.
 *
 * Everything computes in float32. q is converted once per item, pre-multiplied by scale * log2(e)
 * so that softmax uses exp2. k and v rows of unit stride are read in place (16-bit ones converted
 * in registers) where the loops below take them; other rows are converted per block into small
 * buffers. Two ways to get the scores:
 *  - wide (more than ATT_NARROW rows): q transposed once per item, qt[e][r]; each key element is
 *    broadcast against a vector of rows (no horizontal sums); scores key-major, s[j][r];
 *  - narrow (decode: a few rows): dot products along E, ATT_JT keys at a time; scores row-major,
 *    s[r][j], so the softmax steps run along the keys as vectors.
 * On AMX machines the wide path of bfloat16 operands runs the GEMM's tile microkernel instead:
 * scores (att_qk_amx) with keys read in place as A rows against the item's q rows packed once as
 * a B panel, scaled afterwards; the weighted sum (att_pv_amx) with the probabilities rounded to
 * bfloat16 as A rows and each block of values packed as depth pairs, accumulating in o. Tiles
 * treat bfloat16 subnormals as zero.
 * The weighted sum o[r][:] += p[j][r] * v[j][:] runs in register tiles of rows x ATT_EC columns.
 * Split-K (phase 0 with a scratch input) leaves (m, l, o) per split; phase 1 merges them.
 */
#include "common.h"
#include "vmath.h"
#include "../gemm/kernel.h"
#if defined(__AMX_BF16__)
#include "../gemm/avx512.h"
#endif

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

#define ATT_R 32                /* rows per work item: ATT_ROWS of the front end */
#define ATT_BK 64               /* keys per block */
#define ATT_EC (4 * ATT_VL)     /* output columns per weighted-sum tile */
#define ATT_NARROW ATT_PV_ROWS  /* items with at most this many rows take the dot-product path */

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

/* How the score and weighted-sum loops read k and v rows. */
enum { ATT_F32, ATT_BF16, ATT_F16 };

/* A key or value operand: read in place (rows of unit stride and whole tiles) or converted per block. */
typedef struct att_kv {
    int64_t row, col, cols, pad; /* strides (elements), columns, columns of the buffer rows */
    bool direct;
    int kind; /* of the rows the loops read: the operand's dtype in place, else float32 */
} att_kv_t;

/* Rows a narrow loop asks for besides its own: row j along with the loop's row j (att_ask_row). */
typedef struct att_pf {
    const uint8_t *at;     /* row 0, NULL for none */
    int64_t row, bytes, n; /* stride and length of a row in bytes, rows */
} att_pf_t;

typedef struct att_plan {
    const mag_tensor_t *t[4]; /* q, k, v, out as (batch..., H, L, E) */
    int64_t nb, hq, hkv, g, lq, lk, e, ev, es;
    int64_t ng, ni, nhb, nib, rows, items, nsplit, chunk;
    int64_t offset;
    bool causal, narrow;
    bool amx;    /* wide scores as AMX tile products (bfloat16 keys of unit column stride, E a multiple of 32) */
    bool amx_pv; /* and the weighted sum (values likewise, Ev a multiple of 32) */
    const mag_gemm_kernel_t *tiles; /* amx: the GEMM's AMX kernel, whose microkernel both products run */
    float qmul;
    att_kv_t k, v;
    att_ld_fn ld;
    att_st_fn st;
} att_plan_t;

/* Per-thread scratch. */
typedef struct att_ws {
    float *q;       /* narrow: ATT_R rows of k.pad; wide: e rows of ATT_R (transposed) */
    float *k, *v;   /* ATT_BK converted rows of k.pad / v.pad columns (zero padded) */
    float *s;       /* scores, then probabilities: narrow s[r][j] (ATT_BK a row), wide s[j][r] (ATT_R) */
    float *o;       /* ATT_R rows of v.pad */
    uint16_t *qb;   /* amx: the q rows as a B panel: depth pairs x ATT_R rows */
    uint16_t *kb;   /* amx: a last, partial block of keys, zero padded to ATT_BK rows */
    uint16_t *pb;   /* amx_pv: the block's probabilities, ATT_R rows of ATT_BK keys */
    uint16_t *vb;   /* amx_pv: the block's values as 32-column panels of key pairs */
    size_t bytes;
    float m[ATT_R], l[ATT_R], mu[ATT_R], alpha[ATT_R];
    int64_t lim[ATT_R];       /* keys row r sees: 0..lim-1 */
    const uint8_t *qrow[ATT_R];
    uint8_t *orow[ATT_R];     /* NULL for padding rows */
    const uint8_t *kbase, *vbase;
    att_pf_t pf; /* narrow: what the running loop asks for besides its own rows */
} att_ws_t;

static int64_t att_round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/*
 * The narrow loops convert 16-bit rows as they read them (decode reads each key once); the wide
 * ones reuse every value many times, so 16-bit rows are converted into a block buffer first.
 */
static att_kv_t att_kv_of(const att_plan_t *p, const mag_tensor_t *t, int64_t tile) {
    const int64_t *s = t->strides + p->nb;
    int64_t cols = t->shape[p->nb + 2];
    int kind = t->dtype == MAG_DTYPE_BFLOAT16 ? ATT_BF16 : t->dtype == MAG_DTYPE_FLOAT16 ? ATT_F16 : ATT_F32;
    bool direct = s[2] == 1 && cols % tile == 0 && (p->narrow || kind == ATT_F32);
    return (att_kv_t){s[1], s[2], cols, att_round_up(cols, tile), direct, direct ? kind : ATT_F32};
}

static void att_plan_init(att_plan_t *p, const mag_kernel_args_t *a, att_ld_fn ld, att_st_fn st) {
    const mag_tensor_t *q = a->in[0], *k = a->in[1], *v = a->in[2];
    int64_t nb = q->rank - 3;
    *p = (att_plan_t){.t = {q, k, v, a->out}, .nb = nb, .ld = ld, .st = st};
    p->hq = q->shape[nb], p->hkv = k->shape[nb], p->g = p->hq / p->hkv;
    p->lq = q->shape[nb + 1], p->lk = k->shape[nb + 1], p->e = q->shape[nb + 2], p->ev = v->shape[nb + 2];
    p->es = (int64_t)mag_dtype_info(q->dtype)->size;
    p->qmul = (float)(mag_scalar_as_double(a->attrs[0]) * 1.4426950408889634);
    p->causal = mag_scalar_as_int(a->attrs[1]) != 0, p->offset = mag_scalar_as_int(a->attrs[2]);
    if (mag_scalar_as_int(a->attrs[7])) /* read now: a replayed graph changes it between runs */
        p->offset = *(const int64_t *)mag_tensor_data(a->in[a->n_in - 1]);
    /* clamped so that i + offset + 1 cannot overflow: beyond these bounds nothing changes */
    p->offset = p->offset > p->lk ? p->lk : p->offset < -p->lq - 1 ? -p->lq - 1 : p->offset;
    p->ng = mag_scalar_as_int(a->attrs[3]), p->ni = mag_scalar_as_int(a->attrs[4]);
    p->nsplit = mag_scalar_as_int(a->attrs[5]);
    p->nhb = (p->g + p->ng - 1) / p->ng, p->nib = (p->lq + p->ni - 1) / p->ni, p->rows = p->ng * p->ni;
    p->narrow = p->rows <= ATT_NARROW;
    int64_t n_batch = 1;
    for (int64_t d = 0; d < nb; ++d) n_batch *= q->shape[d];
    p->items = n_batch * p->hkv * p->nhb * p->nib;
    p->chunk = att_round_up((p->lk + p->nsplit - 1) / p->nsplit, ATT_BK);
    p->k = att_kv_of(p, k, p->narrow ? ATT_VL : 1); /* narrow dot products run over whole vectors */
    p->v = att_kv_of(p, v, ATT_EC);
#if defined(__AMX_BF16__)
    p->amx = !p->narrow && k->dtype == MAG_DTYPE_BFLOAT16 && k->strides[nb + 2] == 1 && p->e % 32 == 0 &&
             mag_gemm_path() == MAG_GEMM_AMX;
    p->amx_pv = p->amx && v->strides[nb + 2] == 1 && p->ev % 32 == 0;
    p->tiles = p->amx ? mag_gemm_kernel(MAG_GEMM_AMX, MAG_DTYPE_BFLOAT16) : NULL;
#endif
}

static bool att_ws_init(att_ws_t *w, const att_plan_t *p) {
    int64_t kp = p->k.pad, vp = p->v.pad, n16 = p->amx ? (ATT_R + ATT_BK) * p->e : 0;
    if (p->amx_pv) n16 += ATT_R * ATT_BK + ATT_BK * p->ev;
    size_t n = (size_t)(ATT_R * kp + ATT_BK * kp + ATT_BK * vp + ATT_BK * ATT_R + ATT_R * vp + n16 / 2);
    w->bytes = n * sizeof(float);
    w->q = mag_alloc(w->bytes);
    if (!w->q) return false;
    w->k = w->q + ATT_R * kp, w->v = w->k + ATT_BK * kp, w->s = w->v + ATT_BK * vp, w->o = w->s + ATT_BK * ATT_R;
    w->qb = (uint16_t *)(w->o + ATT_R * vp), w->kb = w->qb + ATT_R * p->e;
    w->pb = w->kb + ATT_BK * p->e, w->vb = w->pb + ATT_R * ATT_BK;
    /* the padding is set once: q rows and columns past the item's, k and v columns past E and Ev */
    memset(w->q, 0, (size_t)(ATT_R * kp) * sizeof(float));
    if (kp > p->e) memset(w->k, 0, (size_t)(ATT_BK * kp) * sizeof(float));
    if (vp > p->ev) memset(w->v, 0, (size_t)(ATT_BK * vp) * sizeof(float));
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
        base[i] = t->storage->data + off * p->es;
    }
    const int64_t *qs = p->t[0]->strides + p->nb, *os = p->t[3]->strides + p->nb;
    w->kbase = base[1] + h * p->t[1]->strides[p->nb] * p->es;
    w->vbase = base[2] + h * p->t[2]->strides[p->nb] * p->es;
    for (int64_t r = 0; r < ATT_R; ++r) {
        int64_t gi = r / p->ni, i = ib * p->ni + r % p->ni, head = hb * p->ng + gi;
        bool live = r < p->rows && head < p->g && i < p->lq;
        int64_t hq = h * p->g + head, lim = p->causal ? i + p->offset + 1 : p->lk;
        w->lim[r] = !live ? 0 : lim < 0 ? 0 : lim > p->lk ? p->lk : lim;
        w->qrow[r] = live ? base[0] + (hq * qs[0] + i * qs[1]) * p->es : NULL;
        w->orow[r] = live ? (uint8_t *)base[3] + (hq * os[0] + i * os[1]) * p->es : NULL;
    }
}

/* Element i of a row of `kind` as float32, and (AVX-512) 16 of them from i on. */
MAG_INLINE float att_ld1(const uint8_t *p, int64_t i, const int kind) {
    if (kind == ATT_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return kind == ATT_BF16 ? mag_ld_bf16(h) : mag_ld_f16(h);
}
#if defined(__AVX512F__)
MAG_INLINE __m512 att_ld16(const uint8_t *p, int64_t i, const int kind) {
    if (kind == ATT_F32) return _mm512_loadu_ps((const float *)p + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    if (kind == ATT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
#endif
#define ATT_SIZE(kind) ((kind) == ATT_F32 ? 4 : 2)

/*
 * Decode reads every key and value once, from memory (the weights streamed since their layer
 * last ran evicted them), and one block of a head's rows is too short a run for the hardware
 * prefetchers. So the narrow loops ask for lines themselves, a few with every row rather than a
 * block in one burst (which stalls on the fill buffers): the score loop for its keys
 * MAG_READ_AHEAD bytes on and for the block's values (row j with key j), the weighted sum for
 * its values MAG_READ_AHEAD on and for the next block's keys. Qwen3-0.6B shapes, bfloat16,
 * 190 keys, caches flushed, 2 threads: 69-72 -> 57-58 us per layer (one burst per block
 * before); 1 thread 148-154 -> 112-113.
 */
/* The lines of the `bytes` bytes MAG_READ_AHEAD past at. */
MAG_INLINE void att_ask(const uint8_t *at, int64_t bytes) {
    for (int64_t c = 0; c < bytes; c += 64) __builtin_prefetch(at + MAG_READ_AHEAD + c, 0, 3);
}
MAG_INLINE void att_ask_row(const att_pf_t *pf, int64_t j) {
    if (pf->at && j < pf->n) att_ask(pf->at + j * pf->row, pf->bytes);
}

/* Wide scores: s[j][0:ATT_R] = sum_x k[j][x] * qt[x][0:ATT_R] (rows past nj repeat the last key). */
static void att_qk_wide(float *s, const float *k, int64_t ldk, const float *qt, int64_t e, int64_t nj) {
    for (int64_t j = 0; j < nj; j += ATT_JT) {
        const float *kr[ATT_JT];
        for (int t = 0; t < ATT_JT; ++t) kr[t] = k + (j + t < nj ? j + t : nj - 1) * ldk;
        float acc[ATT_JT][ATT_R];
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < ATT_R; ++r) acc[t][r] = 0;
        for (int64_t x = 0; x < e; ++x)
            for (int t = 0; t < ATT_JT; ++t) {
                float kx = kr[t][x];
                for (int r = 0; r < ATT_R; ++r) acc[t][r] = mag_vm_fma(kx, qt[x * ATT_R + r], acc[t][r]);
            }
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < ATT_R; ++r) s[(j + t) * ATT_R + r] = acc[t][r];
    }
}

/* Narrow scores: s[r][j] = q[r] . k[j] over ep (a multiple of ATT_VL) for n rows (a constant after inlining). */
MAG_INLINE void att_qk_narrow(float *s, const uint8_t *k, int64_t ldk, const float *q, int64_t ep, int64_t nj,
                              const att_pf_t *pf, const int n, const int kind) {
    for (int64_t j = 0; j < nj; j += ATT_JT) {
        const uint8_t *kr[ATT_JT];
        for (int t = 0; t < ATT_JT; ++t) kr[t] = k + (j + t < nj ? j + t : nj - 1) * ldk * ATT_SIZE(kind);
        for (int t = 0; t < ATT_JT; ++t) att_ask(kr[t], ep * ATT_SIZE(kind)), att_ask_row(pf, j + t);
#if defined(__AVX512F__)
        __m512 acc[ATT_JT][ATT_NARROW];
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < n; ++r) acc[t][r] = _mm512_setzero_ps();
        for (int64_t x = 0; x < ep; x += ATT_VL) {
            __m512 kv[ATT_JT];
            for (int t = 0; t < ATT_JT; ++t) kv[t] = att_ld16(kr[t], x, kind);
            for (int r = 0; r < n; ++r) {
                __m512 qv = _mm512_loadu_ps(q + r * ep + x);
                for (int t = 0; t < ATT_JT; ++t) acc[t][r] = _mm512_fmadd_ps(qv, kv[t], acc[t][r]);
            }
        }
        float dots[ATT_JT][ATT_NARROW];
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < n; ++r) dots[t][r] = _mm512_reduce_add_ps(acc[t][r]);
#else
        float acc[ATT_JT][ATT_NARROW][ATT_VL], dots[ATT_JT][ATT_NARROW];
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < n; ++r)
                for (int l = 0; l < ATT_VL; ++l) acc[t][r][l] = 0;
        for (int64_t x = 0; x < ep; x += ATT_VL)
            for (int t = 0; t < ATT_JT; ++t)
                for (int r = 0; r < n; ++r)
                    for (int l = 0; l < ATT_VL; ++l)
                        acc[t][r][l] = mag_vm_fma(q[r * ep + x + l], att_ld1(kr[t], x + l, kind), acc[t][r][l]);
        for (int t = 0; t < ATT_JT; ++t)
            for (int r = 0; r < n; ++r) {
                for (int w = ATT_VL / 2; w > 0; w /= 2)
                    for (int l = 0; l < w; ++l) acc[t][r][l] += acc[t][r][l + w];
                dots[t][r] = acc[t][r][0];
            }
#endif
        for (int t = 0; t < ATT_JT && j + t < nj; ++t)
            for (int r = 0; r < n; ++r) s[r * ATT_BK + j + t] = dots[t][r];
    }
}

/*
 * o[r][:] += sum_j p[j, r] * v[j][:] for rows 0..rp-1 in tiles of n rows; p[j, r] sits at
 * p[j * psj + r * psr]. n, the strides and the kind are constants after inlining. The narrow
 * path passes pf and asks for lines ahead; the wide one (NULL) reads its block from cache.
 */
MAG_INLINE void att_pv(float *o, int64_t ldo, const float *p, const int64_t psj, const int64_t psr, const uint8_t *v,
                       int64_t ldv, int64_t nj, int64_t rp, const att_pf_t *pf, const int n, const int kind) {
    const int64_t vrow = ldv * ATT_SIZE(kind);
    for (int64_t r0 = 0; r0 < rp; r0 += n)
        for (int64_t c = 0; c < ldo; c += ATT_EC) {
            float *out = o + r0 * ldo + c;
#if defined(__AVX512F__)
            __m512 acc[ATT_PV_ROWS][4];
            for (int r = 0; r < n; ++r)
                for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_loadu_ps(out + r * ldo + 16 * u);
            for (int64_t j = 0; j < nj; ++j) {
                if (pf && r0 == 0 && c == 0) att_ask(v + j * vrow, ldo * ATT_SIZE(kind)), att_ask_row(pf, j);
                __m512 vv[4];
                for (int u = 0; u < 4; ++u) vv[u] = att_ld16(v + j * vrow, c + 16 * u, kind);
                for (int r = 0; r < n; ++r) {
                    __m512 pj = _mm512_set1_ps(p[j * psj + (r0 + r) * psr]);
                    for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_fmadd_ps(pj, vv[u], acc[r][u]);
                }
            }
            for (int r = 0; r < n; ++r)
                for (int u = 0; u < 4; ++u) _mm512_storeu_ps(out + r * ldo + 16 * u, acc[r][u]);
#else
            float acc[ATT_PV_ROWS][ATT_EC];
            for (int r = 0; r < n; ++r)
                for (int l = 0; l < ATT_EC; ++l) acc[r][l] = out[r * ldo + l];
            for (int64_t j = 0; j < nj; ++j) {
                if (pf && r0 == 0 && c == 0) att_ask(v + j * vrow, ldo * ATT_SIZE(kind)), att_ask_row(pf, j);
                for (int r = 0; r < n; ++r) {
                    float pj = p[j * psj + (r0 + r) * psr];
                    for (int l = 0; l < ATT_EC; ++l) acc[r][l] = mag_vm_fma(pj, att_ld1(v + j * vrow, c + l, kind), acc[r][l]);
                }
            }
            for (int r = 0; r < n; ++r)
                for (int l = 0; l < ATT_EC; ++l) out[r * ldo + l] = acc[r][l];
#endif
        }
}

/* The narrow loops for n rows of k/v `kind`s: constants, so that each case gets its own copy. */
MAG_INLINE void att_narrow_scores(const att_plan_t *p, att_ws_t *w, const uint8_t *k, int64_t ldk, int64_t nj,
                                  const int kind) {
    switch (p->rows) {
    case 1: att_qk_narrow(w->s, k, ldk, w->q, p->k.pad, nj, &w->pf, 1, kind); break;
#if ATT_NARROW > 2
    case 3: att_qk_narrow(w->s, k, ldk, w->q, p->k.pad, nj, &w->pf, 3, kind); break;
    case 4: att_qk_narrow(w->s, k, ldk, w->q, p->k.pad, nj, &w->pf, 4, kind); break;
#endif
    default: att_qk_narrow(w->s, k, ldk, w->q, p->k.pad, nj, &w->pf, 2, kind); break;
    }
}
MAG_INLINE void att_narrow_sum(const att_plan_t *p, att_ws_t *w, const uint8_t *v, int64_t ldv, int64_t nj,
                               const int kind) {
    switch (p->rows) {
    case 1: att_pv(w->o, p->v.pad, w->s, 1, ATT_BK, v, ldv, nj, 1, &w->pf, 1, kind); break;
#if ATT_NARROW > 2
    case 3: att_pv(w->o, p->v.pad, w->s, 1, ATT_BK, v, ldv, nj, 3, &w->pf, 3, kind); break;
    case 4: att_pv(w->o, p->v.pad, w->s, 1, ATT_BK, v, ldv, nj, 4, &w->pf, 4, kind); break;
#endif
    default: att_pv(w->o, p->v.pad, w->s, 1, ATT_BK, v, ldv, nj, 2, &w->pf, 2, kind); break;
    }
}

#if defined(__AMX_BF16__)
/*
 * The AMX paths run the GEMM's in-place microkernel (ukr_rows: a 32 x 32 float32 tile of C, A
 * rows lda bytes apart, B a panel of 32 columns in depth pairs, depths in steps of 32). Wide
 * scores: s[j][r] for keys j of one block (rows ldk elements apart, bf16) against the q rows
 * packed in w->qb, 32 keys at a time, then scaled by qmul (q is packed unscaled: its bf16 values
 * as they are). A block shorter than ATT_BK is copied into w->kb first, zero padded, so no tile
 * reads past the keys.
 */
static void att_qk_amx(const att_plan_t *p, att_ws_t *w, const uint8_t *k, int64_t ldk, int64_t nj) {
    const int64_t e = p->e, njp = att_round_up(nj, 32);
    if (nj < ATT_BK) {
        for (int64_t j = 0; j < njp; ++j)
            if (j < nj) memcpy(w->kb + j * e, k + j * ldk * 2, (size_t)e * 2);
            else memset(w->kb + j * e, 0, (size_t)e * 2);
        k = (const uint8_t *)w->kb, ldk = e;
    }
    for (int64_t j0 = 0; j0 < njp; j0 += 32)
        p->tiles->ukr_rows(e, k + j0 * ldk * 2, ldk * 2, w->qb, w->s + j0 * ATT_R, ATT_R, false);
    for (int64_t i = 0; i < nj * ATT_R; ++i) w->s[i] *= p->qmul;
}

/*
 * The item's q rows as one B panel: depth pair pp of row r is the word at pp * ATT_R + r. Rows
 * of unit stride go 16 x 16 words through the vector transposition.
 */
static void att_pack_q_amx(const att_plan_t *p, att_ws_t *w) {
    const int64_t stride = p->t[0]->strides[p->nb + 2], pairs = p->e / 2;
    uint32_t *qb = (uint32_t *)w->qb;
    const uint16_t *row[ATT_R];
    for (int r = 0; r < ATT_R; ++r) row[r] = r < p->rows ? (const uint16_t *)w->qrow[r] : NULL;
    if (stride != 1) {
        for (int64_t r = 0; r < ATT_R; ++r)
            for (int64_t pp = 0; pp < pairs; ++pp)
                qb[pp * ATT_R + r] =
                    row[r] ? row[r][2 * pp * stride] | (uint32_t)row[r][(2 * pp + 1) * stride] << 16 : 0;
        return;
    }
    for (int64_t b = 0; b < pairs; b += 16)
        for (int h = 0; h < ATT_R; h += 16) {
            __m512i t[16];
            for (int i = 0; i < 16; ++i)
                t[i] = row[h + i] ? _mm512_loadu_si512(row[h + i] + 2 * b) : _mm512_setzero_si512();
            mag_transpose16(t);
            for (int q = 0; q < 16; ++q) _mm512_storeu_si512(qb + (b + q) * ATT_R + h, t[q]);
        }
}

/* Probabilities s[j][r] of keys [0, nj) as bfloat16 rows pb[r][0, njp) (keys past nj zero), 16 x 16 at a time. */
static void att_pack_p_amx(att_ws_t *w, int64_t nj, int64_t njp) {
    for (int64_t j0 = 0; j0 < njp; j0 += 16)
        for (int r0 = 0; r0 < ATT_R; r0 += 16) {
            __m512i t[16];
            for (int i = 0; i < 16; ++i)
                t[i] = j0 + i < nj ? _mm512_loadu_si512(w->s + (j0 + i) * ATT_R + r0) : _mm512_setzero_si512();
            mag_transpose16(t);
            for (int q = 0; q < 16; ++q)
                _mm256_storeu_si256((__m256i *)(w->pb + (r0 + q) * ATT_BK + j0),
                                    (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(t[q])));
        }
}

/* o[r][:] += sum_j p[j][r] * v[j][:]: the probabilities as A rows, the values as B panels of 32 columns. */
static void att_pv_amx(const att_plan_t *p, att_ws_t *w, const uint8_t *v, int64_t ldv, int64_t nj) {
    const int64_t ev = p->ev, njp = att_round_up(nj, 32), nj2 = att_round_up(nj, 2), panel = 32 * njp;
    mag_pack_interleave(ev, nj, (const uint16_t *)v, ldv, w->vb, 32, panel);
    if (nj2 < njp) /* key pairs past the block: zero, not whatever the buffer held (0 * NaN is NaN) */
        for (int64_t c = 0; c < ev; c += 32) memset(w->vb + c * njp + nj2 * 32, 0, (size_t)((njp - nj2) * 32) * 2);
    att_pack_p_amx(w, nj, njp);
    for (int64_t c0 = 0; c0 < ev; c0 += 32)
        p->tiles->ukr_rows(njp, w->pb, ATT_BK * 2, w->vb + c0 * njp, w->o + c0, p->v.pad, true);
}
#endif

static void att_scores(const att_plan_t *p, att_ws_t *w, const uint8_t *k, int64_t ldk, int64_t nj) {
#if defined(__AMX_BF16__)
    if (p->amx) {
        att_qk_amx(p, w, k, ldk, nj);
        return;
    }
#endif
    if (!p->narrow) att_qk_wide(w->s, (const float *)k, ldk, w->q, p->e, nj);
    else if (p->k.kind == ATT_BF16) att_narrow_scores(p, w, k, ldk, nj, ATT_BF16);
    else if (p->k.kind == ATT_F16) att_narrow_scores(p, w, k, ldk, nj, ATT_F16);
    else att_narrow_scores(p, w, k, ldk, nj, ATT_F32);
}

static void att_weighted_sum(const att_plan_t *p, att_ws_t *w, const uint8_t *v, int64_t ldv, int64_t nj, int64_t rp) {
#if defined(__AMX_BF16__)
    if (p->amx_pv) {
        att_pv_amx(p, w, v, ldv, nj);
        return;
    }
#endif
    if (!p->narrow) att_pv(w->o, p->v.pad, w->s, ATT_R, 1, v, ldv, nj, rp, NULL, ATT_PV_ROWS, ATT_F32);
    else if (p->v.kind == ATT_BF16) att_narrow_sum(p, w, v, ldv, nj, ATT_BF16);
    else if (p->v.kind == ATT_F16) att_narrow_sum(p, w, v, ldv, nj, ATT_F16);
    else att_narrow_sum(p, w, v, ldv, nj, ATT_F32);
}

/* Row r's block max is mb: move its running max, scale factor alpha and exponent base mu. */
static void att_new_max(att_ws_t *w, int64_t r, float mb) {
    w->mu[r] = mb == -INFINITY ? 0.0f : mb; /* a row with nothing seen yet stays at zero */
    w->alpha[r] = mag_exp2_f32(w->m[r] - w->mu[r]);
    w->m[r] = mb;
}

/* Row r's block probabilities sum to `sum`: rescale its running sum and output. */
static void att_rescale(const att_plan_t *p, att_ws_t *w, int64_t r, float sum) {
    w->l[r] = w->l[r] * w->alpha[r] + sum;
    if (w->alpha[r] != 1.0f)
        for (int64_t c = 0; c < p->ev; ++c) w->o[r * p->v.pad + c] *= w->alpha[r];
}

/* Online softmax over one block of narrow (row-major) scores, vectorised along the keys. */
static void att_softmax_rows(const att_plan_t *p, att_ws_t *w, int64_t kb, int64_t nj) {
    for (int64_t r = 0; r < p->rows; ++r) {
        float *s = w->s + r * ATT_BK, mv[ATT_VL], sv[ATT_VL] = {0};
        int64_t seen = w->lim[r] - kb < 0 ? 0 : w->lim[r] - kb, j;
        for (j = seen; j < nj; ++j) s[j] = -INFINITY;
        for (int l = 0; l < ATT_VL; ++l) mv[l] = w->m[r];
        for (j = 0; j + ATT_VL <= nj; j += ATT_VL)
            for (int l = 0; l < ATT_VL; ++l) mv[l] = s[j + l] > mv[l] ? s[j + l] : mv[l];
        for (; j < nj; ++j) mv[0] = s[j] > mv[0] ? s[j] : mv[0];
        for (int l = 1; l < ATT_VL; ++l) mv[0] = mv[l] > mv[0] ? mv[l] : mv[0];
        att_new_max(w, r, mv[0]);
        float mu = w->mu[r];
        for (j = 0; j + ATT_VL <= nj; j += ATT_VL)
            for (int l = 0; l < ATT_VL; ++l) sv[l] += s[j + l] = mag_exp2_f32(s[j + l] - mu);
        for (; j < nj; ++j) sv[0] += s[j] = mag_exp2_f32(s[j] - mu);
        for (int l = 1; l < ATT_VL; ++l) sv[0] += sv[l];
        att_rescale(p, w, r, sv[0]);
    }
}

/* Online softmax over one block of wide (key-major) scores, vectorised down the rows. */
static void att_softmax_cols(const att_plan_t *p, att_ws_t *w, int64_t kb, int64_t nj, int64_t rp, int64_t minlim) {
    float *s = w->s, mb[ATT_R], sum[ATT_R] = {0};
    if (kb + nj > minlim) /* some row's limit falls inside the block */
        for (int64_t j = 0; j < nj; ++j)
            for (int64_t r = 0; r < rp; ++r) s[j * ATT_R + r] = kb + j >= w->lim[r] ? -INFINITY : s[j * ATT_R + r];
    memcpy(mb, w->m, sizeof(mb));
    for (int64_t j = 0; j < nj; ++j)
        for (int64_t r = 0; r < rp; ++r) mb[r] = s[j * ATT_R + r] > mb[r] ? s[j * ATT_R + r] : mb[r];
    for (int64_t r = 0; r < rp; ++r) att_new_max(w, r, mb[r]);
    for (int64_t j = 0; j < nj; ++j)
        for (int64_t r = 0; r < rp; ++r) sum[r] += s[j * ATT_R + r] = mag_exp2_f32(s[j * ATT_R + r] - w->mu[r]);
    for (int64_t r = 0; r < rp; ++r) att_rescale(p, w, r, sum[r]);
}

static void att_load_q(const att_plan_t *p, att_ws_t *w) {
#if defined(__AMX_BF16__)
    if (p->amx) {
        att_pack_q_amx(p, w);
        return;
    }
#endif
    const int64_t stride = p->t[0]->strides[p->nb + 2];
    for (int64_t r = 0; r < p->rows; ++r) {
        float *row = p->narrow ? w->q + r * p->k.pad : w->k; /* wide: a staging row, transposed below */
        if (w->qrow[r]) p->ld(row, w->qrow[r], p->e, stride, p->qmul);
        else memset(row, 0, (size_t)p->e * sizeof(float));
        if (!p->narrow)
            for (int64_t x = 0; x < p->e; ++x) w->q[x * ATT_R + r] = row[x];
    }
}

/* Rows kb..kb+nj-1 of a key/value head (row stride *ld elements of kv->kind): in place, or converted into buf. */
static const uint8_t *att_block(const att_plan_t *p, const att_kv_t *kv, const uint8_t *base, float *buf, int64_t kb,
                                int64_t nj, int64_t *ld) {
    if (kv->direct) {
        *ld = kv->row;
        return base + kb * kv->row * p->es;
    }
    for (int64_t j = 0; j < nj; ++j) p->ld(buf + j * kv->pad, base + (kb + j) * kv->row * p->es, kv->cols, kv->col, 1.0f);
    *ld = kv->pad;
    return (const uint8_t *)buf;
}

/* Rows [kb, kb + n) of a key/value head read in place, for att_ask_row. */
static att_pf_t att_rows(const att_plan_t *p, const att_kv_t *kv, const uint8_t *base, int64_t kb, int64_t n) {
    if (!kv->direct || n <= 0) return (att_pf_t){0};
    return (att_pf_t){base + kb * kv->row * p->es, kv->row * p->es, kv->cols * p->es, n};
}

/* One (item, split): the rows' softmax-weighted sum over keys [split * chunk, ...). */
static void att_unit(const att_plan_t *p, att_ws_t *w, int64_t item, int64_t split, float *partial) {
    att_item_rows(p, item, w);
    int64_t rp = p->narrow ? p->rows : att_round_up(p->rows, ATT_PV_ROWS), maxlim = 0, minlim = p->lk;
    for (int64_t r = 0; r < rp; ++r) {
        maxlim = w->lim[r] > maxlim ? w->lim[r] : maxlim;
        minlim = w->lim[r] < minlim ? w->lim[r] : minlim;
        w->m[r] = -INFINITY, w->l[r] = 0;
        memset(w->o + r * p->v.pad, 0, (size_t)p->v.pad * sizeof(float));
    }
    int64_t k0 = split * p->chunk, k1 = k0 + p->chunk < maxlim ? k0 + p->chunk : maxlim;
    if (k0 < k1) att_load_q(p, w);
    for (int64_t kb = k0; kb < k1; kb += ATT_BK) {
        int64_t nj = k1 - kb < ATT_BK ? k1 - kb : ATT_BK, ld = 0;
        const uint8_t *k = p->amx ? w->kbase + kb * p->k.row * p->es : att_block(p, &p->k, w->kbase, w->k, kb, nj, &ld);
        w->pf = att_rows(p, &p->v, w->vbase, kb, nj); /* the block's values while its scores run */
        att_scores(p, w, k, p->amx ? p->k.row : ld, nj);
        if (p->narrow) att_softmax_rows(p, w, kb, nj);
        else att_softmax_cols(p, w, kb, nj, rp, minlim);
        const uint8_t *v = p->amx_pv ? w->vbase + kb * p->v.row * p->es : att_block(p, &p->v, w->vbase, w->v, kb, nj, &ld);
        int64_t next = k1 - kb - nj < ATT_BK ? k1 - kb - nj : ATT_BK;
        w->pf = att_rows(p, &p->k, w->kbase, kb + nj, next); /* the next block's keys while the sum runs */
        att_weighted_sum(p, w, v, p->amx_pv ? p->v.row : ld, nj, rp);
    }
    const int64_t ostride = p->t[3]->strides[p->nb + 2];
    for (int64_t r = 0; r < p->rows; ++r) {
        if (partial) {
            float *row = partial + ((item * p->nsplit + split) * p->rows + r) * (p->ev + 2);
            row[0] = w->m[r], row[1] = w->l[r];
            memcpy(row + 2, w->o + r * p->v.pad, (size_t)p->ev * sizeof(float));
        } else if (w->orow[r]) { /* a row that saw no key (l == 0) gives zeros; NaN stays NaN */
            p->st(w->orow[r], ostride, w->o + r * p->v.pad, p->ev, w->l[r] == 0 ? 0.0f : 1.0f / w->l[r]);
        }
    }
}

/* Merge the splits' partials of one item: rescale each to the common max, add, normalise. */
static void att_combine(const att_plan_t *p, att_ws_t *w, int64_t item, const float *partial) {
    att_item_rows(p, item, w);
    const int64_t ostride = p->t[3]->strides[p->nb + 2], width = p->ev + 2, step = p->rows * width;
    for (int64_t r = 0; r < p->rows; ++r) {
        if (!w->orow[r]) continue;
        const float *row = partial + (item * p->nsplit * p->rows + r) * width;
        float m = -INFINITY, l = 0, *o = w->o;
        for (int64_t sp = 0; sp < p->nsplit; ++sp) m = row[sp * step] > m ? row[sp * step] : m;
        float mu = m == -INFINITY ? 0.0f : m;
        memset(o, 0, (size_t)p->ev * sizeof(float));
        for (int64_t sp = 0; sp < p->nsplit; ++sp) {
            const float *part = row + sp * step;
            float f = mag_exp2_f32(part[0] - mu);
            l += part[1] * f;
            for (int64_t c = 0; c < p->ev; ++c) o[c] = mag_vm_fma(part[2 + c], f, o[c]);
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
    if (p.tiles) p.tiles->enter();
    float *partial = p.nsplit > 1 ? (float *)a->in[3]->storage->data + a->in[3]->offset : NULL;
    if (partial && mag_scalar_as_int(a->attrs[6]) == 1) {
        for (int64_t item = ti; item < p.items; item += nt) att_combine(&p, &w, item, partial);
    } else { /* units interleave over threads: causal items late in the sequence cost more */
        for (int64_t u = ti; u < p.items * p.nsplit; u += nt) att_unit(&p, &w, u / p.nsplit, u % p.nsplit, partial);
    }
    if (p.tiles) p.tiles->leave();
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
