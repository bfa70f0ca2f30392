/* test_cuda_decode.cu — conventional and ReplaySSM standard decode (rs_cuda_conv_decode,
 * rs_cuda_replay_decode + rs_cuda_replay_advance) against the lib engine and against float64.
 *
 * Each run: 4 rows, the paper shapes, >= 1000 steps (256 for the extra windows). Row b first
 * decodes fill0[b] tokens alone (B = 1 launches on row b's slice of every buffer, which also
 * covers the B = 1 geometry), so the rows then flush at different steps of the joint run.
 * The same tokens go to three references:
 *   - the engine (engine/rs_head.h), one head per (row, value head): policy "fp32" for the
 *     conventional kernel, "shared:fp32" with the same window for ReplaySSM (the kernel's flush
 *     rule, fill + 1 == L, is shared_decode's h + 1 >= L). Compared: every step's outputs
 *     (<= k_tol_engine), the fill counters against rs_head_unfolded (exact, every step), the
 *     final checkpoint (rs_head_checkpoint) and the final state (rs_head_state against the GPU
 *     checkpoint folded with its ring) (<= k_tol_engine). The conventional Mamba-2 state is
 *     compared bit for bit: kernel and engine both form alpha*s + v*k with one rounding per
 *     product and per sum, elementwise (no reduction is involved in the update);
 *   - float64 (an independent reference): max over steps of ||o - o64|| / ||o64|| <= 1e-4 and
 *     <= 2x the engine's own fp32 error + 1e-7, final states likewise (docs/kernels.md "Tests");
 *   - for the bf16 ring (Mamba-2), inputs are bf16-exact, so the ring stores them unchanged and
 *     the engine's fp32 records are the same numbers.
 * ReplaySSM runs the fused launch (RS_CUDA_LAUNCH_FUSED, no `work` scratch given), on three runs the
 * separate prologue (RS_CUDA_LAUNCH_PROLOGUE) and on one the default choice (AUTO); after each run one
 * step is captured as a CUDA graph: kernel nodes counted (1 fused, 2 with the prologue, AUTO: what
 * rs_cuda_replay_launches says) and its replay equal to a direct call bit for bit; the AUTO rule itself
 * is checked on the host (test_auto_choice). The fused fp32 read issues its first chunk's loads before the fill
 * where the grid is one wave and L <= 16 (rs_cuda_launch_opts.replay_spec, on by default): here the B = 1 solo steps
 * and the joint runs at one warp a head; the same four runs again with it off ("nospec"), so both forms of the fused
 * kernel are checked at L = 16 on every shape; RS_CUDA_SPEC_KEYS (the bf16 ring's keys too) on the bf16-ring runs at one warp
 * a head ("spec2": both Mamba-2 shapes, and GDN in test_gdn_bf16_ring).
 * fp16/bf16 conventional state: one step bit for bit against codes computed with rs_elem_encode
 * from the documented SR keying; 64 steps bit for bit against the engine's conv:<fmt> policy
 * (Mamba-2: same elementwise update, same codec, same Philox keying); then 1000 steps of fp16
 * state against float64 (bound 0.1: catches a broken store, not a precision claim).
 * d_k = 64 and 256 (test_dk): the same checks and bounds on four shapes of those widths
 * (k_dk_shapes), the long runs over >= 1000 steps with flushes, plus GDN two-precision records (the
 * flush recompute launch) with the fp32 read against shared:fp32 and float64.
 * Exit 0 if every check passes, 1 otherwise, 77 without a GPU. Usage: test_cuda_decode [--quick]
 * (--quick: 24-step runs, every case of the list, d_k = 64 / 256 included)
 */
#include "cuda_test_util.h"
#include "replayssm/engine/rs_head.h"
#include "replayssm/quant/rs_minifloat.h"
#include "replayssm/quant/rs_philox.h"

static const double k_tol64 = 1e-4, k_floor = 1e-7; /* float64 criterion */
static const double k_tol_engine = 2e-5;            /* GPU vs engine, fp32 noise (docs/kernels.md) */
/* the early loads (ct_opts.replay_spec) and the L2 prefetch (ct_opts.replay_l2pf), in a check's name where they are
 * not the defaults */
static const char *spec_tag()
{
    const int lv = ct_opts.replay_spec;
    const char *sp = lv == RS_CUDA_SPEC_OFF ? " nospec" : lv == RS_CUDA_SPEC_KEYS ? " spec2" : "";
    static char tag[32];
    const int pf = ct_opts.replay_l2pf;
    snprintf(tag, sizeof tag, "%s%s", sp, pf == RS_CUDA_L2PF_OFF ? " nol2pf" : pf == RS_CUDA_L2PF_ALWAYS ? " l2pf" : "");
    return tag;
}

/* GPU buffers of one decode run and their per-row views. */
struct Rig {
    Shape s{};
    int B = 0, L = 0, rows = 0, launch = RS_CUDA_LAUNCH_FUSED; /* rs_cuda_replay_state.launch */
    bool bf16 = false;
    bool recompute = false; /* GDN two-precision records (ring_vraw, ring_beta): set before alloc */
    size_t nS = 0, es = 4;
    float *Sc = nullptr, *Sr = nullptr, *ra = nullptr, *work = nullptr, *oc = nullptr, *rbeta = nullptr;
    void *rv = nullptr, *rk = nullptr, *rvraw = nullptr;
    int32_t *fill = nullptr;
    void alloc(const Shape &sh, int nb, int win, bool bf, int rpw, const std::vector<float> &S0)
    {
        s = sh, B = nb, L = win, bf16 = bf, rows = rpw, es = bf ? 2 : 4;
        nS = (size_t)B * s.H * s.dv * s.dk;
        Sc = dalloc<float>(nS), Sr = dalloc<float>(nS);
        h2d(Sc, S0), h2d(Sr, S0);
        CK(cudaMalloc(&rv, (size_t)B * s.H * L * s.dv * es));
        CK(cudaMalloc(&rk, (size_t)B * s.G * L * s.dk * es));
        ra = dalloc<float>((size_t)B * s.H * L);
        if (recompute) {
            CK(cudaMalloc(&rvraw, (size_t)B * s.H * L * s.dv * es));
            rbeta = dalloc<float>((size_t)B * s.H * L);
        }
        fill = dalloc<int32_t>(B);
        CK(cudaMemset(fill, 0, B * sizeof(int32_t))); /* empty rings: the engine starts empty */
        rs_ssm_dims d = {B, s.H, s.G, s.dv, s.dk};
        work = (float *)dalloc<uint8_t>(rs_cuda_replay_work_bytes(&d, L, 0));
        oc = dalloc<float>((size_t)B * s.H * s.dv);
    }
    /* rows [b0, b0 + nb) as a problem of nb rows (every array is row-major in b) */
    rs_cuda_replay_state replay(int b0) const
    {
        rs_cuda_replay_state st = {Sr + (size_t)b0 * s.H * s.dv * s.dk,
                                   (char *)rv + (size_t)b0 * s.H * L * s.dv * es,
                                   (char *)rk + (size_t)b0 * s.G * L * s.dk * es,
                                   ra + (size_t)b0 * s.H * L,
                                   bf16 ? RS_CUDA_BF16 : RS_CUDA_F32,
                                   L,
                                   fill + b0,
                                   launch == RS_CUDA_LAUNCH_FUSED ? nullptr : work, /* fused: no scratch */
                                   nullptr,
                                   rows};
        st.launch = launch;
        if (recompute) {
            st.ring_vraw = (char *)rvraw + (size_t)b0 * s.H * L * s.dv * es;
            st.ring_beta = rbeta + (size_t)b0 * s.H * L;
        }
        return st;
    }
    rs_cuda_conv_state conv(int b0) const
    {
        rs_cuda_conv_state st = {Sc + (size_t)b0 * s.H * s.dv * s.dk, RS_CUDA_F32, RS_ROUND_RTN, 32, 0, 0, nullptr, nullptr};
        return st;
    }
    void free_all()
    {
        cudaFree(Sc), cudaFree(Sr), cudaFree(rv), cudaFree(rk), cudaFree(ra), cudaFree(fill), cudaFree(work);
        cudaFree(oc), cudaFree(rvraw), cudaFree(rbeta);
    }
};

/* " d_k=N" in check names for the shapes whose d_k is not the paper's 128 */
static const char *dk_tag(const Shape &s)
{
    static char buf[4][16];
    static int i = 0;
    char *b = buf[i++ & 3];
    if (s.dk == RS_CUDA_DK) b[0] = 0;
    else snprintf(b, 16, " d_k=%d", s.dk);
    return b;
}

/* Ring contents as float (bf16 decoded). */
static void ring_to_host(const Rig &g, std::vector<float> &rv, std::vector<float> &rk, std::vector<float> &ra)
{
    rv.resize((size_t)g.B * g.s.H * g.L * g.s.dv), rk.resize((size_t)g.B * g.s.G * g.L * g.s.dk);
    ra.resize((size_t)g.B * g.s.H * g.L);
    d2h(ra, g.ra);
    ct_ring_d2h(rv, g.rv, g.bf16), ct_ring_d2h(rk, g.rk, g.bf16);
}

struct Errs {
    double rep64 = 0, conv64 = 0, eng64 = 0, rep_eng = 0, conv_eng = 0;
    bool fill_ok = true;
    int nflush = 0;
};

/* One step of rows [b0, b0 + nb) on the GPU and on every reference; hfill: fills before. */
static void step(Rig &g, Bank &bank_r, Bank *bank_c, std::vector<double> &S64, int b0, int nb, const StepIn &in,
                 const DevStep &io, Errs &e, std::vector<int> &hfill)
{
    const Shape &s = g.s;
    const size_t nout = (size_t)nb * s.H * s.dv, row = (size_t)s.H * s.dv * s.dk;
    rs_ssm_dims d = {nb, s.H, s.G, s.dv, s.dk};
    io.upload(in);
    rs_ssm_step_io io_r = io.io(), io_c = io.io();
    io_c.o = g.oc;
    CK(cudaMemcpy(g.oc, io.o, nout * sizeof(float), cudaMemcpyDeviceToDevice)); /* NaN poison */
    const rs_cuda_replay_state rst = g.replay(b0);
    const rs_cuda_conv_state cst = g.conv(b0);
    if (bank_c) RSK(rs_cuda_conv_decode(s.fam, &d, &io_c, &cst, nullptr));
    RSK(rs_cuda_replay_decode(s.fam, &d, &io_r, &rst, &ct_opts, nullptr));
    RSK(rs_cuda_replay_advance(g.fill + b0, nb, g.L, nullptr));
    std::vector<double> o64(nout);
    std::vector<float> oer(nout), oec(nout), orr(nout), oc(nout);
    ct_host_step<double>(s, nb, S64.data() + b0 * row, in, o64.data());
    bank_r.decode(b0, nb, in, oer.data());
    if (bank_c) bank_c->decode(b0, nb, in, oec.data());
    CK(cudaDeviceSynchronize());
    d2h(orr, io.o);
    e.rep64 = fmax(e.rep64, ct_rel(orr, o64));
    e.rep_eng = fmax(e.rep_eng, ct_rel(orr, oer));
    if (bank_c) {
        d2h(oc, g.oc);
        e.conv64 = fmax(e.conv64, ct_rel(oc, o64));
        e.eng64 = fmax(e.eng64, ct_rel(oec, o64));
        e.conv_eng = fmax(e.conv_eng, ct_rel(oc, oec));
    }
    std::vector<int32_t> fill(g.B);
    d2h(fill, g.fill);
    for (int b = b0; b < b0 + nb; ++b) {
        e.nflush += hfill[b] + 1 == g.L;
        hfill[b] = hfill[b] + 1 == g.L ? 0 : hfill[b] + 1;
        e.fill_ok &= fill[b] == hfill[b] && bank_r.unfolded(b) == (long)fill[b];
    }
}

/* One step captured in a CUDA graph: the graph holds `want` kernel nodes (fused: 1; prologue: 2; auto:
 * what rs_cuda_replay_launches says, 0 passed), and
 * replaying it from the same state gives the outputs, checkpoint and ring of a direct call bit for bit
 * (the kernels are deterministic: fixed reduction trees, no atomics; the state is restored in between,
 * and the record stores rewrite slot fill of the ring with the same values). Rows at their current
 * fills, so flushing rows are among them when a row sits at L - 1. */
static void graph_check(Rig &g, int want, const char *what, int extra = 0)
{
    const Shape &s = g.s;
    const size_t nout = (size_t)g.B * s.H * s.dv, rvb = (size_t)g.B * s.H * g.L * s.dv * g.es;
    rs_ssm_dims d = {g.B, s.H, s.G, s.dv, s.dk};
    StepIn in;
    ct_gen_step(s, g.B, g.bf16, ct_head_rates(s.H), in);
    DevStep io;
    io.alloc(s, g.B, 1);
    float *Ssave = dalloc<float>(g.nS);
    CK(cudaMemcpy(Ssave, g.Sr, g.nS * sizeof(float), cudaMemcpyDeviceToDevice));
    const rs_cuda_replay_state st = g.replay(0);
    const rs_ssm_step_io sio = io.io();
    std::vector<float> o1(nout), o2(nout), S1(g.nS), S2(g.nS);
    std::vector<uint8_t> r1(rvb), r2(rvb);
    io.upload(in);
    RSK(rs_cuda_replay_decode(s.fam, &d, &sio, &st, &ct_opts, nullptr));
    CK(cudaDeviceSynchronize());
    d2h(o1, io.o), d2h(S1, g.Sr), d2h(r1, (const uint8_t *)g.rv);
    CK(cudaMemcpy(g.Sr, Ssave, g.nS * sizeof(float), cudaMemcpyDeviceToDevice));
    io.upload(in); /* NaN poison again */
    const size_t nodes = ct_run_as_graph([&](cudaStream_t cs) { RSK(rs_cuda_replay_decode(s.fam, &d, &sio, &st, &ct_opts, cs)); });
    d2h(o2, io.o), d2h(S2, g.Sr), d2h(r2, (const uint8_t *)g.rv);
    const size_t bo = ct_bits_differ(o1.data(), o2.data(), nout), bs = ct_bits_differ(S1.data(), S2.data(), g.nS);
    const bool rsame = !memcmp(r1.data(), r2.data(), rvb);
    const int launches = rs_cuda_replay_launches(s.fam, &d, &sio, &st, &ct_opts);
    if (!want) want = launches;
    char name[160];
    snprintf(name, sizeof name, "replay %s %s%s L=%d %s: one step as a CUDA graph", ct_fam(s), s.name, dk_tag(s), g.L,
             what);
    ct_report(name, nodes == (size_t)(want + extra) && launches == want && bo == 0 && bs == 0 && rsame,
              "%zu kernel nodes (want %d + %d; rs_cuda_replay_launches %d); graph vs direct: %zu output, %zu checkpoint bits "
              "differ, ring %s",
              nodes, want, extra, launches, bo, bs, rsame ? "equal" : "DIFFERS");
    cudaFree(Ssave);
    io.free_all();
}

/* rs_cuda_replay_launches (host only, no launch): forced FUSED / PROLOGUE give 1 / 2; v3 low-precision
 * reads always 2; AUTO for an fp32 read: the policy of docs/kernels.md restated here from the
 * documented geometry (rs_replay_geom: warps per head doubled while the grid has < 128 warps per SM and
 * the head's 4-row chunks divide evenly): 1 iff the grid fits in one wave (<= 16 warps per SM) or every
 * warp walks >= 16 chunks; v4 low-precision reads 2; 0 for NULL arguments. On the H200 (132 SMs) that is
 * B = 1: 1 on every shape; B = 256: 1, 1, 2, 1. The pointers are aligned dummies: the function only
 * reads the descriptors. */
static void test_auto_choice()
{
    int sms = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    void *p = ct_dummy_ptr();
    rs_ssm_step_io io = ct_dummy_io();
    rs_cuda_replay_state st = ct_dummy_replay_state();
    rs_qtensor q;
    memset(&q, 0, sizeof q);
    q.fmt.kind = RS_FMT_FP8, q.codes = (uint8_t *)p;
    bool ok = true;
    char got[256] = "";
    size_t n = 0;
    for (const Shape &s : ct_shapes)
        for (int B : {1, 256}) {
            const rs_ssm_dims d = {B, s.H, s.G, s.dv, s.dk};
            int r[6];
            st.ckpt_read = nullptr, st.lp_kernel = 0;
            st.launch = RS_CUDA_LAUNCH_AUTO, r[0] = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts);
            st.launch = RS_CUDA_LAUNCH_FUSED, r[1] = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts);
            st.launch = RS_CUDA_LAUNCH_PROLOGUE, r[2] = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts);
            st.ckpt_read = &q;
            st.launch = RS_CUDA_LAUNCH_AUTO, r[3] = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts);
            st.launch = RS_CUDA_LAUNCH_FUSED, r[4] = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts);
            st.lp_kernel = 3, r[5] = rs_cuda_replay_launches(s.fam, &d, &io, &st, &ct_opts);
            unsigned wph = 1;
            const unsigned bh = (unsigned)(B * s.H), nch = (unsigned)(s.dv / 4);
            while (bh * wph < 128u * (unsigned)sms && nch % (2 * wph) == 0) wph *= 2;
            const int want = bh * wph <= 16u * (unsigned)sms || nch / wph >= 16 ? 1 : 2;
            ok &= r[0] == want && r[1] == 1 && r[2] == 2 && r[3] == 2 && r[4] == 1 && r[5] == 2;
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%d", n ? " " : "", r[0]);
        }
    ok &= rs_cuda_replay_launches(RS_SSM_MAMBA2, nullptr, &io, &st, &ct_opts) == 0;
    /* the low-precision kernel version (rs_cuda.h lp_kernel): AUTO takes v4 on every format and family (GDN's
     * fp16 / bf16 reads took v3 until v4e); 3, 4 and 7 are forced; an unaligned code array gets v3; fp32: 0 */
    int vbad = 0;
    for (rs_format_kind k : {RS_FMT_FP16, RS_FMT_BF16, RS_FMT_FP8, RS_FMT_NVFP4})
        for (rs_ssm_family fam : {RS_SSM_MAMBA2, RS_SSM_GDN})
            for (int lpk : {0, 3, 4, 7}) {
                q.fmt.kind = k, q.codes = (uint8_t *)p, st.lp_kernel = lpk;
                const int want = lpk ? lpk : 4;
                vbad += rs_cuda_replay_lp_version(fam, &io, &st) != want;
                q.codes = (uint8_t *)p + 8;
                vbad += rs_cuda_replay_lp_version(fam, &io, &st) != 3;
            }
    q.fmt.kind = RS_FMT_FP32, q.codes = (uint8_t *)p;
    vbad += rs_cuda_replay_lp_version(RS_SSM_GDN, &io, &st) != 0;
    st.ckpt_read = nullptr;
    vbad += rs_cuda_replay_lp_version(RS_SSM_GDN, &io, &st) != 0;
    ok &= vbad == 0;
    ct_report("replay launch choice (rs_cuda_replay_launches)", ok,
              "auto, fp32 read, B = 1 / 256 per shape: %s (%d SMs); forced fused 1, prologue 2, v4 read auto 2, v3 2; "
              "lp version rule: %d of 66 wrong", got, sms, vbad);
}

static const char *launch_name(int launch)
{
    return launch == RS_CUDA_LAUNCH_FUSED ? "fused" : launch == RS_CUDA_LAUNCH_PROLOGUE ? "prologue+main" : "auto";
}

/* launch: rs_cuda_replay_state.launch (fused: given no work scratch) */
/* recompute: GDN two-precision records (ring_vraw, ring_beta) with the fp32 read: the flush rows recompute
 * u_j = beta_j (v_j - alpha_j S_{j-1} k_j) along the checkpoint's path (rs_k_replay_flush_recompute)
 * instead of folding the cached u; with an fp32 read both are the same quantities (the cached u came from
 * the same fp32 checkpoint), so the reference stays the engine's shared:fp32 and float64, within fp32
 * noise; the graph holds the recompute launch on top */
static void test_decode_shape(const Shape &s, int nsteps, int L, bool bf16_ring, int rows = 0,
                              int launch = RS_CUDA_LAUNCH_FUSED, bool recompute = false)
{
    const int B = 4, H = s.H, dv = s.dv;
    const size_t nS = (size_t)B * H * dv * s.dk;
    const int fill0[B] = {0, 5 % L, 11 % L, L - 1}; /* warm-up tokens per row */
    const std::vector<double> rate = ct_head_rates(H);
    std::vector<float> S0(nS);
    for (auto &x : S0) x = (float)(0.3 * ct_normal());
    std::vector<double> S64(S0.begin(), S0.end());

    Rig g;
    g.recompute = recompute;
    g.alloc(s, B, L, bf16_ring, rows, S0);
    g.launch = launch;
    Bank bank_r, bank_c;
    bank_r.init(s, B, "shared:fp32", (size_t)L, 1, nullptr, 0, S0.data());
    if (!bf16_ring) bank_c.init(s, B, "fp32", (size_t)L, 1, nullptr, 0, S0.data());
    Bank *bc = bf16_ring ? nullptr : &bank_c;
    DevStep io1, io4;
    io1.alloc(s, 1, 1), io4.alloc(s, B, 1);
    Errs e;
    std::vector<int> hfill(B, 0);
    StepIn in;
    for (int b = 0; b < B; ++b)
        for (int j = 0; j < fill0[b]; ++j) {
            ct_gen_step(s, 1, bf16_ring, rate, in);
            step(g, bank_r, bc, S64, b, 1, in, io1, e, hfill);
        }
    for (int t = 0; t < nsteps; ++t) {
        ct_gen_step(s, B, bf16_ring, rate, in);
        step(g, bank_r, bc, S64, 0, B, in, io4, e, hfill);
    }

    /* final states: GPU checkpoint + ring folded in float64; engine checkpoint and state */
    std::vector<float> ck(nS), rv, rk, ra, eck, est;
    d2h(ck, g.Sr);
    ring_to_host(g, rv, rk, ra);
    std::vector<double> Sfin(ck.begin(), ck.end());
    ct_fold(s, B, L, hfill.data(), nullptr, rv, rk, ra, Sfin);
    bank_r.checkpoint(0, eck);
    bank_r.state(est);
    const double es64 = ct_rel(Sfin, S64), eck_eng = ct_rel(ck, eck), est_eng = ct_rel(Sfin, est);
    char name[160];
    const char *fam = ct_fam(s);
    if (!bf16_ring) {
        std::vector<float> Sc(nS), ecs;
        d2h(Sc, g.Sc);
        bank_c.checkpoint(0, ecs); /* the engine's conventional state S_t */
        const double esc64 = ct_rel(Sc, S64), ese64 = ct_rel(ecs, S64);
        const size_t nbits = ct_bits_differ(Sc.data(), ecs.data(), nS);
        const double esc_eng = ct_rel(Sc, ecs);
        /* Mamba-2: the update is elementwise alpha*s + v*k on both sides, so the state is the same
         * bits; GDN's u comes from a dot product (different summation order): fp32 noise */
        const bool state_eng_ok = s.fam == RS_SSM_MAMBA2 ? nbits == 0 : esc_eng <= k_tol_engine;
        snprintf(name, sizeof name, "conv %s %s%s fp32 %d steps", fam, s.name, dk_tag(s), nsteps);
        ct_report(name,
                  e.conv64 <= k_tol64 && e.conv64 <= 2 * e.eng64 + k_floor && esc64 <= k_tol64 &&
                      esc64 <= 2 * ese64 + k_floor && e.conv_eng <= k_tol_engine && state_eng_ok,
                  "vs f64: out %.2e state %.2e (engine %.2e %.2e); vs engine: out %.2e state %.2e (%zu bits differ)",
                  e.conv64, esc64, e.eng64, ese64, e.conv_eng, esc_eng, nbits);
        snprintf(name, sizeof name, "replay %s %s%s L=%d fp32 ring rpw=%d wph=%d %s%s%s", fam, s.name, dk_tag(s), L, rows,
                 ct_opts.warps_per_head, launch_name(launch), recompute ? " two-precision records" : "", spec_tag());
        ct_report(name,
                  e.fill_ok && e.rep64 <= k_tol64 && e.rep64 <= 2 * e.eng64 + k_floor && es64 <= k_tol64 &&
                      es64 <= 2 * ese64 + k_floor && e.rep_eng <= k_tol_engine && eck_eng <= k_tol_engine &&
                      est_eng <= k_tol_engine,
                  "vs f64: out %.2e state %.2e; vs engine shared:fp32: out %.2e ckpt %.2e state %.2e; %d flushes, "
                  "fill %s",
                  e.rep64, es64, e.rep_eng, eck_eng, est_eng, e.nflush, e.fill_ok ? "== engine" : "WRONG");
    } else {
        snprintf(name, sizeof name, "replay %s %s%s L=%d bf16 ring wph=%d %s%s", fam, s.name, dk_tag(s), L,
                 ct_opts.warps_per_head, launch_name(launch), spec_tag());
        ct_report(name,
                  e.fill_ok && e.rep64 <= k_tol64 && es64 <= k_tol64 && e.rep_eng <= k_tol_engine &&
                      eck_eng <= k_tol_engine && est_eng <= k_tol_engine,
                  "vs f64: out %.2e state %.2e (bf16-exact inputs); vs engine: out %.2e ckpt %.2e state %.2e; "
                  "%d flushes, fill %s",
                  e.rep64, es64, e.rep_eng, eck_eng, est_eng, e.nflush, e.fill_ok ? "== engine" : "WRONG");
    }
    graph_check(g, launch == RS_CUDA_LAUNCH_FUSED ? 1 : launch == RS_CUDA_LAUNCH_PROLOGUE ? 2 : 0, launch_name(launch),
                recompute ? 1 : 0);
    g.free_all();
    io1.free_all(), io4.free_all();
}

/* GDN with a bf16 ring (the ring of every benchmark row; no engine policy models it: the engine's records are
 * fp32, and a bf16 ring caches u = beta (v - alpha S k) rounded to bf16, which depends on the state).
 * References: float64 recurrences of the same bf16-exact inputs with u rounded to bf16 (ct_host_step bf16_u: what a
 * bf16-ring run follows exactly) and with u unrounded (an fp32 ring's). Checked: ct_bf16u_ok (its comment gives the
 * bounds and their basis) on every step's outputs (RMS over the run) and the final state (checkpoint folded with the
 * ring), and the fills. */
static void test_gdn_bf16_ring(const Shape &s, int nsteps, int launch, int wph)
{
    const int B = 4, L = 16, H = s.H, dv = s.dv;
    const size_t nS = (size_t)B * H * dv * s.dk, nout = (size_t)B * H * dv;
    const std::vector<double> rate = ct_head_rates(H);
    std::vector<float> S0(nS);
    for (auto &x : S0) x = (float)(0.3 * ct_normal());
    std::vector<double> Sb(S0.begin(), S0.end()), Sf = Sb;
    ct_opts.warps_per_head = wph;
    Rig g;
    g.alloc(s, B, L, true, 0, S0);
    g.launch = launch;
    DevStep io;
    io.alloc(s, B, 1);
    StepIn in;
    std::vector<double> ob(nout), of(nout);
    std::vector<float> o(nout);
    std::vector<int32_t> fill(B);
    std::vector<int> hfill(B, 0);
    double eb2 = 0, ef2 = 0, n2 = 0;
    bool fill_ok = true;
    const rs_ssm_dims d = {B, s.H, s.G, s.dv, s.dk};
    for (int t = 0; t < nsteps; ++t) {
        ct_gen_step(s, B, true, rate, in);
        io.upload(in);
        rs_ssm_step_io x = io.io();
        const rs_cuda_replay_state st = g.replay(0);
        RSK(rs_cuda_replay_decode(s.fam, &d, &x, &st, &ct_opts, nullptr));
        RSK(rs_cuda_replay_advance(g.fill, B, L, nullptr));
        ct_host_step<double>(s, B, Sb.data(), in, ob.data(), nullptr, true);
        ct_host_step<double>(s, B, Sf.data(), in, of.data());
        CK(cudaDeviceSynchronize());
        d2h(o, io.o);
        ct_sq_acc(o.data(), ob.data(), nout, eb2, &n2); /* a non-finite output makes eb infinite: fails */
        ct_sq_acc(o.data(), of.data(), nout, ef2, nullptr);
        d2h(fill, g.fill);
        for (int b = 0; b < B; ++b) {
            hfill[b] = hfill[b] + 1 == L ? 0 : hfill[b] + 1;
            fill_ok &= fill[b] == hfill[b];
        }
    }
    std::vector<float> ck(nS), rv, rk, ra;
    d2h(ck, g.Sr);
    ring_to_host(g, rv, rk, ra);
    std::vector<double> Sfin(ck.begin(), ck.end());
    ct_fold(s, B, L, hfill.data(), nullptr, rv, rk, ra, Sfin);
    const double eb = sqrt(eb2 / n2), ef = sqrt(ef2 / n2), sb = ct_rel(Sfin, Sb), sf = ct_rel(Sfin, Sf);
    ct_opts.warps_per_head = 0;
    char name[160];
    snprintf(name, sizeof name, "replay gdn %s L=%d bf16 ring (u rounded) %s wph=%d %d steps%s", s.name, L,
             launch_name(launch), wph, nsteps, spec_tag());
    ct_report(name, fill_ok && ct_bf16u_ok(eb, ef, sb, sf),
              "RMS out vs f64 with bf16 u %.2e, with fp32 u %.2e (ratio %.3f); state %.2e / %.2e (ratio %.3f); fill %s",
              eb, ef, ef > 0 ? eb / ef : INFINITY, sb, sf, sf > 0 ? sb / sf : INFINITY, fill_ok ? "ok" : "WRONG");
    g.free_all();
    io.free_all();
}

/* ---- fp16 / bf16 conventional state ------------------------------------------------------------ */
struct HalfCfg {
    rs_cuda_dtype dt;
    rs_rounding rnd;
    int k;
    const char *name; /* rs_format string */
};
static const HalfCfg k_half[5] = {{RS_CUDA_F16, RS_ROUND_RTN, 32, "fp16-rtn"},
                                  {RS_CUDA_F16, RS_ROUND_SR, 32, "fp16-sr"},
                                  {RS_CUDA_BF16, RS_ROUND_RTN, 32, "bf16-rtn"},
                                  {RS_CUDA_BF16, RS_ROUND_SR, 32, "bf16-sr"},
                                  {RS_CUDA_BF16, RS_ROUND_SR, 8, "bf16-sr8"}};

static float half_value(rs_elem et, uint16_t c) { return rs_elem_decode(et, c); }

/* One Mamba-2 step against codes computed here with rs_elem_encode (stream slot 2, layer 5,
 * per-row seeds and steps: the keying of rs_cuda.h, with fields the engine does not use). */
static void test_half_one_step(const HalfCfg &cf, const Shape &s = ct_shapes[1])
{
    const int B = 3, H = s.H, G = s.G, dv = s.dv;
    const size_t nS = (size_t)B * H * dv * s.dk;
    const rs_elem et = cf.dt == RS_CUDA_F16 ? RS_ELEM_FP16 : RS_ELEM_BF16;
    rs_ssm_dims dims = {B, H, G, dv, s.dk};
    const std::vector<uint64_t> seeds = {11, 0xFFFFFFFFFFFFull, 12345};
    const std::vector<int64_t> steps = {0, 7, 1000000};
    uint64_t *dseeds = dalloc<uint64_t>(B);
    int64_t *dsteps = dalloc<int64_t>(B);
    h2d(dseeds, seeds), h2d(dsteps, steps);
    uint16_t *dS = dalloc<uint16_t>(nS);
    std::vector<uint16_t> c0(nS), c1(nS);
    for (auto &c : c0) {
        uint32_t x;
        rs_elem_encode(et, (float)(0.3 * ct_normal()), RS_ROUND_RTN, 0, 32, &x);
        c = (uint16_t)x;
    }
    h2d(dS, c0);
    StepIn in;
    ct_gen_step(s, B, false, ct_head_rates(H), in);
    DevStep io;
    io.alloc(s, B, 1);
    io.upload(in);
    const rs_ssm_step_io sio = io.io();
    const rs_cuda_conv_state st = {dS, cf.dt, cf.rnd, cf.k, 5, 2, dseeds, dsteps};
    RSK(rs_cuda_conv_decode(RS_SSM_MAMBA2, &dims, &sio, &st, nullptr));
    CK(cudaDeviceSynchronize());
    d2h(c1, dS);
    size_t bad = 0;
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H, g = h / (H / G);
        const uint64_t stream = rs_stream_id(2, 5, (uint32_t)h, (uint64_t)steps[b]);
        for (int i = 0; i < dv; ++i)
            for (int c = 0; c < s.dk; ++c) {
                const size_t e = ((size_t)bh * dv + i) * s.dk + c;
                const float ns = in.alpha[bh] * half_value(et, c0[e]) + in.v[(size_t)bh * dv + i] * in.k[((size_t)b * G + g) * s.dk + c];
                const uint32_t r = cf.rnd == RS_ROUND_SR ? rs_rand_u32(seeds[b], stream, (uint64_t)i * s.dk + c) : 0;
                uint32_t want;
                rs_elem_encode(et, ns, cf.rnd, r, cf.k, &want);
                bad += want != c1[e];
            }
    }
    char name[160];
    snprintf(name, sizeof name, "conv mamba2%s %s state: 1 step == CPU codec", dk_tag(s), cf.name);
    ct_report(name, bad == 0, "%zu mismatching codes of %zu", bad, nS);
    cudaFree(dseeds), cudaFree(dsteps), cudaFree(dS);
    io.free_all();
}

/* nsteps Mamba-2 steps against the engine's conv:<fmt> heads (seed per row, layer 5, stream
 * slot RS_SLOT_CONV, step = token position): stored state bit for bit, outputs within noise.
 * The initial state is representable in the format, so the engine's reset stores it unchanged. */
static void test_half_engine(const HalfCfg &cf, int nsteps, const Shape &s = ct_shapes[1])
{
    const int B = 3, H = s.H, dv = s.dv;
    const size_t nS = (size_t)B * H * dv * s.dk, nout = (size_t)B * H * dv;
    const rs_elem et = cf.dt == RS_CUDA_F16 ? RS_ELEM_FP16 : RS_ELEM_BF16;
    rs_ssm_dims dims = {B, H, s.G, dv, s.dk};
    const uint64_t seeds[B] = {11, 0xFFFFFFFFFFFFull, 12345};
    uint64_t *dseeds = dalloc<uint64_t>(B);
    int64_t *dsteps = dalloc<int64_t>(B);
    h2d(dseeds, std::vector<uint64_t>(seeds, seeds + B));
    std::vector<uint16_t> codes(nS);
    std::vector<float> S0(nS);
    for (size_t i = 0; i < nS; ++i) {
        uint32_t x;
        rs_elem_encode(et, (float)(0.3 * ct_normal()), RS_ROUND_RTN, 0, 32, &x);
        codes[i] = (uint16_t)x, S0[i] = half_value(et, codes[i]);
    }
    uint16_t *dS = dalloc<uint16_t>(nS);
    h2d(dS, codes);
    char pol[32];
    snprintf(pol, sizeof pol, "conv:%s", cf.name);
    Bank bank;
    bank.init(s, B, pol, 1, 1, seeds, 5, S0.data());
    DevStep io;
    io.alloc(s, B, 1);
    const rs_ssm_step_io sio = io.io();
    const rs_cuda_conv_state st = {dS, cf.dt, cf.rnd, cf.k, 5, RS_SLOT_CONV, dseeds, dsteps};
    StepIn in;
    const std::vector<double> rate = ct_head_rates(H);
    std::vector<float> og(nout), oe(nout);
    double eo = 0;
    for (int t = 0; t < nsteps; ++t) {
        h2d(dsteps, std::vector<int64_t>(B, t));
        ct_gen_step(s, B, false, rate, in);
        io.upload(in);
        RSK(rs_cuda_conv_decode(RS_SSM_MAMBA2, &dims, &sio, &st, nullptr));
        bank.decode(0, B, in, oe.data());
        CK(cudaDeviceSynchronize());
        d2h(og, io.o);
        eo = fmax(eo, ct_rel(og, oe));
    }
    d2h(codes, dS);
    std::vector<float> Sg(nS), Se;
    for (size_t i = 0; i < nS; ++i) Sg[i] = half_value(et, codes[i]);
    bank.checkpoint(0, Se);
    const size_t nbits = ct_bits_differ(Sg.data(), Se.data(), nS);
    char name[160];
    snprintf(name, sizeof name, "conv mamba2%s %s state %d steps == engine conv:%s", dk_tag(s), cf.name, nsteps, cf.name);
    ct_report(name, nbits == 0 && eo <= k_tol_engine, "%zu of %zu stored values differ; outputs %.2e", nbits, nS, eo);
    cudaFree(dseeds), cudaFree(dsteps), cudaFree(dS);
    io.free_all();
}

/* fp16 state (RTN and SR) over nsteps against float64, both families. */
static void test_half_long(int nsteps, const Shape &m2 = ct_shapes[1], const Shape &gdn = ct_shapes[2])
{
    const int B = 3;
    for (int fi = 0; fi < 2; ++fi) {
        const Shape &sh = fi == 0 ? m2 : gdn;
        const int H = sh.H, dv = sh.dv;
        const size_t n = (size_t)B * H * dv * sh.dk;
        const std::vector<double> rt = ct_head_rates(H);
        rs_ssm_dims dd = {B, H, sh.G, dv, sh.dk};
        uint64_t *dseeds = dalloc<uint64_t>(B);
        int64_t *dsteps = dalloc<int64_t>(B);
        h2d(dseeds, std::vector<uint64_t>{1, 2, 3});
        for (int ri = 0; ri < 2; ++ri) {
            const rs_rounding rnd = ri ? RS_ROUND_SR : RS_ROUND_RTN;
            uint16_t *dSh = dalloc<uint16_t>(n);
            std::vector<double> S64(n);
            std::vector<uint16_t> ch(n);
            for (size_t i = 0; i < n; ++i) {
                ch[i] = rs_fp16_encode_rtn((float)(0.3 * ct_normal()));
                S64[i] = rs_fp16_decode(ch[i]);
            }
            h2d(dSh, ch);
            DevStep io;
            io.alloc(sh, B, 1);
            const rs_ssm_step_io sio = io.io();
            double emax = 0;
            std::vector<double> o64((size_t)B * H * dv);
            std::vector<float> og((size_t)B * H * dv);
            StepIn in;
            for (int t = 0; t < nsteps; ++t) {
                h2d(dsteps, std::vector<int64_t>(B, t));
                ct_gen_step(sh, B, false, rt, in);
                io.upload(in);
                const rs_cuda_conv_state st = {dSh, RS_CUDA_F16, rnd, 32, 0, 0, dseeds, dsteps};
                RSK(rs_cuda_conv_decode(sh.fam, &dd, &sio, &st, nullptr));
                ct_host_step<double>(sh, B, S64.data(), in, o64.data());
                CK(cudaDeviceSynchronize());
                d2h(og, io.o);
                emax = fmax(emax, ct_rel(og, o64));
            }
            char name[160];
            snprintf(name, sizeof name, "conv %s %s%s fp16-%s state %d steps", ct_fam(sh), sh.name, dk_tag(sh),
                     ri ? "sr" : "rtn", nsteps);
            ct_report(name, emax < 0.1, "max step output rel err vs float64 %.3e", emax);
            cudaFree(dSh);
            io.free_all();
        }
        cudaFree(dseeds), cudaFree(dsteps);
    }
}

/* stored values that differ (as floats: every bit, except that +0 and -0 count as equal, a sign of
 * zero being no rounding decision; NaN never equal) */
static size_t values_differ(const float *a, const float *b, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !(a[i] == b[i]);
    return bad;
}

/* ---- fp16 / bf16 checkpoint rounded at each flush (rs_cuda_replay_state.ckpt_round) --------------
 * ReplaySSM decode with S_ckpt <- Q(S) at every flush against the engine's shared:<fmt> heads (same
 * window, per-row seeds, layer 3, slot RS_SLOT_SHARED, flush index counted on the device by
 * rs_cuda_replay_advance_counted). Rows start at different fills (solo warm-up steps), so they flush
 * at different steps and their flush counters differ.
 *   exact = true: ct_gen_step_exact inputs, on which both sides' fp32 arithmetic is exact, so the
 *     state before each rounding is the same bits on both sides and the stored checkpoint must be
 *     too: checkpoint bit for bit after every step (0 elements differ), outputs <= k_tol_engine (the
 *     outputs' dot products are the only inexact operations), flush counts and fills exact.
 *   exact = false: random inputs over nsteps. Both sides round (almost) the same fp32 values with
 *     the same words, so they agree except where an element lies within their fp32 difference
 *     (~1e-7 relative) of a rounding boundary. Against float64 (unrounded) the rounding dominates
 *     both sides' error: RMS(o_gpu - o64) / RMS(o_cpu - o64) in [0.8, 1.25], and
 *     RMS(o_gpu - o_cpu) <= 0.5 RMS(o_cpu - o64). A keying error (stream, element, flush index)
 *     makes the GPU an independent rounding (difference ratio ~1.4) and fails the second bound;
 *     the exact runs catch it bit for bit. */
static void test_replay_round(const Shape &s, const HalfCfg &cf, int nsteps, int L, bool exact)
{
    const int B = 4, H = s.H, dv = s.dv;
    const size_t nS = (size_t)B * H * dv * s.dk, nout = (size_t)B * H * dv, row = (size_t)H * dv * s.dk;
    const int fill0[B] = {0, 3 % L, 9 % L, L - 1};
    const rs_elem et = cf.dt == RS_CUDA_F16 ? RS_ELEM_FP16 : RS_ELEM_BF16;
    const std::vector<double> rate = ct_head_rates(H);
    std::vector<float> S0(nS);
    for (auto &x : S0) { /* representable in the format: the engine's reset stores it unchanged */
        uint32_t c;
        const float v = exact ? ldexpf((float)((int)(ct_rnd64() % 511) - 255), -10) : (float)(0.3 * ct_normal());
        rs_elem_encode(et, v, RS_ROUND_RTN, 0, 32, &c);
        x = rs_elem_decode(et, c);
    }
    std::vector<double> S64(S0.begin(), S0.end());
    Rig g;
    g.alloc(s, B, L, false, 0, S0);
    const uint64_t seeds[B] = {7, 0xFFFFFFFFFFFFull, 99, 123456789};
    uint64_t *dseeds = dalloc<uint64_t>(B);
    int64_t *dfl = dalloc<int64_t>(B);
    h2d(dseeds, std::vector<uint64_t>(seeds, seeds + B));
    CK(cudaMemset(dfl, 0, B * sizeof(int64_t)));
    char pol[32];
    snprintf(pol, sizeof pol, "shared:%s", cf.name);
    Bank bank;
    bank.init(s, B, pol, (size_t)L, 1, seeds, 3, S0.data());
    DevStep io1, io4;
    io1.alloc(s, 1, 1), io4.alloc(s, B, 1);
    std::vector<int> hfill(B, 0);
    std::vector<int64_t> hfl(B, 0);
    double eo = 0, s_g64 = 0, s_c64 = 0, s_gc = 0;
    size_t nbits = 0;
    bool cnt_ok = true;
    int nflush = 0;
    std::vector<float> og(nout), oe(nout), ck(nS), eck;
    std::vector<double> o64(nout);
    std::vector<long> hpos(B, 0); /* tokens decoded per row (ct_gen_step_exact's positions) */
    auto one = [&](int b0, int nb, const DevStep &io) {
        StepIn in;
        if (exact) ct_gen_step_exact(s, nb, in, hpos.data() + b0);
        else ct_gen_step(s, nb, false, rate, in);
        io.upload(in);
        rs_ssm_dims d = {nb, H, s.G, dv, s.dk};
        rs_cuda_replay_state st = g.replay(b0);
        st.ckpt_round = {cf.dt, cf.rnd, cf.k, 3, RS_SLOT_SHARED, dseeds + b0, dfl + b0};
        const rs_ssm_step_io sio = io.io();
        RSK(rs_cuda_replay_decode(s.fam, &d, &sio, &st, &ct_opts, nullptr));
        RSK(rs_cuda_replay_advance_counted(g.fill + b0, dfl + b0, nb, L, nullptr));
        const size_t no = (size_t)nb * H * dv;
        bank.decode(b0, nb, in, oe.data());
        if (!exact) ct_host_step<double>(s, nb, S64.data() + b0 * row, in, o64.data());
        CK(cudaDeviceSynchronize());
        og.resize(no);
        d2h(og, io.o);
        eo = fmax(eo, ct_rel(og.data(), oe.data(), no));
        if (!exact)
            for (size_t i = 0; i < no; ++i) {
                s_g64 += (og[i] - o64[i]) * (og[i] - o64[i]);
                s_c64 += (oe[i] - o64[i]) * (oe[i] - o64[i]);
                s_gc += (double)(og[i] - oe[i]) * (og[i] - oe[i]);
            }
        og.resize(nout);
        bool any = false;
        for (int b = b0; b < b0 + nb; ++b) hpos[b]++;
        for (int b = b0; b < b0 + nb; ++b) {
            const bool fl = hfill[b] + 1 == L;
            nflush += fl, hfl[b] += fl, any |= fl;
            hfill[b] = fl ? 0 : hfill[b] + 1;
        }
        std::vector<int32_t> fill(B);
        std::vector<int64_t> fls(B);
        d2h(fill, g.fill), d2h(fls, dfl);
        for (int b = b0; b < b0 + nb; ++b) cnt_ok &= fill[b] == hfill[b] && fls[b] == hfl[b] && bank.unfolded(b) == (long)fill[b];
        if (exact && any) { /* the checkpoint after every step that flushed (others leave it alone) */
            d2h(ck, g.Sr);
            bank.checkpoint(0, eck);
            nbits += values_differ(ck.data(), eck.data(), nS);
        }
    };
    for (int b = 0; b < B; ++b)
        for (int j = 0; j < fill0[b]; ++j) one(b, 1, io1);
    for (int t = 0; t < nsteps; ++t) one(0, B, io4);
    d2h(ck, g.Sr);
    bank.checkpoint(0, eck);
    const size_t nbits_end = values_differ(ck.data(), eck.data(), nS);
    char name[160];
    if (exact) {
        snprintf(name, sizeof name, "replay %s %s%s L=%d checkpoint %s at flush, exact inputs, %d steps == engine shared:%s",
                 ct_fam(s), s.name, dk_tag(s), L, cf.name, nsteps, cf.name);
        ct_report(name, nbits == 0 && nbits_end == 0 && cnt_ok && eo <= k_tol_engine && nflush > 0,
                  "%zu checkpoint values differ (summed over flush steps); outputs %.2e; %d flushes; fill/flush counters %s",
                  nbits, eo, nflush, cnt_ok ? "== engine" : "WRONG");
    } else {
        const double r64 = sqrt(s_g64 / s_c64), rgc = sqrt(s_gc / s_c64);
        snprintf(name, sizeof name, "replay %s %s%s L=%d checkpoint %s at flush, %d steps vs engine shared:%s", ct_fam(s),
                 s.name, dk_tag(s), L, cf.name, nsteps, cf.name);
        ct_report(name, cnt_ok && r64 >= 0.8 && r64 <= 1.25 && rgc <= 0.5 && nflush > 0,
                  "RMS vs f64 gpu/cpu %.3f, RMS(gpu - cpu)/RMS(cpu - f64) %.3f; final ckpt: %zu of %zu values differ; "
                  "%d flushes; counters %s",
                  r64, rgc, nbits_end, nS, nflush, cnt_ok ? "== engine" : "WRONG");
    }
    cudaFree(dseeds), cudaFree(dfl);
    g.free_all();
    io1.free_all(), io4.free_all();
}

/* d_k = 64 and 256: the standard decode's other widths (lane l holds d_k / 32 columns of a
 * row), on head counts and d_v of the paper's two families (d_v = 80: Nemotron-3-Nano's 5-chunk rows) */
static const Shape k_dk_shapes[4] = {
    {"Mamba-2 H=96 G=8 d_v=80", RS_SSM_MAMBA2, 96, 8, 80, 64},
    {"Mamba-2 H=32 G=4 d_v=64", RS_SSM_MAMBA2, 32, 4, 64, 256},
    {"GDN H=32 G=16 d_v=128", RS_SSM_GDN, 32, 16, 128, 64},
    {"GDN H=16 G=8 d_v=128", RS_SSM_GDN, 16, 8, 128, 256},
};

/* The d_k = 64 / 256 cases: every check of the d_k = 128 list above on these widths, against the same
 * references with the same bounds: conventional fp32 and ReplaySSM (fused launch, one warp per head) over
 * nsteps (>= 1000 with flushes; the engine's fp32 / shared:fp32 heads and float64); the prologue launch,
 * AUTO with the automatic geometry, a bf16 ring (Mamba-2, bf16-exact inputs), the largest window (L = 64:
 * lanes hold 2 records), GDN two-precision records (the flush recompute launch), each with its CUDA-graph
 * check; fp16 / bf16 conventional state bit for bit against the CPU codec (the documented SR keying) and
 * the engine's conv:<fmt>, and against float64; the checkpoint rounded at flush bit for bit on exact
 * inputs (both families) and statistically on random ones. */
static void test_dk(int nsteps, int nshort, int nround)
{
    for (const Shape &s : k_dk_shapes) {
        ct_opts.warps_per_head = 1;
        test_decode_shape(s, nsteps, 16, false);
        ct_opts.warps_per_head = 0;
    }
    test_decode_shape(k_dk_shapes[0], nshort, 16, false, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(k_dk_shapes[3], nshort, 16, false, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(k_dk_shapes[1], nshort, 16, false, 0, RS_CUDA_LAUNCH_AUTO);
    test_decode_shape(k_dk_shapes[2], nshort, 16, false, 0, RS_CUDA_LAUNCH_AUTO);
    test_decode_shape(k_dk_shapes[0], nshort, 16, true);
    test_decode_shape(k_dk_shapes[1], nshort, 16, true, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(k_dk_shapes[3], nshort, 64, false);
    test_decode_shape(k_dk_shapes[2], nshort, 64, false, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(k_dk_shapes[2], nshort, 16, false, 0, RS_CUDA_LAUNCH_FUSED, true);
    test_decode_shape(k_dk_shapes[3], nshort, 16, false, 0, RS_CUDA_LAUNCH_PROLOGUE, true);
    test_decode_shape(k_dk_shapes[3], nshort, 64, false, 0, RS_CUDA_LAUNCH_FUSED, true);
    for (int i = 0; i < 2; ++i) {
        const Shape &s = k_dk_shapes[i];
        test_half_one_step(k_half[1], s);
        test_half_one_step(k_half[2], s);
        test_half_one_step(k_half[4], s);
        test_half_engine(k_half[0], ct_quick ? 4 : 64, s);
        test_half_engine(k_half[3], ct_quick ? 4 : 64, s);
    }
    test_half_long(nshort, k_dk_shapes[0], k_dk_shapes[3]);
    test_half_long(nshort, k_dk_shapes[1], k_dk_shapes[2]);
    test_replay_round(k_dk_shapes[0], k_half[1], nround, 16, true);
    test_replay_round(k_dk_shapes[3], k_half[1], nround, 16, true);
    test_replay_round(k_dk_shapes[1], k_half[4], nshort, 5, true);
    test_replay_round(k_dk_shapes[2], k_half[3], nshort, 64, true);
    test_replay_round(k_dk_shapes[1], k_half[2], nshort, 16, true);
    test_replay_round(k_dk_shapes[3], k_half[3], nshort, 16, false);
}

int main(int argc, char **argv)
{
    const int rc = ct_init(argc, argv, "test_cuda_decode");
    if (rc) return rc;
    const int nsteps = ct_quick ? 24 : 1024, nshort = ct_quick ? 24 : 256;
    /* warps per head: 1 makes every warp walk all d_v rows of its head in prefetched chunks (the
     * geometry of large batches); the automatic choice at B = 4 gives one chunk per warp */
    for (const Shape &s : ct_shapes) {
        ct_opts.warps_per_head = 1;
        test_decode_shape(s, nsteps, 16, false);
        ct_opts.warps_per_head = 0;
    }
    /* the fused kernel without its early loads (RS_CUDA_SPEC_OFF): the B = 1 steps and the joint runs */
    ct_opts.replay_spec = RS_CUDA_SPEC_OFF;
    for (const Shape &s : ct_shapes) {
        ct_opts.warps_per_head = 1;
        test_decode_shape(s, nshort, 16, false);
        ct_opts.warps_per_head = 0;
    }
    /* RS_CUDA_SPEC_KEYS (the bf16 ring's keys among the early loads): bf16-ring runs at one warp a head (one wave) */
    ct_opts.replay_spec = RS_CUDA_SPEC_KEYS;
    ct_opts.warps_per_head = 1;
    test_decode_shape(ct_shapes[0], nshort, 16, true);
    test_decode_shape(ct_shapes[1], nshort, 16, true);
    ct_opts.warps_per_head = 0;
    test_gdn_bf16_ring(ct_shapes[2], nshort, RS_CUDA_LAUNCH_FUSED, 1);
    /* the non-flush loop's L2 prefetch (RS_CUDA_L2PF_ALWAYS: every launch; the early loads off, which would
     * take the one-wave fused launches): one warp a head (16-32 chunks a warp), fused and after the prologue */
    ct_opts.replay_spec = RS_CUDA_SPEC_OFF;
    ct_opts.replay_l2pf = RS_CUDA_L2PF_ALWAYS;
    ct_opts.warps_per_head = 1;
    test_decode_shape(ct_shapes[1], nshort, 16, false);
    test_decode_shape(ct_shapes[0], nshort, 16, true);
    test_decode_shape(ct_shapes[3], nshort, 16, false, 0, RS_CUDA_LAUNCH_PROLOGUE);
    ct_opts.warps_per_head = 0;
    test_gdn_bf16_ring(ct_shapes[2], nshort, RS_CUDA_LAUNCH_FUSED, 1);
    ct_opts.replay_l2pf = RS_CUDA_L2PF_DEFAULT;
    ct_opts.replay_spec = RS_CUDA_SPEC_DEFAULT;
    test_decode_shape(ct_shapes[1], nshort, 16, false); /* automatic geometry */
    /* GDN with a bf16 ring: AUTO (the prologue at B = 4) and fused at one warp a head (one wave: early loads) */
    test_gdn_bf16_ring(ct_shapes[2], nshort, RS_CUDA_LAUNCH_AUTO, 0);
    test_gdn_bf16_ring(ct_shapes[2], nshort, RS_CUDA_LAUNCH_FUSED, 1);
    test_gdn_bf16_ring(ct_shapes[3], nshort, RS_CUDA_LAUNCH_FUSED, 0);
    test_decode_shape(ct_shapes[1], nsteps, 16, true);  /* bf16 ring */
    test_decode_shape(ct_shapes[2], nshort, 64, false); /* the largest window: lanes hold 2 records */
    test_decode_shape(ct_shapes[0], nshort, 4, false);
    test_decode_shape(ct_shapes[3], nshort, 16, false, 8); /* 8 rows per chunk */
    /* the separate prologue launch (RS_CUDA_LAUNCH_PROLOGUE, kept for side-by-side timing), and the default
     * choice (RS_CUDA_LAUNCH_AUTO: here fused for the B = 1 solo steps, prologue at B = 4 on the H200) */
    test_decode_shape(ct_shapes[1], nshort, 16, false, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(ct_shapes[2], nshort, 16, false, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(ct_shapes[1], nshort, 16, true, 0, RS_CUDA_LAUNCH_PROLOGUE);
    test_decode_shape(ct_shapes[3], nshort, 16, false, 0, RS_CUDA_LAUNCH_AUTO);
    test_auto_choice();
    for (const HalfCfg &cf : k_half) test_half_one_step(cf);
    for (const HalfCfg &cf : k_half) test_half_engine(cf, ct_quick ? 4 : 64);
    test_half_long(nsteps);
    /* checkpoint rounded at flush: fp16/bf16 RTN/SR, both families, exact inputs (bit for bit) over
     * >= 1000 steps at L = 16 (64 flushes a row), L = 5 and the largest window, plus random inputs */
    const int nround = ct_quick ? 12 : 1024;
    test_replay_round(ct_shapes[0], k_half[1], nround, 16, true);
    test_replay_round(ct_shapes[2], k_half[1], nround, 16, true);
    test_replay_round(ct_shapes[1], k_half[3], nshort, 5, true);
    test_replay_round(ct_shapes[3], k_half[4], nshort, 5, true);
    test_replay_round(ct_shapes[1], k_half[0], nshort, 16, true);
    test_replay_round(ct_shapes[2], k_half[2], nshort, 64, true);
    test_replay_round(ct_shapes[1], k_half[1], nround, 16, false);
    test_replay_round(ct_shapes[2], k_half[3], nshort, 16, false);
    test_dk(nsteps, nshort, nround);
    return ct_finish("test_cuda_decode");
}
