/*
 * The AMX tile instructions bf16_amx.c uses, in C, for testing its packing and tile
 * addressing on machines without AMX (the test binary builds that file a second time with
 * MAG_GEMM_AMX_EMULATE). Semantics per the Intel SDM: tdpbf16ps adds, per output element, the
 * products of 16 bf16 pairs in float32.
 */
#ifndef MAG_CPU_GEMM_AMX_EMULATE_H
#define MAG_CPU_GEMM_AMX_EMULATE_H

#include <stdint.h>
#include <string.h>

typedef struct emu_tile {
    int rows, colsb;
    uint8_t data[16][64];
} emu_tile_t;

static _Thread_local emu_tile_t emu_tiles[8];

/* The 64-byte config: palette at byte 0, column bytes (u16) from byte 16, rows (u8) from byte 48. */
static inline void tile_config(const void *cfg) {
    const uint8_t *c = cfg;
    for (int t = 0; t < 8; ++t) {
        uint16_t colsb;
        memcpy(&colsb, c + 16 + 2 * t, 2);
        emu_tiles[t].colsb = colsb;
        emu_tiles[t].rows = c[48 + t];
    }
}

static inline void tile_release(void) { memset(emu_tiles, 0, sizeof(emu_tiles)); }
static inline void tile_zero(int t) { memset(emu_tiles[t].data, 0, sizeof(emu_tiles[t].data)); }

static inline void tile_load(int t, const void *p, size_t stride) {
    for (int r = 0; r < emu_tiles[t].rows; ++r)
        memcpy(emu_tiles[t].data[r], (const uint8_t *)p + r * stride, (size_t)emu_tiles[t].colsb);
}

static inline void tile_store(int t, void *p, size_t stride) {
    for (int r = 0; r < emu_tiles[t].rows; ++r)
        memcpy((uint8_t *)p + r * stride, emu_tiles[t].data[r], (size_t)emu_tiles[t].colsb);
}

static inline float emu_bf16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return mag_bf16_to_f32(h);
}

static inline void tile_dpbf16ps(int c, int a, int b) {
    emu_tile_t *tc = &emu_tiles[c], *ta = &emu_tiles[a], *tb = &emu_tiles[b];
    for (int m = 0; m < tc->rows; ++m)
        for (int n = 0; n < tc->colsb / 4; ++n) {
            float acc;
            memcpy(&acc, tc->data[m] + 4 * n, 4);
            for (int k = 0; k < ta->colsb / 4; ++k)
                acc += emu_bf16(ta->data[m] + 4 * k) * emu_bf16(tb->data[k] + 4 * n) +
                       emu_bf16(ta->data[m] + 4 * k + 2) * emu_bf16(tb->data[k] + 4 * n + 2);
            memcpy(tc->data[m] + 4 * n, &acc, 4);
        }
}

#endif
