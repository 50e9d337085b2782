/*
 * Software prefetch for streaming reads. The hardware prefetchers start over at every 4 KiB page
 * and keep too few lines in flight for one core to reach the memory's bandwidth, so loops that
 * stream from memory ask for each line MAG_READ_AHEAD bytes before they load it (Sapphire Rapids,
 * float32 sum over 4096 x 4096 at 1 thread: 0.87-1.00 -> 1.00-1.08 of torch's speed; 4 KiB ahead
 * gained nothing more). Once per 64-byte line: on Zen 3 two or four hints per line (one per 32-
 * or 16-byte vector) read slower than no hints at all. Zen 3 keeps up alone with the plainest
 * loops (float32 sums and GEMV, which read slower with hints there), so those AVX2 loops skip them.
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

#endif
