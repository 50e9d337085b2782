/*
 * GEMM engine test runner: every path this machine supports (and the AMX kernel with its tiles
 * emulated), every dtype, edge sizes, every operand layout (row- and column-major, general and
 * negative strides), alpha/beta, GEMV shapes and thread shares, against a float64 reference.
 * Also checks that C outside the view is never written and that beta == 0 never reads C.
 *
 *   magnetron_test_gemm [--path generic|avx2|avx512|avx512bf16|amx|amx-emulated] [--quick]
 * Exit status 0 when every case passes; prints one line per failure and a summary.
 */
#include "cpu/gemm/kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MAG_TEST_AMX_EMULATED
extern const mag_gemm_kernel_t mag_gemm_bf16_amx_emulated;
#endif

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

static float to_dt(mag_dtype_t dt, double v) { /* v rounded to dt, as float */
    if (dt == MAG_DTYPE_FLOAT16) return mag_f16_to_f32(mag_f32_to_f16((float)v));
    if (dt == MAG_DTYPE_BFLOAT16) return mag_bf16_to_f32(mag_f32_to_bf16((float)v));
    return (float)v;
}
static void put(mag_dtype_t dt, void *buf, int64_t i, float v) {
    if (dt == MAG_DTYPE_FLOAT32)
        ((float *)buf)[i] = v;
    else
        ((uint16_t *)buf)[i] = dt == MAG_DTYPE_FLOAT16 ? mag_f32_to_f16(v) : mag_f32_to_bf16(v);
}
static float get(mag_dtype_t dt, const void *buf, int64_t i) {
    if (dt == MAG_DTYPE_FLOAT32) return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return dt == MAG_DTYPE_FLOAT16 ? mag_f16_to_f32(h) : mag_bf16_to_f32(h);
}

/* Operand layouts: element (i, j) of an m x n matrix at base + i*rs + j*cs. */
enum { ROW, COL, GAPS, NEG, N_LAYOUTS };
static const char *const layout_names[N_LAYOUTS] = {"row", "col", "gaps", "neg"};

typedef struct mat {
    int64_t m, n, rs, cs, base, len; /* len: elements in the buffer; base: index of (0, 0) */
    void *buf;
} mat_t;

static mat_t mat_new(mag_dtype_t dt, int64_t m, int64_t n, int layout) {
    mat_t x = {.m = m, .n = n};
    switch (layout) {
    case ROW: x.rs = n, x.cs = 1; break;
    case COL: x.rs = 1, x.cs = m; break;
    case GAPS: x.rs = 2, x.cs = 2 * m + 3; break;
    default: x.rs = -n, x.cs = -1; break;
    }
    int64_t lo = (m - 1) * (x.rs < 0 ? x.rs : 0) + (n - 1) * (x.cs < 0 ? x.cs : 0);
    int64_t hi = (m - 1) * (x.rs > 0 ? x.rs : 0) + (n - 1) * (x.cs > 0 ? x.cs : 0);
    x.base = -lo;
    x.len = hi - lo + 1;
    x.buf = malloc((size_t)x.len * 4);
    for (int64_t i = 0; i < x.len; ++i) put(dt, x.buf, i, NAN); /* outside the view: must stay NaN */
    return x;
}
static int64_t at(const mat_t *x, int64_t i, int64_t j) { return x->base + i * x->rs + j * x->cs; }
static void *origin(mag_dtype_t dt, const mat_t *x) {
    return (uint8_t *)x->buf + (size_t)x->base * mag_dtype_info(dt)->size;
}

typedef struct path_case {
    const char *name;
    const mag_gemm_kernel_t *k; /* NULL: the path mag_gemm_set_path(path) selects */
    mag_gemm_path_t path;
} path_case_t;

static int64_t n_cases, n_failed;

static bool run_gemm(const path_case_t *pc, mag_dtype_t dt, int64_t M, int64_t N, int64_t K, const mat_t *a,
                     const mat_t *b, mat_t *c, float alpha, float beta, int64_t ti, int64_t nt,
                     mag_run_shared_t *shared) {
    if (pc->k)
        return mag_gemm_with(pc->k, NULL, dt, M, N, K, origin(dt, a), a->rs, a->cs, origin(dt, b), b->rs, b->cs,
                             origin(dt, c), c->rs, c->cs, alpha, beta, ti, nt, NULL);
    return mag_gemm(dt, M, N, K, origin(dt, a), a->rs, a->cs, origin(dt, b), b->rs, b->cs, origin(dt, c), c->rs,
                    c->cs, alpha, beta, ti, nt, shared);
}

/* One multiplication, checked element by element against the float64 reference. */
static void check(const path_case_t *pc, mag_dtype_t dt, int64_t M, int64_t N, int64_t K, int la, int lb, int lc,
                  float alpha, float beta, int64_t nt) {
    ++n_cases;
    mat_t a = mat_new(dt, M, K, la), b = mat_new(dt, K, N, lb), c = mat_new(dt, M, N, lc);
    double *c0 = malloc((size_t)(M * N) * sizeof(double));
    for (int64_t i = 0; i < M; ++i)
        for (int64_t p = 0; p < K; ++p) put(dt, a.buf, at(&a, i, p), to_dt(dt, rnd_unit()));
    for (int64_t p = 0; p < K; ++p)
        for (int64_t j = 0; j < N; ++j) put(dt, b.buf, at(&b, p, j), to_dt(dt, rnd_unit()));
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            /* beta == 0 must ignore C, NaN included */
            float v = beta == 0.0f && (i + j) % 3 == 0 ? NAN : to_dt(dt, rnd_unit());
            put(dt, c.buf, at(&c, i, j), v);
            c0[i * N + j] = v;
        }
    bool ok = true;
    /* every other case gives the shares shared state: they then take work on demand (here in turn) */
    mag_run_shared_t state = {0, 0, NULL}, *shared = n_cases % 2 ? &state : NULL;
    for (int64_t ti = 0; ti < nt; ++ti) ok &= run_gemm(pc, dt, M, N, K, &a, &b, &c, alpha, beta, ti, nt, shared);
    /* accumulation in float32 plus one rounding to the output dtype */
    double tol = dt == MAG_DTYPE_FLOAT32 ? 1e-5 : dt == MAG_DTYPE_FLOAT16 ? 1.5e-3 : 8e-3;
    int64_t bad = 0;
    for (int64_t i = 0; i < M && ok; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double s = 0.0, mag = 0.0;
            for (int64_t p = 0; p < K; ++p) {
                double x = get(dt, a.buf, at(&a, i, p)), y = get(dt, b.buf, at(&b, p, j));
                s += x * y;
                mag += fabs(x * y);
            }
            double cterm = beta == 0.0f ? 0.0 : beta * c0[i * N + j];
            double ref = alpha * s + cterm;
            /* + half the f16 subnormal spacing: a tiny result rounds to it */
            double bound = tol * (fabs(alpha) * mag + fabs(cterm)) + (dt == MAG_DTYPE_FLOAT16 ? 3e-8 : 1e-30);
            double got = get(dt, c.buf, at(&c, i, j));
            if (!(fabs(got - ref) <= bound) && bad++ < 3)
                printf("  [%lld,%lld] got %.9g want %.9g (bound %.3g)\n", (long long)i, (long long)j, got, ref, bound);
        }
    int64_t outside = 0; /* every element off the view must still be NaN */
    for (int64_t i = 0; i < c.len; ++i) outside += !isnan(get(dt, c.buf, i));
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) outside -= !isnan(get(dt, c.buf, at(&c, i, j)));
    if (!ok || bad || outside) {
        ++n_failed;
        printf("FAIL %s %s M=%lld N=%lld K=%lld A=%s B=%s C=%s alpha=%g beta=%g nt=%lld: %lld wrong, %lld written "
               "outside%s\n",
               pc->name, mag_dtype_info(dt)->name, (long long)M, (long long)N, (long long)K, layout_names[la],
               layout_names[lb], layout_names[lc], alpha, beta, (long long)nt, (long long)bad, (long long)outside,
               ok ? "" : ", out of memory");
    }
    free(a.buf), free(b.buf), free(c.buf), free(c0);
}

/* Batched, with a broadcast B (stride 0) and both thread splits (whole matrices; parts of each). */
static void check_batched(const path_case_t *pc, mag_dtype_t dt, int64_t batch, int64_t nt) {
    ++n_cases;
    enum { M = 9, N = 20, K = 13 };
    size_t es = mag_dtype_info(dt)->size;
    uint8_t *a = malloc((size_t)(batch * M * K) * es), *b = malloc((size_t)(K * N) * es);
    uint8_t *c = malloc((size_t)(batch * M * N) * es);
    for (int64_t i = 0; i < batch * M * K; ++i) put(dt, a, i, to_dt(dt, rnd_unit()));
    for (int64_t i = 0; i < K * N; ++i) put(dt, b, i, to_dt(dt, rnd_unit()));
    for (int64_t ti = 0; ti < nt; ++ti)
        mag_gemm_batched(dt, batch, M, N, K, a, M * K, K, 1, b, 0, N, 1, c, M * N, N, 1, 1.0f, 0.0f, ti, nt, NULL);
    int64_t bad = 0;
    for (int64_t x = 0; x < batch; ++x)
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0.0, mag = 0.0;
                for (int64_t p = 0; p < K; ++p) {
                    double v = (double)get(dt, a, x * M * K + i * K + p) * get(dt, b, p * N + j);
                    s += v, mag += fabs(v);
                }
                bad += !(fabs(get(dt, c, x * M * N + i * N + j) - s) <= 1e-2 * mag + 1e-6);
            }
    if (bad) {
        ++n_failed;
        printf("FAIL %s %s batched batch=%lld nt=%lld: %lld wrong\n", pc->name, mag_dtype_info(dt)->name,
               (long long)batch, (long long)nt, (long long)bad);
    }
    free(a), free(b), free(c);
}

static const float alphas[] = {1.0f, 1.0f, 0.5f, -2.0f}, betas[] = {0.0f, 1.0f, -0.75f, 0.0f};

/*
 * The path's epilogue stores the same bits as the portable one where C is not read (beta == 0):
 * rounding ties, NaN, infinities, float16 overflow and subnormals, on full vectors and tails, into
 * a row-major and a column-major C.
 */
static void check_epilogue(const path_case_t *pc, mag_dtype_t dt) {
    ++n_cases;
    enum { M = 3, N = 45 };
    static const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3e-39f, 65504.0f, 65519.0f,
                                    65520.0f, -1e6f, 1.00390625f, 1.01171875f, 1.0009765625f, 6e-8f, 3e-5f, 2.5f};
    const int n_special = (int)(sizeof(special) / sizeof(special[0]));
    size_t es = mag_dtype_info(dt)->size;
    float t[M * N];
    for (int i = 0; i < M * N; ++i) t[i] = i % 2 ? special[i / 2 % n_special] : (float)rnd_unit() * 100.0f;
    const uint32_t nan_payload = 0x7f80ffffu; /* a NaN that rounding like a number would change */
    memcpy(&t[3], &nan_payload, 4);
    uint8_t got[M * N * 4], want[M * N * 4];
    const mag_gemm_kernel_t *k = pc->k ? pc->k : mag_gemm_kernel(pc->path, dt);
    int64_t bad = 0;
    for (int col_major = 0; col_major < 2; ++col_major)
        for (float alpha = 1.0f; alpha > -3.0f; alpha -= 3.0f) {
            int64_t rsc = col_major ? 1 : N, csc = col_major ? M : 1;
            memset(got, 0x5a, sizeof got), memset(want, 0x5a, sizeof want);
            k->epi(dt, M, N, t, N, got, rsc, csc, alpha, 0.0f);
            mag_gemm_epilogue_generic(dt, M, N, t, N, want, rsc, csc, alpha, 0.0f);
            bad += memcmp(got, want, (size_t)(M * N) * es) != 0;
        }
    if (bad) {
        ++n_failed;
        printf("FAIL %s %s epilogue: bits differ from the portable one\n", pc->name, mag_dtype_info(dt)->name);
    }
}

static void run_path(const path_case_t *pc, const mag_dtype_t *dts, int n_dts, bool quick) {
    static const int64_t edge[] = {1, 7, 15, 16, 17, 33, 255};
    const int n_edge = quick ? 6 : 7;
    for (int d = 0; d < n_dts; ++d) {
        mag_dtype_t dt = dts[d];
        int64_t before = n_failed;
        /* edge sizes in every dimension, layouts and scalars drawn at random */
        for (int x = 0; x < n_edge; ++x)
            for (int y = 0; y < n_edge; ++y)
                for (int z = 0; z < n_edge; ++z) {
                    int s = (int)(rnd() % 4);
                    check(pc, dt, edge[x], edge[y], edge[z], (int)(rnd() % N_LAYOUTS), (int)(rnd() % N_LAYOUTS),
                          (int)(rnd() % N_LAYOUTS), alphas[s], betas[s], 1 + (int64_t)(rnd() % 3));
                }
        /* every layout combination, every alpha/beta pair */
        for (int la = 0; la < N_LAYOUTS; ++la)
            for (int lb = 0; lb < N_LAYOUTS; ++lb)
                for (int lc = 0; lc < N_LAYOUTS; ++lc)
                    for (int s = 0; s < 4; ++s) check(pc, dt, 19, 37, 23, la, lb, lc, alphas[s], betas[s], 2);
        /* GEMV (small M, and N == 1 solved transposed) in both weight layouts, and past the cache blocks */
        static const int64_t big[][3] = {{1, 1000, 700},  {1, 4100, 33},  {1, 70, 3000},   {900, 1, 300},
                                         {1, 1, 513},     {2, 300, 513},  {200, 90, 1100}, {40, 2100, 20},
                                         {300, 260, 700}, {5, 5000, 3},   {3, 1000, 700},  {8, 2000, 64},
                                         {4, 64, 3000},   {9, 300, 200},  {16, 100, 90},   {17, 100, 90},
                                         {60, 300, 2100}};
        for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); ++i)
            for (int lb = 0; lb < N_LAYOUTS; ++lb) {
                if (quick && lb >= 2) continue;
                int s = (int)(rnd() % 4);
                check(pc, dt, big[i][0], big[i][1], big[i][2], (int)(rnd() % N_LAYOUTS), lb, ROW, alphas[s], betas[s],
                      1 + (int64_t)(rnd() % 2));
            }
        static const int64_t batches[][2] = {{1, 2}, {5, 3}, {6, 3}, {9, 2}}; /* (batch, threads) */
        for (int i = 0; i < 4 && !pc->k; ++i) check_batched(pc, dt, batches[i][0], batches[i][1]);
        check_epilogue(pc, dt);
        /* K == 0: C = beta * C */
        check(pc, dt, 5, 9, 0, ROW, ROW, GAPS, 1.0f, -0.5f, 2);
        check(pc, dt, 5, 9, 0, ROW, ROW, ROW, 1.0f, 0.0f, 1);
        printf("%-12s %-8s %s\n", pc->name, mag_dtype_info(dt)->name, n_failed == before ? "ok" : "FAILED");
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *only = NULL;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--path") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else {
            fprintf(stderr, "usage: %s [--path NAME] [--quick]\n", argv[0]);
            return 2;
        }
    }
    static const mag_dtype_t all[] = {MAG_DTYPE_FLOAT32, MAG_DTYPE_FLOAT16, MAG_DTYPE_BFLOAT16};
    printf("initial path: %s\n", mag_gemm_path_name(mag_gemm_path())); /* the detected or MAGNETRON_GEMM_PATH one */
    int ran = 0;
    for (int p = 0; p < MAG_GEMM__COUNT; ++p) {
        path_case_t pc = {mag_gemm_path_name((mag_gemm_path_t)p), NULL, (mag_gemm_path_t)p};
        if (only && strcmp(only, pc.name)) continue;
        if (!mag_gemm_set_path(pc.path)) {
            printf("%-12s not supported here: skipped\n", pc.name);
            continue;
        }
        run_path(&pc, all, 3, quick);
        ++ran;
    }
#ifdef MAG_TEST_AMX_EMULATED
    if (!only || !strcmp(only, "amx-emulated")) {
        path_case_t pc = {"amx-emulated", &mag_gemm_bf16_amx_emulated, MAG_GEMM_AMX};
        static const mag_dtype_t bf16[] = {MAG_DTYPE_BFLOAT16};
        if (mag_gemm_path_supported(MAG_GEMM_AVX512)) {
            run_path(&pc, bf16, 1, true);
            ++ran;
        } else {
            printf("%-12s not supported here (its packers need AVX-512): skipped\n", pc.name);
        }
    }
#endif
    printf("%lld cases, %lld failed, %d paths\n", (long long)n_cases, (long long)n_failed, ran);
    return n_failed || !ran ? 1 : 0;
}
