/*
 * Software prefetch for streaming reads. The hardware prefetchers start over at every 4 KiB page
 * and keep too few lines in flight for one core to reach the memory's bandwidth, so loops that
 * stream from memory ask for each line MAG_READ_AHEAD bytes before they load it (Sapphire Rapids,
 * float32 sum over 4096 x 4096 at 1 thread: 0.87-1.00 -> 1.00-1.08 of torch's speed; 4 KiB ahead
 * gained nothing more). Once per 64-byte line: on Zen 3 two or four hints per line (one per 32-
 * or 16-byte vector) read slower than no hints at all.
 */
#ifndef MAG_CPU_READ_AHEAD_H
#define MAG_CPU_READ_AHEAD_H

#define MAG_READ_AHEAD 2048

/* Ask for the line MAG_READ_AHEAD bytes past p (may pass the buffer's end: a hint never faults),
 * where p lies `off` bytes into an unrolled step that starts on a line: only at whole lines. */
#define MAG_AHEAD(p, off)                                                                                              \
    do {                                                                                                               \
        if ((off) % 64 == 0) __builtin_prefetch((const char *)(p) + MAG_READ_AHEAD, 0, 3);                             \
    } while (0)

/*
 * MAG_AHEAD for a plain stream of es-byte elements (sums, GEMV). AVX2 builds ask only for
 * elements narrower than float32: on Zen 3 (the AVX2 machine measured) the float32 streams read
 * slower with hints (sum over 4096 x 4096 at 1 thread 0.78-0.88 of torch's speed with them,
 * 0.98-1.05 without, 1 KiB ahead 0.73-0.85; GPT-2 124M f32 decode 72-80% of the bandwidth bound
 * with them, 84-90% without), while the 16-bit ones, with more work per byte, gain (bfloat16
 * sums over rows 1.09-1.21 -> 1.44-1.61 of torch; Qwen3-0.6B bf16 decode 18.7-19.5 -> 20.4-22.5
 * tok/s). Loops with more work per element use MAG_AHEAD: on Zen 3 the extremes' max over
 * float32 rows went 0.90-0.97 -> 0.95-1.15 with it.
 */
#if defined(__AVX2__) && !defined(__AVX512F__)
#define MAG_AHEAD_STREAM(p, off, es)                                                                                   \
    do {                                                                                                               \
        if ((es) < 4) MAG_AHEAD(p, off);                                                                               \
    } while (0)
#else
#define MAG_AHEAD_STREAM(p, off, es) MAG_AHEAD(p, off)
#endif

#endif
