/*
 * The GEMM driver: splits C between the caller's threads, blocks each share for the caches
 * (BLIS loop order: nc columns of B, kc depths, mc rows of A) and runs the path's packers and
 * microkernel. Each thread packs its own panels into scratch memory that it keeps between calls.
 */
#include "pack.h"
#include "core/internal.h"
#include "cpu/cpuinfo.h"
#include "cpu/iter.h"

#include <pthread.h>
#include <stdlib.h>

bool mag_gemm_supports(mag_dtype_t dt) {
    return dt == MAG_DTYPE_FLOAT32 || dt == MAG_DTYPE_FLOAT16 || dt == MAG_DTYPE_BFLOAT16;
}

/* ---- per-thread scratch: grown on demand, kept for the next call, freed when the thread exits ---- */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local struct {
    void *p;
    size_t n;
} scratch;

static void scratch_key_init(void) { (void)pthread_key_create(&scratch_key, free); }

static void *scratch_get(size_t n) {
    if (scratch.n >= n) return scratch.p;
    free(scratch.p);
    scratch.p = NULL;
    scratch.n = 0;
    n = (size_t)mag_gemm_roundup((int64_t)n, 1 << 16);
    void *p = aligned_alloc(64, n);
    if (!p) return NULL;
    pthread_once(&scratch_once, scratch_key_init);
    (void)pthread_setspecific(scratch_key, p);
    scratch.p = p;
    scratch.n = n;
    return p;
}

/* ---- the portable epilogue (mag_gemm_epi_fn) ---- */
void mag_gemm_epilogue_generic(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c, int64_t rsc,
                     int64_t csc, float alpha, float beta) {
    for (int64_t i = 0; i < m; ++i, t += ldt) {
        if (dt == MAG_DTYPE_FLOAT32) {
            float *ci = (float *)c + i * rsc;
            if (csc == 1 && beta == 0.0f)
                for (int64_t j = 0; j < n; ++j) ci[j] = alpha * t[j];
            else if (csc == 1)
                for (int64_t j = 0; j < n; ++j) ci[j] = alpha * t[j] + beta * ci[j];
            else
                for (int64_t j = 0; j < n; ++j) /* beta == 0: not read, and -0.0 stays -0.0 */
                    ci[j * csc] = beta == 0.0f ? alpha * t[j] : alpha * t[j] + beta * ci[j * csc];
            continue;
        }
        uint16_t *ci = (uint16_t *)c + i * rsc;
        bool bf = dt == MAG_DTYPE_BFLOAT16;
        for (int64_t j = 0; j < n; ++j) {
            uint16_t *d = ci + j * csc;
            float v = alpha * t[j];
            if (beta != 0.0f) v += beta * (bf ? mag_bf16_to_f32(*d) : mag_f16_to_f32(*d));
            *d = bf ? mag_f32_to_bf16(v) : mag_f32_to_f16(v);
        }
    }
}

typedef struct job {
    mag_dtype_t dt;
    size_t es;
    int64_t M, N, K;
    const uint8_t *A, *B;
    uint8_t *C;
    int64_t rsa, csa, rsb, csb, rsc, csc;
    float alpha, beta;
} job_t;

#define ELEM(base, i, j, rs, cs, es) ((base) + ((i) * (rs) + (j) * (cs)) * (int64_t)(es))

/* Low-precision outputs over several depth blocks keep float32 partial sums here, not in C. */
#define PARTIAL_BYTES_MAX ((int64_t)32 << 20)

/*
 * Largest block of packed B for reading A in place: every register tile of A rows passes the
 * whole block, which must stay in L2 beside them (prefill's 128 x 1024 blocks gain ~20% in
 * place). The 0.76x of torch once measured in place at bf16 2048^3 with 1 MiB blocks came from
 * its 4 KiB row stride (L1_WAY_BYTES); at 1024^3, 1 MiB blocks in place measure as packed.
 */
#define IN_PLACE_B_BYTES ((int64_t)512 << 10)

/*
 * An L1 way (sets x line size). Rows of A a multiple of it apart all fall into one L1 set, and a
 * register microkernel reads its 14 tile rows word by word. Where the L1 has fewer than 12 ways
 * they evict each other, and such A is packed (measured on an earlier machine: bf16 prefill
 * 128 x 2048 x 1024 read in place 290 GFLOP/s at 2 threads, packed 380). A 12-way L1 keeps
 * them (Sapphire Rapids, float32 x @ W.T 128 x 3072 x 1024 with the weights cold, 1 thread:
 * packed 124 GFLOP/s, in place 150), and a microkernel whose depth step spans whole lines (AMX:
 * 32 bf16 depths, one 64-byte line a row per tile load) is not hurt anywhere.
 */
#define L1_WAY_BYTES 4096
#define LINE_BYTES 64
#define L1_WAYS_FOR_A_TILE 12

/*
 * Whether the microkernel reads A in place: its rows hold whole depth words contiguously, in
 * distinct L1 sets, in the packed element type (the float32 kernel widens float16 while packing).
 */
static bool reads_a_in_place(const job_t *g, const mag_gemm_kernel_t *k) {
    int64_t b_block = mag_gemm_roundup(mag_gemm_min(g->N, k->nc), k->nr) *
                      mag_gemm_min(mag_gemm_roundup(g->K, k->kq), k->kc) * k->esz;
    bool set_conflicts = (g->rsa * (int64_t)g->es) % L1_WAY_BYTES == 0 && k->kq * k->esz < LINE_BYTES &&
                         mag_cpu_id()->l1d_ways < L1_WAYS_FOR_A_TILE;
    return k->ukr_rows && k->esz == (int)g->es && g->csa == 1 && g->K % k->kq == 0 && b_block <= IN_PLACE_B_BYTES &&
           !set_conflicts;
}

/* Whether a tile of mm rows writes just those rows of c (a short microkernel or the whole tile). */
static inline bool writes_rows_only(const mag_gemm_kernel_t *k, int64_t mm) { return mm == k->mr || k->ukr_short; }

/* A register tile of mm rows: A from its packed panel (lda == 0) or in place (rows lda bytes apart). */
static inline void tile_mul(const mag_gemm_kernel_t *k, int64_t mm, int64_t kc, const uint8_t *a, int64_t lda,
                            const uint8_t *b, float *c, int64_t ldc, bool acc) {
    if (lda)
        k->ukr_rows(kc, a, lda, b, c, ldc, acc);
    else if (mm < k->mr && k->ukr_short)
        k->ukr_short((int)mm, kc, a, b, c, ldc, acc);
    else
        k->ukr(kc, a, b, c, ldc, acc);
}

/*
 * Largest B packed whole (all columns, all depths) for A read in place: half the L2, the rest for
 * the A tiles streaming past and the next ones on their way (1 MiB where the L2 is unknown).
 */
static int64_t whole_b_bytes(void) {
    uint64_t l2 = mag_cpu_id()->l2_bytes;
    return l2 ? (int64_t)(l2 / 2) : (int64_t)1 << 20;
}

/* Whether columns [n0, n1) of B, all depths, pack into one L2-sized block for A read in place. */
static bool whole_b(const job_t *g, const mag_gemm_kernel_t *k, int64_t n0, int64_t n1) {
    return reads_a_in_place(g, k) &&
           mag_gemm_roundup(n1 - n0, k->nr) * mag_gemm_roundup(g->K, k->kq) * k->esz <= whole_b_bytes();
}

/* Whether the threads of a call can take rows of C on demand: A in place, one block of B for all. */
static bool rows_on_demand(const job_t *g, const mag_gemm_kernel_t *k, int64_t nt, mag_run_shared_t *sh) {
    return sh && nt > 1 && whole_b(g, k, 0, g->N);
}

/*
 * Rows [m0, m1) x columns [n0, n1) of C. A read in place goes one register tile of rows at a
 * time (mc = mr), so those rows stay in L1 while every B panel of the block passes them. B that
 * fits (whole_b) is packed whole: no depth blocks, whose float32 partial sums cost more than a
 * longer panel (AMX, 1 thread, 128 x 6144 x 1024 in 512-depth blocks: 700 GFLOP/s, whole: 860).
 * With a claim counter (rows_on_demand) the rows are claimed as they go.
 */
static bool gemm_block(const job_t *g, const mag_gemm_kernel_t *k, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                       atomic_int_fast64_t *claimed, int64_t nt) {
    const int64_t mr = k->mr, nr = k->nr, kq = k->kq;
    const bool in_place = reads_a_in_place(g, k), whole = claimed || whole_b(g, k, n0, n1);
    int64_t ncb = whole ? mag_gemm_roundup(n1 - n0, nr) : mag_gemm_min(k->nc, mag_gemm_roundup(n1 - n0, nr));
    int64_t kcb = mag_gemm_min(k->kc, mag_gemm_roundup(g->K, kq));
    if (whole) kcb = mag_gemm_roundup(g->K, kq);
    else if (in_place) /* a narrow B (few rows of x) takes deeper blocks: fewer passes over C */
        kcb = mag_gemm_min(mag_gemm_roundup(g->K, kq), mag_gemm_max(kcb, IN_PLACE_B_BYTES / (ncb * k->esz) / kq * kq));
    int64_t mcb = in_place ? mr : mag_gemm_min(k->mc, mag_gemm_roundup(m1 - m0, mr));
    bool partial = g->dt != MAG_DTYPE_FLOAT32 && g->K > kcb;
    int64_t ldp = ncb, mb = m1 - m0;
    if (partial && mag_gemm_roundup(mb, mr) * ldp * 4 > PARTIAL_BYTES_MAX)
        mb = mag_gemm_roundup(PARTIAL_BYTES_MAX / (ldp * 4), mcb);
    size_t a_bytes = (size_t)mag_gemm_roundup(mcb * kcb * k->esz, 64);
    size_t b_bytes = (size_t)mag_gemm_roundup(ncb * kcb * k->esz, 64);
    size_t t_bytes = (size_t)mag_gemm_roundup(mr * nr * 4, 64);
    size_t p_bytes = partial ? (size_t)(mag_gemm_roundup(mb, mr) * ldp * 4) : 0;
    uint8_t *buf = scratch_get(a_bytes + b_bytes + t_bytes + p_bytes);
    if (!buf) return false;
    if (k->enter) k->enter();
    uint8_t *ap = buf, *bp = buf + a_bytes;
    float *tile = (float *)(bp + b_bytes), *pbuf = (float *)((uint8_t *)tile + t_bytes);
    const size_t es = g->es;
    for (int64_t mb0 = m0; mb0 < m1; mb0 += mb) {
        int64_t mb1 = mag_gemm_min(m1, mb0 + mb);
        for (int64_t jc = n0; jc < n1; jc += ncb) {
            int64_t nc = mag_gemm_min(ncb, n1 - jc);
            for (int64_t pc = 0; pc < g->K; pc += kcb) {
                int64_t kc = mag_gemm_min(kcb, g->K - pc), kcp = mag_gemm_roundup(kc, kq);
                bool first = pc == 0, last = pc + kc >= g->K;
                k->pack_b(g->dt, nc, kc, ELEM(g->B, pc, jc, g->rsb, g->csb, es), g->csb, g->rsb, bp);
                int64_t ic = mb0, ic_end = claimed ? mb0 : mb1;
                for (; ic < ic_end || (claimed && mag_claim(claimed, mb1, nt, mr, &ic, &ic_end)); ic += mcb) {
                    int64_t mc = mag_gemm_min(mcb, ic_end - ic);
                    int64_t lda = in_place && mc == mr ? g->rsa * (int64_t)es : 0;
                    if (!lda) k->pack_a(g->dt, mc, kc, ELEM(g->A, ic, pc, g->rsa, g->csa, es), g->rsa, g->csa, ap);
                    for (int64_t jr = 0; jr < nc; jr += nr) {
                        int64_t nn = mag_gemm_min(nr, nc - jr);
                        const uint8_t *bpan = bp + (size_t)(jr * kcp * k->esz);
                        for (int64_t ir = 0; ir < mc; ir += mr) {
                            int64_t mm = mag_gemm_min(mr, mc - ir), i = ic + ir, j = jc + jr;
                            const uint8_t *apan =
                                lda ? ELEM(g->A, i, pc, g->rsa, 1, es) : ap + (size_t)(ir * kcp * k->esz);
                            uint8_t *cij = ELEM(g->C, i, j, g->rsc, g->csc, es);
                            if (partial) {
                                float *pt = pbuf + (i - mb0) * ldp + jr;
                                tile_mul(k, mm, kcp, apan, lda, bpan, pt, ldp, !first);
                                if (last) k->epi(g->dt, mm, nn, pt, ldp, cij, g->rsc, g->csc, g->alpha, g->beta);
                                continue;
                            }
                            float beta = first ? g->beta : 1.0f;
                            if (g->dt == MAG_DTYPE_FLOAT32 && g->csc == 1 && writes_rows_only(k, mm) && nn == nr &&
                                g->alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
                                tile_mul(k, mm, kcp, apan, lda, bpan, (float *)cij, g->rsc, beta == 1.0f);
                            } else {
                                tile_mul(k, mm, kcp, apan, lda, bpan, tile, nr, false);
                                k->epi(g->dt, mm, nn, tile, nr, cij, g->rsc, g->csc, g->alpha, beta);
                            }
                        }
                    }
                }
            }
        }
    }
    if (k->leave) k->leave();
    return true;
}

/* Share idx of parts over [0, n) in whole units of `align`. */
static void share(int64_t n, int64_t parts, int64_t idx, int64_t align, int64_t *b, int64_t *e) {
    int64_t units = (n + align - 1) / align;
    *b = mag_gemm_min(units * idx / parts * align, n);
    *e = mag_gemm_min(units * (idx + 1) / parts * align, n);
}

/*
 * Threads as a tm x tn grid over C: the least multiply-plus-packing work for the busiest thread
 * (packing an element ~ 16 multiply-adds; A read in place still costs its memory traffic, ~2).
 */
static void grid(const job_t *g, const mag_gemm_kernel_t *k, int64_t nt, int64_t *tm, int64_t *tn) {
    int64_t um = (g->M + k->mr - 1) / k->mr, un = (g->N + k->nr - 1) / k->nr, best = INT64_MAX;
    int64_t a_cost = reads_a_in_place(g, k) ? 2 : 16;
    for (int64_t a = 1; a <= nt; ++a) {
        if (nt % a) continue;
        int64_t r = (um + a - 1) / a * k->mr, c = (un + nt / a - 1) / (nt / a) * k->nr;
        int64_t cost = r * c + a_cost * r * ((c + k->nc - 1) / k->nc) + 16 * c;
        if (cost < best) best = cost, *tm = a, *tn = nt / a;
    }
}

/*
 * Up to this many rows of A take the GEMV kernels (W streamed once per MAG_GEMV_MAX_M rows); more
 * take the packed GEMM, which reads B once for all rows but pads rows to whole register tiles
 * and packs all of B (measured: 16 x 3072 x 1024 f32, 4 GEMV passes 1.7 ms, GEMM 3.3 ms).
 */
#define GEMV_MAX_ROWS 16

/* Columns [n0, n1) of C from x (A's rows in float32): dot products with B's columns or sums of its rows. */
static void gemv_cols(const job_t *g, const mag_gemv_kernel_t *v, mag_gemm_epi_fn epi, const float *x, float *y,
                      int64_t n0, int64_t n1) {
    int64_t n = n1 - n0, gm = mag_gemm_min(g->M, MAG_GEMV_MAX_M);
    const uint8_t *w = ELEM(g->B, 0, n0, g->rsb, g->csb, g->es);
    for (int64_t r0 = 0; r0 < g->M; r0 += gm) {
        int64_t m = mag_gemm_min(gm, g->M - r0);
        if (g->rsb == 1)
            v->dot(g->dt, m, n, g->K, x + r0 * g->K, w, g->csb, y);
        else
            v->axpy(g->dt, m, n, g->K, x + r0 * g->K, w, g->rsb, y);
        epi(g->dt, m, n, y, n, ELEM(g->C, r0, n0, g->rsc, g->csc, g->es), g->rsc, g->csc, g->alpha, g->beta);
    }
}

/*
 * x @ W for one row x and W's rows contiguous: each share sums its own run of W's rows (one
 * sequential stream; splitting the columns instead gives every thread two interleaved
 * half-row streams, measured ~10% slower from memory) into its partial row in sh->buf, and the
 * last share to finish adds the partials in share order (the same bits for every run at one
 * thread count) and stores C.
 */
static bool gemv_rows_split(const job_t *g, const mag_gemv_kernel_t *v, mag_gemm_epi_fn epi, const float *x,
                            int64_t ti, int64_t nt, mag_run_shared_t *sh) {
    const int64_t n = g->N;
    float *buf = atomic_load_explicit(&sh->buf, memory_order_acquire);
    if (!buf) {
        float *mine = aligned_alloc(64, (size_t)mag_gemm_roundup(nt * n * (int64_t)sizeof(float), 64));
        void *none = NULL;
        if (!mine) return false;
        if (atomic_compare_exchange_strong(&sh->buf, &none, mine)) buf = mine;
        else free(mine), buf = none;
    }
    int64_t p0, p1;
    share(g->K, nt, ti, 8, &p0, &p1);
    float *part = buf + ti * n;
    if (p0 < p1) v->axpy(g->dt, 1, n, p1 - p0, x + p0, ELEM(g->B, p0, 0, g->rsb, 1, g->es), g->rsb, part);
    else memset(part, 0, (size_t)n * sizeof(float));
    if (atomic_fetch_add_explicit(&sh->finished, 1, memory_order_acq_rel) != nt - 1) return true;
    for (int64_t t = 1; t < nt; ++t)
        for (int64_t j = 0; j < n; ++j) buf[j] += buf[t * n + j];
    epi(g->dt, 1, n, buf, n, g->C, g->rsc, g->csc, g->alpha, g->beta);
    free(buf);
    return true;
}

/*
 * Few rows of A and B with a unit stride: stream B, as dot products or row sums by its layout.
 * With shared state, dot products take their columns on demand and one row's sums split the rows.
 */
static bool gemv(const job_t *g, const mag_gemv_kernel_t *v, mag_gemm_epi_fn epi, int64_t ti, int64_t nt,
                 mag_run_shared_t *sh) {
    int64_t n0, n1, most = mag_gemm_roundup((g->N + nt - 1) / nt, 64), gm = mag_gemm_min(g->M, MAG_GEMV_MAX_M);
    bool on_demand = sh && nt > 1 && g->rsb == 1, rows_split = sh && nt > 1 && g->rsb != 1 && g->M == 1;
    float *x = scratch_get((size_t)(g->M * g->K + gm * most) * sizeof(float));
    if (!x) return false;
    float *y = x + g->M * g->K;
    for (int64_t r = 0; r < g->M; ++r)
        for (int64_t p = 0; p < g->K; ++p) x[r * g->K + p] = gemm_ld(g->dt, ELEM(g->A, r, p, g->rsa, g->csa, g->es), 0);
    if (rows_split) return gemv_rows_split(g, v, epi, x, ti, nt, sh);
    if (!on_demand) {
        share(g->N, nt, ti, 64, &n0, &n1);
        if (n0 < n1) gemv_cols(g, v, epi, x, y, n0, n1);
        return true;
    }
    while (mag_claim(&sh->claimed, g->N, nt, 64, &n0, &n1)) gemv_cols(g, v, epi, x, y, n0, n1);
    return true;
}

/* K == 0: C = beta * C over this thread's rows. */
static void scale_rows(const job_t *g, int64_t ti, int64_t nt) {
    static const float zeros[64];
    int64_t m0, m1;
    share(g->M, nt, ti, 1, &m0, &m1);
    for (int64_t i = m0; i < m1; ++i)
        for (int64_t j = 0; j < g->N; j += 64)
            mag_gemm_epilogue_generic(g->dt, 1, mag_gemm_min(64, g->N - j), zeros, 0,
                                      ELEM(g->C, i, j, g->rsc, g->csc, g->es), g->rsc, g->csc, g->alpha, g->beta);
}

/* Rows of x that x @ W.T reads W in place for even when x^T does not pack whole (see mag_gemm_with). */
#define NARROW_X_ROWS 128

/* The same product as C^T = B^T A^T. */
static job_t transposed(const job_t *g) {
    return (job_t){g->dt, g->es, g->N, g->M, g->K, g->B, g->A, g->C, g->csb, g->rsb, g->csa, g->rsa, g->csc, g->rsc,
                   g->alpha, g->beta};
}

bool mag_gemm_with(const mag_gemm_kernel_t *k, const mag_gemv_kernel_t *v, mag_dtype_t dt, int64_t M, int64_t N,
                   int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B, int64_t rsb, int64_t csb, void *C,
                   int64_t rsc, int64_t csc, float alpha, float beta, int64_t ti, int64_t nt,
                   mag_run_shared_t *shared) {
    if (M <= 0 || N <= 0 || ti >= nt) return true;
    job_t g = {dt, mag_dtype_info(dt)->size, M, N, K, A, B, C, rsa, csa, rsb, csb, rsc, csc, alpha, beta};
    if (K <= 0) {
        scale_rows(&g, ti, nt);
        return true;
    }
    if (N == 1 && M > 1) /* a matrix times a vector: solve C^T = B^T A^T, a GEMV */
        g = transposed(&g);
    if (v && g.M <= GEMV_MAX_ROWS && (g.rsb == 1 || g.csb == 1)) return gemv(&g, v, k->epi, ti, nt, shared);
    /*
     * x @ W.T (W's rows depth-contiguous) with few rows in x: C^T = W x^T reads W in place and
     * packs x^T. That pays while x is narrow, its x^T packing whole into L2 or at most 128 rows;
     * wider, W's tiles pass too many x panels (1 thread: float32 384 x 3072 x 768 in place 125
     * GFLOP/s, packed 148; bfloat16 on AMX 1024 x 3072 x 1024 in place 727, packed 902).
     */
    if (g.rsb == 1 && g.csb != 1 && g.csa == 1 && g.M < g.N) {
        job_t t = transposed(&g);
        if (reads_a_in_place(&t, k) && (t.N <= NARROW_X_ROWS || whole_b(&t, k, 0, t.N))) g = t;
    }
    if (rows_on_demand(&g, k, nt, shared)) return gemm_block(&g, k, 0, g.M, 0, g.N, &shared->claimed, nt);
    int64_t tm = 1, tn = 1, m0, m1, n0, n1;
    grid(&g, k, nt, &tm, &tn);
    share(g.M, tm, ti / tn, k->mr, &m0, &m1);
    share(g.N, tn, ti % tn, k->nr, &n0, &n1);
    if (m0 >= m1 || n0 >= n1) return true;
    return gemm_block(&g, k, m0, m1, n0, n1, NULL, nt);
}

bool mag_gemm(mag_dtype_t dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa,
              const void *B, int64_t rsb, int64_t csb, void *C, int64_t rsc, int64_t csc, float alpha, float beta,
              int64_t ti, int64_t nt, mag_run_shared_t *shared) {
    mag_gemm_path_t p = mag_gemm_path();
    return mag_gemm_with(mag_gemm_kernel(p, dt), mag_gemv_kernel(p), dt, M, N, K, A, rsa, csa, B, rsb, csb, C, rsc,
                         csc, alpha, beta, ti, nt, shared);
}

bool mag_gemm_batched(mag_dtype_t dt, int64_t batch, int64_t M, int64_t N, int64_t K, const void *A, int64_t bsa,
                      int64_t rsa, int64_t csa, const void *B, int64_t bsb, int64_t rsb, int64_t csb, void *C,
                      int64_t bsc, int64_t rsc, int64_t csc, float alpha, float beta, int64_t ti, int64_t nt,
                      mag_run_shared_t *shared) {
    int64_t es = (int64_t)mag_dtype_info(dt)->size, b0 = 0, b1 = batch, sub_ti = ti, sub_nt = nt;
    if (batch % nt == 0 || batch >= 4 * nt) { /* whole matrices per thread */
        share(batch, nt, ti, 1, &b0, &b1);
        sub_ti = 0, sub_nt = 1;
    }
    bool ok = true;
    for (int64_t b = b0; b < b1; ++b)
        ok &= mag_gemm(dt, M, N, K, (const uint8_t *)A + b * bsa * es, rsa, csa, (const uint8_t *)B + b * bsb * es, rsb,
                       csb, (uint8_t *)C + b * bsc * es, rsc, csc, alpha, beta, sub_ti, sub_nt,
                       batch == 1 ? shared : NULL);
    return ok;
}
