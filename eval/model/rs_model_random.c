/* rs_model_random.c — a model of a config.json's exact shapes with random weights (rs_model_init_random),
 * for shape and speed runs where no checkpoint can be downloaded.
 *
 * Distribution (tensor t = its index in the family's tensor list, rs_model_names.h; values from
 * rs_random_weights.h keyed by (seed, t)):
 *   embeddings                          N(0, 1); N(0, 1/d) when tied to the lm_head
 *   linear weights [out, in], packed    N(0, 1/in): each output is a unit-variance mix of unit inputs,
 *   experts [E, out, in], lm_head       so the residual stream grows like sqrt(layers) (finite over
 *                                       88 blocks) and the logits are O(1) after the final norm
 *   conv1d weights [C, 1, K]            N(0, 1/K); conv biases 0
 *   norm weights                        the identity: 1 for plain-w norms, 0 for Qwen3.5's (1 + w)
 *   A_log                               log(A), A uniform in [1, 16]
 *   dt_bias                             softplus^-1(dt), dt log-uniform in [1e-3, 1e-1]
 *   D                                   1
 *   e_score_correction_bias             0
 * With a quantization description beside config.json (hf_quant_config.json or config.json's
 * quantization_config), every weight it declares quantized is generated as above, quantized the way
 * ModelOpt does (NVFP4: weight_scale_2 = amax / (6 * 448), E4M3 block scales = e4m3(block amax /
 * (6 * weight_scale_2)), E2M1 codes round-to-nearest; FP8: scale = amax / 448 per tensor or per block)
 * and decoded with rs_wdecode: the model holds exactly what such a checkpoint would.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "replayssm/eval/rs_model.h"

#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "model/rs_model_names.h"
#include "model/rs_random_weights.h"
#include "replayssm/eval/rs_hf_config.h"
#include "replayssm/quant/rs_codec.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_wdecode.h"
#include "rs_check.h"

static int ends_(const char *s, const char *suffix)
{
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* the values of tensor t (want w) into dst[numel] */
static void fill_(const rs_model_config *c, const want *w, uint64_t key, float *dst, size_t numel)
{
    const char *nm = w->name;
    const int qwen = c->family == RS_FAMILY_QWEN35;
    if (ends_(nm, "A_log")) {
        for (size_t i = 0; i < numel; i++) {
            double u0, u1;
            rs_rw_uniform2(key, i, &u0, &u1);
            dst[i] = (float)log(1.0 + 15.0 * u0);
        }
    } else if (ends_(nm, "dt_bias")) {
        const double lo = log(1e-3), hi = log(1e-1);
        for (size_t i = 0; i < numel; i++) {
            double u0, u1;
            rs_rw_uniform2(key, i, &u0, &u1);
            const double dt = exp(lo + (hi - lo) * u0);
            dst[i] = (float)(dt + log(-expm1(-dt)));
        }
    } else if (ends_(nm, ".D")) {
        for (size_t i = 0; i < numel; i++) dst[i] = 1.0f;
    } else if (ends_(nm, "e_score_correction_bias") || ends_(nm, "conv1d.bias")) {
        memset(dst, 0, numel * sizeof(float));
    } else if (ends_(nm, "norm.weight") || ends_(nm, "layernorm.weight") || ends_(nm, "norm_f.weight")) {
        const int one_plus = qwen && !strstr(nm, "linear_attn.norm.");
        for (size_t i = 0; i < numel; i++) dst[i] = one_plus ? 0.0f : 1.0f;
    } else {
        /* embeddings N(0, 1), N(0, 1/d) when they are the lm_head too (the logits stay O(1)); everything
           else a linear map of fan-in the last dimension */
        const int embed = strstr(nm, "embed") != NULL && !c->tie_word_embeddings;
        const int conv = strstr(nm, "conv1d.weight") != NULL;
        const double fan = embed ? 1.0 : (double)w->shape[w->ndim - 1];
        const float sd = (float)(1.0 / sqrt(conv ? (double)w->shape[2] : fan));
#pragma omp parallel for schedule(static) if (numel > 65536)
        for (long long i = 0; i < (long long)numel; i++) dst[i] = sd * rs_rw_normal(key, (uint64_t)i);
    }
}

static float amax_(const float *x, size_t n)
{
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}

/* ModelOpt's NVFP4 of x [out, in] into (q, sc, s2), then decoded back into x */
static rs_status nvfp4_(float *x, int64_t out, int64_t in, uint8_t *q, uint8_t *sc)
{
    const float am = amax_(x, (size_t)(out * in));
    const float s2 = am > 0.0f ? am / (6.0f * 448.0f) : 1.0f;
    for (int64_t r = 0; r < out; r++)
        for (int64_t b = 0; b < in / 16; b++) {
            const float *blk = x + r * in + b * 16;
            const float bs = fminf(amax_(blk, 16) / (6.0f * s2), 448.0f);
            const uint8_t code = (uint8_t)rs_codec_encode(RS_ELEM_E4M3, bs, 0, 0, 0);
            sc[r * (in / 16) + b] = code;
            const float sv = rs_e4m3_decode(code) * s2;
            for (int j = 0; j < 16; j++) {
                float y = sv > 0.0f ? blk[j] / sv : 0.0f;
                y = fminf(fmaxf(y, -6.0f), 6.0f);
                const uint8_t e = (uint8_t)(rs_codec_encode(RS_ELEM_E2M1, y, 0, 0, 0) & 0xF);
                uint8_t *byte = q + r * (in / 2) + (b * 16 + j) / 2;
                *byte = (j & 1) ? (uint8_t)((*byte & 0x0F) | (e << 4)) : (uint8_t)((*byte & 0xF0) | e);
            }
        }
    rs_wq_nvfp4 wq = {q, {out, in / 2}, sc, {out, in / 16}, s2};
    return rs_wdecode_nvfp4(&wq, x, (size_t)(out * in));
}

/* FP8 E4M3 per tensor (bo = 0) or in blocks of bo x bi, quantized and decoded back into x */
static rs_status fp8_(float *x, int64_t out, int64_t in, int64_t bo, int64_t bi, uint8_t *q, float *sc)
{
    const int64_t go = bo ? (out + bo - 1) / bo : 1, gi = bo ? (in + bi - 1) / bi : 1;
    for (int64_t a = 0; a < go; a++)
        for (int64_t b = 0; b < gi; b++) {
            const int64_t r0 = bo ? a * bo : 0, r1 = bo ? (r0 + bo < out ? r0 + bo : out) : out;
            const int64_t c0 = bo ? b * bi : 0, c1 = bo ? (c0 + bi < in ? c0 + bi : in) : in;
            float m = 0.0f;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++) m = fmaxf(m, fabsf(x[r * in + c]));
            const float s = m > 0.0f ? m / 448.0f : 1.0f;
            sc[a * gi + b] = s;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++)
                    q[r * in + c] = (uint8_t)rs_codec_encode(RS_ELEM_E4M3, fminf(fmaxf(x[r * in + c] / s, -448.0f), 448.0f),
                                                             0, 0, 0);
        }
    rs_wq_fp8 wq = {q, {out, in}, sc, {go, gi}, {bo, bi}};
    return rs_wdecode_fp8(&wq, x, (size_t)(out * in));
}

/* quantize-and-decode the weight of want w in place when the description declares it quantized */
static rs_status quantize_(const rs_quant_config *q, want *w, float *x)
{
    const size_t nl = strlen(w->name);
    if (!q->present || w->ndim != 2 || !ends_(w->name, ".weight") || strstr(w->name, "embed")) return RS_OK;
    char module[192];
    snprintf(module, sizeof module, "%.*s", (int)(nl - 7), w->name);
    const rs_wformat f = rs_quant_config_format_of(q, module);
    if (f == RS_WFMT_DENSE) return RS_OK;
    const int64_t out = w->shape[0], in = w->shape[1];
    uint8_t *qb = (uint8_t *)calloc((size_t)(out * in), 1);
    float *sc = (float *)calloc((size_t)(out * ((in + 15) / 16) + 1), sizeof(float));
    RS_CHECK(qb && sc, RS_E_NOMEM, "random weights: out of memory quantizing '%s'", w->name);
    rs_status st;
    if (f == RS_WFMT_NVFP4) {
        st = in % 16 == 0 ? nvfp4_(x, out, in, qb, (uint8_t *)sc)
                          : rs_error_set(RS_E_SHAPE, "random weights: '%s' has %lld inputs, NVFP4 needs a multiple of 16",
                                         w->name, (long long)in);
    } else if (f == RS_WFMT_FP8) {
        st = fp8_(x, out, in, 0, 0, qb, sc);
    } else {
        const int64_t bo = q->block[0] ? q->block[0] : 128, bi = q->block[1] ? q->block[1] : 128;
        free(sc);
        sc = (float *)calloc((size_t)(((out + bo - 1) / bo) * ((in + bi - 1) / bi)), sizeof(float));
        st = sc ? fp8_(x, out, in, bo, bi, qb, sc) : rs_error_set(RS_E_NOMEM, "random weights: out of memory");
    }
    free(qb);
    free(sc);
    if (st == RS_OK) w->fmt = f;
    return st;
}

/* a GEMM matrix of the forward (what the GPU scorer hands its GEMMs): every 2-D `.weight` but the embeddings */
static int is_matrix_(const want *w) { return w->ndim == 2 && ends_(w->name, ".weight") && !strstr(w->name, "embed"); }

/* rs_model_init_random_device: the matrix of want w kept on the device: its description, a view in the
 * reserved range */
static rs_status describe_matrix_(rs_model *m, const want *w, uint64_t key, size_t *voff)
{
    rs_model_matrix *x = &m->dev_mats[m->n_dev_mats++];
    x->rows = w->shape[0];
    x->cols = w->shape[1];
    x->key = key;
    x->sd = (float)(1.0 / sqrt((double)w->shape[1]));
    x->fmt = RS_WFMT_DENSE;
    if (m->quant.present) {
        char module[192];
        snprintf(module, sizeof module, "%.*s", (int)(strlen(w->name) - 7), w->name);
        x->fmt = rs_quant_config_format_of(&m->quant, module);
    }
    RS_CHECK(x->fmt != RS_WFMT_FP8_BLOCK, RS_E_UNSUPPORTED,
             "random weights on the GPU: '%s' is declared FP8 in blocks, which only the host-made model supports", w->name);
    RS_CHECK(x->fmt != RS_WFMT_NVFP4 || x->cols % 16 == 0, RS_E_SHAPE,
             "random weights: '%s' has %lld inputs, NVFP4 needs a multiple of 16", w->name, (long long)x->cols);
    x->view = (const float *)((char *)m->dev_reserve + *voff);
    *voff += (size_t)x->rows * (size_t)x->cols * sizeof(float);
    *w->dst = x->view;
    m->n_weights_fmt[x->fmt]++;
    return RS_OK;
}

static int by_view_(const void *a, const void *b)
{
    const rs_model_matrix *x = (const rs_model_matrix *)a, *y = (const rs_model_matrix *)b;
    return x->view < y->view ? -1 : x->view > y->view;
}

static rs_status init_(const char *dir, uint64_t seed, rs_model *m, want_list *wl, int on_device)
{
    char path[4096];
    const int r = snprintf(path, sizeof path, "%s/config.json", dir);
    RS_CHECK(r > 0 && (size_t)r < sizeof path, RS_E_INVAL, "%s: path too long", dir);
    RS_TRY(rs_hf_config_load(path, &m->cfg));
    RS_TRY(rs_quant_config_load_dir(dir, &m->quant));
    const rs_model_config *c = &m->cfg;
    RS_TRY(rs_mn_begin(m, wl));
    if (c->family == RS_FAMILY_QWEN35) {
        snprintf(m->prefix, sizeof m->prefix, "model.");
        RS_TRY(rs_mn_list_qwen35(wl, c, &m->w, m->prefix));
    } else {
        snprintf(m->prefix, sizeof m->prefix, "backbone.");
        RS_TRY(rs_mn_list_nemotronh(wl, c, &m->w, m->prefix, "embeddings.weight"));
    }
    if (!c->tie_word_embeddings) RS_TRY(rs_mn_add(wl, &m->w.lm_head, 2, c->vocab, c->hidden, 0, "lm_head.weight"));
    size_t total = 0, vbytes = 0;
    int nmat = 0;
    for (int i = 0; i < wl->n; i++) {
        size_t numel = 1;
        for (int k = 0; k < wl->v[i].ndim; k++) numel *= (size_t)wl->v[i].shape[k];
        RS_CHECK(total + numel + 16 > total && vbytes + 4 * numel >= vbytes, RS_E_NOMEM,
                 "%s: the weights overflow size_t", dir);
        if (on_device && is_matrix_(&wl->v[i])) {
            vbytes += numel * sizeof(float);
            nmat++;
            continue;
        }
        total += (numel + 15u) & ~(size_t)15u;
    }
    const size_t small_bytes = total * sizeof(float);
    if (on_device == 2) vbytes += small_bytes; /* shapes only: the host tensors get reserved views too */
    if (on_device) { /* views of the device-made matrices: distinct addresses that fault if read */
        m->dev_mats = (rs_model_matrix *)calloc((size_t)nmat + 1, sizeof *m->dev_mats);
        RS_CHECK(m->dev_mats, RS_E_NOMEM, "%s: out of memory", dir);
        m->dev_reserve_bytes = vbytes ? vbytes : 4096;
        m->dev_reserve = mmap(NULL, m->dev_reserve_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m->dev_reserve == MAP_FAILED) {
            m->dev_reserve = NULL;
            return rs_error_set(RS_E_NOMEM, "%s: cannot reserve %.1f GB of address space for the GPU-made weights", dir,
                                (double)m->dev_reserve_bytes / 1e9);
        }
        m->weights_on_device = 1;
    }
    RS_CHECK(total <= SIZE_MAX / sizeof(float), RS_E_NOMEM, "%s: the weights overflow size_t", dir);
    m->w.slab_floats = total;
    size_t off = 0, voff = 0;
    if (on_device == 2) { /* shapes only: nothing is made; the host tensors' views follow the matrices' */
        m->w.slab = NULL;
    } else {
        RS_TRY(rs_mn_check_memory(dir, "the fp32 weights", (uint64_t)total * sizeof(float)));
        void *slab = NULL;
        RS_CHECK(posix_memalign(&slab, 64, (total ? total : 1) * sizeof(float)) == 0, RS_E_NOMEM,
                 "%s: cannot allocate %zu floats (%.2f GB) for the random weights", dir, total,
                 4.0 * (double)total / 1e9);
        m->w.slab = (float *)slab;
    }
    size_t soff = on_device == 2 ? vbytes - small_bytes : 0; /* shapes only: the next host tensor's view */
    for (int i = 0; i < wl->n; i++) {
        want *w = &wl->v[i];
        if (on_device && is_matrix_(w)) {
            RS_TRY(describe_matrix_(m, w, rs_rw_key(seed, (uint64_t)i), &voff));
            continue;
        }
        size_t numel = 1;
        for (int k = 0; k < w->ndim; k++) numel *= (size_t)w->shape[k];
        const size_t padded = (numel + 15u) & ~(size_t)15u;
        if (on_device == 2) {
            *w->dst = (const float *)((char *)m->dev_reserve + soff);
            soff += padded * sizeof(float);
            if (w->ndim == 2 && ends_(w->name, ".weight")) m->n_weights_fmt[RS_WFMT_DENSE]++;
            continue;
        }
        float *dst = m->w.slab + off;
        fill_(c, w, rs_rw_key(seed, (uint64_t)i), dst, numel);
        RS_TRY(quantize_(&m->quant, w, dst));
        memset(dst + numel, 0, (padded - numel) * sizeof(float));
        if (w->ndim == 2 && ends_(w->name, ".weight")) m->n_weights_fmt[w->fmt]++;
        *w->dst = dst;
        off += padded;
    }
    rs_mn_finish(wl);
    if (on_device) qsort(m->dev_mats, (size_t)m->n_dev_mats, sizeof *m->dev_mats, by_view_);
    if (c->tie_word_embeddings) m->w.lm_head = m->w.embed;
    m->n_tensors_used = wl->n;
    m->random_weights = on_device != 2;
    m->random_seed = seed;
    return RS_OK;
}

static rs_status init_random_(const char *dir, uint64_t seed, rs_model *m, int on_device)
{
    RS_CHECK(dir && m, RS_E_INVAL, "rs_model_init_random: NULL argument");
    memset(m, 0, sizeof *m);
    want_list wl;
    memset(&wl, 0, sizeof wl);
    wl.dir = dir;
    const rs_status st = init_(dir, seed, m, &wl, on_device);
    free(wl.v);
    free(wl.fix);
    if (st != RS_OK) rs_model_free(m);
    return st;
}

rs_status rs_model_init_random(const char *dir, uint64_t seed, rs_model *m) { return init_random_(dir, seed, m, 0); }

rs_status rs_model_init_random_device(const char *dir, uint64_t seed, rs_model *m)
{
    return init_random_(dir, seed, m, 1);
}

rs_status rs_model_init_shapes(const char *dir, rs_model *m) { return init_random_(dir, 0, m, 2); }
