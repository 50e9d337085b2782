/*
 * Streaming (non-temporal) stores for outputs too large to stay in the caches: they skip the
 * read-for-ownership a normal store makes of every destination line, so a memory-bound
 * `c = a + b` moves 3 bytes per result byte instead of 4 (measured here on 1e7 float32:
 * 4.7 ms instead of 7.2). Below MAG_STREAM_MIN_BYTES per row a result is likely still in
 * the last-level cache when the next op reads it, so small rows keep plain stores. Binary ops
 * stream; unary ones measured slower streamed (their math keeps the stores from draining in the
 * background) and store plainly.
 */
#ifndef MAG_CPU_KERNELS_STREAM_H
#define MAG_CPU_KERNELS_STREAM_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#define MAG_STREAM_MIN_BYTES ((size_t)8 << 20)

static inline bool mag_stream_worth(size_t bytes) { return bytes >= MAG_STREAM_MIN_BYTES; }

/* dst[0, n) = src[0, n): whole 64-byte lines of dst streamed, the unaligned ends stored plainly. */
static inline void mag_stream_store(void *dst, const void *src, size_t n) {
    uint8_t *d = dst;
    const uint8_t *s = src;
#if defined(__SSE2__)
    size_t head = (size_t)(-(uintptr_t)d & 63);
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
#if defined(__AVX512F__)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
#elif defined(__AVX__)
        _mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
        _mm256_stream_si256((__m256i *)(d + 32), _mm256_loadu_si256((const __m256i *)(s + 32)));
#else
        for (int k = 0; k < 64; k += 16)
            _mm_stream_si128((__m128i *)(d + k), _mm_loadu_si128((const __m128i *)(s + k)));
#endif
    }
#endif
    memcpy(d, s, n);
}

/* Streamed lines are weakly ordered: a row that streamed fences before the workers' barrier publishes it. */
static inline void mag_stream_fence(void) {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

#endif
