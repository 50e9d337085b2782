/*
 * Graph capture: between mag_graph_begin and mag_graph_end every kernel launch of this thread runs
 * as usual and is also recorded (kernel, tensors, attributes); mag_graph_replay launches the same
 * kernels again on the same tensors, with none of the front ends' validation, shape inference,
 * allocation or Python in between. A decode step of a language model is ~800 small launches
 * whose host-side cost is a tenth of the step; replayed, it is the launches alone.
 *
 * The graph holds a reference to every tensor it launches on, so intermediate results keep their
 * storage and a replay writes them where the capture did. What may change between replays is the
 * data of those tensors (a token id, a position), never their shapes or addresses. Front ends that
 * read or write tensor data on the host between launches (MAG_OPF_HOST) cannot be captured, nor
 * can ops that autograd records. Random ops draw fresh numbers on every replay.
 */
#include "autograd.h"
#include "op.h"

#include <stdlib.h>
#include <string.h>

typedef struct launch {
    mag_kernel_fn fn;
    mag_op_t op;
    mag_dtype_t key;
    mag_tensor_t *out; /* may be NULL */
    mag_tensor_t **in;
    int64_t n_in;
    mag_scalar_t *attrs;
    int64_t n_attrs;
    int64_t work;
    bool single_thread;
    bool parallel;         /* the backend runs it on several threads */
    int64_t next_parallel; /* the first parallel launch after this one, -1 if none */
} launch_t;

struct mag_graph {
    launch_t *launches;
    int64_t n, cap;
    bool done; /* capture ended: replayable */
};

static _Thread_local mag_graph_t *capturing;

bool mag_graph_capturing(void) { return capturing != NULL; }

mag_status_t mag_graph_begin(mag_graph_t **out) {
    *out = NULL;
    if (capturing) return mag_error(MAG_ERR_RUNTIME, "graph capture: this thread is already capturing a graph");
    mag_graph_t *g = calloc(1, sizeof(*g));
    if (!g) return mag_error(MAG_ERR_MEMORY, "graph capture: out of memory");
    capturing = *out = g;
    return MAG_OK;
}

mag_status_t mag_graph_end(mag_graph_t *g) {
    if (!g || capturing != g) return mag_error(MAG_ERR_RUNTIME, "graph capture: this graph is not being captured");
    capturing = NULL;
    g->done = true;
    const mag_backend_t *be = mag_cpu_backend();
    for (int64_t i = g->n - 1, next = -1; i >= 0; --i) {
        launch_t *l = &g->launches[i];
        l->parallel = be->parallel(l->work, l->single_thread);
        l->next_parallel = next;
        if (l->parallel) next = i;
    }
    return MAG_OK;
}

int64_t mag_graph_launches(const mag_graph_t *g) { return g ? g->n : 0; }

static void launch_free(launch_t *l) {
    mag_tensor_release(l->out);
    for (int64_t i = 0; i < l->n_in; ++i) mag_tensor_release(l->in[i]);
    free(l->in);
    free(l->attrs);
}

void mag_graph_free(mag_graph_t *g) {
    if (!g) return;
    if (capturing == g) capturing = NULL;
    for (int64_t i = 0; i < g->n; ++i) launch_free(&g->launches[i]);
    free(g->launches);
    free(g);
}

mag_status_t mag_graph_check(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_tensor_t *dst) {
    if (!capturing) return MAG_OK;
    const mag_op_info_t *info = mag_op_info(op);
    if (info->flags & MAG_OPF_HOST)
        return mag_error(MAG_ERR_RUNTIME,
                         "%s: cannot be captured in a graph (its front end reads tensor values on the host, which a "
                         "replay would skip)",
                         info->name);
    if (mag_grad_recording() && ((dst && dst->requires_grad) || mag_needs_grad(in, n_in)))
        return mag_error(MAG_ERR_RUNTIME,
                         "%s: cannot be captured in a graph while autograd records it (an input requires grad); "
                         "capture under no_grad",
                         info->name);
    return MAG_OK;
}

mag_status_t mag_graph_record(mag_kernel_fn fn, mag_op_t op, mag_dtype_t key, mag_tensor_t *out,
                              mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs, int64_t n_attrs,
                              int64_t work, bool single_thread) {
    mag_graph_t *g = capturing;
    if (g->n == g->cap) {
        int64_t cap = g->cap ? 2 * g->cap : 256;
        launch_t *grown = realloc(g->launches, (size_t)cap * sizeof(*grown));
        if (!grown) return mag_error(MAG_ERR_MEMORY, "graph capture: out of memory recording %lld launches", (long long)cap);
        g->launches = grown;
        g->cap = cap;
    }
    launch_t l = {fn, op, key, out, NULL, n_in, NULL, n_attrs, work, single_thread, false, -1};
    l.in = n_in ? malloc((size_t)n_in * sizeof(*l.in)) : NULL;
    l.attrs = n_attrs ? malloc((size_t)n_attrs * sizeof(*l.attrs)) : NULL;
    if ((n_in && !l.in) || (n_attrs && !l.attrs)) {
        free(l.in);
        free(l.attrs);
        return mag_error(MAG_ERR_MEMORY, "graph capture: out of memory");
    }
    if (n_in) memcpy(l.in, in, (size_t)n_in * sizeof(*l.in));
    if (n_attrs) memcpy(l.attrs, attrs, (size_t)n_attrs * sizeof(*l.attrs));
    for (int64_t i = 0; i < n_in; ++i) mag_tensor_retain(l.in[i]);
    if (out) mag_tensor_retain(out);
    g->launches[g->n++] = l;
    return MAG_OK;
}

/*
 * Inputs of at least this many bytes come from memory, not from cache (a decode step's weights and
 * KV cache): while serial launches run, an idle thread reads those of the next parallel launch.
 * Qwen3-0.6B decode: the norms, RoPE and cache writes before attention take ~20 us a layer, in
 * which the keys and values start to arrive (attention 1.41-1.58 -> 1.25-1.40 ms a step), and
 * ~5 us before each projection.
 */
#define PREFETCH_MIN_BYTES ((int64_t)256 << 10)
#define PREFETCH_MAX_RANGES 8

static void prefetch_inputs(const mag_backend_t *be, const launch_t *l) {
    mag_byte_range_t r[PREFETCH_MAX_RANGES];
    int n = 0;
    for (int64_t i = 0; i < l->n_in && n < PREFETCH_MAX_RANGES; ++i) {
        const mag_tensor_t *t = l->in[i];
        int64_t lo, hi;
        mag_tensor_byte_span(t, &lo, &hi);
        if (hi - lo >= PREFETCH_MIN_BYTES) r[n++] = (mag_byte_range_t){t->storage->data + lo, (size_t)(hi - lo)};
    }
    if (n) be->prefetch(r, n);
}

/* Replay g; with ns, ns[i] gets launch i's wall time (a profile). */
static mag_status_t replay(mag_graph_t *g, int64_t *ns) {
    if (!g || !g->done) return mag_error(MAG_ERR_RUNTIME, "graph replay: the graph has not been captured yet");
    if (capturing) return mag_error(MAG_ERR_RUNTIME, "graph replay: not while this thread captures a graph");
    const mag_backend_t *be = mag_cpu_backend();
    mag_status_t s = MAG_OK;
    int64_t ahead = -1; /* the parallel launch whose inputs were last handed to the backend's read-ahead */
    for (int64_t i = 0; i < g->n && s == MAG_OK; ++i) {
        const launch_t *l = &g->launches[i];
        if (!l->parallel && l->next_parallel > ahead) { /* the first of a serial stretch */
            ahead = l->next_parallel;
            prefetch_inputs(be, &g->launches[ahead]);
        }
        uint64_t t0 = ns ? mag_now_ns() : 0;
        s = mag_launch(l->fn, l->op, l->key, l->out, l->in, l->n_in, l->attrs, l->n_attrs, l->work, l->single_thread);
        if (ns) ns[i] = (int64_t)(mag_now_ns() - t0);
    }
    /* nothing reads the graph's tensors once the replay returns (a parallel launch that ran on one
       thread, the pool being busy, or a failed one, may have left a read-ahead running) */
    if (ahead >= 0) be->prefetch_end();
    return s;
}

mag_status_t mag_graph_replay(mag_graph_t *g) { return replay(g, NULL); }

mag_status_t mag_graph_replay_timed(mag_graph_t *g, int64_t *ns) { return replay(g, ns); }

const char *mag_graph_launch_op(const mag_graph_t *g, int64_t i) {
    return g && i >= 0 && i < g->n ? mag_op_info(g->launches[i].op)->name : NULL;
}

mag_tensor_t *mag_graph_launch_out(const mag_graph_t *g, int64_t i) {
    return g && i >= 0 && i < g->n ? g->launches[i].out : NULL;
}
