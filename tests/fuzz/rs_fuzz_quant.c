/* rs_fuzz_quant.c — fuzz targets of the quantized-checkpoint readers:
 *   quant_config  rs_quant_config_parse on the bytes (first byte: bit 0 set = the text is a config.json
 *                 with quantization_config, else hf_quant_config.json; the rest is the text). Accepted:
 *                 present, an algorithm name, every pattern and module owned and terminated, and each
 *                 quantized_layers entry found again by rs_quant_config_format_of with its own format.
 *   qmodel        rs_model_load of a folder holding the config.json and
 *                 hf_quant_config.json of tests/fixtures/models/qmodel-tiny and the bytes as
 *                 model.safetensors. Accepted: a weight count per format that adds up, every slab
 *                 value finite; refused: a documented code with a message, and *m left zeroed. */
#define _POSIX_C_SOURCE 200809L
#include "rs_fuzz.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_quant_config.h"
#include "replayssm/quant/rs_status.h"

#define BIT(s) (1u << (unsigned)(s))

int rs_fuzz_quant_config(const uint8_t *data, size_t size)
{
    static const char *T = "quant_config";
    if (size < 1) return 0;
    rs_quant_config q;
    const rs_status st = rs_quant_config_parse((const char *)data + 1, size - 1, data[0] & 1, "fuzz", &q);
    if (st != RS_OK) {
        rs_fuzz_check_error(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM));
        if (q.present || q.layers || q.exclude) rs_fuzz_fail(T, "a refused description left state behind");
        return 0;
    }
    if (!q.present) {
        if (!(data[0] & 1)) rs_fuzz_fail(T, "hf_quant_config.json accepted without a description");
        return 1;
    }
    if (q.quant_algo[0] == '\0' || !memchr(q.quant_algo, '\0', sizeof q.quant_algo))
        rs_fuzz_fail(T, "accepted without an algorithm name");
    if (!q.mixed && (q.fmt < RS_WFMT_NVFP4 || q.fmt > RS_WFMT_FP8_BLOCK)) rs_fuzz_fail(T, "no weight format");
    for (int i = 0; i < q.n_exclude; i++)
        if (!q.exclude[i]) rs_fuzz_fail(T, "a NULL exclude pattern");
    for (int i = 0; i < q.n_layers; i++) {
        if (!q.layers[i].module) rs_fuzz_fail(T, "a NULL module name");
        const rs_wformat f = rs_quant_config_format_of(&q, q.layers[i].module);
        if (q.mixed && f == RS_WFMT_DENSE) rs_fuzz_fail(T, "a quantized_layers entry not found again");
    }
    (void)rs_quant_config_format_of(&q, "model.layers.0.mlp.experts.0.up_proj");
    rs_quant_config_free(&q);
    if (q.present || q.layers) rs_fuzz_fail(T, "free left state behind");
    return 1;
}

static const char *qmodel_dir_(const char *T)
{
    static char dir[600];
    char p[800], src[800];
    snprintf(dir, sizeof dir, "%s/qmodel", rs_fuzz_scratch());
    snprintf(p, sizeof p, "%s/hf_quant_config.json", dir);
    if (access(p, F_OK) == 0) return dir;
    if (mkdir(dir, 0700) != 0) rs_fuzz_fail(T, "cannot create the scratch model folder");
    static const char *const files[] = {"config.json", "hf_quant_config.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/models/qmodel-tiny/%s", RS_FIXTURE_DIR, files[i]);
        FILE *f = fopen(src, "rb");
        if (!f) rs_fuzz_fail(T, "cannot read the quantized fixture's configuration");
        char buf[1 << 16];
        const size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        rs_fuzz_write_file(T, p, (const uint8_t *)buf, n);
    }
    return dir;
}

int rs_fuzz_qmodel(const uint8_t *data, size_t size)
{
    static const char *T = "qmodel";
    const char *dir = qmodel_dir_(T);
    char p[700];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    rs_fuzz_write_file(T, p, data, size);
    rs_model m;
    const rs_status st = rs_model_load(dir, &m);
    if (st != RS_OK) {
        rs_fuzz_check_error(T, st, BIT(RS_E_FORMAT) | BIT(RS_E_UNSUPPORTED) | BIT(RS_E_NOMEM) | BIT(RS_E_SHAPE) |
                                       BIT(RS_E_NONFINITE) | BIT(RS_E_IO) | BIT(RS_E_INVAL));
        if (m.w.slab || m.st || m.quant.present) rs_fuzz_fail(T, "a refused checkpoint left state behind");
        return 0;
    }
    int n = 0;
    for (int i = 0; i < 4; i++) n += m.n_weights_fmt[i];
    if (n <= 0 || m.n_tensors_used <= 0) rs_fuzz_fail(T, "accepted without weights");
    for (size_t i = 0; i < m.w.slab_floats; i++)
        if (!isfinite(m.w.slab[i])) rs_fuzz_fail(T, "a non-finite weight was accepted");
    rs_model_free(&m);
    return 1;
}
