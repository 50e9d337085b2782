/*
 * MATMUL: C = A . B for every batch entry.
 *
 * The front end (src/core/ops_matmul.c) hands over A (..., M, K), B (..., K, N) and C (..., M, N)
 * of one rank, batch dims already broadcast (stride 0), any strides (transposed, sliced, negative):
 * packing reads them, so no operand is ever copied to make it contiguous.
 *
 * float32, float16 and bfloat16 go to the GEMM engine (src/cpu/gemm: per-ISA microkernels, GEMV
 * for few rows, float32 accumulation). The other dtypes use the portable driver below.
 *
 * Portable driver (Goto/BLIS style): C is cut into MC x NC tiles, shared out among threads. For a
 * tile, each KC-deep slice of A (MC x KC, sized for L2) and B (KC x NC) is packed into MR-row and
 * NR-column panels of the compute type, zero-padded at the edges; the micro-kernel then adds
 * A-panel . B-panel into an MR x NR block of a compute-type accumulator tile that is written to C
 * once the whole K loop is done. Integers accumulate in 32/64-bit unsigned arithmetic (wrapping,
 * the same result modulo 2^bits as PyTorch's).
 *
 * mag_gemm_micro_<ct>(kc, ap, bp, c, ldc) adds sum_k ap[k*MR + i] * bp[k*NR + j] to c[i*ldc + j]
 * for i < MR, j < NR: plain loops over a local accumulator block that the compiler keeps in
 * vector registers.
 */
#include "common.h"

#include "../gemm/gemm.h"

/* Block sizes and micro-kernel shapes were measured on the generic (SSE2) build with float32: 4 x 8
 * keeps the accumulators and operands within 16 vector registers (2 x 16, 3 x 16, 4 x 16, 6 x 8 and
 * 8 x 8 were slower); KC x NR of B stays in L1 while MC x KC of A streams from L2. */
#define GEMM_KC 256
#define GEMM_MC 96
#define GEMM_NC 512

/* One batch entry: element strides converted to bytes. */
typedef struct gemm_view {
    int64_t m, n, k;
    const uint8_t *a, *b;
    uint8_t *c;
    int64_t sam, sak, sbk, sbn, scm, scn;
} gemm_view_t;

/* ---- micro-kernels, one per compute type: (name, compute type, MR, NR) ---- */
#define GEMM_MICRO(CTN, CT, MR, NR)                                                                                    \
    enum { MR_##CTN = MR, NR_##CTN = NR };                                                                             \
    static inline void mag_gemm_micro_##CTN(int64_t kc, const CT *restrict ap, const CT *restrict bp, CT *restrict c,  \
                                            int64_t ldc) {                                                             \
        CT acc[MR][NR] = {{0}};                                                                                        \
        for (int64_t k = 0; k < kc; ++k, ap += MR, bp += NR)                                                           \
            for (int i = 0; i < MR; ++i)                                                                               \
                for (int j = 0; j < NR; ++j) acc[i][j] += ap[i] * bp[j];                                               \
        for (int i = 0; i < MR; ++i)                                                                                   \
            for (int j = 0; j < NR; ++j) c[i * ldc + j] += acc[i][j];                                                  \
    }
GEMM_MICRO(f64, double, 4, 4)
GEMM_MICRO(u32, uint32_t, 4, 8)
GEMM_MICRO(u64, uint64_t, 4, 4)

/* ---- the driver, per storage dtype: X(ID, storage type, compute type, micro-kernel name) ---- */
#define GEMM_DTYPES(X)                                                                                                 \
    X(FLOAT64, double, double, f64) X(INT8, int8_t, uint32_t, u32) X(UINT8, uint8_t, uint32_t, u32)                    \
    X(INT16, int16_t, uint32_t, u32) X(UINT16, uint16_t, uint32_t, u32) X(INT32, int32_t, uint32_t, u32)               \
    X(UINT32, uint32_t, uint32_t, u32) X(INT64, int64_t, uint64_t, u64) X(UINT64, uint64_t, uint64_t, u64)

#define GEMM_DRIVER(ID, ST, CT, CTN)                                                                                   \
    /* rows [0, rows) x depth [0, kc) of a matrix with byte strides (s_row, s_depth) into PANEL-row panels */         \
    static void gemm_pack_##ID(CT *restrict dst, const uint8_t *src, int64_t s_row, int64_t s_depth, int64_t rows,    \
                               int64_t kc, int panel) {                                                                \
        for (int64_t r0 = 0; r0 < rows; r0 += panel) {                                                                 \
            int64_t pr = rows - r0 < panel ? rows - r0 : panel;                                                        \
            const uint8_t *base = src + r0 * s_row;                                                                    \
            for (int64_t k = 0; k < kc; ++k, dst += panel) {                                                           \
                const uint8_t *col = base + k * s_depth;                                                               \
                for (int64_t i = 0; i < pr; ++i) dst[i] = (CT)MAG_LD_##ID(*(const ST *)(col + i * s_row));             \
                for (int64_t i = pr; i < panel; ++i) dst[i] = 0;                                                       \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    /* C[m0:m0+mc, n0:n0+nc] of one batch entry; pa, pb, ct are this thread's scratch */                              \
    static void gemm_tile_##ID(const gemm_view_t *g, int64_t m0, int64_t mc, int64_t n0, int64_t nc, CT *pa, CT *pb,  \
                               CT *ct) {                                                                               \
        int64_t mp = (mc + MR_##CTN - 1) / MR_##CTN * MR_##CTN, np = (nc + NR_##CTN - 1) / NR_##CTN * NR_##CTN;        \
        memset(ct, 0, (size_t)(mp * np) * sizeof(CT));                                                                 \
        for (int64_t p0 = 0; p0 < g->k; p0 += GEMM_KC) {                                                               \
            int64_t kc = g->k - p0 < GEMM_KC ? g->k - p0 : GEMM_KC;                                                    \
            gemm_pack_##ID(pa, g->a + m0 * g->sam + p0 * g->sak, g->sam, g->sak, mc, kc, MR_##CTN);                    \
            gemm_pack_##ID(pb, g->b + n0 * g->sbn + p0 * g->sbk, g->sbn, g->sbk, nc, kc, NR_##CTN);                    \
            for (int64_t j = 0; j < np; j += NR_##CTN)                                                                 \
                for (int64_t i = 0; i < mp; i += MR_##CTN)                                                             \
                    mag_gemm_micro_##CTN(kc, pa + i * kc, pb + j * kc, ct + i * np + j, np);                           \
        }                                                                                                              \
        for (int64_t i = 0; i < mc; ++i) {                                                                             \
            uint8_t *row = g->c + (m0 + i) * g->scm + n0 * g->scn;                                                     \
            for (int64_t j = 0; j < nc; ++j) *(ST *)(row + j * g->scn) = MAG_ST_##ID(ct[i * np + j]);                  \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_matmul_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                   \
        gemm_tiles_t tl;                                                                                               \
        if (!gemm_tiles_init(&tl, a, sizeof(ST), MR_##CTN, NR_##CTN, ti, nt)) return;                                 \
        size_t bytes = (size_t)(tl.mcap * tl.kcap + tl.kcap * tl.ncap + tl.mcap * tl.ncap) * sizeof(CT);               \
        CT *pa = mag_alloc(bytes);                                                                                     \
        if (!pa) {                                                                                                     \
            atomic_store(a->status, MAG_ERR_MEMORY);                                                                   \
            return;                                                                                                    \
        }                                                                                                              \
        gemm_view_t g;                                                                                                 \
        int64_t m0, mc, n0, nc;                                                                                        \
        while (gemm_tiles_next(&tl, &g, &m0, &mc, &n0, &nc))                                                           \
            gemm_tile_##ID(&g, m0, mc, n0, nc, pa, pa + tl.mcap * tl.kcap, pa + (tl.mcap + tl.ncap) * tl.kcap);         \
        mag_free(pa, bytes);                                                                                           \
    }

/* ---- tiles: a thread's share of the (batch, MC row block, NC column block) grid ---- */
typedef struct gemm_tiles {
    const mag_kernel_args_t *a;
    int64_t rank, m, n, k, tm, tn, next, end;
    int64_t mcap, ncap, kcap; /* scratch extents: MC and NC rounded to panels, KC; less for small problems */
    int64_t es;
} gemm_tiles_t;

static bool gemm_tiles_init(gemm_tiles_t *t, const mag_kernel_args_t *a, size_t es, int mr, int nr, int64_t ti,
                            int64_t nt) {
    const mag_tensor_t *c = a->out;
    t->a = a;
    t->rank = c->rank;
    t->es = (int64_t)es;
    t->m = c->shape[c->rank - 2];
    t->n = c->shape[c->rank - 1];
    t->k = a->in[0]->shape[c->rank - 1];
    t->tm = (t->m + GEMM_MC - 1) / GEMM_MC;
    t->tn = (t->n + GEMM_NC - 1) / GEMM_NC;
    int64_t mc = t->m < GEMM_MC ? t->m : GEMM_MC, nc = t->n < GEMM_NC ? t->n : GEMM_NC;
    t->mcap = (mc + mr - 1) / mr * mr;
    t->ncap = (nc + nr - 1) / nr * nr;
    t->kcap = t->k < GEMM_KC ? t->k : GEMM_KC;
    mag_partition(c->numel / (t->m * t->n) * t->tm * t->tn, ti, nt, &t->next, &t->end);
    return t->next < t->end;
}

/* The next tile: its batch entry's view and its row/column range. */
static bool gemm_tiles_next(gemm_tiles_t *t, gemm_view_t *g, int64_t *m0, int64_t *mc, int64_t *n0, int64_t *nc) {
    if (t->next >= t->end) return false;
    int64_t tile = t->next++, per_batch = t->tm * t->tn, batch = tile / per_batch, rest = tile % per_batch;
    *m0 = rest / t->tn * GEMM_MC;
    *n0 = rest % t->tn * GEMM_NC;
    *mc = t->m - *m0 < GEMM_MC ? t->m - *m0 : GEMM_MC;
    *nc = t->n - *n0 < GEMM_NC ? t->n - *n0 : GEMM_NC;
    const mag_tensor_t *A = t->a->in[0], *B = t->a->in[1], *C = t->a->out;
    int64_t oa = 0, ob = 0, oc = 0, r = t->rank;
    for (int64_t d = r - 3; d >= 0; --d) { /* unravel the batch index: once per tile */
        int64_t i = batch % C->shape[d];
        batch /= C->shape[d];
        oa += i * A->strides[d], ob += i * B->strides[d], oc += i * C->strides[d];
    }
    int64_t es = t->es;
    *g = (gemm_view_t){t->m, t->n, t->k, (const uint8_t *)mag_tensor_data(A) + oa * es,
                       (const uint8_t *)mag_tensor_data(B) + ob * es, (uint8_t *)mag_tensor_data(C) + oc * es,
                       A->strides[r - 2] * es, A->strides[r - 1] * es, B->strides[r - 2] * es, B->strides[r - 1] * es,
                       C->strides[r - 2] * es, C->strides[r - 1] * es};
    return true;
}

GEMM_DTYPES(GEMM_DRIVER)

/* ---- float32 / float16 / bfloat16: the GEMM engine ---- */

/*
 * Batch dims that step like one dim in all three operands merge (a contiguous (B, H, M, K) stack
 * is one run of B*H matrices). Leaves n_dims dims, innermost last, with their sizes and the
 * element strides of A, B and C.
 */
static int64_t engine_batch_dims(const mag_kernel_args_t *a, int64_t shape[], int64_t strides[][3]) {
    const mag_tensor_t *ops[3] = {a->in[0], a->in[1], a->out};
    int64_t n = 0;
    for (int64_t d = 0; d < a->out->rank - 2; ++d) {
        int64_t size = a->out->shape[d];
        if (size == 1) continue;
        bool merge = n > 0;
        for (int i = 0; i < 3 && merge; ++i) merge = strides[n - 1][i] == ops[i]->strides[d] * size;
        if (merge) {
            shape[n - 1] *= size;
            for (int i = 0; i < 3; ++i) strides[n - 1][i] = ops[i]->strides[d];
            continue;
        }
        shape[n] = size;
        for (int i = 0; i < 3; ++i) strides[n][i] = ops[i]->strides[d];
        ++n;
    }
    return n;
}

/* Every thread walks all outer batch entries; mag_gemm_batched shares each inner run among them. */
static void k_matmul_engine(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    const mag_tensor_t *A = a->in[0], *B = a->in[1], *C = a->out;
    int64_t r = C->rank, m = C->shape[r - 2], n = C->shape[r - 1], k = A->shape[r - 1];
    int64_t es = (int64_t)mag_dtype_info(C->dtype)->size, shape[MAG_MAX_RANK] = {1}, strides[MAG_MAX_RANK][3] = {{0}};
    int64_t nd = engine_batch_dims(a, shape, strides), inner = nd > 0 ? nd - 1 : 0, outer = 1;
    for (int64_t d = 0; d < inner; ++d) outer *= shape[d];
    const uint8_t *pa = mag_tensor_data(A), *pb = mag_tensor_data(B);
    uint8_t *pc = mag_tensor_data(C);
    for (int64_t o = 0; o < outer; ++o) {
        int64_t oa = 0, ob = 0, oc = 0, rest = o;
        for (int64_t d = inner - 1; d >= 0; --d) {
            int64_t i = rest % shape[d];
            rest /= shape[d];
            oa += i * strides[d][0], ob += i * strides[d][1], oc += i * strides[d][2];
        }
        if (!mag_gemm_batched(C->dtype, shape[inner], m, n, k, pa + oa * es, strides[inner][0], A->strides[r - 2],
                              A->strides[r - 1], pb + ob * es, strides[inner][1], B->strides[r - 2], B->strides[r - 1],
                              pc + oc * es, strides[inner][2], C->strides[r - 2], C->strides[r - 1], 1.0f, 0.0f, ti,
                              nt, outer == 1 ? a->shared : NULL)) {
            atomic_store(a->status, MAG_ERR_MEMORY);
            return;
        }
    }
}

/*
 * LINEAR_CONCAT: x (M, K) times the weights W_i (N_i, K), written side by side into (M, N). Each
 * product has its own claim state, shared by the run's threads: work is handed out on demand
 * within a product, and a thread with nothing left to claim in one goes on to the next at once
 * (separate launches would wait for the slowest thread at every boundary). The first thread to
 * arrive allocates the states and the last to leave frees them.
 */
static mag_run_shared_t *product_states(mag_run_shared_t *sh, int64_t n) {
    mag_run_shared_t *states = atomic_load_explicit(&sh->buf, memory_order_acquire);
    if (states) return states;
    mag_run_shared_t *mine = malloc((size_t)n * sizeof(*mine));
    if (!mine) return NULL;
    for (int64_t i = 0; i < n; ++i) {
        atomic_init(&mine[i].claimed, 0);
        atomic_init(&mine[i].finished, 0);
        atomic_init(&mine[i].buf, NULL);
    }
    void *none = NULL;
    if (atomic_compare_exchange_strong(&sh->buf, &none, mine)) return mine;
    free(mine);
    return none;
}

static void k_linear_concat(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    const mag_tensor_t *x = a->in[0], *y = a->out;
    const int64_t n_w = a->n_in - 1, m = x->shape[0], k = x->shape[1], es = (int64_t)mag_dtype_info(y->dtype)->size;
    mag_run_shared_t *states = nt > 1 ? product_states(a->shared, n_w) : NULL;
    bool ok = nt == 1 || states;
    uint8_t *out = mag_tensor_data(y);
    for (int64_t i = 0, col = 0; i < n_w && ok; col += a->in[1 + i]->shape[0], ++i) {
        const mag_tensor_t *w = a->in[1 + i];
        ok = mag_gemm(y->dtype, m, w->shape[0], k, mag_tensor_data(x), x->strides[0], x->strides[1], mag_tensor_data(w),
                      w->strides[1], w->strides[0], out + col * es, y->strides[0], y->strides[1], 1.0f, 0.0f, ti, nt,
                      states ? &states[i] : NULL);
    }
    if (!ok) atomic_store(a->status, MAG_ERR_MEMORY);
    if (nt > 1 && atomic_fetch_add_explicit(&a->shared->finished, 1, memory_order_acq_rel) == nt - 1)
        free(atomic_load(&a->shared->buf));
}

#define REG_MATMUL(ID, ST, CT, CTN) t[MAG_OP_MATMUL][MAG_DTYPE_##ID] = k_matmul_##ID;
static void register_matmul(mag_kernel_table_t t) {
    GEMM_DTYPES(REG_MATMUL)
    t[MAG_OP_MATMUL][MAG_DTYPE_FLOAT32] = t[MAG_OP_MATMUL][MAG_DTYPE_FLOAT16] = t[MAG_OP_MATMUL][MAG_DTYPE_BFLOAT16] =
        k_matmul_engine;
    t[MAG_OP_LINEAR_CONCAT][MAG_DTYPE_FLOAT32] = t[MAG_OP_LINEAR_CONCAT][MAG_DTYPE_FLOAT16] =
        t[MAG_OP_LINEAR_CONCAT][MAG_DTYPE_BFLOAT16] = k_linear_concat;
}
