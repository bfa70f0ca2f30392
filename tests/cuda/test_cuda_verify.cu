/* test_cuda_verify.cu — speculative verification on the GPU (ReplaySSM output-only verify with the
 * GDN UT solve + pointer commit, and the snapshot baseline + its commit) against the lib engine
 * and against float64, with random acceptance.
 *
 * 4 rows, the paper shapes, T drafts per round, acceptance a in 1..T drawn per row and round.
 * Row b first runs warm[b] rounds alone (B = 1 launches on row b's slice), so rows enter the
 * joint rounds at different fills and ring origins and flush (h + T > L) at different rounds.
 * References, fed the same drafts and the same acceptances:
 *   - the engine: "shared:fp32" heads (window L, T_max = T) for ReplaySSM, whose verify flushes
 *     on h + T > L and whose commit is h <- h + a, as the kernels; "fp32" heads (conventional
 *     verify, snapshot per draft, commit keeps the a-th) for the snapshot kernels. Compared:
 *     every draft's output every round (<= k_tol_engine), the GPU fill against rs_head_unfolded
 *     every round (exact), and at the end the checkpoint (rs_head_checkpoint), the committed
 *     state (rs_head_state against the GPU checkpoint folded with its committed records) and
 *     the snapshot kernels' committed state (<= k_tol_engine);
 *   - float64: sequential decode of all T drafts for the outputs, then of the accepted ones for
 *     the state (<= 1e-4 and <= 2x the engine's own fp32 error + 1e-7, docs/kernels.md "Tests"), and
 *     the ring origin against the commit rule replayed here (the engine keeps its origin private).
 * A bf16 ring (g_bf16ring) runs on bf16-exact v and k, so a Mamba-2 ring stores them unchanged and the same
 * references hold. GDN's ring holds u = beta (v - a) rounded to bf16, which no engine policy has: the float64
 * reference rounds u to bf16 too
 * (ct_host_step bf16_u, drafts in order: the UT solve's semantics), a second float64 state keeps u unrounded, and
 * the check is statistical (ct_bf16u_ok, whose comment gives the bounds and their basis) on the outputs of every
 * draft and the committed state, the pointers exact; no engine comparison. g_misalign hands the replay kernels io->v 4 bytes off 16-byte alignment:
 * the tensor-core kernel's record stage then copies 4 bytes at a time.
 * Exit 0 if every check passes, 1 otherwise, 77 without a GPU. Usage: test_cuda_verify [--quick] [--tc-only | --rest | --bf16 | --v6a]
 */
#include <algorithm>

#include "cuda_test_util.h"
#include "replayssm/engine/rs_head.h"

static const double k_tol64 = 1e-4, k_floor = 1e-7; /* float64 criterion */
static const double k_tol_engine = 2e-5;            /* GPU vs engine, fp32 noise (docs/kernels.md) */
static int g_vkernel = RS_CUDA_VERIFY_AUTO;         /* rs_cuda_verify_state.kernel of the runs */
/* each round's rs_cuda_replay_verify captured into a CUDA graph and launched from it (the tensor-core kernel is
 * the prologue's programmatic dependent: the capture must keep that edge) */
static bool g_graph = false;
static bool g_bf16ring = false; /* ring_dtype BF16, bf16-exact v and k (GDN: u rounded, the statistical check) */
static bool g_misalign = false; /* io->v of the replay verification 4 bytes past a 16-byte boundary */
/* the GDN T <= 8 kernel's table sharing (ct_opts.verify_gshare) in a check's name where it is not the default */
static const char *gs_tag()
{
    const int m = ct_opts.verify_gshare;
    return m == RS_CUDA_GSHARE_OFF ? " gs0" : m == RS_CUDA_GSHARE_BLOCK ? " gs1" : "";
}
static const char *vk_name(int k)
{
    return k == RS_CUDA_VERIFY_CORES ? "cores" : k == RS_CUDA_VERIFY_TC_V6A ? "tc-v6a" : "tc-v6b";
}

struct VRig {
    Shape s{};
    int B = 0, L = 0, T = 0, C = 0;
    size_t row = 0; /* state elements per row */
    float *Sr = nullptr, *Sc = nullptr, *snap = nullptr, *snap1 = nullptr, *rv = nullptr, *rk = nullptr,
          *ra = nullptr, *work = nullptr, *os = nullptr;
    int32_t *fill = nullptr, *start = nullptr, *acc = nullptr;
    rs_cuda_ckpt_round rnd{}; /* checkpoint rounding at flush (zeroed: none); seeds / flushes: [B] */
    void alloc(const Shape &sh, int nb, int win, int nt, const std::vector<float> &S0)
    {
        s = sh, B = nb, L = win, T = nt, C = L + T;
        row = (size_t)s.H * s.dv * DK;
        Sr = dalloc<float>(B * row), Sc = dalloc<float>(B * row);
        snap = dalloc<float>((size_t)T * B * row), snap1 = dalloc<float>((size_t)T * row);
        h2d(Sr, S0), h2d(Sc, S0);
        rv = dalloc<float>((size_t)B * s.H * C * s.dv), rk = dalloc<float>((size_t)B * s.G * C * DK);
        ra = dalloc<float>((size_t)B * s.H * C);
        fill = dalloc<int32_t>(B), start = dalloc<int32_t>(B), acc = dalloc<int32_t>(B);
        CK(cudaMemset(fill, 0, B * sizeof(int32_t))); /* empty rings, origin 0: the engine's reset */
        CK(cudaMemset(start, 0, B * sizeof(int32_t)));
        rs_ssm_dims d = {B, s.H, s.G, s.dv, DK};
        work = (float *)dalloc<uint8_t>(rs_cuda_replay_work_bytes(&d, L, T));
        os = dalloc<float>((size_t)T * B * s.H * s.dv);
    }
    rs_cuda_verify_state view(int b0) const /* rows from b0 on (every array is row-major in b) */
    {
        const size_t es = g_bf16ring ? 2 : 4; /* bytes a ring element: row b0's records start b0 rows of them in */
        rs_cuda_verify_state v = {Sr + b0 * row,
                                  (char *)rv + (size_t)b0 * s.H * C * s.dv * es,
                                  (char *)rk + (size_t)b0 * s.G * C * DK * es,
                                  ra + (size_t)b0 * s.H * C,
                                  g_bf16ring ? RS_CUDA_BF16 : RS_CUDA_F32,
                                  L,
                                  C,
                                  fill + b0,
                                  start + b0,
                                  work};
        v.ckpt_round = rnd;
        v.kernel = g_vkernel;
        if (rnd.seeds) v.ckpt_round.seeds = rnd.seeds + b0, v.ckpt_round.flushes = rnd.flushes + b0;
        return v;
    }
    void free_all()
    {
        cudaFree(Sr), cudaFree(Sc), cudaFree(snap), cudaFree(snap1), cudaFree(rv), cudaFree(rk), cudaFree(ra);
        cudaFree(work), cudaFree(os), cudaFree(fill), cudaFree(start), cudaFree(acc);
    }
};

struct VErr {
    double rep64 = 0, snap64 = 0, eng64 = 0, rep_eng = 0, snap_eng = 0;
    bool ptr_ok = true;
    int nflush = 0, ntok = 0;
    bool exact = false;    /* ct_gen_step_exact inputs */
    size_t ck_differ = 0;  /* rounded runs: checkpoint values differing from the engine's, summed over rounds */
    std::vector<int64_t> hfl; /* rounded runs: flushes per row (the commit must count them) */
    std::vector<long> pos;    /* exact inputs: committed tokens per row (draft t sits at pos + t) */
    bool fl_ok = true;
    double b2 = 0, f2 = 0, n2 = 0; /* GDN bf16 ring: squared output errors vs the bf16-u / unrounded-u float64 */
};

/* One verification round of rows [b0, b0 + nb) everywhere. hfill/hstart: the commit rule. S64f (GDN bf16 ring):
 * the float64 state with u unrounded, while S64 rounds u to bf16. */
static void round_(VRig &g, Bank &br, Bank &bs, std::vector<double> &S64, int b0, int nb, const DevStep &io,
                   VErr &e, std::vector<int> &hfill, std::vector<int> &hstart, const std::vector<double> &rate,
                   std::vector<double> *S64f = nullptr)
{
    const bool ru = S64f != nullptr;
    const Shape &s = g.s;
    const int T = g.T, L = g.L, C = g.C;
    rs_ssm_dims d = {nb, s.H, s.G, s.dv, DK};
    std::vector<StepIn> drafts(T);
    StepIn st;
    for (int t = 0; t < T; ++t) {
        if (e.exact) {
            std::vector<long> p(nb);
            for (int b = 0; b < nb; ++b) p[b] = e.pos[b0 + b] + t;
            ct_gen_step_exact(s, nb, drafts[t], p.data());
        } else {
            ct_gen_step(s, nb, g_bf16ring, rate, drafts[t]);
        }
    }
    ct_stack(drafts, st);
    io.upload(st);
    const size_t per = (size_t)nb * s.H * s.dv, nv = (size_t)T * per;
    rs_ssm_step_io io_r = io.io(), io_s = io.io();
    io_s.o = g.os;
    static float *vmis = nullptr; /* g_misalign: a copy of v at vmis + 1 (kept across rounds; never freed) */
    static size_t vmis_n = 0;
    if (g_misalign) {
        if (vmis_n < nv + 4) {
            cudaFree(vmis);
            vmis = dalloc<float>(nv + 4), vmis_n = nv + 4;
        }
        CK(cudaMemcpy(vmis + 1, io.v, nv * sizeof(float), cudaMemcpyDeviceToDevice));
        io_r.v = vmis + 1;
    }
    CK(cudaMemcpy(g.os, io.o, nv * sizeof(float), cudaMemcpyDeviceToDevice)); /* NaN poison */
    const rs_cuda_verify_state vst = g.view(b0);
    float *Sc = g.Sc + b0 * g.row, *snap = nb == 1 ? g.snap1 : g.snap;
    if (g_graph) ct_run_as_graph([&](cudaStream_t cs) { RSK(rs_cuda_replay_verify(s.fam, &d, T, &io_r, &vst, &ct_opts, cs)); });
    else RSK(rs_cuda_replay_verify(s.fam, &d, T, &io_r, &vst, &ct_opts, nullptr));
    RSK(rs_cuda_snapshot_verify(s.fam, &d, T, &io_s, Sc, snap, nullptr));
    std::vector<int32_t> acc(nb);
    for (int b = 0; b < nb; ++b) acc[b] = 1 + (int)(ct_rnd64() % (uint64_t)T);
    h2d(g.acc, acc);
    RSK(rs_cuda_replay_commit(&d, T, g.acc, &vst, nullptr));
    RSK(rs_cuda_snapshot_commit(&d, T, g.acc, snap, Sc, nullptr));

    std::vector<float> oer(nv), oes(nv), orr(nv), os(nv);
    /* br: its fill is the pointer check's reference in every run; bs (the snapshot kernels' reference) is not
     * compared in a GDN bf16-ring run (ru), so it does not run there */
    br.verify(b0, nb, T, st, oer.data());
    if (!ru) bs.verify(b0, nb, T, st, oes.data());
    br.commit(b0, nb, acc.data());
    if (!ru) bs.commit(b0, nb, acc.data());
    /* float64: every draft from the committed state (outputs), then the accepted ones (state) */
    double *S = S64.data() + b0 * g.row;
    const std::vector<double> save(S, S + nb * g.row);
    std::vector<double> o64(per);
    CK(cudaDeviceSynchronize());
    d2h(orr, io.o), d2h(os, g.os);
    for (int t = 0; t < T; ++t) {
        ct_host_step<double>(s, nb, S, drafts[t], o64.data(), nullptr, ru);
        if (ru) ct_sq_acc(orr.data() + t * per, o64.data(), per, e.b2, &e.n2);
        e.rep64 = fmax(e.rep64, ct_rel(orr.data() + t * per, o64.data(), per));
        e.snap64 = fmax(e.snap64, ct_rel(os.data() + t * per, o64.data(), per));
        if (!ru) e.eng64 = fmax(e.eng64, ct_rel(oes.data() + t * per, o64.data(), per));
    }
    e.rep_eng = fmax(e.rep_eng, ct_rel(orr, oer));
    if (!ru) e.snap_eng = fmax(e.snap_eng, ct_rel(os, oes));
    std::copy(save.begin(), save.end(), S);
    double *Sf = ru ? S64f->data() + b0 * g.row : nullptr;
    if (ru) { /* the unrounded reference: every draft, then the accepted ones */
        const std::vector<double> savef(Sf, Sf + nb * g.row);
        for (int t = 0; t < T; ++t) {
            ct_host_step<double>(s, nb, Sf, drafts[t], o64.data());
            ct_sq_acc(orr.data() + t * per, o64.data(), per, e.f2, nullptr);
        }
        std::copy(savef.begin(), savef.end(), Sf);
    }
    for (int t = 0; t < T; ++t) {
        std::vector<int> active(nb);
        for (int b = 0; b < nb; ++b) active[b] = t < acc[b];
        ct_host_step<double>(s, nb, S, drafts[t], o64.data(), active.data(), ru);
        if (ru) ct_host_step<double>(s, nb, Sf, drafts[t], o64.data(), active.data());
    }
    std::vector<int32_t> fill(g.B), start(g.B);
    d2h(fill, g.fill), d2h(start, g.start);
    std::vector<int> fl_before(nb, 0);
    for (int i = 0; i < nb; ++i) { /* the commit rule of rs_cuda.h */
        const int b = b0 + i;
        e.ntok += acc[i];
        if (e.exact) e.pos[b] += acc[i];
        if (hfill[b] + T > L) {
            fl_before[i] = 1;
            ++e.nflush;
            hstart[b] = (hstart[b] + hfill[b]) % C;
            hfill[b] = acc[i];
        } else {
            hfill[b] += acc[i];
        }
        e.ptr_ok &= fill[b] == hfill[b] && start[b] == hstart[b] && br.unfolded(b) == (long)fill[b];
    }
    if (g.rnd.seeds) { /* rounded checkpoint: flush counters and the checkpoint every round */
        std::vector<int64_t> fl(g.B);
        d2h(fl, g.rnd.flushes);
        for (int i = 0; i < nb; ++i) {
            const int b = b0 + i;
            e.hfl[b] += fl_before[i];
            e.fl_ok &= fl[b] == e.hfl[b];
        }
        std::vector<float> ck((size_t)g.B * g.row), eck;
        d2h(ck, g.Sr);
        br.checkpoint(0, eck);
        for (size_t i = 0; i < ck.size(); ++i) e.ck_differ += !(ck[i] == eck[i]); /* +0 == -0 */
    }
}

/* rounding of the checkpoint at flush: rs_format name for the engine, and the GPU's fields */
struct RoundCfg {
    const char *name;
    rs_cuda_dtype dt;
    rs_rounding rnd;
    int k;
};

/* min_tok: the run must have verified at least that many accepted tokens (the >= 1000-step runs) */
static void test_verify_shape(const Shape &s, int rounds, int L, int T, const RoundCfg *rc = nullptr, int min_tok = 0)
{
    rs_cuda_verify_state probe{};
    probe.kernel = g_vkernel;
    const int vk = rs_cuda_replay_verify_kernel(&probe, T); /* AUTO resolved, for the check's name */
    const int B = 4;
    const int warm[B] = {0, ct_quick ? 1 : 2, ct_quick ? 2 : 5, ct_quick ? 3 : 9}; /* solo rounds per row */
    const size_t nS = (size_t)B * s.H * s.dv * DK;
    const std::vector<double> rate = ct_head_rates(s.H);
    std::vector<float> S0(nS);
    for (auto &x : S0) x = rc ? ldexpf((float)((int)(ct_rnd64() % 511) - 255), -10) : (float)(0.3 * ct_normal());
    std::vector<double> S64(S0.begin(), S0.end());
    const bool gb = g_bf16ring && s.fam == RS_SSM_GDN; /* u rounded to bf16 in the ring */
    std::vector<double> S64f = gb ? S64 : std::vector<double>();
    std::vector<double> *sf = gb ? &S64f : nullptr;
    VRig g;
    g.alloc(s, B, L, T, S0);
    Bank br, bs;
    const uint64_t seeds[B] = {5, 0xFFFFFFFFFFFFull, 77, 31337};
    char pol[32] = "shared:fp32";
    VErr e;
    if (rc) { /* the engine's shared:<fmt>: layer 2, slot RS_SLOT_SHARED, index = the head's flush count */
        snprintf(pol, sizeof pol, "shared:%s", rc->name);
        uint64_t *dseeds = dalloc<uint64_t>(B);
        int64_t *dfl = dalloc<int64_t>(B);
        h2d(dseeds, std::vector<uint64_t>(seeds, seeds + B));
        CK(cudaMemset(dfl, 0, B * sizeof(int64_t)));
        g.rnd = {rc->dt, rc->rnd, rc->k, 2, RS_SLOT_SHARED, dseeds, dfl};
        e.exact = true;
        e.hfl.assign(B, 0);
        e.pos.assign(B, 0);
    }
    br.init(s, B, pol, (size_t)L, (size_t)T, rc ? seeds : nullptr, 2, S0.data());
    bs.init(s, B, "fp32", (size_t)L, (size_t)T, nullptr, 0, S0.data());
    DevStep io1, io4;
    io1.alloc(s, 1, T), io4.alloc(s, B, T);
    std::vector<int> hfill(B, 0), hstart(B, 0);
    for (int b = 0; b < B; ++b)
        for (int r = 0; r < warm[b]; ++r) round_(g, br, bs, S64, b, 1, io1, e, hfill, hstart, rate, sf);
    for (int r = 0; r < rounds; ++r) round_(g, br, bs, S64, 0, B, io4, e, hfill, hstart, rate, sf);

    /* final states */
    std::vector<float> ck(nS), Sc(nS), rv((size_t)B * s.H * g.C * s.dv), rk((size_t)B * s.G * g.C * DK),
        ra((size_t)B * s.H * g.C), eck, est, esc;
    d2h(ck, g.Sr), d2h(Sc, g.Sc), d2h(ra, g.ra);
    ct_ring_d2h(rv, g.rv, g_bf16ring), ct_ring_d2h(rk, g.rk, g_bf16ring); /* bf16: float-sized allocations half used */
    std::vector<double> Sfin(ck.begin(), ck.end());
    ct_fold(s, B, g.C, hfill.data(), hstart.data(), rv, rk, ra, Sfin);
    br.checkpoint(0, eck);
    br.state(est);
    bs.checkpoint(0, esc);
    const double es_rep = ct_rel(Sfin, S64), es_snap = ct_rel(Sc, S64), es_cpu = ct_rel(esc, S64);
    const double eck_eng = ct_rel(ck, eck), est_eng = ct_rel(Sfin, est), esc_eng = ct_rel(Sc, esc);
    char name[160];
    const char *fam = ct_fam(s);
    if (gb) { /* GDN bf16 ring: against the bf16-u float64 reference, with the unrounded one as the contrast */
        const double eb = sqrt(e.b2 / e.n2), ef = sqrt(e.f2 / e.n2), sb = ct_rel(Sfin, S64), sfe = ct_rel(Sfin, S64f);
        snprintf(name, sizeof name, "verify replay[%s] gdn %s L=%d T=%d wph=%d%s%s bf16 ring (u rounded)", vk_name(vk),
                 s.name, L, T, ct_opts.warps_per_head, gs_tag(), g_misalign ? " io->v misaligned" : "");
        ct_report(name, e.ntok >= min_tok && e.ptr_ok && ct_bf16u_ok(eb, ef, sb, sfe),
                  "RMS out vs f64 with bf16 u %.2e, with fp32 u %.2e (ratio %.3f); state %.2e / %.2e (ratio %.3f); "
                  "%d tokens, %d flushes, pointers %s",
                  eb, ef, ef > 0 ? eb / ef : INFINITY, sb, sfe, sfe > 0 ? sb / sfe : INFINITY, e.ntok, e.nflush,
                  e.ptr_ok ? "ok" : "WRONG");
        g.free_all();
        io1.free_all(), io4.free_all();
        return;
    }
    if (rc) {
        /* exact inputs: both sides fold the same fp32 values exactly and round them with the same
         * words, so the checkpoint is the same bits every round; outputs differ by the dot products'
         * fp32 rounding only (k_tol_engine) */
        snprintf(name, sizeof name,
                 "verify replay[%s] %s %s L=%d T=%d checkpoint %s at flush, exact inputs == engine %s", vk_name(vk),
                 fam, s.name, L, T, rc->name, pol);
        ct_report(name, e.ptr_ok && e.fl_ok && e.ck_differ == 0 && e.rep_eng <= k_tol_engine && e.nflush > 0,
                  "%zu checkpoint values differ (summed over rounds); outputs %.2e; %d tokens, %d flushes; pointers %s, "
                  "flush counters %s",
                  e.ck_differ, e.rep_eng, e.ntok, e.nflush, e.ptr_ok ? "ok" : "WRONG", e.fl_ok ? "ok" : "WRONG");
        cudaFree((void *)g.rnd.seeds), cudaFree(g.rnd.flushes);
        g.free_all();
        io1.free_all(), io4.free_all();
        return;
    }
    snprintf(name, sizeof name, "verify replay[%s] %s %s L=%d T=%d wph=%d%s%s%s%s", vk_name(vk), fam, s.name, L, T,
             ct_opts.warps_per_head, gs_tag(), g_graph ? " as CUDA graphs" : "", g_bf16ring ? " bf16 ring" : "",
             g_misalign ? " io->v misaligned" : "");
    ct_report(name,
              e.ntok >= min_tok && e.ptr_ok && e.rep64 <= k_tol64 && e.rep64 <= 2 * e.eng64 + k_floor && es_rep <= k_tol64 &&
                  es_rep <= 2 * es_cpu + k_floor && e.rep_eng <= k_tol_engine && eck_eng <= k_tol_engine &&
                  est_eng <= k_tol_engine,
              "vs f64: out %.2e state %.2e (engine fp32 %.2e %.2e); vs engine shared:fp32: out %.2e ckpt %.2e state "
              "%.2e; %d tokens, %d flushes, pointers %s",
              e.rep64, es_rep, e.eng64, es_cpu, e.rep_eng, eck_eng, est_eng, e.ntok, e.nflush,
              e.ptr_ok ? "ok" : "WRONG");
    snprintf(name, sizeof name, "verify snapshot %s %s T=%d", fam, s.name, T);
    if (vk == RS_CUDA_VERIFY_CORES || min_tok || g_bf16ring || g_misalign) { /* the snapshot kernel depends on none
                                                                                of these: once is enough */
        g.free_all();
        io1.free_all(), io4.free_all();
        return;
    }
    ct_report(name,
              e.snap64 <= k_tol64 && e.snap64 <= 2 * e.eng64 + k_floor && es_snap <= k_tol64 &&
                  es_snap <= 2 * es_cpu + k_floor && e.snap_eng <= k_tol_engine && esc_eng <= k_tol_engine,
              "vs f64: out %.2e state %.2e; vs engine fp32: out %.2e state %.2e", e.snap64, es_snap, e.snap_eng,
              esc_eng);
    g.free_all();
    io1.free_all(), io4.free_all();
}

/* checkpoint rounding at flush of the rounded runs (fp16/bf16 SR and RTN) */
static const RoundCfg rf[3] = {{"fp16-sr", RS_CUDA_F16, RS_ROUND_SR, 32},
                               {"bf16-sr", RS_CUDA_BF16, RS_ROUND_SR, 32},
                               {"fp16-rtn", RS_CUDA_F16, RS_ROUND_RTN, 32}};

/* The bf16 ring (Mamba-2; the benchmarks' ring) and io->v off 16-byte alignment, on the default choice (tc = false:
 * T = 8 and 16 the tensor-core kernel, T = 2 the CUDA-core one) or forced v6a (tc = true: its staged instance at
 * T <= 8, its T > 8 one, and L + T = 64) */
static void bf16_and_misaligned_runs(bool tc)
{
    const int r = ct_quick ? 3 : 48;
    g_bf16ring = true;
    for (int i = 0; i < 2; ++i) test_verify_shape(ct_shapes[i], r, 16, 8); /* Nano's d_v = 80: 5 tiles */
    test_verify_shape(ct_shapes[1], r, 16, tc ? 12 : 2);
    test_verify_shape(ct_shapes[0], ct_quick ? 2 : 32, 48, 16);
    test_verify_shape(ct_shapes[2], r, 16, 8); /* GDN: u rounded (statistical check) */
    test_verify_shape(ct_shapes[3], ct_quick ? 2 : 24, 16, tc ? 16 : 2);
    g_misalign = true; /* with the bf16 ring: 4-byte copies of 2-byte records */
    test_verify_shape(ct_shapes[1], r, 16, 8);
    g_bf16ring = false;
    test_verify_shape(ct_shapes[0], r, 16, 8);
    test_verify_shape(ct_shapes[2], r, 16, 8);
    test_verify_shape(ct_shapes[3], ct_quick ? 2 : 24, 16, 16);
    g_misalign = false;
}

/* the v6a runs of --tc-only (--v6a alone: the long runs and the T loop, which a bounded stage of the whole --tc-only
 * list does not reach) */
static void v6a_runs()
{
    /* in --tc-only, the runs before these used the default choice (RS_CUDA_VERIFY_AUTO: the CUDA-core kernel at
     * T <= 2, the tensor-core kernel v6a at T >= 3). The tensor-core kernel v6a over >= 1000 accepted tokens a row with flushes on the
     * four paper shapes (T = 8: ~4.5 tokens a round, 4 rows: >= 4000 in all) and at every T = 1..16 on
     * alternating shapes; then v6b and the v3 CUDA-core kernel (kept for benchmarks) on the four shapes and
     * their T > 8 instances. --tc-only stops after the v6a runs. */
    g_vkernel = RS_CUDA_VERIFY_TC_V6A;
    for (const Shape &s : ct_shapes) test_verify_shape(s, ct_quick ? 3 : 240, 16, 8, nullptr, ct_quick ? 0 : 4000);
    for (int T = 1; T <= 16; ++T) {
        if (ct_quick && T != 3 && T != 9 && T != 16) continue;
        test_verify_shape(ct_shapes[T % 4], ct_quick ? 2 : 12, 16, T);
    }
    bf16_and_misaligned_runs(true);
}

/* the default choice's runs, then v6a's (all of --tc-only) */
static void default_and_tc_runs()
{
    const int vr = ct_quick ? 3 : 96; /* rounds (about 2.5 accepted tokens each at T = 4) */
    ct_opts.warps_per_head = 1;
    for (const Shape &s : ct_shapes) test_verify_shape(s, vr, 16, 4);
    ct_opts.warps_per_head = 0;
    test_verify_shape(ct_shapes[0], ct_quick ? 3 : 32, 16, 4); /* automatic geometry */
    test_verify_shape(ct_shapes[1], vr, 16, 8);
    test_verify_shape(ct_shapes[2], vr, 16, 8);
    /* GDN at T <= 8: the runs above at automatic geometry (8 warps a head at B = 4) hold the tables once a block
     * (ct_opts.verify_gshare, RS_CUDA_GSHARE_WIDEN by default); the tables a warp (RS_CUDA_GSHARE_OFF, fp32 and
     * bf16 ring), and 4 warps a head (the geometry the default widens Qwen3.5-122B's 2 to at B = 256) with them
     * once a block */
    ct_opts.verify_gshare = RS_CUDA_GSHARE_OFF;
    test_verify_shape(ct_shapes[3], vr, 16, 8);
    test_verify_shape(ct_shapes[2], ct_quick ? 3 : 48, 16, 4);
    g_bf16ring = true;
    test_verify_shape(ct_shapes[2], ct_quick ? 3 : 48, 16, 8);
    g_bf16ring = false;
    ct_opts.verify_gshare = RS_CUDA_GSHARE_DEFAULT;
    ct_opts.warps_per_head = 4;
    test_verify_shape(ct_shapes[3], ct_quick ? 3 : 48, 16, 8);
    test_verify_shape(ct_shapes[2], ct_quick ? 3 : 48, 8, 6);
    ct_opts.warps_per_head = 0;
    test_verify_shape(ct_shapes[0], ct_quick ? 3 : 48, 16, 1);
    /* T = 2 (the CUDA-core kernel under AUTO) on the four paper shapes, >= 1000 accepted
     * tokens a row with flushes (a = 1..2: ~1.5 tokens a round, 720 rounds, 4 rows: >= 4000 in all) */
    for (const Shape &s : ct_shapes) test_verify_shape(s, ct_quick ? 3 : 720, 16, 2, nullptr, ct_quick ? 0 : 4000);
    test_verify_shape(ct_shapes[2], ct_quick ? 3 : 48, 8, 6); /* T not a power of two, small window */
    /* T > 8 (rows per warp halved: Mamba-2 2, GDN 1) and L + T = 64 (lanes hold two records) */
    test_verify_shape(ct_shapes[0], ct_quick ? 2 : 48, 16, 12);
    test_verify_shape(ct_shapes[3], ct_quick ? 2 : 48, 16, 16);
    test_verify_shape(ct_shapes[1], ct_quick ? 2 : 48, 48, 16);
    test_verify_shape(ct_shapes[2], ct_quick ? 2 : 48, 48, 16);
    test_verify_shape(ct_shapes[2], ct_quick ? 2 : 32, 56, 8);
    g_graph = true; /* the default choice at T = 8 (v6a) and T = 2 (CUDA cores), every round a graph */
    for (const Shape &s : ct_shapes) test_verify_shape(s, ct_quick ? 3 : 48, 16, 8);
    test_verify_shape(ct_shapes[1], ct_quick ? 3 : 48, 16, 2);
    g_graph = false;
    /* checkpoint rounded at flush (fp16/bf16 SR and RTN), exact inputs, bit for bit */
    /* (--quick keeps enough rounds that every run flushes: the check requires flushes) */
    test_verify_shape(ct_shapes[1], ct_quick ? 8 : 96, 16, 4, &rf[0]);
    test_verify_shape(ct_shapes[2], ct_quick ? 8 : 96, 16, 4, &rf[0]);
    test_verify_shape(ct_shapes[0], ct_quick ? 6 : 48, 16, 8, &rf[1]);
    test_verify_shape(ct_shapes[3], ct_quick ? 6 : 48, 8, 6, &rf[1]);
    test_verify_shape(ct_shapes[1], ct_quick ? 8 : 96, 16, 2, &rf[0]); /* T = 2: the CUDA-core kernel */
    test_verify_shape(ct_shapes[2], ct_quick ? 8 : 32, 48, 16, &rf[2]);
    bf16_and_misaligned_runs(false);
    v6a_runs();
}


/* the runs past --tc-only (--rest alone: the full list then fits two bounded device stages): v6b and the v3 CUDA-core
 * kernel forced */
static void other_kernel_runs()
{
    g_vkernel = RS_CUDA_VERIFY_TC_V6B; /* the prefetching tensor-core version, kept for benchmarks */
    for (const Shape &s : ct_shapes) test_verify_shape(s, ct_quick ? 2 : 48, 16, 8);
    test_verify_shape(ct_shapes[3], ct_quick ? 2 : 24, 48, 16);
    g_vkernel = RS_CUDA_VERIFY_CORES;
    for (const Shape &s : ct_shapes) test_verify_shape(s, ct_quick ? 2 : 48, 16, 8);
    test_verify_shape(ct_shapes[0], ct_quick ? 2 : 24, 16, 12);
    test_verify_shape(ct_shapes[3], ct_quick ? 2 : 24, 48, 16);
    test_verify_shape(ct_shapes[1], ct_quick ? 6 : 24, 16, 8, &rf[1]);
}

int main(int argc, char **argv)
{
    const int rc = ct_init(argc, argv, "test_cuda_verify");
    if (rc) return rc;
    bool tc_only = false, rest = false, bf16 = false, v6a = false; /* --tc-only: the default choice's and v6a's runs
                                                           only, e.g. under a sanitizer; --rest: the others only; --bf16:
                                                           the bf16-ring and misaligned runs of --tc-only alone (default
                                                           choice, then v6a forced), a short stage for those checks;
                                                           --v6a: the forced-v6a runs of --tc-only alone */
    for (int i = 1; i < argc; ++i) {
        tc_only |= strcmp(argv[i], "--tc-only") == 0;
        rest |= strcmp(argv[i], "--rest") == 0;
        bf16 |= strcmp(argv[i], "--bf16") == 0;
        v6a |= strcmp(argv[i], "--v6a") == 0;
    }
    if (v6a) {
        v6a_runs();
        return ct_finish("test_cuda_verify");
    }
    if (bf16) {
        bf16_and_misaligned_runs(false);
        g_vkernel = RS_CUDA_VERIFY_TC_V6A;
        bf16_and_misaligned_runs(true);
        return ct_finish("test_cuda_verify");
    }
    if (!rest) default_and_tc_runs();
    if (!tc_only) other_kernel_runs();
    return ct_finish("test_cuda_verify");
}
