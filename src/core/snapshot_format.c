/* Pieces of the .mag format used by both the reader and the writer. */
#include "snapshot.h"

#include <stdlib.h>

/* Format dtype codes are fixed by docs/format.md; the enum order of dtypes.def may change. */
static const struct {
    mag_dtype_t dt;
    uint32_t code;
} dtype_codes[] = {
    {MAG_DTYPE_FLOAT32, 0}, {MAG_DTYPE_FLOAT16, 1}, {MAG_DTYPE_BFLOAT16, 2}, {MAG_DTYPE_FLOAT64, 3},
    {MAG_DTYPE_BOOLEAN, 4}, {MAG_DTYPE_INT8, 5},    {MAG_DTYPE_UINT8, 6},    {MAG_DTYPE_INT16, 7},
    {MAG_DTYPE_UINT16, 8},  {MAG_DTYPE_INT32, 9},   {MAG_DTYPE_UINT32, 10},  {MAG_DTYPE_INT64, 11},
    {MAG_DTYPE_UINT64, 12},
};
_Static_assert(sizeof(dtype_codes) / sizeof(dtype_codes[0]) == MAG_DTYPE__COUNT, "every dtype needs a format code");

uint32_t mag_snap_dtype_code(mag_dtype_t dt) {
    for (size_t i = 0; i < MAG_DTYPE__COUNT; ++i)
        if (dtype_codes[i].dt == dt) return dtype_codes[i].code;
    return UINT32_MAX;
}

bool mag_snap_dtype_from_code(uint32_t code, mag_dtype_t *out) {
    for (size_t i = 0; i < MAG_DTYPE__COUNT; ++i)
        if (dtype_codes[i].code == code) {
            *out = dtype_codes[i].dt;
            return true;
        }
    return false;
}

bool mag_snap_valid_utf8(const uint8_t *s, uint64_t n) {
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    for (uint64_t i = 0; i < n;) {
        if (n - i >= 8) { /* ASCII runs (most of any JSON) eight bytes at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        /* lead byte -> sequence length; overlong forms, surrogates and > U+10FFFF are invalid */
        uint64_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
        if (!len || len > n - i) return false;
        uint32_t cp = c & (0x7F >> len);
        for (uint64_t k = 1; k < len; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

bool mag_snap_valid_name(const uint8_t *s, uint64_t n) {
    return n > 0 && n <= SNAP_MAX_NAME && !memchr(s, 0, n) && mag_snap_valid_utf8(s, n);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

const char *mag_snap_find_duplicate(const char *const *names, int64_t n) {
    if (n < 2) return NULL;
    const char **sorted = malloc((size_t)n * sizeof(*sorted));
    if (!sorted) { /* no memory for the fast path: the quadratic one still answers */
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = i + 1; j < n; ++j)
                if (!strcmp(names[i], names[j])) return names[i];
        return NULL;
    }
    memcpy(sorted, names, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), cmp_names);
    const char *dup = NULL;
    for (int64_t i = 1; i < n && !dup; ++i)
        if (!strcmp(sorted[i - 1], sorted[i])) dup = sorted[i];
    free(sorted);
    return dup;
}

uint32_t mag_snap_header_crc(const uint8_t *file, uint64_t end) {
    static const uint8_t zero[4];
    uint32_t crc = mag_crc32c(0, file, SNAP_CRC_FIELD);
    crc = mag_crc32c(crc, zero, 4);
    return mag_crc32c(crc, file + SNAP_CRC_FIELD + 4, (size_t)(end - SNAP_CRC_FIELD - 4));
}
