/* cmd_info.c — `replayssm info FILE.h5|MODEL_DIR`: what a KL log holds (provenance, books,
 * progress, per-run summary computed from the stored per-position arrays, so an interrupted log
 * is summarised too), or what a Hugging Face model directory is (family, layer pattern, experts and
 * router, sizes, the stored weight formats and quantization description, state and KV-cache bytes, the tokenizer: byte / tokenizer.json / tiktoken, its file, SHA-256 and
 * vocabulary size). Reads only; never modifies the file. The log reader
 * validates every count against the file (a corrupted or hostile log gives an error, not a
 * crash), and only a regular file is opened (a FIFO would block). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_opts.h"
#include "rs_cli.h"
#include "replayssm/eval/rs_h5log.h"     /* defines: rs_h5log_open / summarize */
#include "replayssm/eval/rs_hf_config.h" /* defines: rs_hf_config_load */
#include "replayssm/eval/rs_kl.h"
#include "replayssm/eval/rs_model.h"
#include "replayssm/eval/rs_quant_config.h"
#include "replayssm/eval/rs_safetensors.h"
#include "replayssm/quant/rs_status.h"
#include "replayssm/eval/rs_tokenizer.h"
#ifdef RS_HAVE_CUDA
#include "replayssm/eval/rs_scorer_cuda.h"
#endif

static int g_all_stats;                        /* --all-stats */
static size_t g_plan_tokens = 131072, g_plan_runs = 5; /* --tokens, --runs: the memory plan of a model */

static const rs_cli_opt k_info_opts[] = {
    {"--all-stats", NULL, RS_CLI_FLAG, NULL, "also the low KL percentiles and the Δp percentiles (as kl --all-stats)",
     NULL, &g_all_stats, 0, 0, NULL, NULL, NULL, 0},
    {"--tokens", NULL, RS_CLI_SIZE, "N", "MODEL_DIR: positions of the memory plan", "[131072]", &g_plan_tokens, 1,
     (size_t)1 << 24, NULL, NULL, NULL, 0},
    {"--runs", NULL, RS_CLI_SIZE, "R", "MODEL_DIR: runs of the memory plan, the fp32 reference included", "[5]",
     &g_plan_runs, 1, 4096, NULL, NULL, NULL, 0},
};
static const rs_cli_spec k_info_spec = {
    "info", "[--all-stats] [--tokens N] [--runs R] FILE.h5|MODEL_DIR",
    "  FILE.h5    a log of 'replayssm kl' / 'replayssm sweep': provenance, books and their\n"
    "             committed positions, and the summary table `kl` prints at its end (from the\n"
    "             stored arrays, so an interrupted log is summarised too)\n"
    "  MODEL_DIR  a Hugging Face checkpoint folder: family, layers, experts, sizes, state bytes,\n"
    "             how the weights are stored (dense / NVFP4 / FP8) and the quantization description,\n"
    "             and the CPU memory plan of R runs over N positions",
    k_info_opts, sizeof k_info_opts / sizeof k_info_opts[0], NULL, 1};

/* the stored tensors: count, bytes, 2-D weights by dtype; closes st */
static void info_stored_(rs_st_set *st)
{
    long long n[5] = {0, 0, 0, 0, 0}; /* rs_st_dtype index */
    double bytes = 0;
    for (int i = 0; i < st->n_tensors; i++) {
        const rs_st_tensor *t = &st->tensors[i];
        const size_t nl = strlen(t->name);
        bytes += (double)t->nbytes;
        if (t->ndim == 2 && nl > 7 && strcmp(t->name + nl - 7, ".weight") == 0 && (int)t->dtype < 5) n[t->dtype]++;
    }
    if (bytes >= 1e9) printf("weights    %d tensors, %.2f GB: 2-D weights", st->n_tensors, bytes / 1e9);
    else printf("weights    %d tensors, %.2f MB: 2-D weights", st->n_tensors, bytes / 1e6);
    static const char *const names[5] = {"F32", "BF16", "F16", "NVFP4 (U8)", "FP8 (F8_E4M3)"};
    for (int k = 0; k < 5; k++)
        if (n[k]) printf(" %s x %lld", names[k], n[k]);
    printf("\n");
    rs_st_close(st);
}

/* how the checkpoint stores its linear weights (2-D *.weight tensors, by dtype) and what its quantization
 * description says; reads the safetensors headers only */
static void info_weights_(const char *dir)
{
    char esc[4 * 512 + 1];
    rs_st_set st;
    if (rs_st_open_dir(dir, &st) != RS_OK)
        printf("weights    not read: %s\n", rs_cli_esc(rs_last_error(), esc, sizeof esc));
    else
        info_stored_(&st);
    rs_quant_config q; /* a config-only folder (random weights) may hold a description too */
    if (rs_quant_config_load_dir(dir, &q) != RS_OK) {
        printf("quantized  description refused: %s\n", rs_cli_esc(rs_last_error(), esc, sizeof esc));
        return;
    }
    if (q.present) {
        printf("quantized  %s: %s", q.source, q.quant_algo);
        if (q.mixed) printf(" (%d modules listed)", q.n_layers);
        else if (q.n_exclude) printf(" (%d exclude patterns)", q.n_exclude);
        if (q.kv_cache_quant_algo[0]) printf(", KV cache %s (not applied: replayssm keeps KV in fp32)", q.kv_cache_quant_algo);
        printf("; activations fp32 (W4A16 emulation)\n");
    }
    rs_quant_config_free(&q);
}

/* the GPU plan of `kl --device cuda --random-weights` on this config: the matrices made on the GPU in the
 * quantization description's formats; the runs: the reference, then shared:nvfp4-sr and split:nvfp4-rtn/fp32
 * alternating (window 16), chunk 1024 (rs_scorer_cuda_plan, no allocation, no GPU needed) */
static void info_gpu_plan_(const char *dir)
{
#ifdef RS_HAVE_CUDA
    char esc[4 * 512 + 1];
    rs_model m;
    if (rs_model_init_shapes(dir, &m) != RS_OK) {
        printf("plan (GPU) not made: %s\n", rs_cli_esc(rs_last_error(), esc, sizeof esc));
        return;
    }
    const size_t R = g_plan_runs - 1;
    rs_run_spec *runs = (rs_run_spec *)calloc(R + 1, sizeof *runs);
    rs_status st = runs ? RS_OK : rs_error_set(RS_E_NOMEM, "out of memory");
    for (size_t r = 0; r < R && st == RS_OK; r++)
        st = rs_run_spec_parse(r % 2 ? "split:nvfp4-rtn/fp32" : "shared:nvfp4-sr", "16", 0, &runs[r]);
    rs_gpu_plan_report p;
    if (st == RS_OK) st = rs_scorer_cuda_plan(&m, R, runs, 1024, g_plan_tokens, RS_COMPUTE_FP32, 0, &p);
    if (st != RS_OK) {
        printf("plan (GPU) not made: %s\n", rs_cli_esc(rs_last_error(), esc, sizeof esc));
    } else {
        const double G = 1073741824.0;
        printf("plan (GPU) kl --device cuda --random-weights, reference + %zu runs (shared:nvfp4-sr, "
               "split:nvfp4-rtn/fp32 alternating, window 16) x %zu positions, chunk 1024: %.2f GiB = weights %.2f "
               "(matrices made on the GPU: %d NVFP4, %d FP8, %d fp32) + KV %.2f + states and rings %.4f + "
               "activations %.2f + logits %.2f\n", R, g_plan_tokens, p.total / G, p.weights / G,
               m.n_weights_fmt[RS_WFMT_NVFP4], m.n_weights_fmt[RS_WFMT_FP8],
               m.n_dev_mats - m.n_weights_fmt[RS_WFMT_NVFP4] - m.n_weights_fmt[RS_WFMT_FP8], p.kv / G, p.state / G,
               p.act / G, p.logits / G);
        if (p.device_free > 0)
            printf("           this GPU: %.2f GiB free: %s\n", p.device_free / G,
                   p.total + 0.5 * G <= p.device_free ? "fits" : "does not fit (kl refuses it before allocating)");
        else
            printf("           (no GPU visible here; the scorer adds 0.5 GiB of margin to this)\n");
    }
    free(runs);
    rs_model_free(&m);
#else
    (void)dir;
#endif
}

static int info_model_(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", dir);
    rs_model_config c;
    rs_status st = rs_hf_config_load(p, &c);
    if (st != RS_OK) return rs_cli_fail("info", "cannot read the model config", st);
    char esc[4 * 4096 + 1];
    printf("model      %s\n", rs_cli_esc(dir, esc, sizeof esc));
    printf("model_type %s (family %s)\n", rs_cli_esc(c.model_type, esc, sizeof esc), rs_model_family_name(c.family));
    printf("layers     %d:", c.n_layers);
    for (int i = 0; i < c.n_layers; i++) printf(" %s", rs_layer_kind_name(c.layer_kind[i]));
    printf("\n           gdn %d, mamba2 %d, attention %d, mlp %d, moe %d%s\n", c.n_gdn, c.n_mamba, c.n_attn, c.n_mlp,
           c.n_moe, c.mlp_is_moe ? " (a MoE FFN in every layer)" : c.layer_has_mlp ? " (+ an MLP in every layer)" : "");
    printf("hidden     %d, vocab %d, rms eps %g, tied lm_head %s\n", c.hidden, c.vocab, (double)c.rms_eps,
           c.tie_word_embeddings ? "yes" : "no");
    double state_bytes = 0;
    if (c.n_gdn) {
        printf("GDN        key heads %d x %d, value heads %d x %d, conv %d\n", c.gdn.n_k_heads, c.gdn.k_head_dim,
               c.gdn.n_v_heads, c.gdn.v_head_dim, c.gdn.conv_kernel);
        state_bytes += 4.0 * c.n_gdn * c.gdn.n_v_heads * c.gdn.v_head_dim * c.gdn.k_head_dim;
    }
    if (c.n_mamba) {
        printf("Mamba-2    heads %d x %d, groups %d, d_state %d, conv %d\n", c.mamba.n_heads, c.mamba.head_dim,
               c.mamba.n_groups, c.mamba.d_state, c.mamba.conv_kernel);
        state_bytes += 4.0 * c.n_mamba * c.mamba.n_heads * c.mamba.head_dim * c.mamba.d_state;
    }
    if (c.n_attn)
        printf("attention  heads %d, kv heads %d, head dim %d%s\n", c.attn.n_heads, c.attn.n_kv_heads, c.attn.head_dim,
               c.attn.use_rope ? "" : " (no positional encoding)");
    if (c.is_moe) {
        const rs_moe_config *mo = &c.moe;
        printf("MoE        %d layers: %d routed experts (top %d, width %d%s), shared expert width %d%s\n", c.n_moe,
               mo->n_experts, mo->top_k, mo->intermediate, mo->activation == RS_ACT_SILU ? ", SwiGLU" : ", relu2",
               mo->shared_intermediate, mo->shared_gate ? " x sigmoid(gate)" : "");
        if (mo->router == RS_ROUTER_SOFTMAX)
            printf("router     softmax over all experts, top %d renormalised\n", mo->top_k);
        else
            printf("router     sigmoid + selection bias, %d groups (keep %d), weights %s x %g\n", mo->n_group,
                   mo->topk_group, mo->norm_topk_prob ? "renormalised" : "as scored", (double)mo->routed_scaling_factor);
        if (mo->latent > 0) printf("latent     experts act on %d of %d dims (fc1/fc2_latent_proj)\n", mo->latent, c.hidden);
    } else {
        printf("MoE        none (dense)\n");
    }
    info_weights_(dir);
    printf("SSM state  %.0f bytes per sequence in fp32\n", state_bytes);
    rs_model_plan pl;
    if (rs_model_plan_cpu(&c, g_plan_runs, g_plan_tokens, 512, &pl) == RS_OK) {
        printf("plan (CPU) %zu runs x %zu positions: %.2f GB = fp32 weights %.2f + runs x (KV %.2f + SSM and conv "
               "state %.4f) + logits %.2f (chunk 512)\n", g_plan_runs, g_plan_tokens, pl.total / 1e9, pl.weights / 1e9,
               pl.kv_per_run / 1e9, pl.state_per_run / 1e9, pl.logits / 1e9);
        if (pl.have > 0)
            printf("           this machine: %.2f GB of memory: %s\n", pl.have / 1e9,
                   pl.total <= pl.have ? "fits" : "does not fit (kl refuses it before allocating)");
    }
    info_gpu_plan_(dir);
    printf("KV cache   %.0f bytes per token in fp32 (per run)\n",
           4.0 * 2 * c.n_attn * c.attn.n_kv_heads * c.attn.head_dim);
    /* the tokenizer the evaluator would use (rs_tokenizer_open: the same checks as `kl`) */
    rs_tokenizer tok;
    if (rs_tokenizer_open(dir, c.vocab, &tok) != RS_OK) {
        printf("tokenizer  refused: %s\n", rs_cli_esc(rs_last_error(), esc, sizeof esc));
        return 0;
    }
    if (tok.format == RS_TOKFMT_BYTE)
        printf("tokenizer  byte (id = byte value)%s, vocabulary %d ids\n",
               tok.path[0] ? "" : ", no tokenizer file", tok.vocab);
    else
        printf("tokenizer  %s, vocabulary %d ids (ids 0..%d; model vocab_size %d)\n", rs_cli_esc(tok.name, esc, sizeof esc),
               tok.vocab, tok.vocab - 1, c.vocab);
    if (tok.path[0]) {
        printf("tokenizer_file   %s\n", rs_cli_esc(tok.path, esc, sizeof esc));
        printf("tokenizer_sha256 %s\n", rs_cli_esc(tok.sha256, esc, sizeof esc));
    }
    rs_tokenizer_free(&tok);
    return 0;
}

void rs_cli_print_window_header(FILE *f)
{
    for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
        size_t lo, hi;
        rs_kl_window_bounds(w, &lo, &hi);
        char lab[64];
        snprintf(lab, sizeof lab, "%zuK-%zuK", lo / 1024, hi / 1024);
        fprintf(f, " %10s", lab);
    }
    fprintf(f, "\n");
}

/* MoE logs: per run, the (position, MoE layer) pairs of the committed positions whose experts differ
   from the reference's, and the experts chosen unlike it (books whose counts were not recorded skipped) */
static int print_routing_(const rs_h5log *lg)
{
    const size_t L = rs_h5log_n_moe_layers(lg), R = rs_h5log_n_runs(lg), B = rs_h5log_n_books(lg);
    if (L == 0) return 0;
    int64_t *c = (int64_t *)malloc(2 * L * sizeof(int64_t));
    if (!c) {
        fprintf(stderr, "replayssm info: out of memory\n");
        return 1;
    }
    printf("\nMoE routing against the reference (%zu MoE layers, committed positions):\n", L);
    int rc = 0;
    for (size_t r = 0; r < R && rc == 0; r++) {
        long long pairs = 0, diff = 0, ex = 0, skipped = 0;
        for (size_t b = 0; b < B && rc == 0; b++) {
            const rs_status st = rs_h5log_get_route_diff(lg, r, b, c, c + L);
            if (st != RS_OK) {
                rc = rs_cli_fail("info", "cannot read the routing counts", st);
                break;
            }
            if (c[0] < 0) {
                skipped += rs_h5log_completed(lg, b) > 0;
                continue;
            }
            pairs += (long long)rs_h5log_completed(lg, b) * (long long)L;
            for (size_t j = 0; j < L; j++) diff += c[j], ex += c[L + j];
        }
        if (rc) break;
        printf("  %-28s L=%-5llu %lld of %lld (position, layer) pairs routed otherwise (%.4f %%), %lld experts unlike "
               "the reference's%s\n",
               rs_h5log_policy(lg, r), (unsigned long long)rs_h5log_window(lg, r), diff, pairs,
               pairs ? 100.0 * (double)diff / (double)pairs : 0.0, ex, skipped ? " (books without counts skipped)" : "");
    }
    free(c);
    return rc;
}

void rs_cli_print_reference(const rs_h5log_ref_summary *rs, FILE *f)
{
    if (!rs->n) return;
    fprintf(f, "\nreference: mean NLL %.4f nats = %.4f bits per token, PPL %.4f, over %zu positions\n",
            rs->mean_nll, rs->mean_nll / RS_CLI_LN2, exp(rs->mean_nll), rs->n);
    fprintf(f, "reference bits per token by position window (bits per byte with the byte tokenizer):\n%-3s", "");
    rs_cli_print_window_header(f);
    fprintf(f, "%-3s", "");
    for (size_t w = 0; w < RS_KL_N_WINDOWS; w++) {
        if (rs->window_n[w]) fprintf(f, " %10.4f", rs->window_mean_nll[w] / RS_CLI_LN2);
        else fprintf(f, " %10s", "-");
    }
    fprintf(f, "\n");
}

/* the files of a text / token-id input: input_file_<i> and input_sha256_<i> for i below the
 * declared count (a decimal string), in order, up to the first index the log has neither of
 * (a hostile count costs no more lookups than the attributes really there) */
static void print_input_files_(const rs_h5log *lg, const char *count)
{
    char *end = NULL;
    const unsigned long long n = strtoull(count, &end, 10);
    if (!count[0] || *end || count[0] == '-') return; /* not a count: printed above as it is */
    char key[64], buf[4096], esc[4 * sizeof buf + 1];
    for (unsigned long long i = 0; i < n; i++) {
        int any = 0;
        snprintf(key, sizeof key, "input_file_%llu", i);
        if (rs_h5log_get_attr_string(lg, "/", key, buf, sizeof buf) == RS_OK) {
            printf("  %-16s %s\n", key, rs_cli_esc(buf, esc, sizeof esc));
            any = 1;
        }
        snprintf(key, sizeof key, "input_sha256_%llu", i);
        if (rs_h5log_get_attr_string(lg, "/", key, buf, sizeof buf) == RS_OK) {
            printf("  %-16s %s\n", key, rs_cli_esc(buf, esc, sizeof esc));
            any = 1;
        }
        if (!any) {
            printf("  (the log names %llu of %llu input files)\n", i, n);
            break;
        }
    }
}

static int info_log_(const char *path)
{
    rs_h5log *lg = NULL;
    rs_status st = rs_h5log_open(path, 0, NULL, &lg);
    if (st != RS_OK) return rs_cli_fail("info", "cannot open the log", st);
    /* root attributes in this order, each where the log has it (older logs lack the device and
     * input ones); "input_files" is followed by input_file_<i> / input_sha256_<i> */
    static const char *keys[] = {"status", "tool_version", "git_commit", "command_line", "model_path", "model_type",
                                 "model_config_hash", "tokenizer", "tokenizer_file", "tokenizer_sha256", "device_kind",
                                 "compute", "device", "input", "input_files", "data_path", "split", "short_books",
                                 "start_time", "end_time"};
    /* every string of the log goes through rs_cli_esc: a hostile log cannot send terminal controls */
    char buf[4096], esc[4 * sizeof buf + 1];
    printf("log        %s\n", rs_cli_esc(path, esc, sizeof esc));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (rs_h5log_get_attr_string(lg, "/", keys[i], buf, sizeof buf) != RS_OK) continue;
        printf("%-18s %s\n", keys[i], rs_cli_esc(buf, esc, sizeof esc));
        if (!strcmp(keys[i], "input_files")) print_input_files_(lg, buf);
    }
    printf("%-18s %llu per book, chunk %llu\n", "tokens", (unsigned long long)rs_h5log_tokens(lg),
           (unsigned long long)rs_h5log_chunk(lg));
    size_t done = 0, total = 0;
    printf("books (%zu):\n", rs_h5log_n_books(lg));
    for (size_t b = 0; b < rs_h5log_n_books(lg); b++) {
        printf("  %-8s %lld / %llu positions\n", rs_cli_esc(rs_h5log_book_id(lg, b), esc, sizeof esc),
               (long long)rs_h5log_completed(lg, b),
               (unsigned long long)rs_h5log_book_len(lg, b));
        done += (size_t)rs_h5log_completed(lg, b);
        total += rs_h5log_book_len(lg, b);
    }
    printf("committed  %zu of %zu positions%s\n", done, total, done < total ? " (incomplete: --resume continues)" : "");
    char partial[4096];
    struct stat sb;
    if (rs_h5log_partial_path(path, partial, sizeof partial) == RS_OK && lstat(partial, &sb) == 0)
        printf("note       %s holds an interrupted --force run: --resume continues it, and it replaces this log "
               "once complete\n", rs_cli_esc(partial, esc, sizeof esc));
    int rc = 0;
    rs_h5log_ref_summary rsum;
    st = rs_h5log_reference_summary(lg, &rsum);
    if (st != RS_OK) {
        rc = rs_cli_fail("info", "cannot summarise the reference", st);
        rs_h5log_close(lg);
        return rc;
    }
    const size_t R = rs_h5log_n_runs(lg);
    if (R == 0) {
        rs_cli_print_summary(stdout, 0, NULL, NULL, NULL, &rsum, g_all_stats);
        printf("\nruns: none (a reference-only log: kl --policy none)\n");
        rs_h5log_close(lg);
        return 0;
    }
    rs_kl_summary *sums = (rs_kl_summary *)calloc(R, sizeof *sums);
    if (!sums) {
        fprintf(stderr, "replayssm info: out of memory\n");
        rs_h5log_close(lg);
        return 1;
    }
    for (size_t r = 0; r < R && rc == 0; r++) {
        st = rs_h5log_summarize(lg, r, &sums[r]);
        if (st != RS_OK) rc = rs_cli_fail("info", "cannot summarise", st);
    }
    /* a run that went non-finite says so first (the same lines as `kl`), then the table */
    int blank = 0;
    for (size_t r = 0; r < R && rc == 0; r++) {
        if (!sums[r].n_nonfinite) {
            int64_t p = -1;
            int32_t L, H;
            int any = 0;
            for (size_t b = 0; b < rs_h5log_n_books(lg) && !any; b++)
                any = rs_h5log_get_nonfinite(lg, r, b, &p, &L, &H) == RS_OK && p >= 0;
            if (!any) continue;
        }
        if (!blank) printf("\n");
        blank = 1;
        rs_cli_print_nonfinite(stdout, lg, r, rs_h5log_policy(lg, r), (size_t)rs_h5log_window(lg, r), &sums[r]);
    }
    if (rc == 0) { /* the table `kl` prints at its end (cli_summary.c), then the reference's */
        const char **pols = (const char **)calloc(R, sizeof *pols);
        size_t *wins = (size_t *)calloc(R, sizeof *wins);
        if (!pols || !wins) {
            fprintf(stderr, "replayssm info: out of memory\n");
            rc = 1;
        }
        for (size_t r = 0; r < R && rc == 0; r++) {
            pols[r] = rs_h5log_policy(lg, r);
            wins[r] = (size_t)rs_h5log_window(lg, r);
        }
        if (rc == 0) rs_cli_print_summary(stdout, R, pols, wins, sums, &rsum, g_all_stats);
        free(pols);
        free(wins);
    }
    if (rc == 0) rc = print_routing_(lg);
    free(sums);
    rs_h5log_close(lg);
    return rc;
}

int rs_cmd_info(int argc, char **argv)
{
    char *pos[1];
    size_t n_pos = 0;
    g_all_stats = 0;
    const int pr = rs_cli_parse(&k_info_spec, argc, argv, NULL, pos, &n_pos);
    if (pr) return pr == 1 ? 0 : 2;
    if (n_pos != 1) {
        rs_cli_help(&k_info_spec, stderr);
        return 2;
    }
    struct stat sb;
    if (stat(pos[0], &sb) != 0) {
        fprintf(stderr, "replayssm info: %s does not exist\n", pos[0]);
        return 1;
    }
    return S_ISDIR(sb.st_mode) ? info_model_(pos[0]) : info_log_(pos[0]);
}
