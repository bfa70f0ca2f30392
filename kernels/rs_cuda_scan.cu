/* rs_cuda_scan.cu — the state engine on the GPU for teacher-forced chunks (rs_cuda_scan.h): the
 * object (checks, one device allocation, per-layer positions) and the launches. The kernel is in
 * rs_cuda_scan_kernel.cuh (instantiated in rs_cuda_scan_gdn.cu and rs_cuda_scan_mamba2.cu), its
 * on-chip quantizer in rs_cuda_scan_dev.cuh; docs/kernels.md
 * ("Chunked scan for the GPU evaluator") describes the design.
 *
 * Device memory, one cudaMalloc of exactly rs_cuda_scan_bytes():
 *   [run descriptors R x rs_scan_run][run lists R x int][marks R x n_layers x H int64]
 *   [states: run r, layer l, head h, state s at state_off(r) + ((l H + h) ns_r + s) d_v d_k floats]
 * each part starting at a multiple of 256 bytes. Runs with one running state (conv, shared) and
 * with two (split) are launched separately (NS = 1, 2: fewer registers for the former), the latter
 * on a side stream so that the two run side by side (forked from and joined to the caller's stream
 * by events); the run lists map blockIdx.y to the run.
 */
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "replayssm/cuda/rs_cuda_scan.h"
#include "rs_check.h"
#include "rs_cuda_scan_dev.cuh"

struct rs_cuda_scan {
    rs_ssm_kind kind;
    int R, n_layers, H, G, d_v, max_chunk, rpw, n1, n2;
    uint32_t *layer_ids; /* [n_layers] */
    uint64_t *pos;       /* [n_layers] position of each layer (host side) */
    size_t bytes, n_marks, states_bytes;
    unsigned char *slab; /* device */
    rs_scan_run *d_runs;
    int *d_list; /* [n1 one-state runs][n2 two-state runs], each part in ascending run order */
    int *h_list; /* host copy of d_list */
    size_t *h_state_off; /* [R + 1] first state float of each run; [R]: all states */
    int64_t *d_marks;
    float *d_states;
    /* the two-state launch runs beside the one-state launch (different runs, disjoint data): a side
     * stream forked from and joined to the caller's stream by events, created only when both kinds
     * of runs exist */
    cudaStream_t side;
    cudaEvent_t ev_fork, ev_join;
};

/* ---- configuration ------------------------------------------------------------------------- */

static size_t align256_(size_t x) { return (x + 255u) & ~(size_t)255u; }

static bool mul_ok_(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

struct rs_scan_layout {
    size_t off_list, off_marks, off_states, total, n_marks, states_floats;
};

/* Validate cfg as rs_head_init would, plus what the kernels support; fill the layout. */
static rs_status check_cfg_(const rs_cuda_scan_config *cfg, rs_scan_layout *lay, const char *who)
{
    RS_CHECK(cfg, RS_E_INVAL, "%s: NULL config", who);
    RS_CHECK(cfg->kind == RS_SSM_MAMBA2 || cfg->kind == RS_SSM_GDN, RS_E_INVAL, "%s: unknown SSM kind %d", who,
             (int)cfg->kind);
    RS_CHECK(cfg->n_runs >= 1 && cfg->n_layers >= 1 && cfg->heads >= 1 && cfg->key_heads >= 1, RS_E_INVAL,
             "%s: n_runs %d, n_layers %d, heads %d, key_heads %d (each must be >= 1)", who, cfg->n_runs,
             cfg->n_layers, cfg->heads, cfg->key_heads);
    RS_CHECK(cfg->heads % cfg->key_heads == 0, RS_E_INVAL, "%s: heads %d is not a multiple of key_heads %d", who,
             cfg->heads, cfg->key_heads);
    RS_CHECK(cfg->heads <= 65535 && cfg->n_runs <= 65535, RS_E_INVAL, "%s: at most 65535 heads and runs", who);
    RS_CHECK(cfg->d_v >= 1 && cfg->d_k >= 1, RS_E_INVAL, "%s: d_v %d, d_k %d", who, cfg->d_v, cfg->d_k);
    RS_CHECK(cfg->max_chunk >= 1 && cfg->max_chunk <= (1 << 22), RS_E_INVAL, "%s: max_chunk %d outside 1..%d", who,
             cfg->max_chunk, 1 << 22);
    RS_CHECK(cfg->layer_ids && cfg->policies && cfg->windows && cfg->seeds, RS_E_INVAL,
             "%s: NULL layer_ids, policies, windows or seeds", who);
    size_t states = 0;
    const size_t n_el = (size_t)cfg->d_v * (size_t)cfg->d_k;
    for (int r = 0; r < cfg->n_runs; ++r) {
        const rs_policy *p = &cfg->policies[r];
        char buf[96];
        if (rs_policy_print(p, buf, sizeof buf) != RS_OK) {
            char why[256]; /* rs_last_error's buffer is the one rs_error_set writes */
            snprintf(why, sizeof why, "%s", rs_last_error());
            return rs_error_set(RS_E_INVAL, "%s: run %d: invalid policy (%s)", who, r, why);
        }
        RS_CHECK(rs_format_on_gpu(&p->hp) && rs_format_on_gpu(&p->lp), RS_E_UNSUPPORTED,
                 "%s: run %d (%s): e5m2 and MX states have no GPU store; the CPU evaluator runs them", who, r, buf);
        RS_CHECK(!rs_policy_is_replay(p) || cfg->windows[r] >= 1, RS_E_INVAL,
                 "%s: run %d (%s): window L must be >= 1", who, r, buf);
        const size_t bh = rs_format_block(&p->hp), bl = rs_format_block(&p->lp);
        RS_CHECK((bh == 0 || n_el % bh == 0) && (bl == 0 || n_el % bl == 0), RS_E_INVAL,
                 "%s: run %d (%s): a state of %zu elements is not a multiple of the format's block", who, r, buf,
                 n_el);
        states += rs_policy_is_split(p) ? 2u : 1u;
    }
    RS_CHECK(cfg->d_k == RS_SCAN_DK && cfg->d_v % 16 == 0 && cfg->d_v >= 16 && cfg->d_v <= 256, RS_E_UNSUPPORTED,
             "%s: d_k %d, d_v %d: the kernels take d_k = 128 and d_v a multiple of 16 in 16..256", who, cfg->d_k,
             cfg->d_v);
    size_t per_state, floats, marks, mb;
    const bool ok = mul_ok_((size_t)cfg->n_layers * (size_t)cfg->heads, n_el, &per_state) &&
                    mul_ok_(states, per_state, &floats) && floats <= SIZE_MAX / 8 &&
                    mul_ok_((size_t)cfg->n_runs * (size_t)cfg->n_layers, (size_t)cfg->heads, &marks) &&
                    mul_ok_(marks, sizeof(int64_t), &mb);
    RS_CHECK(ok, RS_E_INVAL, "%s: state size overflows", who);
    lay->off_list = align256_((size_t)cfg->n_runs * sizeof(rs_scan_run));
    lay->off_marks = lay->off_list + align256_((size_t)cfg->n_runs * sizeof(int));
    lay->off_states = lay->off_marks + align256_(mb);
    lay->n_marks = marks;
    lay->states_floats = floats;
    RS_CHECK(floats * 4 <= SIZE_MAX - lay->off_states, RS_E_INVAL, "%s: state size overflows", who);
    lay->total = lay->off_states + floats * 4;
    return RS_OK;
}

static rs_scan_fmt dev_fmt_(const rs_format &f)
{
    rs_scan_fmt d;
    d.kind = (int)f.kind;
    d.sr = f.rounding == RS_ROUND_SR;
    d.k = f.sr_bits;
    d.pow2 = f.fp8_pow2;
    d.floor_ = f.nvfp4_floor;
    return d;
}

/* ---- lifetime --------------------------------------------------------------------------------- */

extern "C" size_t rs_cuda_scan_bytes(const rs_cuda_scan_config *cfg)
{
    rs_scan_layout lay;
    return check_cfg_(cfg, &lay, "rs_cuda_scan_bytes") == RS_OK ? lay.total : 0;
}

extern "C" void rs_cuda_scan_free(rs_cuda_scan *s)
{
    if (!s) return;
    if (s->slab) cudaFree(s->slab);
    if (s->ev_fork) cudaEventDestroy(s->ev_fork);
    if (s->ev_join) cudaEventDestroy(s->ev_join);
    if (s->side) cudaStreamDestroy(s->side);
    free(s->layer_ids);
    free(s->pos);
    free(s->h_list);
    free(s->h_state_off);
    free(s);
}

extern "C" rs_status rs_cuda_scan_create(const rs_cuda_scan_config *cfg, rs_cuda_scan **out)
{
    static const char who[] = "rs_cuda_scan_create";
    RS_CHECK(out, RS_E_INVAL, "%s: NULL output", who);
    *out = NULL;
    rs_scan_layout lay;
    RS_TRY(check_cfg_(cfg, &lay, who));
    const int R = cfg->n_runs;
    rs_cuda_scan *s = (rs_cuda_scan *)calloc(1, sizeof *s);
    rs_scan_run *runs = (rs_scan_run *)calloc((size_t)R, sizeof *runs);
    int *list = (int *)calloc((size_t)R, sizeof *list);
    if (s) {
        s->layer_ids = (uint32_t *)calloc((size_t)cfg->n_layers, sizeof *s->layer_ids);
        s->pos = (uint64_t *)calloc((size_t)cfg->n_layers, sizeof *s->pos);
        s->h_list = (int *)calloc((size_t)R, sizeof *s->h_list);
        s->h_state_off = (size_t *)calloc((size_t)R + 1, sizeof *s->h_state_off);
    }
    if (!s || !runs || !list || !s->layer_ids || !s->pos || !s->h_list || !s->h_state_off) {
        rs_cuda_scan_free(s);
        free(runs);
        free(list);
        return rs_error_set(RS_E_NOMEM, "%s: out of host memory", who);
    }
    s->kind = cfg->kind;
    s->R = R, s->n_layers = cfg->n_layers, s->H = cfg->heads, s->G = cfg->key_heads, s->d_v = cfg->d_v;
    s->max_chunk = cfg->max_chunk;
    s->rpw = cfg->d_v <= 64 ? 4 : cfg->d_v <= 128 ? 8 : 16; /* d_v / rpw <= 16 warps */
    memcpy(s->layer_ids, cfg->layer_ids, (size_t)cfg->n_layers * sizeof *s->layer_ids);
    s->bytes = lay.total, s->n_marks = lay.n_marks, s->states_bytes = lay.states_floats * 4;

    const size_t per_state = (size_t)cfg->n_layers * cfg->heads * (size_t)cfg->d_v * cfg->d_k;
    size_t off = 0;
    for (int r = 0; r < R; ++r) {
        const rs_policy *p = &cfg->policies[r];
        rs_scan_run &u = runs[r];
        u.seed = cfg->seeds[r];
        u.L = rs_policy_is_replay(p) ? (uint64_t)cfg->windows[r] : 1u;
        u.state_off = off;
        s->h_state_off[r] = off;
        u.mode = (int)p->mode;
        u.ns = rs_policy_is_split(p) ? 2 : 1;
        u.hp = dev_fmt_(p->hp);
        u.lp = dev_fmt_(p->lp);
        off += (size_t)u.ns * per_state;
    }
    for (int r = 0; r < R; ++r)
        if (runs[r].ns == 1) list[s->n1++] = r;
    for (int r = 0; r < R; ++r)
        if (runs[r].ns == 2) list[s->n1 + s->n2++] = r;
    s->h_state_off[R] = off;
    memcpy(s->h_list, list, (size_t)R * sizeof *list);

    cudaError_t e = cudaSuccess;
    if (s->n1 > 0 && s->n2 > 0) {
        /* the side stream at the highest priority: with both launches pending, the block scheduler
           places the split runs' CTAs (the longest per CTA) first and the one-state runs' fill the
           rest of the SMs (160 CTAs of one SM each at the Qwen3.5-4B shape on 132 SMs) */
        int lo_prio = 0, hi_prio = 0;
        e = cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio);
        if (e == cudaSuccess) e = cudaStreamCreateWithPriority(&s->side, cudaStreamNonBlocking, hi_prio);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->ev_fork, cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->ev_join, cudaEventDisableTiming);
        if (e != cudaSuccess) {
            rs_cuda_scan_free(s);
            free(runs);
            free(list);
            return rs_error_set(RS_E_CUDA, "%s: side stream / events: %s", who, cudaGetErrorString(e));
        }
    }
    e = cudaMalloc((void **)&s->slab, lay.total);
    if (e != cudaSuccess) {
        s->slab = NULL;
        rs_cuda_scan_free(s);
        free(runs);
        free(list);
        return rs_error_set(RS_E_CUDA, "%s: cudaMalloc of %zu bytes failed: %s", who, lay.total, cudaGetErrorString(e));
    }
    s->d_runs = (rs_scan_run *)(void *)s->slab;
    s->d_list = (int *)(void *)(s->slab + lay.off_list);
    s->d_marks = (int64_t *)(void *)(s->slab + lay.off_marks);
    s->d_states = (float *)(void *)(s->slab + lay.off_states);
    e = cudaMemcpy(s->d_runs, runs, (size_t)R * sizeof *runs, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(s->d_list, list, (size_t)R * sizeof *list, cudaMemcpyHostToDevice);
    free(runs);
    free(list);
    rs_status st = e == cudaSuccess ? RS_OK
                                    : rs_error_set(RS_E_CUDA, "%s: upload of the run table failed: %s", who,
                                                   cudaGetErrorString(e));
    if (st == RS_OK) st = rs_cuda_scan_reset(s, 0);
    if (st == RS_OK && (e = cudaStreamSynchronize(0)) != cudaSuccess)
        st = rs_error_set(RS_E_CUDA, "%s: reset failed: %s", who, cudaGetErrorString(e));
    if (st != RS_OK) {
        rs_cuda_scan_free(s);
        return st;
    }
    *out = s;
    return RS_OK;
}

extern "C" rs_status rs_cuda_scan_reset(rs_cuda_scan *s, rs_cuda_stream st)
{
    static const char who[] = "rs_cuda_scan_reset";
    RS_CHECK(s, RS_E_INVAL, "%s: NULL object", who);
    cudaError_t e = cudaMemsetAsync(s->d_states, 0, s->states_bytes, st);
    if (e == cudaSuccess) e = cudaMemsetAsync(s->d_marks, 0xFF, s->n_marks * sizeof(int64_t), st); /* -1 */
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: cudaMemsetAsync failed: %s", who, cudaGetErrorString(e));
    memset(s->pos, 0, (size_t)s->n_layers * sizeof *s->pos);
    return RS_OK;
}

extern "C" rs_status rs_cuda_scan_reset_runs(rs_cuda_scan *s, int run0, int n_runs, rs_cuda_stream st)
{
    static const char who[] = "rs_cuda_scan_reset_runs";
    RS_CHECK(s, RS_E_INVAL, "%s: NULL object", who);
    RS_CHECK(run0 >= 0 && n_runs >= 1 && run0 <= s->R - n_runs, RS_E_INVAL, "%s: runs %d .. %d outside 0 .. %d", who,
             run0, run0 + n_runs - 1, s->R - 1);
    const size_t f0 = s->h_state_off[run0], f1 = s->h_state_off[run0 + n_runs];
    const size_t per_run = (size_t)s->n_layers * (size_t)s->H; /* marks [R][n_layers][H] */
    cudaError_t e = cudaMemsetAsync(s->d_states + f0, 0, (f1 - f0) * sizeof(float), st);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(s->d_marks + (size_t)run0 * per_run, 0xFF, (size_t)n_runs * per_run * sizeof(int64_t), st);
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: cudaMemsetAsync failed: %s", who, cudaGetErrorString(e));
    return RS_OK;
}

/* ---- chunks ------------------------------------------------------------------------------------- */

static bool aligned16_(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* RS_CUDA_SCAN_SERIAL=1: both launches on the caller's stream, one after the other (for timing
 * comparisons; the results are the same bits either way). Read once. */
static bool getenv_serial_()
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("RS_CUDA_SCAN_SERIAL");
        v = e && e[0] == '1';
    }
    return v == 1;
}

/* the chunk of the runs run0 .. run0 + nr - 1 at position pos0 */
static rs_status chunk_(rs_cuda_scan *s, int layer, int run0, int nr, uint64_t pos0, const rs_cuda_scan_io *io,
                        rs_cuda_stream st, const char *who)
{
    RS_CHECK(s && io, RS_E_INVAL, "%s: NULL object or io", who);
    RS_CHECK(layer >= 0 && layer < s->n_layers, RS_E_INVAL, "%s: layer %d outside 0..%d", who, layer, s->n_layers - 1);
    RS_CHECK(io->T >= 1 && io->T <= s->max_chunk, RS_E_INVAL, "%s: T = %d outside 1..%d", who, io->T, s->max_chunk);
    const bool gdn = s->kind == RS_SSM_GDN;
    RS_CHECK(io->alpha && io->v && io->k && io->q && io->o && (!gdn || io->beta), RS_E_INVAL,
             "%s: NULL alpha, beta (GDN), v, k, q or o", who);
    RS_CHECK(aligned16_(io->v) && aligned16_(io->k) && aligned16_(io->q) && io->ld_v % 4 == 0 && io->ld_k % 4 == 0 &&
                 io->ld_q % 4 == 0,
             RS_E_INVAL, "%s: v, k, q must be 16-byte aligned with ld_v, ld_k, ld_q multiples of 4 (%zu, %zu, %zu)",
             who, io->ld_v, io->ld_k, io->ld_q);
    const size_t hv = (size_t)s->H * s->d_v, gk = (size_t)s->G * RS_SCAN_DK;
    RS_CHECK(io->ld_a >= (size_t)s->H && io->ld_v >= hv && io->ld_k >= gk && io->ld_q >= gk && io->ld_o >= hv,
             RS_E_INVAL, "%s: row strides ld_a %zu, ld_v %zu, ld_k %zu, ld_q %zu, ld_o %zu below a row (%d, %zu, %zu, %zu, %zu)",
             who, io->ld_a, io->ld_v, io->ld_k, io->ld_q, io->ld_o, s->H, hv, gk, gk, hv);

    rs_scan_kargs a;
    a.alpha = io->alpha, a.beta = gdn ? io->beta : NULL, a.v = io->v, a.k = io->k, a.q = io->q, a.o = io->o;
    a.ld_a = io->ld_a, a.ld_v = io->ld_v, a.ld_k = io->ld_k, a.ld_q = io->ld_q, a.ld_o = io->ld_o;
    a.runs = s->d_runs, a.states = s->d_states, a.marks = s->d_marks;
    a.pos0 = pos0;
    a.run0 = run0;
    /* the launch's part of each run list (both ascending: a run range is one segment of each) */
    int lo1 = 0, hi1, lo2 = s->n1, hi2;
    while (lo1 < s->n1 && s->h_list[lo1] < run0) lo1++;
    for (hi1 = lo1; hi1 < s->n1 && s->h_list[hi1] < run0 + nr; hi1++) {}
    while (lo2 < s->n1 + s->n2 && s->h_list[lo2] < run0) lo2++;
    for (hi2 = lo2; hi2 < s->n1 + s->n2 && s->h_list[hi2] < run0 + nr; hi2++) {}
    const int m1 = hi1 - lo1, m2 = hi2 - lo2;
    a.T = io->T, a.H = s->H, a.hpg = s->H / s->G, a.d_v = s->d_v, a.n_layers = s->n_layers, a.layer = layer;
    a.layer_id = s->layer_ids[layer];
    cudaStream_t cs = (cudaStream_t)st, cs2 = cs;
    const bool fork = s->side && m1 > 0 && m2 > 0 && !getenv_serial_();
    if (fork) { /* cs2 starts after everything queued on cs so far; cs continues after cs2's launch */
        cudaError_t e = cudaEventRecord(s->ev_fork, cs);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(s->side, s->ev_fork, 0);
        if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: fork: %s", who, cudaGetErrorString(e));
        cs2 = s->side;
    }
    /* the two-state runs first (their CTAs take longest; the side stream's priority places them
       first when both launches are pending), then the one-state runs */
    if (m2 > 0) {
        a.list = s->d_list + lo2;
        if (gdn) rs_scan_launch_gdn(s->rpw, 2, a, m2, cs2);
        else rs_scan_launch_mamba2(s->rpw, 2, a, m2, cs2);
        RS_TRY(rs_cuda_launch_status(who));
        if (fork) RS_CUDA_TRY(cudaEventRecord(s->ev_join, cs2), who);
    }
    if (m1 > 0) {
        a.list = s->d_list + lo1;
        if (gdn) rs_scan_launch_gdn(s->rpw, 1, a, m1, cs);
        else rs_scan_launch_mamba2(s->rpw, 1, a, m1, cs);
        RS_TRY(rs_cuda_launch_status(who));
    }
    if (m2 > 0 && fork) {
        RS_CUDA_TRY(cudaStreamWaitEvent(cs, s->ev_join, 0), who);
    }
    return RS_OK;
}

extern "C" rs_status rs_cuda_scan_chunk(rs_cuda_scan *s, int layer, const rs_cuda_scan_io *io, rs_cuda_stream st)
{
    static const char who[] = "rs_cuda_scan_chunk";
    RS_CHECK(s && io, RS_E_INVAL, "%s: NULL object or io", who);
    RS_CHECK(layer >= 0 && layer < s->n_layers, RS_E_INVAL, "%s: layer %d outside 0..%d", who, layer, s->n_layers - 1);
    RS_TRY(chunk_(s, layer, 0, s->R, s->pos[layer], io, st, who));
    s->pos[layer] += (uint64_t)io->T;
    return RS_OK;
}

extern "C" rs_status rs_cuda_scan_chunk_runs(rs_cuda_scan *s, int layer, int run0, int n_runs, uint64_t pos0,
                                             const rs_cuda_scan_io *io, rs_cuda_stream st)
{
    static const char who[] = "rs_cuda_scan_chunk_runs";
    RS_CHECK(s && io, RS_E_INVAL, "%s: NULL object or io", who);
    RS_CHECK(run0 >= 0 && n_runs >= 1 && run0 <= s->R - n_runs, RS_E_INVAL, "%s: runs %d .. %d outside 0 .. %d", who,
             run0, run0 + n_runs - 1, s->R - 1);
    return chunk_(s, layer, run0, n_runs, pos0, io, st, who);
}



extern "C" rs_status rs_cuda_scan_first_nonfinite(rs_cuda_scan *s, int64_t *out, rs_cuda_stream st)
{
    static const char who[] = "rs_cuda_scan_first_nonfinite";
    RS_CHECK(s && out, RS_E_INVAL, "%s: NULL object or output", who);
    cudaError_t e = cudaMemcpyAsync(out, s->d_marks, s->n_marks * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                    (cudaStream_t)st);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)st);
    if (e != cudaSuccess) return rs_error_set(RS_E_CUDA, "%s: copy failed: %s", who, cudaGetErrorString(e));
    return RS_OK;
}
