/*
 * The AMX path for bfloat16: a 32 x 32 float32 tile of C held in four 16 x 16 accumulator
 * tiles; each 32-depth step loads two A tiles (16 rows x 32 depths) and two B tiles (16 depth
 * pairs x 16 columns, the same pair layout vdpbf16ps uses) and issues four tdpbf16ps.
 * Built with -mamx-tile -mamx-bf16 and the AVX-512 flags (every AMX machine has AVX-512 BW),
 * which pack B; runs only after path.c got the OS's tile permission. MAG_GEMM_AMX_EMULATE swaps
 * the tile instructions for C (amx_emulate.h) so AVX-512 machines without AMX can test the
 * packing and tile addressing.
 */
#include "avx512.h"

#ifdef MAG_GEMM_AMX_EMULATE
#include "amx_emulate.h"
#define KERNEL_NAME mag_gemm_bf16_amx_emulated
#define EPILOGUE mag_gemm_epilogue_generic
#else
#include <immintrin.h>
#define KERNEL_NAME mag_gemm_bf16_amx
#define EPILOGUE mag_gemm_epilogue_avx512
#define tile_config(cfg) _tile_loadconfig(cfg)
#define tile_release() _tile_release()
#define tile_zero(t) _tile_zero(t)
#define tile_load(t, p, stride) _tile_loadd(t, p, stride)
#define tile_store(t, p, stride) _tile_stored(t, p, stride)
#define tile_dpbf16ps(c, a, b) _tile_dpbf16ps(c, a, b)
#endif

enum { MR = 32, NR = 32, KB = 32 }; /* KB: depths per tile */

/* A panel: per 32-depth block, 32 rows x 32 depths, so each 16-row tile is 1 KiB contiguous. */
static void pack_a(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    (void)dt;
    const uint16_t *s = x;
    uint16_t *d = dst;
    int64_t kp = mag_gemm_roundup(k, KB);
    for (int64_t i0 = 0; i0 < m; i0 += MR, d += MR * kp) {
        int64_t rows = mag_gemm_min(MR, m - i0);
        for (int64_t q = 0; q < kp; q += KB) {
            uint16_t *blk = d + q * MR;
            int64_t len = mag_gemm_min(KB, k - q);
            for (int64_t i = 0; i < MR; ++i) {
                uint16_t *row = blk + i * KB;
                int64_t n = i < rows ? len : 0;
                const uint16_t *src = s + (i0 + i) * rs + q * cs;
                if (cs == 1)
                    memcpy(row, src, (size_t)n * 2);
                else
                    for (int64_t p = 0; p < n; ++p) row[p] = src[p * cs];
                memset(row + n, 0, (size_t)(KB - n) * 2);
            }
        }
    }
}

/* B panel: depth pairs x 32 columns (pack.h), depths padded to whole tiles. */
static void pack_b(mag_dtype_t dt, int64_t m, int64_t k, const void *x, int64_t rs, int64_t cs, void *dst) {
    (void)dt;
    const int64_t kp = mag_gemm_roundup(k, KB), k2 = mag_gemm_roundup(k, 2);
    uint16_t *d = dst;
    if (rs == 1)
        mag_pack_interleave(m, k, x, cs, d, NR, NR * kp);
    for (int64_t i0 = 0; i0 < m; i0 += NR, d += NR * kp) {
        if (rs != 1) mag_pack_pairs(mag_gemm_min(NR, m - i0), k, (const uint16_t *)x + i0 * rs, rs, cs, d, NR);
        memset(d + k2 * NR, 0, (size_t)((kp - k2) * NR) * 2);
    }
}

typedef struct tile_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_cfg_t;

/* Static, not built on the stack: GCC 12 treats ldtilecfg as reading only the first bytes of its
 * operand and dropped the stores to colsb/rows, so the CPU faulted on an all-zero shape. */
static const tile_cfg_t tile_shapes = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

static void enter(void) { tile_config(&tile_shapes); }

static void leave(void) { tile_release(); }

/*
 * The tile loop, A's two 16-row tiles from rows lda bytes apart (64 for a packed panel, whose
 * 32-depth blocks are a_step bytes apart). Tiles: 0-3 C (row block, column block), 4-5 A, 6-7 B.
 * A read in place streams from memory (weights): the first four calls on a tile (one per B
 * panel of its rows) each ask L2 for 8 of the next tile's 32 rows, a line of each per step, so
 * the next tile's rows arrive while this one computes. 1 thread: x @ W.T 128 x 1024 x 6144
 * with W cold 681-695 -> 794-812 GFLOP/s; 1024^3 864-936 -> 985-996, 4096^3 833-862 -> 902-917.
 */
static inline __attribute__((always_inline)) void tiles(int64_t kc, const uint8_t *a, int64_t lda, int64_t a_step,
                                                          const uint16_t *b, float *c, int64_t ldc, bool acc) {
    size_t sc = (size_t)ldc * sizeof(float);
    float *c1 = c + 16, *c2 = c + 16 * ldc, *c3 = c2 + 16;
    if (acc) {
        tile_load(0, c, sc);
        tile_load(1, c1, sc);
        tile_load(2, c2, sc);
        tile_load(3, c3, sc);
    } else {
        tile_zero(0);
        tile_zero(1);
        tile_zero(2);
        tile_zero(3);
    }
    static _Thread_local struct {
        const uint8_t *a; /* the tile the last call read */
        int calls;        /* calls on it so far */
    } seen;
    if (a != seen.a) seen.a = a, seen.calls = 0;
    int part = seen.calls++;
    /* the next tile may lie past A's end: its address is an integer, never a pointer */
    uintptr_t next = lda != KB * 2 && part < 4 ? (uintptr_t)a + (uintptr_t)((32 + 8 * part) * lda) : 0;
    for (int64_t q = 0; q < kc; q += KB, a += a_step, b += NR * KB) {
        if (next) {
            for (int r = 0; r < 8; ++r) _mm_prefetch((const char *)(next + (uintptr_t)(r * lda)), _MM_HINT_T1);
            next += KB * 2;
        }
        tile_load(4, a, lda);
        tile_load(5, a + 16 * lda, lda);
        tile_load(6, b, NR * 4);
        tile_load(7, b + 32, NR * 4);
        tile_dpbf16ps(0, 4, 6);
        tile_dpbf16ps(1, 4, 7);
        tile_dpbf16ps(2, 5, 6);
        tile_dpbf16ps(3, 5, 7);
    }
    tile_store(0, c, sc);
    tile_store(1, c1, sc);
    tile_store(2, c2, sc);
    tile_store(3, c3, sc);
}

static void ukr(int64_t kc, const void *ap, const void *bp, float *c, int64_t ldc, bool acc) {
    tiles(kc, ap, KB * 2, MR * KB * 2, bp, c, ldc, acc);
}

/* A in place: a tile row is 32 contiguous depths of one row, which tileloadd reads at any stride. */
static void ukr_rows(int64_t kc, const void *ap, int64_t lda, const void *bp, float *c, int64_t ldc, bool acc) {
    tiles(kc, ap, lda, KB * 2, bp, c, ldc, acc);
}

/*
 * Narrow column blocks (nc = 128): a B block of 128 columns reaches 512 KiB (IN_PLACE_B_BYTES)
 * only at 2048 depths, so square products up to K = 2048 run their whole depth in one block and
 * write C once, without float32 partial sums; with nc = 512 those sums (M x 512 floats, 4 MiB at
 * M = 2048) left the L2 between depth blocks and every tile call reloaded its C tile from memory.
 * 1 thread, gemm_lab: 2048^3 710-770 -> 880-935 GFLOP/s, 4096^3 735-790 -> 850-875.
 */
const mag_gemm_kernel_t KERNEL_NAME = {
    .mr = MR, .nr = NR, .kq = KB, .esz = 2, .mc = 32 * 4, .kc = 512, .nc = 128,
    .pack_a = pack_a, .pack_b = pack_b, .ukr = ukr, .ukr_rows = ukr_rows, .epi = EPILOGUE, .enter = enter, .leave = leave,
};
