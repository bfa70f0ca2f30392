/* cuda_test_util.h — the one frame of the GPU test programs (the .cu files of tests/cuda) and what they share:
 * the call checks (CK: a CUDA runtime call, RSK: a library call; a failure prints where and why and
 * ends the program with exit 1), the check report, a deterministic RNG, device-buffer helpers; for
 * the kernel tests also the four paper shapes and their step inputs, the float64 reference
 * recurrence, and an "engine bank": one lib engine head (engine/rs_head.h) per (row, value head)
 * under a policy, fed the same inputs as the kernels.
 *
 * Every program: ct_init() (exit 77 = CTest "skipped" without a GPU, so CI without one passes),
 * checks through ct_report(), return ct_finish(). `--quick` (ct_quick) shortens every loop, for
 * compute-sanitizer runs.
 *
 * Comparison measure of the kernel tests: the normwise relative difference ||x - ref|| / ||ref||
 * over a whole step's outputs (B x H x d_v) or a whole state (B x H x d_v x d_k). Tolerances and
 * their reasons are in docs/kernels.md ("Tests").
 */
#ifndef RS_CUDA_TEST_UTIL_H
#define RS_CUDA_TEST_UTIL_H

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "replayssm/cuda/rs_cuda.h"
#include "replayssm/engine/rs_head.h"

#define CK(call)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
#define RSK(call)                                                                                \
    do {                                                                                         \
        rs_status s_ = (call);                                                                   \
        if (s_ != RS_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, rs_last_error());      \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

#define DK RS_CUDA_DK /* the paper shapes' d_k; shapes carry their own (Shape::dk) */
#define CT_DK_MAX 256

/* ---- program frame ---------------------------------------------------------------------------- */
extern bool ct_quick;
/* the launch options every ReplaySSM decode / verification of the kernel tests passes (zeroed: the defaults); a
 * test sets a field around the runs that check another value, then sets it back */
extern rs_cuda_launch_opts ct_opts;
/* Parses --quick, prints the device; returns 77 if there is no CUDA device (the caller returns
 * it), 0 otherwise. */
int ct_init(int argc, char **argv, const char *prog);
/* "ok"/"FAIL" line; a FAIL makes ct_finish return 1. */
void ct_report(const char *name, bool ok, const char *fmt, ...);
int ct_finish(const char *prog);

/* ---- deterministic test RNG (splitmix64) -------------------------------------------------------- */
uint64_t ct_rnd64(void);
uint32_t ct_rnd32(void);
double ct_unif(void);   /* [0, 1) */
double ct_normal(void); /* N(0, 1) */
static inline float ct_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t ct_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
float ct_bf16_exact(float x); /* x rounded to bf16 (RTN) and back */

/* ---- device buffers --------------------------------------------------------------------------- */
template <typename T> static inline T *dalloc(size_t n)
{
    T *p = nullptr;
    CK(cudaMalloc((void **)&p, n * sizeof(T) + 16));
    return p;
}
template <typename T> static inline void h2d(T *d, const std::vector<T> &h)
{
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}
template <typename T> static inline void d2h(std::vector<T> &h, const T *d)
{
    CK(cudaMemcpy(h.data(), d, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
}
/* a device copy of h (at least one element allocated); free with dfree */
template <typename T> static inline T *dput(const std::vector<T> &h)
{
    T *d = nullptr;
    CK(cudaMalloc((void **)&d, (h.empty() ? 1 : h.size()) * sizeof(T)));
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
/* n elements at d, after a device synchronisation (a kernel fault surfaces at the op that caused it) */
template <typename T> static inline std::vector<T> dget(const T *d, size_t n)
{
    std::vector<T> h(n);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}
static inline void dfree(const void *p) { CK(cudaFree((void *)p)); }
/* h.size() ring elements at d as float: fp32, or bf16 codes decoded (bf16 = true) */
void ct_ring_d2h(std::vector<float> &h, const void *d, bool bf16);

/* Host-only rule checks (rs_cuda_replay_launches, _lp_version, _lp_heads_per_warp read the descriptors, never
 * the data): an aligned dummy address, step inputs all pointing at it, and a replay state (L = 16) whose arrays
 * point at it with every other field zero */
static inline void *ct_dummy_ptr() { return (void *)(uintptr_t)4096; }
static inline rs_ssm_step_io ct_dummy_io()
{
    const float *p = (const float *)ct_dummy_ptr();
    return rs_ssm_step_io{p, p, p, p, p, (float *)ct_dummy_ptr()};
}
static inline rs_cuda_replay_state ct_dummy_replay_state()
{
    void *p = ct_dummy_ptr();
    rs_cuda_replay_state st;
    memset(&st, 0, sizeof st);
    st.S_ckpt = (float *)p, st.ring_v = p, st.ring_k = p, st.ring_alpha = (float *)p, st.L = 16;
    return st;
}

/* f(stream) captured into a CUDA graph on a fresh stream, the graph launched once and synchronised; returns its
 * node count (the kernel launches f made; a capture that f broke fails CK) */
template <typename F> static inline size_t ct_run_as_graph(F f)
{
    cudaStream_t cs;
    cudaGraph_t gr;
    cudaGraphExec_t ex;
    size_t nodes = 0;
    CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
    f(cs);
    CK(cudaStreamEndCapture(cs, &gr));
    CK(cudaGraphGetNodes(gr, nullptr, &nodes));
    CK(cudaGraphInstantiate(&ex, gr, 0));
    CK(cudaGraphLaunch(ex, cs));
    CK(cudaStreamSynchronize(cs));
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(gr));
    CK(cudaStreamDestroy(cs));
    return nodes;
}

/* ---- shapes and inputs -------------------------------------------------------------------------- */
struct Shape {
    const char *name;
    rs_ssm_family fam;
    int H, G, dv;
    int dk = RS_CUDA_DK; /* d_k: 128 for the paper shapes; 64 or 256 for the standard decode's other widths */
};
/* the four model shapes of the paper (digest section 7): Nemotron-3 Nano / Super (Mamba-2),
 * Qwen3.5 4B / 122B (Gated DeltaNet); d_k = 128. Every helper below takes d_k from the Shape. */
extern const Shape ct_shapes[4];
static inline const char *ct_fam(const Shape &s) { return s.fam == RS_SSM_MAMBA2 ? "mamba2" : "gdn"; }

/* One step's inputs for B rows, layouts of rs_ssm_step_io; T drafts: T of these stacked. */
struct StepIn {
    std::vector<float> alpha, beta, v, k, q;
};
/* per-head decay rate classes: slow (1e-4), medium (0.01), fast (0.2) by h mod 3 */
std::vector<double> ct_head_rates(int H);
/* random inputs: alpha = exp(-rate (0.5 + U)), beta in (0.05, 0.95), v ~ N(0,1), unit k and q;
 * bf16_inputs: v and k bf16-exact (so a bf16 ring stores them unchanged) */
void ct_gen_step(const Shape &s, int B, bool bf16_inputs, const std::vector<double> &rate, StepIn &in);
void ct_stack(const std::vector<StepIn> &drafts, StepIn &out);
/* Dyadic inputs on which every fp32 operation of the kernels and of the engine is exact, so both
 * sides hold the same fp32 state bit for bit and a rounded checkpoint can be compared bit for bit
 * (the rounding being the only thing tested): alpha = 1 (decay products 1), beta = 1/2,
 * v = m 2^-10 (|m| <= 255); Mamba-2: k = m 2^-7 (|m| <= 127), so every product v k and every sum
 * of them is a multiple of 2^-17 far below 2^7 (24 bits); a rounded value of a multiple of 2^-17
 * stays one, so exactness survives flushes. GDN: k one-hot in column (37 pos + 13 g) mod 128 for
 * the token at position pos[b] of row b (key head g), so the tokens of any window (<= 64
 * consecutive positions) touch distinct columns: S k is one column x, the update is
 * x <- (x + v) / 2 with x a stored (fp16/bf16) value, exact in fp32 (<= 24 bits), and the flush
 * rounds it before the column is touched again (with 4 columns, several touches per window
 * pile up bits: a few values per million go inexact). q: random unit
 * (outputs need no exactness). pos: [B] token positions (Mamba-2 ignores it). */
void ct_gen_step_exact(const Shape &s, int B, StepIn &in, const long *pos);

/* Device copies of one StepIn (T drafts x B rows), and the io struct pointing at them. */
struct DevStep {
    float *alpha = nullptr, *beta = nullptr, *v = nullptr, *k = nullptr, *q = nullptr, *o = nullptr;
    size_t na = 0, nv = 0, nk = 0;
    void alloc(const Shape &s, int B, int T);
    void upload(const StepIn &in) const;            /* and poisons o with NaN */
    rs_ssm_step_io io() const { return {alpha, beta, v, k, q, o}; }
    void free_all();
};

/* float64 reference: one conventional step of rows [0, B) of S [B][H][d_v][d_k] (T = double, or
 * float for a plain fp32 loop); o [B][H][d_v]. Rows with active[b] == 0 are left alone. bf16_u (GDN):
 * u = beta (v - alpha S k) rounded to bf16 (RTN, via fp32) before the update, the quantity a bf16 ring
 * caches, so the recurrence is the one a ReplaySSM run with a bf16 ring follows exactly. */
template <typename T>
void ct_host_step(const Shape &s, int B, T *S, const StepIn &in, T *o, const int *active = nullptr,
                  bool bf16_u = false);

/* Fold records into a float64 state: for each row b, its records j < n[b] (physical slot
 * (start[b] + j) % C) of the ring arrays v [B][H][C][d_v], k [B][G][C][d_k], a [B][H][C]:
 * S = a_j S + v_j k_j^T. */
void ct_fold(const Shape &s, int B, int C, const int *n, const int *start, const std::vector<float> &rv,
             const std::vector<float> &rk, const std::vector<float> &ra, std::vector<double> &S);

template <typename A, typename Bv> static inline double ct_rel(const A *x, const Bv *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite((double)x[i])) return INFINITY;
        const double d = (double)x[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}
template <typename A, typename Bv> static inline double ct_rel(const std::vector<A> &x, const std::vector<Bv> &ref)
{
    return ct_rel(x.data(), ref.data(), ref.size());
}
/* sums of an RMS error over a run: d2 += sum (x - ref)^2 (infinite where x is not finite), r2 += sum ref^2 (r2
 * NULL: not summed) */
void ct_sq_acc(const float *x, const double *ref, size_t n, double &d2, double *r2);
/* GDN with a bf16 ring (u = beta (v - alpha S k) rounded to bf16, which no engine policy models), against float64
 * with u rounded to bf16 (eb: RMS output error over the run, sb: final state) and with u unrounded (ef, sf). The GPU
 * computes u in fp32 before rounding, so it takes the other bf16 neighbour where fp32 noise straddles a rounding
 * boundary (a few in 10^4 of the u's); those flips accumulate in the slow heads. A simulation of the tests' inputs
 * (fp32 loop with bf16 u against both float64 references, Qwen3.5-4B, B = 4, 3 seeds) gave over 256 steps eb
 * 3.9e-5-5.0e-5 and ef 1.64e-3 (ratio 0.024-0.031; state 0.038-0.043), over 24 steps 0.011, over 1024 0.13 (state
 * 0.23). Passes: eb <= 1e-3, eb <= 0.25 ef and sb <= 0.25 sf; a GPU that did not round u (or rounded another
 * quantity) sits near the other reference: ratio >= 1. */
bool ct_bf16u_ok(double eb, double ef, double sb, double sf);
/* elements whose float32 bits differ */
size_t ct_bits_differ(const float *a, const float *b, size_t n);

/* the text of tests/fixtures/models/<fixture>/config.json under root with d_k = 128 (ssm_state_size /
 * linear_key_head_dim: the GPU state kernels' key width; the MoE fixtures have 32 / 64); "" if unreadable */
std::string ct_fixture_config_dk128(const char *root, const char *fixture);

/* ---- the lib engine, one head per (row, value head) ---------------------------------------- */
/* Heads of rows [0, B) under one policy string (rs_policy.h), window L, max drafts T, SR seed
 * seeds[b] for row b (NULL: 0), layer `layer`, head index h; reset to S0 [B][H][d_v][d_k]
 * (NULL = zeros). Calls run rows [b0, b0 + nb) in parallel (OpenMP over heads); any engine
 * error ends the program (the engine is the reference here, not the subject). Not copyable. */
struct Bank {
    Shape s{};
    int B = 0;
    std::vector<rs_head> hd;
    Bank() = default;
    Bank(const Bank &) = delete;
    Bank &operator=(const Bank &) = delete;
    ~Bank();
    void init(const Shape &s, int B, const char *policy, size_t L, size_t T, const uint64_t *seeds, uint32_t layer,
              const float *S0);
    /* standard decode of one token per row, in: nb rows; o [nb][H][d_v] */
    void decode(int b0, int nb, const StepIn &in, float *o);
    /* verification of T drafts (in: T x nb rows stacked), O [T][nb][H][d_v]; then commit */
    void verify(int b0, int nb, int T, const StepIn &in, float *O);
    void commit(int b0, int nb, const int32_t *acc); /* acc [nb] */
    void state(std::vector<float> &S);                  /* rs_head_state, [B][H][d_v][d_k] */
    void checkpoint(int read_copy, std::vector<float> &S);
    long unfolded(int b); /* rs_head_unfolded of row b (-1 if its heads disagree) */
};

#endif /* RS_CUDA_TEST_UTIL_H */
