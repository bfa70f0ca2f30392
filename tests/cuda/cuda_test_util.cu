/* cuda_test_util.cu — the shared part of the GPU test programs (cuda_test_util.h). */
#include "cuda_test_util.h"

#include <cstdarg>

#include "replayssm/quant/rs_minifloat.h"

#undef DK /* below, DK is the shape's d_k (Shape::dk) */

bool ct_quick = false;
rs_cuda_launch_opts ct_opts = {0, 0, 0, 0, 0};
static int g_fail = 0, g_ok = 0;

int ct_init(int argc, char **argv, const char *prog)
{
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--quick") == 0) ct_quick = true;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("%s: no CUDA device, skipping\n", prog);
        return 77;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s: device %s (sm_%d%d, %d SMs)%s\n", prog, p.name, p.major, p.minor, p.multiProcessorCount,
           ct_quick ? ", --quick" : "");
    return 0;
}

void ct_report(const char *name, bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%-4s %-52s ", ok ? "ok" : "FAIL", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (ok) ++g_ok;
    else ++g_fail;
}

int ct_finish(const char *prog)
{
    printf("%s: %d ok, %d FAIL\n", prog, g_ok, g_fail);
    return g_fail ? 1 : 0;
}

/* ---- RNG ---------------------------------------------------------------------------------------- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint64_t ct_rnd64(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
uint32_t ct_rnd32(void) { return (uint32_t)(ct_rnd64() >> 32); }
double ct_unif(void) { return (double)(ct_rnd64() >> 11) * 0x1p-53; }
double ct_normal(void)
{
    double u1 = ct_unif(), u2 = ct_unif();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
float ct_bf16_exact(float x) { return rs_bf16_decode(rs_bf16_encode_rtn(x)); }

void ct_ring_d2h(std::vector<float> &h, const void *d, bool bf16)
{
    if (!bf16) {
        d2h(h, static_cast<const float *>(d));
        return;
    }
    std::vector<uint16_t> c(h.size());
    d2h(c, static_cast<const uint16_t *>(d));
    for (size_t i = 0; i < c.size(); ++i) h[i] = rs_bf16_decode(c[i]);
}

size_t ct_bits_differ(const float *a, const float *b, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += ct_f2u(a[i]) != ct_f2u(b[i]);
    return bad;
}

/* ---- shapes and inputs -------------------------------------------------------------------------- */
const Shape ct_shapes[4] = {
    {"Nemotron-3-Nano-4B", RS_SSM_MAMBA2, 96, 8, 80},
    {"Nemotron-3-Super-120B", RS_SSM_MAMBA2, 128, 8, 64},
    {"Qwen3.5-4B", RS_SSM_GDN, 32, 16, 128},
    {"Qwen3.5-122B", RS_SSM_GDN, 64, 16, 128},
};

std::vector<double> ct_head_rates(int H)
{
    std::vector<double> r(H);
    for (int h = 0; h < H; ++h) r[h] = h % 3 == 0 ? 1e-4 : h % 3 == 1 ? 0.01 : 0.2;
    return r;
}

void ct_gen_step_exact(const Shape &s, int B, StepIn &in, const long *pos)
{
    const int H = s.H, G = s.G, dv = s.dv, DK = s.dk;
    in.alpha.assign((size_t)B * H, 1.0f);
    in.beta.assign((size_t)B * H, 0.5f);
    in.v.resize((size_t)B * H * dv);
    in.k.assign((size_t)B * G * DK, 0.0f);
    in.q.resize((size_t)B * G * DK);
    for (auto &v : in.v) v = ldexpf((float)((int)(ct_rnd64() % 511) - 255), -10);
    for (size_t i = 0; i < in.k.size(); i += DK) {
        double nq = 0, qq[CT_DK_MAX];
        for (int c = 0; c < DK; ++c) qq[c] = ct_normal(), nq += qq[c] * qq[c];
        for (int c = 0; c < DK; ++c) in.q[i + c] = (float)(qq[c] / sqrt(nq));
        if (s.fam == RS_SSM_GDN) {
            const long b = (long)(i / DK) / G, g = (long)(i / DK) % G;
            in.k[i + (size_t)((37 * pos[b] + 13 * g) % DK)] = 1.0f; /* 37 odd: distinct over d_k (>= 64) positions */
        }
        else
            for (int c = 0; c < DK; ++c) in.k[i + c] = ldexpf((float)((int)(ct_rnd64() % 255) - 127), -7);
    }
}

void ct_gen_step(const Shape &s, int B, bool bf16_inputs, const std::vector<double> &rate, StepIn &in)
{
    const int H = s.H, G = s.G, dv = s.dv, DK = s.dk;
    in.alpha.resize((size_t)B * H);
    in.beta.resize((size_t)B * H);
    in.v.resize((size_t)B * H * dv);
    in.k.resize((size_t)B * G * DK);
    in.q.resize((size_t)B * G * DK);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            in.alpha[(size_t)b * H + h] = (float)exp(-rate[h] * (0.5 + ct_unif()));
            in.beta[(size_t)b * H + h] = (float)(0.05 + 0.9 * ct_unif());
        }
    for (auto &v : in.v) v = (float)ct_normal();
    for (size_t i = 0; i < in.k.size(); i += DK) {
        double nk = 0, nq = 0, kk[CT_DK_MAX], qq[CT_DK_MAX];
        for (int c = 0; c < DK; ++c) {
            kk[c] = ct_normal(), qq[c] = ct_normal();
            nk += kk[c] * kk[c], nq += qq[c] * qq[c];
        }
        for (int c = 0; c < DK; ++c) { /* unit k, q (GDN l2norm; Mamba-2 B, C scaled alike) */
            in.k[i + c] = (float)(kk[c] / sqrt(nk));
            in.q[i + c] = (float)(qq[c] / sqrt(nq));
        }
    }
    if (bf16_inputs) {
        for (auto &v : in.v) v = ct_bf16_exact(v);
        for (auto &v : in.k) v = ct_bf16_exact(v);
    }
}

void ct_stack(const std::vector<StepIn> &d, StepIn &out)
{
    out = StepIn();
    for (const StepIn &x : d) {
        out.alpha.insert(out.alpha.end(), x.alpha.begin(), x.alpha.end());
        out.beta.insert(out.beta.end(), x.beta.begin(), x.beta.end());
        out.v.insert(out.v.end(), x.v.begin(), x.v.end());
        out.k.insert(out.k.end(), x.k.begin(), x.k.end());
        out.q.insert(out.q.end(), x.q.begin(), x.q.end());
    }
}

void DevStep::alloc(const Shape &s, int B, int T)
{
    na = (size_t)T * B * s.H, nv = na * s.dv, nk = (size_t)T * B * s.G * s.dk;
    alpha = dalloc<float>(na), beta = dalloc<float>(na), v = dalloc<float>(nv);
    k = dalloc<float>(nk), q = dalloc<float>(nk), o = dalloc<float>(nv);
}
void DevStep::upload(const StepIn &in) const
{
    h2d(alpha, in.alpha), h2d(beta, in.beta), h2d(v, in.v), h2d(k, in.k), h2d(q, in.q);
    h2d(o, std::vector<float>(nv, NAN)); /* an output the kernel forgot to write shows up */
}
void DevStep::free_all()
{
    cudaFree(alpha), cudaFree(beta), cudaFree(v), cudaFree(k), cudaFree(q), cudaFree(o);
    alpha = beta = v = k = q = o = nullptr;
}

template <typename T>
void ct_host_step(const Shape &s, int B, T *S, const StepIn &in, T *o, const int *active, bool bf16_u)
{
    const int H = s.H, G = s.G, dv = s.dv, DK = s.dk;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H, g = h / (H / G);
        if (active && !active[b]) continue;
        const float *k = &in.k[((size_t)b * G + g) * DK], *q = &in.q[((size_t)b * G + g) * DK];
        const T alpha = (T)in.alpha[bh], beta = (T)in.beta[bh];
        for (int i = 0; i < dv; ++i) {
            T *row = &S[((size_t)bh * dv + i) * DK];
            T a = (T)in.v[(size_t)bh * dv + i];
            if (s.fam == RS_SSM_GDN) {
                T sk = 0;
                for (int c = 0; c < DK; ++c) sk += row[c] * (T)k[c];
                a = beta * (a - alpha * sk);
                if (bf16_u) a = (T)rs_bf16_decode(rs_bf16_encode_rtn((float)a));
            }
            T oo = 0;
            for (int c = 0; c < DK; ++c) {
                row[c] = alpha * row[c] + a * (T)k[c];
                oo += row[c] * (T)q[c];
            }
            o[(size_t)bh * dv + i] = oo;
        }
    }
}
template void ct_host_step<double>(const Shape &, int, double *, const StepIn &, double *, const int *, bool);

void ct_sq_acc(const float *x, const double *ref, size_t n, double &d2, double *r2)
{
    for (size_t i = 0; i < n; ++i) {
        const double d = (double)x[i] - ref[i];
        d2 += std::isfinite(d) ? d * d : INFINITY;
        if (r2) *r2 += ref[i] * ref[i];
    }
}

bool ct_bf16u_ok(double eb, double ef, double sb, double sf) { return eb <= 1e-3 && eb <= 0.25 * ef && sb <= 0.25 * sf; }

void ct_fold(const Shape &s, int B, int C, const int *n, const int *start, const std::vector<float> &rv,
             const std::vector<float> &rk, const std::vector<float> &ra, std::vector<double> &S)
{
    const int H = s.H, G = s.G, dv = s.dv, DK = s.dk;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; ++bh) {
        const int b = bh / H, h = bh % H, g = h / (H / G);
        for (int j = 0; j < n[b]; ++j) {
            const int slot = ((start ? start[b] : 0) + j) % C;
            const double a = ra[(size_t)bh * C + slot];
            const float *kj = &rk[(((size_t)b * G + g) * C + slot) * DK];
            for (int i = 0; i < dv; ++i) {
                const double vi = rv[((size_t)bh * C + slot) * dv + i];
                double *row = &S[((size_t)bh * dv + i) * DK];
                for (int c = 0; c < DK; ++c) row[c] = a * row[c] + vi * (double)kj[c];
            }
        }
    }
}

/* ---- engine bank -------------------------------------------------------------------------------- */
/* the message of a failure inside a parallel loop (rs_last_error is per thread) */
static char g_engine_msg[512];
static void engine_note(void) { snprintf(g_engine_msg, sizeof g_engine_msg, "%s", rs_last_error()); }
static void engine_fail(rs_status st, const char *what, int b, int h)
{
    fprintf(stderr, "engine %s (row %d head %d) failed: %s: %s\n", what, b, h, rs_strerror(st),
            g_engine_msg[0] ? g_engine_msg : rs_last_error());
    exit(1);
}

Bank::~Bank()
{
    for (auto &x : hd) rs_head_free(&x);
}

void Bank::init(const Shape &sh, int nb, const char *policy, size_t L, size_t T, const uint64_t *seeds,
                uint32_t layer, const float *S0)
{
    s = sh, B = nb;
    hd.assign((size_t)B * s.H, rs_head{}); /* zeroed: "not initialised", safe to free */
    rs_head_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = s.fam;
    cfg.d_v = (size_t)s.dv, cfg.d_k = (size_t)s.dk, cfg.window = L, cfg.max_drafts = T, cfg.layer = layer;
    RSK(rs_policy_parse(policy, &cfg.policy));
    const size_t n = (size_t)s.dv * s.dk;
    for (int bh = 0; bh < B * s.H; ++bh) {
        cfg.head = (uint32_t)(bh % s.H);
        cfg.seed = seeds ? seeds[bh / s.H] : 0;
        rs_status st = rs_head_init(&hd[bh], &cfg);
        if (st == RS_OK) st = rs_head_reset(&hd[bh], S0 ? S0 + (size_t)bh * n : nullptr);
        if (st != RS_OK) engine_fail(st, "init/reset", bh / s.H, bh % s.H);
    }
}

static rs_ssm_token token_of(const Shape &s, const StepIn &in, int nb, int t, int b, int h)
{
    const size_t bh = ((size_t)t * nb + b) * s.H + h, kg = ((size_t)t * nb + b) * s.G + h / (s.H / s.G);
    rs_ssm_token x;
    x.alpha = in.alpha[bh], x.beta = in.beta[bh];
    x.v = &in.v[bh * s.dv], x.k = &in.k[kg * s.dk], x.q = &in.q[kg * s.dk];
    return x;
}

void Bank::decode(int b0, int nb, const StepIn &in, float *o)
{
    const int H = s.H;
    int bad = -1;
    rs_status bad_st = RS_OK;
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < nb * H; ++i) {
        const int b = i / H, h = i % H;
        const rs_ssm_token x = token_of(s, in, nb, 0, b, h);
        const rs_status st = rs_head_decode(&hd[(size_t)(b0 + b) * H + h], &x, o + (size_t)i * s.dv);
        if (st != RS_OK) {
#pragma omp critical
            {
                bad = i, bad_st = st;
                engine_note();
            }
        }
    }
    if (bad >= 0) engine_fail(bad_st, "decode", b0 + bad / H, bad % H);
}

void Bank::verify(int b0, int nb, int T, const StepIn &in, float *O)
{
    const int H = s.H, dv = s.dv;
    int bad = -1;
    rs_status bad_st = RS_OK;
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < nb * H; ++i) {
        const int b = i / H, h = i % H;
        rs_ssm_token x[RS_CUDA_TMAX];
        std::vector<float> ob((size_t)T * dv);
        for (int t = 0; t < T; ++t) x[t] = token_of(s, in, nb, t, b, h);
        const rs_status st = rs_head_verify(&hd[(size_t)(b0 + b) * H + h], x, (size_t)T, ob.data());
        for (int t = 0; t < T; ++t) memcpy(O + ((size_t)t * nb * H + i) * dv, &ob[(size_t)t * dv], dv * sizeof(float));
        if (st != RS_OK) {
#pragma omp critical
            {
                bad = i, bad_st = st;
                engine_note();
            }
        }
    }
    if (bad >= 0) engine_fail(bad_st, "verify", b0 + bad / H, bad % H);
}

void Bank::commit(int b0, int nb, const int32_t *acc)
{
    for (int i = 0; i < nb * s.H; ++i) {
        const rs_status st = rs_head_commit(&hd[(size_t)b0 * s.H + i], (size_t)acc[i / s.H]);
        if (st != RS_OK) engine_fail(st, "commit", b0 + i / s.H, i % s.H);
    }
}

void Bank::state(std::vector<float> &S)
{
    const size_t n = (size_t)s.dv * s.dk;
    S.resize((size_t)B * s.H * n);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < B * s.H; ++i)
        if (rs_head_state(&hd[i], &S[(size_t)i * n]) != RS_OK) engine_fail(RS_E_STATE, "state", i / s.H, i % s.H);
}

void Bank::checkpoint(int read_copy, std::vector<float> &S)
{
    const size_t n = (size_t)s.dv * s.dk;
    S.resize((size_t)B * s.H * n);
    for (int i = 0; i < B * s.H; ++i) {
        const rs_status st = rs_head_checkpoint(&hd[i], read_copy, &S[(size_t)i * n], nullptr);
        if (st != RS_OK) engine_fail(st, "checkpoint", i / s.H, i % s.H);
    }
}

long Bank::unfolded(int b)
{
    const size_t u = rs_head_unfolded(&hd[(size_t)b * s.H]);
    for (int h = 1; h < s.H; ++h)
        if (rs_head_unfolded(&hd[(size_t)b * s.H + h]) != u) return -1;
    return (long)u;
}

std::string ct_fixture_config_dk128(const char *root, const char *fixture)
{
    char p[2200];
    snprintf(p, sizeof p, "%s/tests/fixtures/models/%s/config.json", root, fixture);
    std::string cfg;
    FILE *f = fopen(p, "rb");
    if (!f) return cfg;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) cfg.append(buf, n);
    fclose(f);
    const char *keys[] = {"\"ssm_state_size\": ", "\"linear_key_head_dim\": "};
    for (const char *k : keys) {
        const size_t at = cfg.find(k);
        if (at == std::string::npos) continue;
        const size_t v = at + strlen(k), e = cfg.find_first_of(",\n}", v);
        cfg.replace(v, e - v, "128");
    }
    return cfg;
}
