/*
 * The caching allocator. Fresh large buffers cost page faults that dwarf most kernels, and a
 * decode loop asks for the same sizes over and over, so freed blocks are parked in per-size
 * free lists (sizes rounded up to 64 bytes) and handed out again. The cache is capped; a
 * block that does not fit under the cap goes back to the OS.
 */
#include "internal.h"

#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define BUCKETS 512 /* distinct cached sizes; open addressing */
#define CACHE_CAP ((size_t)2 << 30)
#define HUGE_PAGE ((size_t)2 << 20)

typedef struct free_block {
    struct free_block *next;
} free_block_t;

typedef struct bucket {
    size_t size; /* 0 = empty slot */
    free_block_t *head;
} bucket_t;

static bucket_t buckets[BUCKETS];
static size_t cached_bytes;
static atomic_size_t live_bytes;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void lock_acquire(void) {
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
    }
}

static void lock_release(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

static size_t round_size(size_t n) { return (n + MAG_ALIGN - 1) & ~(size_t)(MAG_ALIGN - 1); }

static bucket_t *find_bucket(size_t size, bool create) {
    size_t h = (size / MAG_ALIGN * 0x9e3779b97f4a7c15ull) % BUCKETS;
    for (size_t probe = 0; probe < BUCKETS; ++probe) {
        bucket_t *b = &buckets[(h + probe) % BUCKETS];
        if (b->size == size) return b;
        if (b->size == 0) {
            if (!create) return NULL;
            b->size = size;
            return b;
        }
    }
    return NULL;
}

/*
 * Buffers of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge pages: streaming
 * weights held in memory (cast or converted at load) or a long KV cache touches far more 4 KiB pages
 * than the TLB covers, and in a virtual machine each miss walks two page tables. Measured here: a
 * 311 MB bf16 GEMV reads 1-3% faster when memory is slow and 12-19% when it is fast; cold decode
 * attention over 8 heads x 2048 positions of Qwen3 K/V buffers 55 -> 49 us per layer. Buffers are
 * touched on first use, so a 2 MiB page faults in whole: one allocated and freed without use still
 * costs 2 MiB of RSS once the free list writes its link into it.
 */
static void *alloc_fresh(size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_PAGE) {
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, size) != 0) return NULL;
        madvise(p, size, MADV_HUGEPAGE); /* advice: where THP is off the buffer works the same */
        return p;
    }
#endif
    return aligned_alloc(MAG_ALIGN, size);
}

void *mag_alloc(size_t nbytes) {
    size_t size = round_size(nbytes ? nbytes : 1);
    if (size < nbytes) return NULL; /* overflow */
    void *p = NULL;
    lock_acquire();
    bucket_t *b = find_bucket(size, false);
    if (b && b->head) {
        p = b->head;
        b->head = b->head->next;
        cached_bytes -= size;
    }
    lock_release();
    if (!p) p = alloc_fresh(size);
    if (!p) { /* give the cache back to the OS and try once more */
        mag_alloc_trim();
        p = alloc_fresh(size);
    }
    if (p) atomic_fetch_add(&live_bytes, size);
    return p;
}

void mag_free(void *p, size_t nbytes) {
    if (!p) return;
    size_t size = round_size(nbytes ? nbytes : 1);
    atomic_fetch_sub(&live_bytes, size);
    lock_acquire();
    bucket_t *b = cached_bytes + size <= CACHE_CAP ? find_bucket(size, true) : NULL;
    if (b) {
        free_block_t *fb = p;
        fb->next = b->head;
        b->head = fb;
        cached_bytes += size;
    }
    lock_release();
    if (!b) free(p);
}

void mag_alloc_trim(void) {
    lock_acquire();
    for (size_t i = 0; i < BUCKETS; ++i) {
        while (buckets[i].head) {
            free_block_t *fb = buckets[i].head;
            buckets[i].head = fb->next;
            free(fb);
        }
    }
    cached_bytes = 0;
    lock_release();
}

void mag_alloc_stats(size_t *live, size_t *cached) {
    if (live) *live = atomic_load(&live_bytes);
    if (cached) {
        lock_acquire();
        *cached = cached_bytes;
        lock_release();
    }
}
