/* Thread-local error messages: every failing call records why, the binding raises it. */
#include "internal.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char last_error[1024];
static _Thread_local int last_errno;

const char *mag_last_error(void) { return last_error; }
int mag_last_errno(void) { return last_errno; }

mag_status_t mag_error(mag_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    last_errno = 0;
    return st;
}

mag_status_t mag_error_io(int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(last_error))
        snprintf(last_error + n, sizeof(last_error) - (size_t)n, ": %s", strerror(err));
    last_errno = err;
    return MAG_ERR_IO;
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
