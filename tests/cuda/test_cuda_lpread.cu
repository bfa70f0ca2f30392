/* test_cuda_lpread.cu — ReplaySSM decode reading a low-precision copy of the checkpoint
 * (rs_cuda_replay_state.ckpt_read: fp16 / bf16 / fp8 / nvfp4, split checkpoint) and
 * rs_cuda_replay_requant, against the lib engine and against float64, at the four shapes.
 *
 * The kernel's rule: a non-flush row (fill + 1 < L) reads the LP copy, a flush row reads and
 * writes the fp32 checkpoint (folding its ring and this step), and requant re-quantises (RTN) the
 * rows that flushed. The engine's split policies decide the flush before the token (h + 1 > L:
 * the window holds L records, the flushing token becomes record 0 of the next window), so over
 * the first window the kernel at window L takes exactly the decisions of the engine at window
 * L - 1: L - 1 LP reads of the same LP bytes, then a flush whose output and new state (HP
 * folded, plus the flushing token) are the same quantities. After that the two keep different
 * tokens in their checkpoints and their LP roundings part, so the comparison covers one window.
 * Engine policy "split-naive:<fmt>/fp32": GDN's records are the cached u computed from the LP
 * copy (the kernel folds the records it cached; "split" would recompute u along the fp32 path).
 *
 * Row b decodes fill0[b] tokens alone (B = 1 launches, row views of every buffer and of the
 * quantized copy), then one joint step in which row 2 flushes and the others read LP. Checks:
 *   - the engine's LP copy after its reset == rs_dequantize of the GPU quantizer's bytes (bits);
 *   - every output, solo and joint, against the engine (<= k_tol_engine, fp32 noise on identical
 *     LP values); the joint step against float64 from the same dequantised bytes and the GPU's
 *     ring records (<= 1e-5: the quantisation error is in both, only rounding differs);
 *   - the flushed row's new fp32 checkpoint against the engine's state (<= k_tol_engine) and
 *     float64 (<= 1e-5); the other rows' checkpoints unchanged (bits);
 *   - requant: the flushed row's bytes == rs_quantize (RTN) of its new checkpoint, the other rows'
 *     bytes unchanged; the fill counters after advance;
 *   - which kernel ran (rs_cuda_replay_lp_version: v4 by default, v3 when asked), each version on
 *     every shape and format, and (Mamba-2) a bf16 ring with bf16-exact v and k.
 * Exit 0 if every check passes, 1 otherwise, 77 without a GPU. Usage: test_cuda_lpread [--quick]
 * (--quick, for compute-sanitizer: v4 only, on Nemotron-3-Super and Qwen3.5-4B)
 */
#include "cuda_test_util.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/quant/rs_format.h"
#include "replayssm/quant/rs_qtensor.h"

static const double k_tol64 = 1e-5;      /* float64 of the same dequantised bytes */
static const double k_tol_engine = 2e-5; /* GPU vs engine, fp32 noise (docs/kernels.md) */

/* Row b of a quantized copy of B rows of row_elems elements as a one-row descriptor. */
static rs_qtensor row_view(const rs_qtensor &q, size_t row_elems, int b)
{
    rs_qtensor v = q;
    const size_t e0 = row_elems * (size_t)b;
    v.n = row_elems;
    switch (q.fmt.kind) {
    case RS_FMT_FP16:
    case RS_FMT_BF16: v.codes = q.codes + 2 * e0; break;
    case RS_FMT_FP8:
        v.codes = q.codes + e0;
        v.scale_inv = q.scale_inv + e0 / RS_FP8_BLOCK;
        break;
    case RS_FMT_NVFP4:
        v.codes = q.codes + e0 / 2;
        v.block_scale = q.block_scale + e0 / RS_NVFP4_BLOCK;
        v.tensor_scale_dec = q.tensor_scale_dec + e0 / q.tensor_extent;
        break;
    default: break;
    }
    return v;
}

static bool same_row_bytes(const rs_qtensor &a, const rs_qtensor &b, size_t row_elems, int row)
{
    const rs_qtensor x = row_view(a, row_elems, row), y = row_view(b, row_elems, row);
    switch (a.fmt.kind) {
    case RS_FMT_FP16:
    case RS_FMT_BF16: return !memcmp(x.codes, y.codes, 2 * row_elems);
    case RS_FMT_FP8:
        return !memcmp(x.codes, y.codes, row_elems) && !memcmp(x.scale_inv, y.scale_inv, 4 * (row_elems / RS_FP8_BLOCK));
    case RS_FMT_NVFP4:
        return !memcmp(x.codes, y.codes, row_elems / 2) &&
               !memcmp(x.block_scale, y.block_scale, row_elems / RS_NVFP4_BLOCK) &&
               !memcmp(x.tensor_scale_dec, y.tensor_scale_dec, 4 * (row_elems / a.tensor_extent));
    default: return false;
    }
}

/* the version lp_kernel lpk must run (rs_cuda.h: AUTO takes v4, on every format since v4e; every buffer here
 * is 16-byte aligned, so a forced v4 runs v4) */
static int want_version(int lpk) { return lpk == 3 || lpk == 7 ? lpk : 4; }

/* lpk: rs_cuda_replay_state.lp_kernel (0 = AUTO, 3 = v3, 4 = v4); bf16ring (Mamba-2 only): a bf16 ring with
 * bf16-exact v and k, so the ring stores them unchanged and the engine (fp32 records) stays the
 * reference, as in test_cuda_decode */
/* recompute (GDN): two-precision records (ring_vraw, ring_beta): the flush recomputes u along the
 * fp32 path; engine "split:<fmt>/fp32" (rs_replay_gdn_fold_recompute) instead of split-naive */
/* launch: rs_cuda_replay_state.launch (FUSED: v4's fused launch, given no `work`; PROLOGUE; AUTO, which
 * takes the prologue for low-precision reads). v3 (lpk 3) always keeps the prologue launch. */
/* graph: the joint step's decode captured into a CUDA graph and launched from it (the prologue path's main
 * kernel is the prologue's programmatic dependent: the capture must keep that edge) */
static void test_lp_reads(const Shape &s, const char *fmtstr, int lpk, bool bf16ring, const char *tag,
                          bool recompute = false, int launch = RS_CUDA_LAUNCH_FUSED, bool graph = false, int win = 16)
{
    const int want_ver = want_version(lpk);
    const bool two = launch != RS_CUDA_LAUNCH_FUSED || want_ver == 3 || want_ver == 7; /* launches: 2, else the fused 1 */
    const rs_cuda_dtype rdt = bf16ring ? RS_CUDA_BF16 : RS_CUDA_F32;
    const int B = 4, H = s.H, G = s.G, dv = s.dv, L = win;
    /* row 2 flushes in the joint step; at L > 32 row 0 reads with 35 records (the kernels' second lane of records) */
    const int fill0[B] = {L > 32 ? 35 : 3, 7, L - 1, 0};
    const size_t E = (size_t)dv * DK, row = (size_t)H * E, nS = B * row, nout1 = (size_t)H * dv;
    rs_format fmt;
    RSK(rs_format_parse(fmtstr, &fmt));
    const std::vector<double> rate = ct_head_rates(H);
    std::vector<float> S0(nS);
    for (auto &x : S0) x = (float)(0.3 * ct_normal());

    /* GPU: fp32 checkpoint, empty fp32 ring, the LP copy quantised on the device */
    float *dS = dalloc<float>(nS), *drv = dalloc<float>((size_t)B * H * L * dv), *drk = dalloc<float>((size_t)B * G * L * DK),
          *dra = dalloc<float>((size_t)B * H * L);
    int32_t *dfill = dalloc<int32_t>(B);
    float *drvraw = recompute ? dalloc<float>((size_t)B * H * L * dv) : nullptr;
    float *drbeta = recompute ? dalloc<float>((size_t)B * H * L) : nullptr;
    rs_ssm_dims d4 = {B, H, G, dv, DK}, d1 = {1, H, G, dv, DK};
    float *dwork = (float *)dalloc<uint8_t>(rs_cuda_replay_work_bytes(&d4, L, 0));
    h2d(dS, S0);
    CK(cudaMemset(dfill, 0, B * sizeof(int32_t)));
    rs_qtensor dq, hq, hq2, hq3;
    RSK(rs_cuda_qtensor_alloc(&dq, &fmt, nS, E));
    RSK(rs_cuda_quantize(&dq, dS, 1, 2, nullptr));
    RSK(rs_qtensor_alloc(&hq, &fmt, nS, E));
    RSK(rs_qtensor_alloc(&hq2, &fmt, nS, E));
    RSK(rs_qtensor_alloc(&hq3, &fmt, nS, E));
    const size_t qbytes = rs_qtensor_bytes(&hq);
    CK(cudaMemcpy(hq.codes, dq.codes, qbytes, cudaMemcpyDeviceToHost));
    std::vector<float> Sdq(nS);
    RSK(rs_dequantize(&hq, Sdq.data()));

    Bank bank;
    char pol[64];
    snprintf(pol, sizeof pol, "%s:%s/fp32", recompute ? "split" : "split-naive", fmtstr);
    bank.init(s, B, pol, (size_t)L - 1, 1, nullptr, 0, S0.data());
    std::vector<float> elp;
    bank.checkpoint(1, elp);
    const size_t lp_bits = ct_bits_differ(elp.data(), Sdq.data(), nS);

    /* solo steps: row b alone, its views */
    DevStep io1, io4;
    io1.alloc(s, 1, 1), io4.alloc(s, B, 1);
    double e_eng = 0;
    StepIn in;
    std::vector<float> og(nout1 * B), oe(nout1 * B);
    for (int b = 0; b < B; ++b) {
        const rs_qtensor v = row_view(dq, row, b);
        /* ring views in bytes: the ring elements are rdt, not float */
        const size_t es = rs_cuda_dtype_bytes(rdt);
        rs_cuda_replay_state st = {dS + b * row, (uint8_t *)drv + es * b * H * L * dv,
                                   (uint8_t *)drk + es * b * G * L * DK, dra + (size_t)b * H * L, rdt, L,
                                   dfill + b, two ? dwork : nullptr, &v, 0, lpk};
        st.launch = launch;
        if (recompute) st.ring_vraw = drvraw + (size_t)b * H * L * dv, st.ring_beta = drbeta + (size_t)b * H * L;
        const rs_ssm_step_io sio = io1.io();
        for (int j = 0; j < fill0[b]; ++j) {
            ct_gen_step(s, 1, bf16ring, rate, in);
            io1.upload(in);
            RSK(rs_cuda_replay_decode(s.fam, &d1, &sio, &st, &ct_opts, nullptr));
            RSK(rs_cuda_replay_requant(&d1, &st, nullptr)); /* no flush: must change nothing */
            RSK(rs_cuda_replay_advance(dfill + b, 1, L, nullptr));
            bank.decode(b, 1, in, oe.data());
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(og.data(), io1.o, nout1 * sizeof(float), cudaMemcpyDeviceToHost));
            e_eng = fmax(e_eng, ct_rel(og.data(), oe.data(), nout1));
        }
    }
    /* the joint step */
    ct_gen_step(s, B, bf16ring, rate, in);
    io4.upload(in);
    const rs_ssm_step_io sio4 = io4.io();
    rs_cuda_replay_state st4 = {dS, drv, drk, dra, rdt, L, dfill, two ? dwork : nullptr, &dq, 0, lpk};
    st4.ring_vraw = drvraw, st4.ring_beta = drbeta, st4.launch = launch;
    const int version = rs_cuda_replay_lp_version(s.fam, &sio4, &st4); /* the kernel that ran */
    const int launches = rs_cuda_replay_launches(s.fam, &d4, &sio4, &st4, &ct_opts);
    size_t gnodes = 0;
    if (graph) gnodes = ct_run_as_graph([&](cudaStream_t cs) { RSK(rs_cuda_replay_decode(s.fam, &d4, &sio4, &st4, &ct_opts, cs)); });
    else RSK(rs_cuda_replay_decode(s.fam, &d4, &sio4, &st4, &ct_opts, nullptr));
    RSK(rs_cuda_replay_requant(&d4, &st4, nullptr));
    RSK(rs_cuda_replay_advance(dfill, B, L, nullptr));
    bank.decode(0, B, in, oe.data());
    std::vector<float> Snew(nS), rv((size_t)B * H * L * dv), rk((size_t)B * G * L * DK), ra((size_t)B * H * L);
    std::vector<int32_t> fill(B);
    CK(cudaDeviceSynchronize());
    d2h(og, io4.o), d2h(Snew, dS), d2h(ra, dra), d2h(fill, dfill);
    ct_ring_d2h(rv, drv, bf16ring), ct_ring_d2h(rk, drk, bf16ring);
    std::vector<float> rvraw, rbeta; /* the raw records the recompute reads (fp32 ring) */
    if (recompute) {
        rvraw.resize(rv.size()), rbeta.resize(ra.size());
        d2h(rvraw, drvraw), d2h(rbeta, drbeta);
    }
    CK(cudaMemcpy(hq2.codes, dq.codes, qbytes, cudaMemcpyDeviceToHost));
    e_eng = fmax(e_eng, ct_rel(og, oe));

    /* float64 of the joint step from the same bytes and records; the flushing row's new state */
    std::vector<double> o64((size_t)B * H * dv), S64new(row);
    const int bf = 2;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H, g = h / (H / G), hn = fill0[b];
        const std::vector<float> &Su = hn + 1 == L ? S0 : Sdq;
        const float *k = &in.k[((size_t)b * G + g) * DK], *q = &in.q[((size_t)b * G + g) * DK];
        std::vector<double> r(DK);
        for (int i = 0; i < dv; ++i) {
            for (int c = 0; c < DK; ++c) r[c] = Su[((size_t)bh * dv + i) * DK + c];
            for (int j = 0; j < hn; ++j) {
                const double a = ra[(size_t)bh * L + j];
                double vj = rv[((size_t)bh * L + j) * dv + i];
                const float *kj = &rk[(((size_t)b * G + g) * L + j) * DK];
                if (recompute && hn + 1 == L) { /* the flush: u_j from the raw record along the fp32 path */
                    double sk = 0;
                    for (int c = 0; c < DK; ++c) sk += r[c] * kj[c];
                    vj = (double)rbeta[(size_t)bh * L + j] * ((double)rvraw[((size_t)bh * L + j) * dv + i] - a * sk);
                }
                for (int c = 0; c < DK; ++c) r[c] = a * r[c] + vj * kj[c];
            }
            const double alpha = in.alpha[bh];
            double a = in.v[(size_t)bh * dv + i];
            if (s.fam == RS_SSM_GDN) {
                double sk = 0;
                for (int c = 0; c < DK; ++c) sk += r[c] * k[c];
                a = (double)in.beta[bh] * (a - alpha * sk);
            }
            double oo = 0;
            for (int c = 0; c < DK; ++c) {
                const double x = alpha * r[c] + a * k[c];
                oo += x * q[c];
                if (b == bf) S64new[((size_t)h * dv + i) * DK + c] = x;
            }
            o64[(size_t)bh * dv + i] = oo;
        }
    }
    const double e64 = ct_rel(og, o64);
    std::vector<float> est;
    bank.state(est);
    const double es_eng = ct_rel(Snew.data() + bf * row, est.data() + bf * row, row);
    const double es64 = ct_rel(Snew.data() + bf * row, S64new.data(), row);
    size_t kept_bits = 0; /* rows that did not flush keep their fp32 checkpoint */
    for (int b = 0; b < B; ++b)
        if (b != bf) kept_bits += ct_bits_differ(Snew.data() + b * row, S0.data() + b * row, row);
    /* requant: the flushing row against the CPU quantizer (RTN), the others unchanged */
    hq3.fmt = fmt;
    hq3.fmt.rounding = RS_ROUND_RTN;
    RSK(rs_quantize(&hq3, Snew.data(), 0, 0));
    bool rq_ok = true, fill_ok = true;
    for (int b = 0; b < B; ++b) {
        rq_ok &= same_row_bytes(hq2, b == bf ? hq3 : hq, row, b);
        fill_ok &= fill[b] == (fill0[b] + 1) % L;
    }
    char name[192];
    /* the raw records the GPU stored: the inputs of every step, exactly (fp32 ring) */
    bool raw_ok = true;
    if (recompute)
        for (int b = 0; b < B; ++b)
            if (b != bf)
                for (int h = 0; h < H; ++h) {
                    const size_t bh = (size_t)b * H + h, hn = (size_t)fill0[b];
                    raw_ok &= rbeta[bh * L + hn] == in.beta[bh];
                    for (int i = 0; i < dv; ++i) raw_ok &= rvraw[(bh * L + hn) * dv + i] == in.v[bh * dv + i];
                }
    char wtag[16] = "";
    if (L != 16) snprintf(wtag, sizeof wtag, " L=%d", L);
    snprintf(name, sizeof name, "lp-read v%d%s %s %s %s%s%s%s %s%s", version, tag, ct_fam(s), s.name, fmtstr, wtag,
             bf16ring ? " bf16 ring" : "", recompute ? " two-precision records (u recomputed at flush)" : "",
             launches == 1 ? "fused" : "prologue+main", graph ? " as a CUDA graph" : "");
    /* a graph holds the step's kernel nodes: the launches (and the recompute pass of two-precision records) */
    const bool nodes_ok = !graph || gnodes == (size_t)launches + (recompute ? 1 : 0);
    ct_report(name,
              version == want_ver && launches == (two ? 2 : 1) && lp_bits == 0 && e_eng <= k_tol_engine && e64 <= k_tol64 && es_eng <= k_tol_engine && es64 <= k_tol64 &&
                  kept_bits == 0 && rq_ok && fill_ok && raw_ok && nodes_ok,
              "vs engine %s (L-1): LP %zu bits differ, out %.2e, flushed state %.2e; vs f64: out %.2e state %.2e; "
              "kept ckpt %zu bits differ; requant %s; fill %s; graph nodes %zu",
              pol, lp_bits, e_eng, es_eng, e64, es64, kept_bits, rq_ok ? "bit-identical" : "WRONG",
              fill_ok ? "ok" : "WRONG", gnodes);
    rs_cuda_qtensor_free(&dq);
    rs_qtensor_free(&hq), rs_qtensor_free(&hq2), rs_qtensor_free(&hq3);
    cudaFree(dS), cudaFree(drv), cudaFree(drk), cudaFree(dra), cudaFree(dfill), cudaFree(dwork);
    if (recompute) cudaFree(drvraw), cudaFree(drbeta);
    io1.free_all(), io4.free_all();
}

/* rs_cuda_replay_lp_heads_per_warp (host only, no launch): the rule of its documentation restated here from
 * the device's SM count: under the default knob, v4 after the separate prologue takes h = the largest power of two
 * <= 4 (fp16 / bf16: <= 2) dividing H / G whole heads a warp for GDN and for nvfp4 if B H / h >= 16 x SMs, else
 * 1; the fused launch and v7 one; 0 when v4 does not run (lp_kernel 3; v7); the knob forces its value. On the
 * H200 at B = 256: GDN 2 (Qwen3.5-4B) / 4 (Qwen3.5-122B; fp16 2), Mamba-2 nvfp4 4, Mamba-2 fp8 / fp16 1. */
static void test_hpw_rule()
{
    int sms = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const rs_ssm_step_io io = ct_dummy_io();
    bool ok = true;
    int n = 0;
    char bad[256] = "";
    for (const Shape &s : ct_shapes)
        for (int B : {1, 4, 64, 256})
            for (const char *f : {"fp16-rtn", "fp8-rtn", "nvfp4-rtn"})
                for (int lpk : {0, 4, 7})
                    for (int launch : {RS_CUDA_LAUNCH_AUTO, RS_CUDA_LAUNCH_FUSED})
                        for (int knob : {0, 1, 4}) {
                            rs_qtensor q;
                            memset(&q, 0, sizeof q);
                            RSK(rs_format_parse(f, &q.fmt));
                            q.codes = (uint8_t *)ct_dummy_ptr();
                            rs_cuda_replay_state st = ct_dummy_replay_state();
                            st.ckpt_read = &q, st.lp_kernel = lpk, st.launch = launch;
                            const rs_ssm_dims d = {B, s.H, s.G, s.dv, DK};
                            ct_opts.lp_heads_per_warp = knob;
                            const int got = rs_cuda_replay_lp_heads_per_warp(s.fam, &d, &io, &st, &ct_opts);
                            ct_opts.lp_heads_per_warp = 0;
                            const int grp = s.H / s.G;
                            const int ver = rs_cuda_replay_lp_version(s.fam, &io, &st);
                            const bool fused = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts) == 1;
                            auto pow2_in_group = [grp](int cap) { /* the largest power of two <= cap dividing H / G */
                                int h = 1;
                                while (2 * h <= cap && grp % (2 * h) == 0) h *= 2;
                                return h;
                            };
                            const int h4 = pow2_in_group(f[0] == 'f' && f[2] == '1' ? 2 : 4), hk = pow2_in_group(4); /* fp16: 2 */
                            int want = 0;
                            if (ver == 4) {
                                if (knob == 4) want = hk;
                                else if (knob == 1) want = 1;
                                else want = !fused && (s.fam == RS_SSM_GDN || f[0] == 'n') && (long)B * s.H / h4 >= 16L * sms ? h4 : 1;
                            }
                            ++n;
                            if (got != want && ok) {
                                ok = false;
                                snprintf(bad, sizeof bad, "%s B=%d %s lp_kernel %d launch %d knob %d: got %d, want %d", s.name, B, f,
                                         lpk, launch, knob, got, want);
                            }
                        }
    ct_report("rs_cuda_replay_lp_heads_per_warp: the documented rule (4 shapes x B x format x kernel x launch x knob)", ok,
              "%d cases%s%s", n, ok ? "" : "; first wrong: ", bad);
}

int main(int argc, char **argv)
{
    const int rc = ct_init(argc, argv, "test_cuda_lpread");
    if (rc) return rc;
    test_hpw_rule();
    /* both kernel versions: v4 (lp_kernel 4) with its automatic geometry and with 4 heads
     * per warp (one pipeline across the heads of a key group: 2 for Qwen3.5-4B's groups), both as the
     * fused launch, the default choices (mode 3: lp_kernel 0 and launch AUTO, which take v4 with its automatic
     * heads a warp after the separate prologue; GDN's fp16 / bf16 reads took v3 until v4e), and v3 (kept for
     * side-by-side benchmarks, always with the prologue) */
    /* --quick (compute-sanitizer): v4 only, one Mamba-2 and one GDN shape; 4 heads per warp and the
     * default choice on fp8 / nvfp4 and fp8 only */
    /* mode 4: v7 (lp_kernel 7, the dot products on tensor cores; prologue only), automatic geometry, and
     * (mode 5) 4 heads per warp; --quick runs mode 4 on the two middle shapes */
    /* mode 6: v4 with the prologue and 4 heads per warp (the head tables of all heads copied into the first
     * group; the chunk positions by counters across the heads) */
    for (int mode = 0; mode < 7; ++mode) {
        if (ct_quick && (mode == 2 || mode == 5 || mode == 6)) continue;
        const int lpk = mode == 2 ? 3 : mode == 3 ? 0 : mode == 4 || mode == 5 ? 7 : 4;
        /* mode 3: the default choice (AUTO: the prologue for low-precision reads, as measured faster) */
        const int launch = mode == 3 ? RS_CUDA_LAUNCH_AUTO : mode >= 4 ? RS_CUDA_LAUNCH_PROLOGUE : RS_CUDA_LAUNCH_FUSED;
        ct_opts.lp_heads_per_warp = mode == 1 || mode == 5 || mode == 6 ? 4 : 0;
        for (const Shape &s : ct_shapes)
            for (const char *f : {"fp16-rtn", "bf16-rtn", "fp8-rtn", "nvfp4-rtn"}) {
                if (ct_quick && (&s == &ct_shapes[0] || &s == &ct_shapes[3])) continue;
                if (ct_quick && mode == 1 && f[0] != 'n' && f[2] != '8') continue;
                if (ct_quick && mode == 3 && f[2] != '8') continue;
                /* fp8/nvfp4: one warp walks every row of its head (multi-chunk prefetch: v3 at 16 or 8
                 * rows a chunk, v4 chunks of 16 rows through its 3-4-stage pipeline, slots reused at
                 * d_v >= 80); fp16/bf16: the automatic geometry (one chunk a warp at these B) */
                ct_opts.warps_per_head = f[0] == 'f' && f[2] == '1' ? 0 : f[0] == 'b' ? 0 : 1;
                const char *tag = mode == 1   ? " hpw4"
                                  : mode == 3 ? " auto"
                                  : mode == 4 ? " v7"
                                  : mode == 5 ? " v7 hpw4"
                                  : mode == 6 ? " hpw4"
                                              : "";
                test_lp_reads(s, f, lpk, false, tag, false, launch);
                if (s.fam == RS_SSM_MAMBA2 && !(ct_quick && mode)) test_lp_reads(s, f, lpk, true, tag, false, launch);
            }
    }
    ct_opts.lp_heads_per_warp = 0;
    ct_opts.warps_per_head = 0;
    /* the joint step as a CUDA graph: the default choice (the prologue and v4 as its programmatic dependent) on
     * every shape for fp8 (and nvfp4 on the GDN shapes), v7 after the prologue on one shape of each family */
    for (const Shape &s : ct_shapes) {
        if (ct_quick && (&s == &ct_shapes[0] || &s == &ct_shapes[3])) continue;
        test_lp_reads(s, "fp8-rtn", 0, false, " auto", false, RS_CUDA_LAUNCH_AUTO, true);
        if (s.fam == RS_SSM_GDN) test_lp_reads(s, "nvfp4-rtn", 0, false, " auto", false, RS_CUDA_LAUNCH_AUTO, true);
        if (&s == &ct_shapes[1] || &s == &ct_shapes[2]) test_lp_reads(s, "nvfp4-rtn", 7, false, " v7", false, RS_CUDA_LAUNCH_PROLOGUE, true);
    }
    /* a window of L = 40 (the kernels' L > 32 variants: two records a lane in the coefficient tables, 39 ring
     * records, 35 of them read in the joint step, up to 5 rounds of a chunk's ring-piece copies with an fp32
     * ring): v4 fused and after the prologue with its automatic heads a warp, v7, on every shape; fp16, fp8
     * and nvfp4 (bf16 shares fp16's geometry); Mamba-2 also with a bf16 ring. --quick: fp8 on the two middle
     * shapes. */
    for (const Shape &s : ct_shapes)
        for (const char *f : {"fp16-rtn", "fp8-rtn", "nvfp4-rtn"}) {
            if (ct_quick && (&s == &ct_shapes[0] || &s == &ct_shapes[3] || f[2] != '8')) continue;
            test_lp_reads(s, f, 4, false, "", false, RS_CUDA_LAUNCH_FUSED, false, 40);
            test_lp_reads(s, f, 0, false, " auto", false, RS_CUDA_LAUNCH_AUTO, false, 40);
            if (!ct_quick) test_lp_reads(s, f, 7, false, " v7", false, RS_CUDA_LAUNCH_PROLOGUE, false, 40);
            if (s.fam == RS_SSM_MAMBA2) test_lp_reads(s, f, 0, true, " auto", false, RS_CUDA_LAUNCH_AUTO, false, 40);
        }
    /* GDN two-precision records: v4 (automatic geometry and one warp per head) and v3, both GDN
     * shapes; the engine's split policy recomputes u at the flush, so a kernel that folded the
     * cached u would miss the flushed state (vs engine and vs float64) by the effect of the LP
     * quantisation error on u, not by fp32 noise */
    for (const Shape &s : ct_shapes) {
        if (s.fam != RS_SSM_GDN) continue;
        if (ct_quick && &s != &ct_shapes[2]) continue;
        for (const char *f : {"fp16-rtn", "fp8-rtn", "nvfp4-rtn"}) {
            if (ct_quick && f[1] == 'p' && f[2] == '1') continue;
            ct_opts.warps_per_head = 1;
            test_lp_reads(s, f, 4, false, "", true);
            ct_opts.warps_per_head = 0;
            test_lp_reads(s, f, 4, false, "", true);
            if (!ct_quick) test_lp_reads(s, f, 4, false, "", true, RS_CUDA_LAUNCH_PROLOGUE);
            if (!ct_quick) test_lp_reads(s, f, 3, false, "", true);
            test_lp_reads(s, f, 7, false, " v7", true, RS_CUDA_LAUNCH_PROLOGUE);
            if (!ct_quick) test_lp_reads(s, f, 0, false, " auto", true, RS_CUDA_LAUNCH_AUTO);
        }
    }
    return ct_finish("test_cuda_lpread");
}
