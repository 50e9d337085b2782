/* What the .mag reader and writer share: the format's constants and codes (docs/format.md). */
#ifndef MAG_SNAPSHOT_H
#define MAG_SNAPSHOT_H

#include "internal.h"

#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error ".mag snapshots are little-endian and mapped in place: a big-endian host needs byte swapping here"
#endif

#define SNAP_MAGIC "\x89MAG\r\n\x1a\n"
#define SNAP_HEADER_SIZE 64
#define SNAP_CRC_FIELD 20 /* byte offset of header_crc32c */
#define SNAP_MAX_NAME 65535
#define SNAP_MIN_ALIGN 64
#define SNAP_MAX_ALIGN 65536

/* Header field offsets. */
enum {
    SNAP_H_VERSION = 8,
    SNAP_H_FLAGS = 12,
    SNAP_H_ALIGNMENT = 16,
    SNAP_H_METADATA_COUNT = 24,
    SNAP_H_TENSOR_COUNT = 32,
    SNAP_H_INDEX_SIZE = 40,
    SNAP_H_DATA_OFFSET = 48,
    SNAP_H_DATA_SIZE = 56,
};

/* Smallest encodings, used to bound counts before anything is allocated. */
#define SNAP_MIN_KV_SIZE (8 + 1 + 4 + 1)             /* key of 1 byte, type, a bool */
#define SNAP_MIN_TENSOR_SIZE (8 + 1 + 4 + 4 + 8 + 8 + 4) /* name of 1 byte, rank 0 */

static inline uint32_t snap_rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t snap_rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline void snap_wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void snap_wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The format's dtype code of a mag dtype, and back (false for unknown codes). */
uint32_t mag_snap_dtype_code(mag_dtype_t dt);
bool mag_snap_dtype_from_code(uint32_t code, mag_dtype_t *out);
bool mag_snap_valid_utf8(const uint8_t *s, uint64_t n);
/* A name or key: 1..SNAP_MAX_NAME bytes of valid UTF-8 without NUL. */
bool mag_snap_valid_name(const uint8_t *s, uint64_t n);
/* The first name that occurs twice among names[0..n), or NULL. */
const char *mag_snap_find_duplicate(const char *const *names, int64_t n);
/* CRC32C of [0, end) of a header+index image, with the checksum field taken as zero. */
uint32_t mag_snap_header_crc(const uint8_t *file, uint64_t end);

#endif
