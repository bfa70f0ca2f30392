/* test_cuda_dk_refuse.cu — what the CUDA layer does with d_k != 128, checked on the host
 * alone: every check below is an argument check that the launchers make before any launch, so the
 * program needs no GPU (it runs, and must pass, on CI's CPU-only machine as well as on the H200) and
 * never touches device memory (every pointer is an aligned dummy that is never dereferenced).
 *
 *   - the standard decode (rs_cuda_conv_decode, rs_cuda_replay_decode) takes d_k = 64, 128 and 256:
 *     other widths (32, 96, 192, 512) give RS_E_UNSUPPORTED naming d_k; at 64 / 128 / 256 the same call
 *     gets past the d_k check to a later one (shown by a deliberately bad later argument, whose
 *     RS_E_INVAL comes back instead);
 *   - low-precision checkpoint reads (ckpt_read set) and rs_cuda_replay_requant refuse d_k = 64 / 256
 *     with RS_E_UNSUPPORTED and a message naming d_k and the low-precision reads;
 *   - speculative verification (rs_cuda_replay_verify, rs_cuda_replay_commit), the snapshot path
 *     (rs_cuda_snapshot_verify, rs_cuda_snapshot_commit) and the scan (rs_cuda_scan_bytes / _create)
 *     refuse d_k = 64 / 256 with RS_E_UNSUPPORTED (scan_bytes: 0), while d_k = 128 gets past the check;
 *   - launch options (rs_cuda_launch_opts) outside their ranges make rs_cuda_replay_decode and
 *     rs_cuda_replay_verify return RS_E_INVAL naming them, while every named value gets past that check.
 * Exit 0 if every check passes, 1 otherwise (never 77: no device is needed). Usage: test_cuda_dk_refuse
 */
#include <cstdarg>

#include "cuda_test_util.h"
#include "replayssm/cuda/rs_cuda_scan.h"
#include "replayssm/engine/rs_policy.h"

static void *const P = (void *)(uintptr_t)4096; /* aligned dummy: never dereferenced */

/* the status and that the message names `what` */
static bool refused(rs_status st, const char *what)
{
    return st == RS_E_UNSUPPORTED && strstr(rs_last_error(), what) != nullptr;
}

static void report(const char *name, bool ok, rs_status st)
{
    ct_report(name, ok, "status %s: %s", rs_strerror(st), st == RS_OK ? "" : rs_last_error());
}

static rs_ssm_step_io dummy_io()
{
    rs_ssm_step_io io = {(const float *)P, (const float *)P, (const float *)P, (const float *)P, (const float *)P,
                         (float *)P};
    return io;
}

/* a replay state whose pointers are non-null placeholders (no launch reaches them), window L */
static rs_cuda_replay_state dummy_replay(int L)
{
    rs_cuda_replay_state rs;
    memset(&rs, 0, sizeof rs);
    rs.S_ckpt = (float *)P, rs.ring_v = P, rs.ring_k = P, rs.ring_alpha = (float *)P, rs.fill = (const int32_t *)P;
    rs.L = L;
    return rs;
}

/* a conventional state with placeholder storage and the given dtype */
static rs_cuda_conv_state dummy_conv(rs_cuda_dtype t)
{
    rs_cuda_conv_state cs;
    memset(&cs, 0, sizeof cs);
    cs.S = P, cs.dtype = t;
    return cs;
}

static void test_decode_widths()
{
    const rs_ssm_step_io io = dummy_io();
    char name[160];
    for (int dk : {32, 96, 192, 512}) {
        const rs_ssm_dims d = {2, 8, 2, 64, dk};
        rs_cuda_conv_state cs = dummy_conv((rs_cuda_dtype)0);
        rs_status st = rs_cuda_conv_decode(RS_SSM_MAMBA2, &d, &io, &cs, nullptr);
        snprintf(name, sizeof name, "conv decode d_k=%d refused", dk);
        report(name, refused(st, "d_k"), st);
        rs_cuda_replay_state rs = dummy_replay(16);
        st = rs_cuda_replay_decode(RS_SSM_GDN, &d, &io, &rs, nullptr, nullptr);
        snprintf(name, sizeof name, "replay decode d_k=%d refused", dk);
        report(name, refused(st, "d_k"), st);
    }
    /* supported widths pass the d_k check: a bad state dtype (conv) / a bad window (replay), checked after
     * it, is what comes back */
    for (int dk : {64, 128, 256}) {
        const rs_ssm_dims d = {2, 8, 2, 64, dk};
        rs_cuda_conv_state cs = dummy_conv((rs_cuda_dtype)7);
        rs_status st = rs_cuda_conv_decode(RS_SSM_GDN, &d, &io, &cs, nullptr);
        snprintf(name, sizeof name, "conv decode d_k=%d accepted (bad dtype reported)", dk);
        report(name, st == RS_E_INVAL && strstr(rs_last_error(), "dtype"), st);
        rs_cuda_replay_state rs = dummy_replay(0);
        st = rs_cuda_replay_decode(RS_SSM_MAMBA2, &d, &io, &rs, nullptr, nullptr);
        snprintf(name, sizeof name, "replay decode d_k=%d accepted (bad window reported)", dk);
        report(name, st == RS_E_INVAL && strstr(rs_last_error(), "window"), st);
    }
}

static void test_lp_reads()
{
    const rs_ssm_step_io io = dummy_io();
    char name[160];
    for (int dk : {64, 256}) {
        const rs_ssm_dims d = {2, 8, 2, 64, dk};
        rs_qtensor q;
        memset(&q, 0, sizeof q);
        q.fmt.kind = RS_FMT_FP8, q.codes = (uint8_t *)P;
        q.n = (size_t)d.batch * d.heads * d.d_v * dk, q.tensor_extent = (size_t)d.d_v * dk;
        rs_cuda_replay_state rs = dummy_replay(16);
        rs.work = (float *)P, rs.ckpt_read = &q;
        for (int lpk : {0, 3, 4}) {
            rs.lp_kernel = lpk;
            const rs_status st = rs_cuda_replay_decode(RS_SSM_MAMBA2, &d, &io, &rs, nullptr, nullptr);
            snprintf(name, sizeof name, "low-precision read (lp_kernel %d) d_k=%d refused", lpk, dk);
            report(name, refused(st, "low-precision") && strstr(rs_last_error(), "d_k"), st);
        }
        const rs_status st = rs_cuda_replay_requant(&d, &rs, nullptr);
        snprintf(name, sizeof name, "requant d_k=%d refused", dk);
        report(name, refused(st, "d_k"), st);
    }
}

static void test_verify()
{
    const rs_ssm_step_io io = dummy_io();
    char name[160];
    rs_cuda_verify_state vs;
    memset(&vs, 0, sizeof vs);
    vs.S_ckpt = (float *)P, vs.ring_v = P, vs.ring_k = P, vs.ring_alpha = (float *)P, vs.fill = (int32_t *)P;
    vs.start = (int32_t *)P, vs.work = (float *)P, vs.L = 16, vs.cap = 24;
    for (int dk : {64, 128, 256}) {
        const rs_ssm_dims d = {2, 8, 2, 64, dk};
        const bool want_refuse = dk != RS_CUDA_DK;
        /* T = 0 is invalid: d_k = 128 must get past the d_k check and report it (RS_E_INVAL) */
        const int T = want_refuse ? 4 : 0;
        rs_status st = rs_cuda_replay_verify(RS_SSM_GDN, &d, T, &io, &vs, nullptr, nullptr);
        snprintf(name, sizeof name, "replay verify d_k=%d %s", dk, want_refuse ? "refused" : "accepted (T = 0 reported)");
        report(name, want_refuse ? refused(st, "d_k") : st == RS_E_INVAL, st);
        st = rs_cuda_snapshot_verify(RS_SSM_MAMBA2, &d, T, &io, (const float *)P, (float *)P, nullptr);
        snprintf(name, sizeof name, "snapshot verify d_k=%d %s", dk, want_refuse ? "refused" : "accepted (T = 0 reported)");
        report(name, want_refuse ? refused(st, "d_k") : st == RS_E_INVAL, st);
        if (want_refuse) {
            st = rs_cuda_replay_commit(&d, 4, (const int32_t *)P, &vs, nullptr);
            snprintf(name, sizeof name, "replay commit d_k=%d refused", dk);
            report(name, refused(st, "d_k"), st);
            st = rs_cuda_snapshot_commit(&d, 4, (const int32_t *)P, (const float *)P, (float *)P, nullptr);
            snprintf(name, sizeof name, "snapshot commit d_k=%d refused", dk);
            report(name, refused(st, "d_k"), st);
        }
    }
}

static void test_scan()
{
    rs_policy pol;
    RSK(rs_policy_parse("shared:fp32", &pol));
    const uint32_t layer = 0;
    const size_t window = 16;
    const uint64_t seed = 1;
    char name[160];
    for (int dk : {64, 128, 256}) {
        rs_cuda_scan_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.kind = RS_SSM_GDN, cfg.n_runs = 1, cfg.n_layers = 1, cfg.layer_ids = &layer, cfg.heads = 8;
        cfg.key_heads = 2, cfg.d_v = 64, cfg.d_k = dk, cfg.policies = &pol, cfg.windows = &window, cfg.seeds = &seed;
        cfg.max_chunk = 64;
        const size_t bytes = rs_cuda_scan_bytes(&cfg);
        if (dk == RS_CUDA_DK) {
            snprintf(name, sizeof name, "scan d_k=%d accepted (bytes > 0)", dk);
            ct_report(name, bytes > 0, "rs_cuda_scan_bytes %zu", bytes);
            continue; /* create would allocate device memory */
        }
        rs_cuda_scan *sc = (rs_cuda_scan *)P;
        const rs_status st = rs_cuda_scan_create(&cfg, &sc);
        snprintf(name, sizeof name, "scan d_k=%d refused", dk);
        ct_report(name, refused(st, "d_k") && bytes == 0 && sc == nullptr, "bytes %zu, status %s: %s", bytes,
                  rs_strerror(st), rs_last_error());
    }
}

/* each field one step outside its range, and sets of named values inside them; the states carry a bad later
 * argument (window L = 0), so a call that passes the options check reports that one instead */
static void test_launch_opts()
{
    const rs_ssm_step_io io = dummy_io();
    const rs_ssm_dims d = {2, 8, 2, 64, RS_CUDA_DK};
    const rs_cuda_replay_state rs = dummy_replay(0);
    rs_cuda_verify_state vs;
    memset(&vs, 0, sizeof vs);
    vs.S_ckpt = (float *)P, vs.ring_v = P, vs.ring_k = P, vs.ring_alpha = (float *)P, vs.fill = (int32_t *)P;
    vs.start = (int32_t *)P, vs.work = (float *)P, vs.L = 0, vs.cap = 24;
    const rs_cuda_launch_opts bad[] = {{-1, 0, 0, 0, 0},
                                       {0, -1, 0, 0, 0},
                                       {0, 0, -1, 0, 0},
                                       {0, 0, RS_CUDA_SPEC_KEYS + 1, 0, 0},
                                       {0, 0, 0, RS_CUDA_L2PF_ALWAYS + 1, 0},
                                       {0, 0, 0, 0, RS_CUDA_GSHARE_WIDEN + 1}};
    const rs_cuda_launch_opts good[] = {{0, 0, 0, 0, 0},
                                        {4, 2, RS_CUDA_SPEC_OFF, RS_CUDA_L2PF_OFF, RS_CUDA_GSHARE_OFF},
                                        {1, 4, RS_CUDA_SPEC_VALUES, RS_CUDA_L2PF_MULTIWAVE, RS_CUDA_GSHARE_BLOCK},
                                        {64, 1, RS_CUDA_SPEC_KEYS, RS_CUDA_L2PF_ALWAYS, RS_CUDA_GSHARE_WIDEN}};
    /* both launchers with options o: RS_E_INVAL whose message holds dec_want (decode) and ver_want (verify) */
    auto check = [&](const rs_cuda_launch_opts &o, const char *label, const char *dec_want, const char *ver_want) {
        char name[160];
        rs_status st = rs_cuda_replay_decode(RS_SSM_MAMBA2, &d, &io, &rs, &o, nullptr);
        snprintf(name, sizeof name, "replay decode: launch options %s", label);
        report(name, st == RS_E_INVAL && strstr(rs_last_error(), dec_want), st);
        st = rs_cuda_replay_verify(RS_SSM_GDN, &d, 4, &io, &vs, &o, nullptr);
        snprintf(name, sizeof name, "replay verify: launch options %s", label);
        report(name, st == RS_E_INVAL && strstr(rs_last_error(), ver_want), st);
    };
    char label[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        snprintf(label, sizeof label, "%zu refused", i);
        check(bad[i], label, "launch options", "launch options");
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
        snprintf(label, sizeof label, "%zu accepted (L = 0 reported)", i);
        check(good[i], label, "window L = 0", "T <= L");
    }
}

int main()
{
    printf("test_cuda_dk_refuse: host-side argument checks (no device needed)\n");
    test_decode_widths();
    test_lp_reads();
    test_verify();
    test_scan();
    test_launch_opts();
    return ct_finish("test_cuda_dk_refuse");
}
