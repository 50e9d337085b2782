/* Thread-local error messages: every failing call records why, the binding raises it. */
#include "internal.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char last_error[1024];

const char *mag_last_error(void) { return last_error; }

mag_status_t mag_error(mag_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return st;
}

char *mag_shape_str(char *buf, int64_t rank, const int64_t *shape) {
    char *p = buf;
    *p++ = '(';
    for (int64_t i = 0; i < rank; ++i)
        p += sprintf(p, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (rank == 1) *p++ = ',';
    *p++ = ')';
    *p = 0;
    return buf;
}
