/* test_model_packed.c — MoE experts stored packed (transformers' in-memory layout: Qwen3.5-MoE
 * experts.gate_up_proj [E, 2I, d] with the gate rows first and experts.down_proj [E, d, I]; NemotronH
 * experts.up_proj [E, I, din] and experts.down_proj [E, din, I]) load into the same per-expert weights
 * as the hub's one-tensor-per-expert layout: the MoE fixtures are rewritten packed here (the expert
 * tensors concatenated byte for byte, everything else copied) and every expert view is compared
 * element for element with the per-expert load, then the logits of a 32-token forward. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/rs_backend.h"
#include "model/rs_runner.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_safetensors.h"
#include "rs_test_util.h"

static char g_tmp[64];

static int setup(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/rs_test_packed_XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return rs_test_rmdir(g_tmp);
}

typedef struct otensor {
    char name[192];
    const char *dtype;
    int ndim;
    int64_t shape[3];
    unsigned char *bytes; /* owned */
    size_t n;
} otensor;

static void write_file_(const char *path, const otensor *t, int nt) {
    size_t cap = 1 << 20, len = 0, off = 0;
    char *h = (char *)malloc(cap);
    assert_non_null(h);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < nt; i++) {
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name, t[i].dtype);
        for (int k = 0; k < t[i].ndim; k++)
            len += (size_t)snprintf(h + len, cap - len, k ? ",%lld" : "%lld", (long long)t[i].shape[k]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + t[i].n);
        off += t[i].n;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    assert_int_equal(fwrite(l8, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, len, f), len);
    for (int i = 0; i < nt; i++) assert_int_equal(fwrite(t[i].bytes, 1, t[i].n, f), t[i].n);
    fclose(f);
    free(h);
}

/* the fixture `name` rewritten with packed experts into g_tmp/<name>; qwen: gate+up packed */
static void pack_(const char *name, char *out, size_t on) {
    char src[1024], p[2200];
    rs_test_fixture_path(src, sizeof src, name);
    const char *base = strrchr(name, '/') + 1;
    snprintf(out, on, "%s/%s", g_tmp, base);
    assert_int_equal(mkdir(out, 0700), 0);
    snprintf(p, sizeof p, "cp '%s/config.json' '%s/'", src, out);
    assert_int_equal(system(p), 0);
    rs_model m;
    assert_int_equal(rs_model_load(src, &m), RS_OK);
    const int qwen = m.cfg.family == RS_FAMILY_QWEN35;
    const int E = m.cfg.moe.n_experts;
    const rs_st_set *st = m.st;
    otensor *t = (otensor *)calloc((size_t)st->n_tensors + 64, sizeof *t);
    int nt = 0;
    for (int i = 0; i < st->n_tensors; i++) { /* everything but the per-expert tensors, copied */
        const rs_st_tensor *x = &st->tensors[i];
        if (strstr(x->name, ".experts.")) continue;
        otensor *o = &t[nt++];
        snprintf(o->name, sizeof o->name, "%s", x->name);
        o->dtype = rs_st_dtype_name(x->dtype);
        o->ndim = x->ndim;
        for (int k = 0; k < x->ndim; k++) o->shape[k] = x->shape[k];
        o->n = x->nbytes;
        o->bytes = (unsigned char *)malloc(o->n);
        memcpy(o->bytes, x->data, o->n);
    }
    const char *blk = qwen ? "mlp" : "mixer";
    for (int l = 0; l < m.cfg.n_layers; l++) {
        if (!(m.cfg.mlp_is_moe || m.cfg.layer_kind[l] == RS_LAYER_MOE)) continue;
        static const char *const up_names[2] = {"gate_up_proj", "up_proj"};
        for (int part = 0; part < 2; part++) { /* 0: gate_up / up, 1: down */
            otensor *o = &t[nt++];
            size_t per = 0;
            const rs_st_tensor *first = NULL;
            for (int e = 0; e < E; e++) {
                const char *const pieces[2] = {qwen && part == 0 ? "gate_proj" : part == 0 ? "up_proj" : "down_proj",
                                               qwen && part == 0 ? "up_proj" : NULL};
                for (int q = 0; q < 2 && pieces[q]; q++) {
                    char full[256];
                    snprintf(full, sizeof full, "%slayers.%d.%s.experts.%d.%s.weight", m.prefix, l, blk, e, pieces[q]);
                    const rs_st_tensor *x = rs_st_find(st, full);
                    assert_non_null(x);
                    if (!first) {
                        first = x;
                        per = x->nbytes;
                        o->n = per * (size_t)E * (pieces[1] ? 2 : 1);
                        o->bytes = (unsigned char *)malloc(o->n);
                    }
                    memcpy(o->bytes + ((size_t)e * (pieces[1] ? 2 : 1) + (size_t)q) * per, x->data, per);
                }
            }
            snprintf(o->name, sizeof o->name, "%slayers.%d.%s.experts.%s", m.prefix, l, blk,
                     part == 0 ? up_names[qwen ? 0 : 1] : "down_proj");
            o->dtype = rs_st_dtype_name(first->dtype);
            o->ndim = 3;
            o->shape[0] = E;
            o->shape[1] = first->shape[0] * (qwen && part == 0 ? 2 : 1);
            o->shape[2] = first->shape[1];
        }
    }
    snprintf(p, sizeof p, "%s/model.safetensors", out);
    write_file_(p, t, nt);
    for (int i = 0; i < nt; i++) free(t[i].bytes);
    free(t);
    rs_model_free(&m);
}

static float *logits_(const rs_model *m) {
    rs_backend *be = NULL;
    assert_int_equal(rs_backend_cpu_create(1, &be), RS_OK);
    rs_runner_config rc = rs_runner_config_default();
    rc.chunk = 32;
    rc.max_tokens = 32;
    rs_runner *r = NULL;
    assert_int_equal(rs_runner_create(m, be, &rc, &r), RS_OK);
    int32_t ids[32];
    for (int i = 0; i < 32; i++) ids[i] = (int32_t)((i * 61 + 5) % m->cfg.vocab);
    assert_int_equal(rs_runner_step(r, ids, 32), RS_OK);
    float *y = (float *)malloc(32 * (size_t)m->cfg.vocab * sizeof(float));
    memcpy(y, rs_runner_logits(r, 0), 32 * (size_t)m->cfg.vocab * sizeof(float));
    rs_runner_free(r);
    rs_backend_destroy(be);
    return y;
}

static void check_(const char *name) {
    char packed[512], src[1024];
    pack_(name, packed, sizeof packed);
    rs_test_fixture_path(src, sizeof src, name);
    rs_model a, b;
    assert_int_equal(rs_model_load(src, &a), RS_OK);
    rs_status st = rs_model_load(packed, &b);
    if (st != RS_OK) fail_msg("load packed %s: %s", packed, rs_last_error());
    const rs_moe_config *mo = &a.cfg.moe;
    const size_t I = (size_t)mo->intermediate, din = (size_t)mo->expert_in;
    int layers = 0;
    for (int l = 0; l < a.cfg.n_layers; l++) {
        const rs_layer_weights *x = &a.w.layers[l], *y = &b.w.layers[l];
        if (!x->moe.up) continue;
        layers++;
        for (int e = 0; e < mo->n_experts; e++) {
            assert_memory_equal(x->moe.up[e], y->moe.up[e], I * din * sizeof(float));
            assert_memory_equal(x->moe.down[e], y->moe.down[e], din * I * sizeof(float));
            if (x->moe.gate) assert_memory_equal(x->moe.gate[e], y->moe.gate[e], I * din * sizeof(float));
        }
    }
    assert_int_equal(layers, a.cfg.n_moe);
    float *la = logits_(&a), *lb = logits_(&b);
    assert_memory_equal(la, lb, 32 * (size_t)a.cfg.vocab * sizeof(float));
    printf("  %s: %d MoE layers x %d experts packed, views and logits identical\n", name, layers, mo->n_experts);
    free(la);
    free(lb);
    rs_model_free(&a);
    rs_model_free(&b);
}

static void test_qwen_packed(void **state) {
    (void)state;
    check_("models/gdn-moe-tiny-random");
}

static void test_nemotron_packed(void **state) {
    (void)state;
    check_("models/mamba2-moe-tiny-random");
    check_("models/mamba2-moe-flat-tiny-random");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_qwen_packed), cmocka_unit_test(test_nemotron_packed)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
