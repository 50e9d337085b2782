/*
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
 * Counter-based: element i of a random op uses counter block (offset + i / 4), so results do
 * not depend on how the work is split across threads. Each op reserves its blocks up front.
 */
#include "internal.h"

static atomic_uint_fast64_t rng_seed = 0x853c49e6748fea9bull;
static atomic_uint_fast64_t rng_offset;

void mag_manual_seed(uint64_t seed) {
    atomic_store(&rng_seed, seed);
    atomic_store(&rng_offset, 0);
}

mag_philox_key_t mag_rng_reserve(uint64_t n_blocks) {
    mag_philox_key_t k;
    k.seed = atomic_load(&rng_seed);
    k.offset = atomic_fetch_add(&rng_offset, n_blocks);
    return k;
}

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

void mag_philox4x32(mag_philox_key_t key, uint64_t i, uint32_t out[4]) {
    uint64_t ctr = key.offset + i;
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)key.seed, k1 = (uint32_t)(key.seed >> 32);
    for (int r = 0; r < 10; ++r) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}
