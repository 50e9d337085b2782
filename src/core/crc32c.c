/*
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of .mag snapshots.
 * x86-64 with SSE4.2 and ARMv8 with the CRC extension have an instruction for it (8 bytes
 * per instruction); everything else uses slicing-by-8 tables. The choice is made once, at
 * the first call, from CPUID / getauxval, so one binary runs everywhere.
 */
#include "internal.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define POLY 0x82F63B78u

static uint32_t table[8][256];

static void table_init(void) {
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
        for (int s = 1; s < 8; ++s) table[s][i] = (table[s - 1][i] >> 8) ^ table[0][table[s - 1][i] & 0xff];
}

static uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t n) {
    for (; n && ((uintptr_t)p & 7); --n) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8); /* little-endian: the first byte is the low byte */
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    }
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    for (; n && ((uintptr_t)p & 7); --n) crc = _mm_crc32_u8(crc, *p++);
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
    }
    crc = (uint32_t)c;
    while (n--) crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
static bool hw_available(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
#define HW_NAME "sse4.2"
#elif defined(__aarch64__)
__attribute__((target("+crc"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    for (; n && ((uintptr_t)p & 7); --n) crc = __crc32cb(crc, *p++);
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        crc = __crc32cd(crc, w);
    }
    while (n--) crc = __crc32cb(crc, *p++);
    return crc;
}
static bool hw_available(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#define HW_NAME "armv8-crc"
#else
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) { return crc_table(crc, p, n); }
static bool hw_available(void) { return false; }
#define HW_NAME "table"
#endif

static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t);
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    table_init();
    crc_impl = hw_available() ? crc_hw : crc_table;
}

uint32_t mag_crc32c(uint32_t crc, const void *data, size_t n) {
    pthread_once(&init_once, crc_init);
    return ~crc_impl(~crc, data, n);
}

uint32_t mag_crc32c_portable(uint32_t crc, const void *data, size_t n) {
    pthread_once(&init_once, crc_init);
    return ~crc_table(~crc, data, n);
}

const char *mag_crc32c_impl(void) {
    pthread_once(&init_once, crc_init);
    return crc_impl == crc_table ? "table" : HW_NAME;
}
