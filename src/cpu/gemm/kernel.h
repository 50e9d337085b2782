/*
 * What a GEMM implementation path provides: packers, a register-blocked microkernel and its
 * cache blocking, plus the two GEMV kernels. gemm.c drives them; each ISA file fills one in.
 */
#ifndef MAG_CPU_GEMM_KERNEL_H
#define MAG_CPU_GEMM_KERNEL_H

#include "gemm.h"
#include "../read_ahead.h"

#include <stddef.h>

/*
 * Pack rows [0, m) and depths [0, k) of X (element (i, p) at X[i*rs + p*cs], dtype dt) into
 * ceil(m / r) panels of r rows each (r = mr for A, nr for B, where X is B transposed). The
 * layout inside a panel is the microkernel's; rows past m and depths past k are zero.
 */
typedef void (*mag_gemm_pack_fn)(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs,
                                 void *dst);

/*
 * c[i*ldc + j] (= or +=) sum over the kc depths of a-panel row i times b-panel column j, for the
 * full mr x nr tile; acc selects += (the later depth blocks) over = (the first).
 */
typedef void (*mag_gemm_ukr_fn)(int64_t kc, const void *a, const void *b, float *c, int64_t ldc, bool acc);

/*
 * The microkernel with A read in place instead of packed: row i of the tile starts at byte
 * a + i*lda and holds its kc depths contiguously (read as kq-depth words). Optional; paths that
 * have it skip packing A whose depths are contiguous, which gemm.c arranges for x @ W.T too.
 */
typedef void (*mag_gemm_ukr_rows_fn)(int64_t kc, const void *a, int64_t lda, const void *b, float *c, int64_t ldc,
                                     bool acc);

/* The microkernel for the first m < mr rows of a packed A panel (rows m.. of c untouched). */
typedef void (*mag_gemm_ukr_short_fn)(int m, int64_t kc, const void *a, const void *b, float *c, int64_t ldc,
                                      bool acc);

/* C[i*rsc + j*csc] = alpha * t[i*ldt + j] + beta * C[...] over m x n, in C's dtype (beta == 0: C not read). */
typedef void (*mag_gemm_epi_fn)(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c,
                                int64_t rsc, int64_t csc, float alpha, float beta);

typedef struct mag_gemm_kernel {
    int mr, nr;         /* register tile */
    int kq;             /* packed depths are padded to a multiple of kq (pairs for vdpbf16ps, 32 for AMX) */
    int esz;            /* bytes per packed element */
    int64_t mc, kc, nc; /* cache blocks: mc a multiple of mr, nc of nr, kc of kq */
    mag_gemm_pack_fn pack_a, pack_b;
    mag_gemm_ukr_fn ukr;
    mag_gemm_ukr_rows_fn ukr_rows;   /* NULL: A is always packed */
    mag_gemm_ukr_short_fn ukr_short; /* NULL: the last rows of A run as a zero-padded whole tile */
    mag_gemm_epi_fn epi;
    void (*enter)(void), (*leave)(void); /* around a thread's share, when the microkernel holds state (AMX tiles) */
} mag_gemm_kernel_t;

/*
 * GEMV for m <= MAG_GEMV_MAX_M rows of x (float32, contiguous: row r at x + r*k), n outputs per
 * row (y row r at y + r*n), depth k, W of dtype dt:
 * dot:  y[r][j] = sum_p x[r][p] * w[j*ldw + p]   (rows of W contiguous: x @ W.T, the nn.Linear layout)
 * axpy: y[r][j] = sum_p x[r][p] * w[p*ldw + j]   (x @ W)
 */
#define MAG_GEMV_MAX_M 4
typedef void (*mag_gemv_fn)(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w,
                            int64_t ldw, float *y);

typedef struct mag_gemv_kernel {
    mag_gemv_fn dot, axpy;
} mag_gemv_kernel_t;

/* Calls fn(dt, MX, ...) with dt and the row count MX (1..MAG_GEMV_MAX_M) as constants: one inlined body each. */
#define MAG_GEMV_BY_ROWS(fn, dt, mx, ...)                                                                              \
    switch (mx) {                                                                                                      \
    case 1: fn(dt, 1, __VA_ARGS__); break;                                                                             \
    case 2: fn(dt, 2, __VA_ARGS__); break;                                                                             \
    case 3: fn(dt, 3, __VA_ARGS__); break;                                                                             \
    default: fn(dt, 4, __VA_ARGS__);                                                                                   \
    }
#define MAG_GEMV_BY_DTYPE(fn, dt, ...)                                                                                 \
    switch (dt) {                                                                                                      \
    case MAG_DTYPE_FLOAT16: MAG_GEMV_BY_ROWS(fn, MAG_DTYPE_FLOAT16, __VA_ARGS__) break;                                \
    case MAG_DTYPE_BFLOAT16: MAG_GEMV_BY_ROWS(fn, MAG_DTYPE_BFLOAT16, __VA_ARGS__) break;                              \
    default: MAG_GEMV_BY_ROWS(fn, MAG_DTYPE_FLOAT32, __VA_ARGS__)                                                      \
    }
/*
 * The entry points of a SIMD GEMV file that defines dot_t(dt, MX, n, k, x, w, ldw, y) and
 * axpy_rows(dt, MX, R, n, k, p, x, w, ldw, y) (R rows of W from depth p into y).
 * x @ W: y[r] = sum_p x[r][p] * w[p*ldw ...]. With y in L1 (MX * n <= 4096), one row of W per
 * pass, so W (or this thread's share of each row) is read strictly in order: on Zen 4 that
 * matched the x @ W.T stream (1x768x3072 f32, one thread, from DRAM: 29-30 vs 29-31 GB/s), where
 * 16 interleaved rows per pass read 26-27 and 4-8 rows 21-25. With y in L2 (n = 151936), each
 * pass takes R rows, which cuts y's loads and stores R-fold: 27 GB/s against 22 one row a time.
 */
#define MAG_GEMV_KERNEL(name)                                                                                          \
    static inline __attribute__((always_inline)) void axpy_t(const mag_dtype_t dt, const int MX, int64_t n, int64_t k, \
                                                               const float *x, const void *w, int64_t ldw, float *y) { \
        const int R = MX == 1 ? 8 : 4; /* broadcast x values stay in registers */                                      \
        for (int64_t j = 0; j < MX * n; ++j) y[j] = 0.0f;                                                              \
        int64_t p = 0;                                                                                                 \
        if (MX * n > 4096)                                                                                             \
            for (; p + R <= k; p += R) axpy_rows(dt, MX, R, n, k, p, x, w, ldw, y);                                    \
        for (; p < k; ++p) axpy_rows(dt, MX, 1, n, k, p, x, w, ldw, y);                                                \
    }                                                                                                                  \
    static void dot(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,       \
                    float *y) {                                                                                        \
        MAG_GEMV_BY_DTYPE(dot_t, dt, m, n, k, x, w, ldw, y)                                                            \
    }                                                                                                                  \
    static void axpy(mag_dtype_t dt, int64_t m, int64_t n, int64_t k, const float *x, const void *w, int64_t ldw,      \
                     float *y) {                                                                                       \
        MAG_GEMV_BY_DTYPE(axpy_t, dt, m, n, k, x, w, ldw, y)                                                           \
    }                                                                                                                  \
    const mag_gemv_kernel_t name = {.dot = dot, .axpy = axpy};

void mag_gemm_epilogue_generic(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c, int64_t rsc,
                               int64_t csc, float alpha, float beta);
extern const mag_gemm_kernel_t mag_gemm_f32_generic;
extern const mag_gemv_kernel_t mag_gemv_generic;
#if defined(__x86_64__)
void mag_gemm_epilogue_avx2(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c, int64_t rsc,
                            int64_t csc, float alpha, float beta);
extern const mag_gemm_kernel_t mag_gemm_f32_avx2;
extern const mag_gemv_kernel_t mag_gemv_avx2;
void mag_gemm_epilogue_avx512(mag_dtype_t dt, int64_t m, int64_t n, const float *t, int64_t ldt, void *c, int64_t rsc,
                              int64_t csc, float alpha, float beta);
extern const mag_gemm_kernel_t mag_gemm_f32_avx512;
extern const mag_gemm_kernel_t mag_gemm_bf16_avx512;
extern const mag_gemm_kernel_t mag_gemm_bf16_amx;
extern const mag_gemv_kernel_t mag_gemv_avx512;
extern const mag_gemv_kernel_t mag_gemv_bf16_avx512;
#endif

/* mag_gemm with the given kernels; v == NULL sends small M through the GEMM kernels too. */
bool mag_gemm_with(const mag_gemm_kernel_t *k, const mag_gemv_kernel_t *v, mag_dtype_t dt, int64_t M, int64_t N,
                   int64_t K, const void *A, int64_t rsa, int64_t csa, const void *B, int64_t rsb, int64_t csb, void *C,
                   int64_t rsc, int64_t csc, float alpha, float beta, int64_t ti, int64_t nt,
                   mag_run_shared_t *shared);

/* The kernels of path p for dtype dt (path.c). */
const mag_gemm_kernel_t *mag_gemm_kernel(mag_gemm_path_t p, mag_dtype_t dt);
const mag_gemv_kernel_t *mag_gemv_kernel(mag_gemm_path_t p);

/* Packed bf16 pairs are read and written as 32-bit words. */
typedef uint32_t mag_gemm_u32 __attribute__((may_alias));

static inline int64_t mag_gemm_roundup(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static inline int64_t mag_gemm_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t mag_gemm_max(int64_t a, int64_t b) { return a > b ? a : b; }

#endif
