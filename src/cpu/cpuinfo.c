/* CPU identification and feature detection; see cpuinfo.h. */
#include "cpuinfo.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const feature_names[MAG_CPUF__COUNT] = {
#define X(id, name) [MAG_CPUF_##id] = name,
    MAG_CPU_FEATURES(X)
#undef X
};

const char *mag_cpu_feature_str(uint32_t bit) { return bit < MAG_CPUF__COUNT ? feature_names[bit] : NULL; }

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

typedef struct regs {
    uint32_t a, b, c, d;
} regs_t;

static regs_t cpuid(uint32_t leaf, uint32_t sub) {
    regs_t r = {0, 0, 0, 0};
    __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
    return r;
}

/* Register state the OS saves on context switch (XCR0); without it the instructions fault. */
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* Linux leaves AMX tile data disabled for a process until it asks (arch_prctl ARCH_REQ_XCOMP_PERM). */
static bool amx_permitted(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return true; /* elsewhere XCR0 alone decides */
#endif
}

#define BIT(r, n) (((r) >> (n)) & 1u)

/* The L1 data and L2 caches from the deterministic cache parameters (Intel leaf 4, AMD 0x8000001D). */
static void detect_caches(mag_cpu_id_t *id, uint32_t leaf) {
    for (uint32_t sub = 0; sub < 16; ++sub) {
        regs_t r = cpuid(leaf, sub);
        uint32_t type = r.a & 0x1F, level = (r.a >> 5) & 0x7;
        if (type == 0) break;
        uint32_t ways = (r.b >> 22) + 1, parts = ((r.b >> 12) & 0x3FF) + 1, line = (r.b & 0xFFF) + 1;
        if (level == 1 && type == 1) id->l1d_ways = ways;
        if (level == 2) id->l2_bytes = (uint64_t)ways * parts * line * ((uint64_t)r.c + 1);
    }
}

static void detect(mag_cpu_id_t *id) {
    uint32_t max_leaf = __get_cpuid_max(0, NULL);
    regs_t r0 = cpuid(0, 0);
    memcpy(id->vendor, &r0.b, 4);
    memcpy(id->vendor + 4, &r0.d, 4);
    memcpy(id->vendor + 8, &r0.c, 4);
    uint32_t max_ext = __get_cpuid_max(0x80000000u, NULL);
    if (max_ext >= 0x80000004u) {
        char brand[49] = {0};
        for (uint32_t i = 0; i < 3; ++i) {
            regs_t r = cpuid(0x80000002u + i, 0);
            memcpy(brand + 16 * i, &r, 16);
        }
        const char *s = brand + strspn(brand, " ");
        snprintf(id->brand, sizeof(id->brand), "%s", s);
    }
    if (memcmp(id->vendor, "AuthenticAMD", 12) == 0) {
        if (max_ext >= 0x8000001Du && BIT(cpuid(0x80000001u, 0).c, 22)) detect_caches(id, 0x8000001Du);
    } else if (max_leaf >= 4) {
        detect_caches(id, 4);
    }
    regs_t r1 = max_leaf >= 1 ? cpuid(1, 0) : (regs_t){0, 0, 0, 0};
    regs_t r7 = max_leaf >= 7 ? cpuid(7, 0) : (regs_t){0, 0, 0, 0};
    regs_t r71 = max_leaf >= 7 && r7.a >= 1 ? cpuid(7, 1) : (regs_t){0, 0, 0, 0};
    uint32_t base_family = (r1.a >> 8) & 0xF, base_model = (r1.a >> 4) & 0xF;
    id->family = base_family + (base_family == 0xF ? (r1.a >> 20) & 0xFF : 0);
    id->model = base_model + (base_family == 0x6 || base_family == 0xF ? ((r1.a >> 16) & 0xF) << 4 : 0);
    id->stepping = r1.a & 0xF;

    uint64_t xcr0 = BIT(r1.c, 27) ? xgetbv0() : 0; /* OSXSAVE: the OS manages XCR0 */
    bool os_avx = (xcr0 & 0x6) == 0x6;               /* XMM + YMM state */
    bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0; /* + opmask, ZMM_Hi256, Hi16_ZMM */
    bool os_amx = (xcr0 & 0x60000) == 0x60000;        /* XTILECFG + XTILEDATA */
    uint64_t f = MAG_CPUF(SSE2); /* part of x86-64 itself */
    struct {
        bool on;
        uint64_t bit;
    } const table[] = {
        {BIT(r1.c, 0), MAG_CPUF(SSE3)},
        {BIT(r1.c, 9), MAG_CPUF(SSSE3)},
        {BIT(r1.c, 19), MAG_CPUF(SSE4_1)},
        {BIT(r1.c, 20), MAG_CPUF(SSE4_2)},
        {BIT(r1.c, 23), MAG_CPUF(POPCNT)},
        {os_avx && BIT(r1.c, 28), MAG_CPUF(AVX)},
        {os_avx && BIT(r1.c, 29), MAG_CPUF(F16C)},
        {os_avx && BIT(r1.c, 12), MAG_CPUF(FMA)},
        {os_avx && BIT(r7.b, 5), MAG_CPUF(AVX2)},
        {os_avx512 && BIT(r7.b, 16), MAG_CPUF(AVX512F)},
        {os_avx512 && BIT(r7.b, 30), MAG_CPUF(AVX512BW)},
        {os_avx512 && BIT(r7.b, 31), MAG_CPUF(AVX512VL)},
        {os_avx512 && BIT(r7.b, 17), MAG_CPUF(AVX512DQ)},
        {os_avx512 && BIT(r7.c, 11), MAG_CPUF(AVX512VNNI)},
        {os_avx512 && BIT(r71.a, 5), MAG_CPUF(AVX512BF16)},
        {os_avx512 && BIT(r7.d, 23), MAG_CPUF(AVX512FP16)},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i)
        if (table[i].on) f |= table[i].bit;
    /* Ask for AMX state only on a CPU that has it: the request is a syscall with process-wide effect. */
    if (os_amx && BIT(r7.d, 24) && amx_permitted()) {
        f |= MAG_CPUF(AMX_TILE);
        if (BIT(r7.d, 22)) f |= MAG_CPUF(AMX_BF16);
        if (BIT(r7.d, 25)) f |= MAG_CPUF(AMX_INT8);
    }
    id->features = f;
}

#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#endif

static void detect(mag_cpu_id_t *id) {
    snprintf(id->vendor, sizeof(id->vendor), "ARM");
    uint64_t f = MAG_CPUF(NEON); /* Advanced SIMD is part of every AArch64 ABI */
#if defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (hw & (1ul << 10)) f |= MAG_CPUF(NEON_FP16);    /* HWCAP_ASIMDHP */
    if (hw & (1ul << 20)) f |= MAG_CPUF(NEON_DOTPROD); /* HWCAP_ASIMDDP */
    if (hw2 & (1ul << 14)) f |= MAG_CPUF(NEON_BF16);   /* HWCAP2_BF16 */
    if (hw2 & (1ul << 13)) f |= MAG_CPUF(NEON_I8MM);   /* HWCAP2_I8MM */
#endif
    id->features = f;
}

#else
static void detect(mag_cpu_id_t *id) { (void)id; }
#endif

static mag_cpu_id_t cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static void detect_once(void) { detect(&cpu); }

const mag_cpu_id_t *mag_cpu_id(void) {
    pthread_once(&cpu_once, detect_once);
    return &cpu;
}

/* ---- usable CPUs ---- */

/* CPUs granted by the quota files in cgroup directory `dir` (0: no limit there). */
static double quota_v2(const char *dir) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/cpu.max", dir);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    long long quota = 0, period = 0;
    int n = fscanf(f, "%lld %lld", &quota, &period); /* "max 100000" reads no number: unlimited */
    fclose(f);
    return n == 2 && quota > 0 && period > 0 ? (double)quota / (double)period : 0;
}

static long long read_ll(const char *dir, const char *file) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    FILE *f = fopen(p, "r");
    long long v = -1;
    if (f) {
        if (fscanf(f, "%lld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

static double quota_v1(const char *dir) {
    long long quota = read_ll(dir, "cpu.cfs_quota_us"), period = read_ll(dir, "cpu.cfs_period_us");
    return quota > 0 && period > 0 ? (double)quota / (double)period : 0;
}

/* The tightest quota from cgroup `path` (below `mount`) up to the root: every ancestor's limit applies. */
static double quota_walk(const char *mount, char *path, double (*quota)(const char *dir)) {
    double best = 0;
    for (;;) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s%s", mount, path);
        double q = quota(dir);
        if (q > 0 && (best == 0 || q < best)) best = q;
        char *slash = strrchr(path, '/');
        if (!slash || (slash == path && path[1] == 0)) return best;
        slash[slash == path] = 0; /* "/a/b" -> "/a" -> "/" */
    }
}

static bool lists_controller(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* CPUs allowed by cgroup (v2 cpu.max or v1 CFS) quotas; 0 when none applies. */
static double cgroup_cpus(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    double best = 0;
    char line[4096];
    while (fgets(line, sizeof(line), f)) { /* "id:controllers:path" */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        *c2 = 0;
        char *path = c2 + 1;
        path[strcspn(path, "\n")] = 0;
        double q = 0;
        if (c1[1] == 0) q = quota_walk("/sys/fs/cgroup", path, quota_v2);
        else if (lists_controller(c1 + 1, "cpu")) q = quota_walk("/sys/fs/cgroup/cpu", path, quota_v1);
        if (q > 0 && (best == 0 || q < best)) best = q;
    }
    fclose(f);
    return best;
}

uint32_t mag_cpu_usable_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) n = CPU_COUNT(&set);
    double quota = cgroup_cpus();
    if (quota > 0 && quota < (double)n) n = (long)ceil(quota);
#endif
    return n < 1 ? 1 : (uint32_t)n;
}
