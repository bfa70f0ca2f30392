"""Tests of the Python module python/replayssm/, run by CTest test `python`
(tests/python/run_python_tests.sh). References, none of them the module itself:
  - the C descriptor API through a separate C program (tests/python/rs_quant_dump.c, env
    RS_QUANT_DUMP), which does not use ctypes nor quant/rs_qflat.c;
  - ml_dtypes' casts (float16 via numpy, bfloat16, float8_e4m3fn, float8_e5m2, float4_e2m1fn,
    float8_e8m0fnu) and the OCP MX v1.0 conversion rule, and the
    TransformerEngine scale formulas of docs/formats.md written out in numpy float32;
  - statistics (SR unbiasedness, with the bound stated at each test);
  - h5py reads of a log that the CLI writes here (env RS_CLI, RS_FIXTURE_DIR).
"""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import replayssm

FLT_MAX = np.float32(np.finfo(np.float32).max)
ALL_FORMATS = ["fp32", "fp16-rtn", "fp16-sr", "fp16-sr12", "bf16-rtn", "bf16-sr8", "fp8-rtn", "fp8-sr", "fp8-rtn+pow2",
               "fp8-sr4+pow2", "nvfp4-rtn", "nvfp4-sr", "nvfp4-sr8", "nvfp4-rtn+floor", "e5m2-rtn", "e5m2-sr",
               "e5m2-sr8+pow2", "mxfp8-rtn", "mxfp8-sr", "mxfp4-rtn", "mxfp4-sr8"]


def bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def sample(n, seed=0, lo=-12, hi=6):
    """Values over many binades, both signs, some exact zeros (a tensor with an all-zero block)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(lo, hi, n))).astype(np.float32)
    x[:16] = 0.0  # one all-zero NVFP4 block
    return x


# ---- against the C API (a separate C program) ---------------------------------------------------

def c_dump(tmp_path, x, fmt, E, seed, stream):
    exe = os.environ.get("RS_QUANT_DUMP")
    if not exe:
        pytest.fail("RS_QUANT_DUMP (path of the rs_quant_dump C program) is not set: run through CTest")
    src = tmp_path / "x.f32"
    x.tofile(src)
    pre = str(tmp_path / fmt.replace("+", "_"))
    subprocess.run([exe, fmt, str(E), str(seed), str(stream), str(src), pre], check=True)
    rd = lambda ext, dt: np.fromfile(f"{pre}.{ext}", dtype=dt)
    return {"codes": rd("codes", np.uint8), "scale_inv": rd("scale_inv", np.uint8),
            "block_scale": rd("block_scale", np.uint8), "tensor_scale_dec": rd("tensor_scale_dec", np.uint8),
            "roundtrip": rd("roundtrip", np.float32)}


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_bit_identical_to_c_program(tmp_path, fmt):
    x = sample(4096, seed=3)
    E, seed, stream = 1024, 987654321, 5
    ref = c_dump(tmp_path, x, fmt, E, seed, stream)
    q = replayssm.quantize(x, fmt, seed=seed, stream=stream, tensor_extent=E)
    raw = lambda a: np.zeros(0, np.uint8) if a is None else a.view(np.uint8)
    for name in ("codes", "scale_inv", "block_scale", "tensor_scale_dec"):
        np.testing.assert_array_equal(raw(getattr(q, name)), ref[name], err_msg=f"{fmt}: {name}")
    assert q.nbytes == sum(ref[k].size for k in ("codes", "scale_inv", "block_scale", "tensor_scale_dec"))
    y = replayssm.roundtrip(x, fmt, seed=seed, stream=stream, tensor_extent=E)
    np.testing.assert_array_equal(bits(y), bits(ref["roundtrip"]), err_msg=f"{fmt}: roundtrip")
    np.testing.assert_array_equal(bits(replayssm.dequantize(q)), bits(ref["roundtrip"]), err_msg=f"{fmt}: dequantize")


def test_import_one_liner():
    """A one-liner as a researcher types it: a fresh interpreter, `import replayssm`, round trip and quantize."""
    code = ("import numpy as np, replayssm, ml_dtypes; x = np.linspace(-3, 3, 4096, dtype=np.float32); "
            "y = replayssm.roundtrip(x, 'bf16-rtn'); "
            "assert (y.view(np.uint32) == x.astype(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)).all(); "
            "q = replayssm.quantize(x, 'nvfp4-sr', seed=1); print(q.format, q.codes.dtype, q.codes.size)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["nvfp4-sr", "uint8", "2048"]


# ---- against ml_dtypes (RTN) --------------------------------------------------------------------

def special_values():
    """Ties, subnormals of fp16 / bf16, overflow of fp16, values at the format edges."""
    v = [0.0, -0.0, 1.0, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 65504.0, 65519.0,
         65520.0, 1e5, 2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25, 2.0 ** -14 * 0.75, 3.0e38, 1e-40, -1e-40, 2.0 ** -133]
    x = np.array(v + [-t for t in v], dtype=np.float32)
    return np.concatenate([x, sample(4096 - x.size, seed=9, lo=-30, hi=20)])


@pytest.mark.parametrize("fmt,dt", [("fp16-rtn", np.float16), ("bf16-rtn", ml_dtypes.bfloat16)])
def test_half_rtn_equals_ml_dtypes(fmt, dt):
    x = special_values()
    q = replayssm.quantize(x, fmt)
    with np.errstate(over="ignore"):  # 65520 and up overflow to Inf, as in the C codec
        want = x.astype(dt)  # IEEE round-to-nearest-even, overflow to Inf, as binary16 / bfloat16
    np.testing.assert_array_equal(q.codes, want.view(np.uint16))
    np.testing.assert_array_equal(bits(replayssm.roundtrip(x, fmt)), bits(want.astype(np.float32)))


def fp8_reference(x, pow2=False, fmax=448, dt=ml_dtypes.float8_e4m3fn, below=464):
    """FP8 block (docs/formats.md, TE compute_scale_from_amax): per 128 elements scale = fmax / amax
    (float32 division; 1 for amax 0; FLT_MAX on overflow; pow2: mantissa cleared), codes =
    E4M3(x * scale) RTN (ml_dtypes), scale_inv = 1 / scale, y = float(code) * scale_inv."""
    xb = x.reshape(-1, 128)
    amax = np.abs(xb).max(axis=1)
    with np.errstate(divide="ignore", over="ignore"):
        scale = np.where(amax == 0, np.float32(1), np.float32(fmax) / amax).astype(np.float32)
    scale[np.isinf(scale)] = FLT_MAX
    if pow2:
        scale = (scale.view(np.uint32) & np.uint32(0xFF800000)).view(np.float32)
    v = (xb * scale[:, None]).astype(np.float32)
    assert np.abs(v).max() < below  # in range for ml_dtypes' cast (no satfinite: E4M3 >= 464 would be NaN)
    codes = v.astype(dt)
    scale_inv = (np.float32(1) / scale).astype(np.float32)
    y = (codes.astype(np.float32) * scale_inv[:, None]).astype(np.float32)
    return codes.view(np.uint8).ravel(), scale_inv, y.ravel()


def e5m2_reference(x, pow2=False):
    """E5M2 block (docs/formats.md): fp8's rule with E5M2's largest value, scale = 57344 / amax per 128
    (the same zero, overflow and pow2 cases), codes = E5M2(x * scale) RTN (ml_dtypes: round to nearest
    even; every scaled value lies below 61440, where its cast would leave 57344)."""
    return fp8_reference(x, pow2, fmax=57344, dt=ml_dtypes.float8_e5m2, below=61440)


@pytest.mark.parametrize("fmt", ["fp8-rtn", "fp8-rtn+pow2", "e5m2-rtn", "e5m2-rtn+pow2"])
def test_fp8_rtn_equals_ml_dtypes_with_te_scales(fmt):
    x = special_values()[: 32 * 128].copy()
    x[128:256] = 0.0  # an all-zero block: scale 1
    x[256:384] *= np.float32(2.0 ** -100)  # tiny amax: fmax / amax overflows to Inf -> FLT_MAX
    ref = e5m2_reference if fmt.startswith("e5m2") else fp8_reference
    codes, scale_inv, y = ref(x, pow2="pow2" in fmt)
    q = replayssm.quantize(x, fmt)
    np.testing.assert_array_equal(q.codes, codes)
    np.testing.assert_array_equal(bits(q.scale_inv), bits(scale_inv))
    np.testing.assert_array_equal(bits(replayssm.roundtrip(x, fmt)), bits(y))


def test_fp8_prescaled_elements_equal_plain_cast():
    """Blocks whose amax is 448 have scale exactly 1: the codes are ml_dtypes' plain E4M3 cast."""
    x = sample(1024, seed=4, lo=-8, hi=8)
    x = np.clip(x, -440, 440)
    x[::128] = 448.0
    q = replayssm.quantize(x, "fp8-rtn")
    assert (q.scale_inv == 1).all()
    np.testing.assert_array_equal(q.codes, x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))


def test_e5m2_every_code_and_tie_equals_ml_dtypes():
    """Blocks holding 57344 have scale exactly 1, so the codes are ml_dtypes' plain E5M2 cast: every
    finite code's value and every midpoint between neighbours (ties to even), subnormals included."""
    codes = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float32)
    fin = np.unique(codes[np.isfinite(codes)])
    mids = ((fin[:-1].astype(np.float64) + fin[1:]) / 2).astype(np.float32)
    assert (mids.astype(np.float64) == (fin[:-1].astype(np.float64) + fin[1:]) / 2).all()  # exact midpoints
    v = np.concatenate([fin, mids])
    n = -(-v.size // 127) * 127
    v = np.concatenate([v, np.zeros(n - v.size, np.float32)]).reshape(-1, 127)
    x = np.concatenate([np.full((v.shape[0], 1), 57344, np.float32), v], axis=1).ravel()
    q = replayssm.quantize(x, "e5m2-rtn")
    assert (q.scale_inv == 1).all()
    np.testing.assert_array_equal(q.codes, x.astype(ml_dtypes.float8_e5m2).view(np.uint8))


def nvfp4_reference(x, E, floor=False):
    """NVFP4 (docs/formats.md, TE formulas) in numpy float32 with ml_dtypes' E4M3 / E2M1 casts."""
    xt = x.reshape(-1, E)
    tamax = np.abs(xt).max(axis=1)
    with np.errstate(divide="ignore", over="ignore"):
        s_enc = np.where(tamax == 0, np.float32(1), np.minimum(np.float32(2688) / tamax, FLT_MAX)).astype(np.float32)
    s_dec = (np.float32(1) / s_enc).astype(np.float32)
    xb = x.reshape(-1, 16)
    t_of_b = np.arange(xb.shape[0]) * 16 // E
    bamax = np.abs(xb).max(axis=1)
    sbf = np.minimum(bamax * (s_enc[t_of_b] * np.float32(1.0 / 6.0)), FLT_MAX).astype(np.float32)
    if floor:
        sbf = np.maximum(sbf, np.float32(2.0 ** -6))
    sb = np.minimum(sbf, np.float32(448)).astype(ml_dtypes.float8_e4m3fn)  # satfinite, then RTN
    sbv = sb.astype(np.float32)
    with np.errstate(divide="ignore", over="ignore"):
        mult = np.minimum(np.float32(1) / (sbv * s_dec[t_of_b]), FLT_MAX).astype(np.float32)
        v = np.clip(xb * mult[:, None], -6, 6).astype(np.float32)
    e = v.astype(ml_dtypes.float4_e2m1fn)
    c = e.view(np.uint8).ravel() & 15
    codes = (c[0::2] | (c[1::2] << 4)).astype(np.uint8)
    y = ((e.astype(np.float32) * sbv[:, None]) * s_dec[t_of_b][:, None]).astype(np.float32)
    return codes, sb.view(np.uint8), s_dec, y.ravel(), mult, sbv * s_dec[t_of_b], v


@pytest.mark.parametrize("fmt", ["nvfp4-rtn", "nvfp4-rtn+floor"])
def test_nvfp4_rtn_equals_numpy_reference(fmt):
    x = sample(4096, seed=5, lo=-20, hi=10)
    x[1024:1040] = np.float32(1e-30)  # a block far below the tensor's amax: block scale 0 (or the floor)
    E = 1024
    codes, sb, s_dec, y, *_ = nvfp4_reference(x, E, floor="floor" in fmt)
    q = replayssm.quantize(x, fmt, tensor_extent=E)
    np.testing.assert_array_equal(q.codes, codes)
    np.testing.assert_array_equal(q.block_scale, sb)
    np.testing.assert_array_equal(bits(q.tensor_scale_dec), bits(s_dec))
    np.testing.assert_array_equal(bits(replayssm.roundtrip(x, fmt, tensor_extent=E)), bits(y))


# ---- stochastic rounding ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["fp16-sr", "bf16-sr", "fp8-sr", "nvfp4-sr", "nvfp4-sr8"])
def test_sr_seed_determinism(fmt):
    x = sample(2048, seed=6)
    a = replayssm.roundtrip(x, fmt, seed=42)
    b = replayssm.roundtrip(x, fmt, seed=42)
    c = replayssm.roundtrip(x, fmt, seed=43)
    d = replayssm.roundtrip(x, fmt, seed=42, stream=1)
    np.testing.assert_array_equal(bits(a), bits(b))
    # thousands of elements off the grid: another seed or stream moves a good fraction of them
    # (each moves with probability between 0 and 1; none moving has probability < 1e-100 here)
    assert (bits(a) != bits(c)).mean() > 0.05
    assert (bits(a) != bits(d)).mean() > 0.05


def test_fp16_sr_unbiased():
    """E[SR(x)] = x. Values in [1, 2) (fp16 step h = 2^-10), K seeds each: every draw's error lies
    in (-h, h) with variance <= h^2/4, independent over draws (Philox words), so the pooled mean
    error over N = n K draws has sd <= h / (2 sqrt N) and each element's mean sd <= h / (2 sqrt K).
    Bounds: 5 sd pooled (false-failure probability ~6e-7) and 6 sd per element (n * 2e-9)."""
    n, K, h = 512, 400, 2.0 ** -10
    x = (1 + np.random.default_rng(7).random(n)).astype(np.float32)
    ys = np.stack([replayssm.roundtrip(x, "fp16-sr", seed=s) for s in range(K)]).astype(np.float64)
    err = ys - x
    assert np.abs(err).max() < h
    assert abs(err.mean()) < 5 * h / (2 * np.sqrt(n * K))
    assert np.abs(err.mean(axis=0)).max() < 6 * h / (2 * np.sqrt(K))
    # and the rounding is really stochastic: RTN's deterministic error would fail this bound
    rtn = replayssm.roundtrip(x, "fp16-rtn").astype(np.float64) - x
    assert np.abs(rtn).max() > 6 * h / (2 * np.sqrt(K))


def test_nvfp4_sr_unbiased():
    """E[SR] for NVFP4: the scales are RTN (seed-independent), so element i is SR of v_i = x_i *
    mult_i between its two E2M1 neighbours lo < v < hi, times d_i = s_b S_dec: E[y_i] = d_i v_i
    (v from the numpy reference; clamped |v| = 6 elements are exact) with variance <= (d_i (hi -
    lo))^2 / 4. Pooled z = sum(y - E) / sqrt(K sum var_i) over K seeds: |z| < 5 (false failure
    ~6e-7; a conservative bound since var_i is an upper bound)."""
    n, K, E = 1024, 300, 1024
    x = sample(n, seed=8, lo=-3, hi=3)
    *_, mult, d, v = nvfp4_reference(x, E)
    d = np.repeat(d, 16).astype(np.float64)
    v = v.ravel().astype(np.float64)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    av = np.abs(v)
    k = np.clip(np.searchsorted(grid, av, side="right") - 1, 0, 6)
    gap = grid[k + 1] - grid[k]
    var = (d * gap) ** 2 / 4
    expect = d * v
    ys = np.stack([replayssm.roundtrip(x, "nvfp4-sr", seed=s, tensor_extent=E) for s in range(K)]).astype(np.float64)
    # each draw is one of the two neighbours
    assert np.all(np.abs(ys - expect) <= d * gap * (1 + 1e-6))
    z = (ys - expect).sum() / np.sqrt(K * var.sum())
    assert abs(z) < 5, z
    assert not np.array_equal(ys[0], ys[1])  # the seeds really drew different roundings


def test_e5m2_sr_unbiased():
    """E[SR] for E5M2: the block scale is RTN (seed-independent, from the numpy reference), so each
    element is SR of v = x * scale between its two E5M2 neighbours lo <= v <= hi, times 1 / scale:
    E[y] = v / scale, variance <= ((hi - lo) / scale)^2 / 4. Pooled z over K seeds: |z| < 5 (as for
    NVFP4)."""
    n, K = 1024, 300
    x = sample(n, seed=11, lo=-3, hi=3)
    _, scale_inv, _ = e5m2_reference(x)
    xb = x.reshape(-1, 128)
    amax = np.abs(xb).max(axis=1)
    scale = (np.float32(57344) / amax).astype(np.float32)  # the codec's scale (no zero block here)
    v = (xb * scale[:, None]).astype(np.float32)  # what the codec rounds
    fin = np.unique(np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float64))
    fin = fin[np.isfinite(fin)]
    av = np.abs(v.astype(np.float64)).ravel()
    k = np.clip(np.searchsorted(fin, av, side="right") - 1, 0, fin.size - 2)
    lo, hi = fin[k], fin[k + 1]
    sinv = np.repeat(scale_inv.astype(np.float64), 128)
    expect = np.sign(v.ravel()) * av * sinv
    var = ((hi - lo) * sinv) ** 2 / 4
    ys = np.stack([replayssm.roundtrip(x, "e5m2-sr", seed=s) for s in range(K)]).astype(np.float64)
    assert np.all(np.abs(ys - expect) <= (hi - lo) * sinv * (1 + 1e-6))
    z = (ys - expect).sum() / np.sqrt(K * var.sum())
    assert abs(z) < 5, z
    assert not np.array_equal(ys[0], ys[1])


def mx_reference(x, fp4):
    """OCP MX v1.0 (docs/formats.md) in numpy: per 32 elements X = 2^(floor(log2 amax) - emax), emax 8
    (E4M3) or 2 (E2M1), at least 2^-127 (zero or tiny blocks); elements = V / X saturated to the
    element's largest value, ml_dtypes' RTN cast; the scale as ml_dtypes' float8_e8m0fnu; y = P * X."""
    dt, emax, fmax = (ml_dtypes.float4_e2m1fn, 2, 6.0) if fp4 else (ml_dtypes.float8_e4m3fn, 8, 448.0)
    xb = x.reshape(-1, 32)
    amax = np.abs(xb).max(axis=1).astype(np.float32)
    _, E = np.frexp(amax)  # amax = m 2^E, m in [0.5, 1): floor(log2 amax) = E - 1 for normals
    e = np.where(amax >= np.float32(2.0 ** -126), E - 1, -127) - emax
    e = np.maximum(e, -127)
    X = np.ldexp(np.float32(1), e).astype(np.float32)
    v = np.clip(np.ldexp(xb, -e[:, None]).astype(np.float32), -fmax, fmax)
    codes = v.astype(dt)
    y = (codes.astype(np.float32) * X[:, None]).astype(np.float32)
    c = codes.view(np.uint8).ravel()
    if fp4:
        c = (c[0::2] & 15) | ((c[1::2] & 15) << 4)
    return c.astype(np.uint8), X.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8), y.ravel()


@pytest.mark.parametrize("fmt", ["mxfp8-rtn", "mxfp4-rtn"])
def test_mx_rtn_equals_ocp_rule_with_ml_dtypes(fmt):
    x = special_values()[: 128 * 32].copy()
    x[32:64] = 0.0  # a zero block: X = 2^-127, codes 0
    x[64:96] = np.linspace(-1, 1, 32, dtype=np.float32) * np.float32(2.0 ** -130)  # amax below 2^-126: X = 2^-127
    x[96:128] = np.float32(1.0)  # amax a power of two: X = 2^-emax exactly
    x[128:160] = np.float32(0.75) * np.float32(2.0 ** 100)  # large exponents
    x[160:192] = np.linspace(-449, 449, 32, dtype=np.float32)  # scaled values past the element's max saturate
    codes, sc, y = mx_reference(x, fp4=fmt.startswith("mxfp4"))
    q = replayssm.quantize(x, fmt)
    np.testing.assert_array_equal(q.block_scale, sc)
    np.testing.assert_array_equal(q.codes, codes)
    np.testing.assert_array_equal(bits(replayssm.roundtrip(x, fmt)), bits(y))
    assert sc[1] == 0 and sc[2] == 0 and sc[3] == 127 - (2 if "mxfp4" in fmt else 8)


@pytest.mark.parametrize("fmt,dt", [("mxfp8-rtn", ml_dtypes.float8_e4m3fn), ("mxfp4-rtn", ml_dtypes.float4_e2m1fn)])
def test_mx_every_code_and_tie_at_scale_one(fmt, dt):
    """Blocks whose amax is 2^emax (256 for E4M3, 4 for E2M1) have X = 1, so the element codes are
    ml_dtypes' plain cast of every representable value and every midpoint of neighbours (ties to even)
    up to that amax."""
    top = 256.0 if "mxfp8" in fmt else 4.0
    vals = np.unique(np.arange(256 if "mxfp8" in fmt else 16, dtype=np.uint8).view(dt).astype(np.float64))
    vals = vals[np.isfinite(vals) & (np.abs(vals) <= top)]
    mids = (vals[:-1] + vals[1:]) / 2
    v = np.concatenate([vals, mids]).astype(np.float32)
    n = -(-v.size // 31) * 31
    v = np.concatenate([v, np.zeros(n - v.size, np.float32)]).reshape(-1, 31)
    x = np.concatenate([np.full((v.shape[0], 1), top, np.float32), v], axis=1).ravel()
    q = replayssm.quantize(x, fmt)
    assert (q.block_scale == 127).all()
    c = x.astype(dt).view(np.uint8)
    if "mxfp4" in fmt:
        c = (c[0::2] & 15) | ((c[1::2] & 15) << 4)
    np.testing.assert_array_equal(q.codes, c)


def test_mx_sr_unbiased():
    """E[SR] for MXFP4: X is RTN (seed-independent), each element SR of v = V / X between its two E2M1
    neighbours (saturated values are exact); E[y] = v X, var <= ((hi - lo) X)^2 / 4; pooled |z| < 5."""
    n, K = 1024, 300
    x = sample(n, seed=12, lo=-3, hi=3)
    _, sc, _ = mx_reference(x, fp4=True)
    X = np.repeat(sc.view(ml_dtypes.float8_e8m0fnu).astype(np.float64), 32)
    v = np.clip(x.astype(np.float64) / X, -6, 6)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    k = np.clip(np.searchsorted(grid, np.abs(v), side="right") - 1, 0, 6)
    gap = (grid[k + 1] - grid[k]) * X
    ys = np.stack([replayssm.roundtrip(x, "mxfp4-sr", seed=s) for s in range(K)]).astype(np.float64)
    assert np.all(np.abs(ys - v * X) <= gap * (1 + 1e-6))
    z = (ys - v * X).sum() / np.sqrt(K * (gap ** 2 / 4).sum())
    assert abs(z) < 5, z
    assert not np.array_equal(ys[0], ys[1])


# ---- the interface: zero copy, refusals, C errors ------------------------------------------------

def test_zero_copy_and_in_place():
    x = sample(1024, seed=10)
    want = replayssm.roundtrip(x, "fp8-rtn")
    out = np.empty_like(x)
    assert replayssm.roundtrip(x, "fp8-rtn", out=out) is out
    np.testing.assert_array_equal(bits(out), bits(want))
    assert replayssm.roundtrip(x, "fp8-rtn", out=x) is x  # in place (the C function allows y == x)
    np.testing.assert_array_equal(bits(x), bits(want))
    m = sample(2048, seed=11).reshape(16, 128)
    q = replayssm.quantize(m, "nvfp4-sr", seed=3, tensor_extent=128)
    assert q.shape == (16, 128) and q.tensor_scale_dec.shape == (16,) and replayssm.dequantize(q).shape == (16, 128)


def test_refuses_wrong_arrays_with_clear_errors():
    x = sample(1024)
    with pytest.raises(TypeError, match="float32"):
        replayssm.roundtrip(x.astype(np.float64), "fp16-rtn")
    with pytest.raises(TypeError, match="float32"):
        replayssm.quantize(x.astype(">f4"), "fp16-rtn")
    with pytest.raises(TypeError, match="numpy.ndarray"):
        replayssm.quantize(list(x), "fp16-rtn")
    with pytest.raises(ValueError, match="C-contiguous"):
        replayssm.quantize(x.reshape(32, 32).T, "fp16-rtn")
    with pytest.raises(ValueError, match="C-contiguous"):
        replayssm.roundtrip(x, "fp16-rtn", out=np.empty(2048, np.float32)[::2])


def test_c_errors_become_exceptions_with_the_c_message():
    x = sample(1024)
    with pytest.raises(replayssm.ReplaySSMError, match="valid formats") as e:
        replayssm.quantize(x, "nvfp4-sr99")
    assert e.value.status == 1 and e.value.status_name  # RS_E_INVAL
    with pytest.raises(replayssm.ReplaySSMError, match="block of 128") as e:
        replayssm.roundtrip(x[:1000].copy(), "fp8-rtn")
    assert e.value.status == 2  # RS_E_SHAPE
    x[17] = np.nan
    with pytest.raises(replayssm.ReplaySSMError, match="NaN at index 17") as e:
        replayssm.roundtrip(x, "nvfp4-rtn")
    assert e.value.status == 6  # RS_E_NONFINITE
    assert replayssm.canonical("nvfp4-sr32") == "nvfp4-sr"
    # the one format grammar: a bare base is its RTN format, here as in every command
    assert replayssm.canonical("nvfp4") == "nvfp4-rtn" and replayssm.canonical("fp8+pow2") == "fp8-rtn+pow2"
    assert replayssm.quantize(sample(64), "nvfp4").format == "nvfp4-rtn"
    with pytest.raises(replayssm.ReplaySSMError, match="fp32 takes no rounding"):
        replayssm.canonical("fp32-rtn")
    q = replayssm.quantize(sample(1024), "nvfp4-rtn")
    q.block_scale = q.block_scale[:-1]
    with pytest.raises(ValueError, match="block_scale"):
        replayssm.dequantize(q)


def test_library_lookup_env(tmp_path):
    """RS_LIBDIR pointing at a folder without the library: a clear ImportError naming it."""
    code = "import replayssm, numpy as np; replayssm.roundtrip(np.zeros(16, np.float32), 'fp32')"
    env = {k: v for k, v in os.environ.items() if k != "REPLAYSSM_LIB"}
    env["RS_LIBDIR"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "RS_LIBDIR" in r.stderr and str(tmp_path) in r.stderr
    env["RS_LIBDIR"] = os.path.dirname(replayssm.library_path())
    r = subprocess.run([sys.executable, "-c", code + "; print(replayssm.library_path())"], env=env,
                       capture_output=True, text=True, check=True)
    assert os.path.samefile(r.stdout.strip(), replayssm.library_path())


# ---- open_log against h5py on a log the CLI writes ----------------------------------------------

@pytest.fixture(scope="module")
def cli_log(tmp_path_factory):
    cli, fx = os.environ.get("RS_CLI"), os.environ.get("RS_FIXTURE_DIR")
    if not cli or not fx:
        pytest.fail("RS_CLI / RS_FIXTURE_DIR not set: run through CTest")
    out = tmp_path_factory.mktemp("log") / "kl.h5"
    subprocess.run([cli, "kl", "--model", f"{fx}/models/gdn-tiny-random", "--data", f"{fx}/pg19-mini", "--books", "2",
                    "--tokens", "80", "--chunk", "16", "--seed", "3", "--threads", "1", "--quiet",
                    "--policy", "fp32", "--policy", "shared:nvfp4-sr", "--policy", "split:nvfp4-rtn/fp32",
                    "--out", str(out)], check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return out


def test_open_log_matches_h5py(cli_log):
    import h5py
    import xarray as xr

    ds = replayssm.open_log(cli_log)
    with h5py.File(cli_log, "r") as f:
        names = sorted(f["runs"].keys(), key=lambda n: int(f["runs"][n].attrs["index"]))
        policies = [f["runs"][n].attrs["policy"] for n in names]
        policies = [p.decode() if isinstance(p, bytes) else str(p) for p in policies]
        books = [b.decode() if isinstance(b, bytes) else str(b) for b in f["books/id"][()]]
        done = f["books/completed_positions"][()]
        assert ds.kl.dims == ("run", "book", "position")
        assert list(ds.run.values) == policies == ["fp32", "shared:nvfp4-sr", "split:nvfp4-rtn/fp32"]
        assert list(ds.book.values) == books and len(books) == 2
        assert ds.sizes["position"] == f[f"runs/{names[0]}/kl"].shape[1] == 80
        for k, n in enumerate(names):
            for var, h5 in (("kl", "kl"), ("nll", "nll"), ("dp", "dp"), ("top1", "top1_agree")):
                for b in range(len(books)):
                    want = f[f"runs/{n}/{h5}"][b, : done[b]].astype(np.float64)
                    got = ds[var].values[k, b, : done[b]]
                    np.testing.assert_array_equal(got, want, err_msg=f"{n}/{h5} book {b}")
                    assert np.isnan(ds[var].values[k, b, done[b]:]).all()
            # the log's own summary (C, over finite positions of all books) vs xarray's mean
            s = float(f[f"runs/{n}"].attrs["summary_mean_kl"])
            assert np.isclose(float(ds.kl.isel(run=k).mean()), s, rtol=1e-12, atol=0)  # summation order only
        np.testing.assert_array_equal(ds.ref_nll.values[0, : done[0]], f["reference/nll"][0, : done[0]])
    assert float(ds.kl.sel(run="fp32").max()) == 0.0  # the fp32 run is the reference itself
    assert ds.kl.attrs["units"] == "nats" and ds.attrs["format"] == "replayssm-kl-log"
    both = xr.concat([ds.isel(run=[2]), ds.isel(run=[1])], dim="run")  # xr.concat over runs works
    assert list(both.run.values) == ["split:nvfp4-rtn/fp32", "shared:nvfp4-sr"]
    sub = replayssm.open_log(cli_log, runs=["shared:nvfp4-sr"])
    np.testing.assert_array_equal(sub.kl.values[0], ds.kl.sel(run="shared:nvfp4-sr").values)


def test_open_log_refuses_other_files(tmp_path):
    import h5py

    p = tmp_path / "other.h5"
    with h5py.File(p, "w") as f:
        f.attrs["format"] = "something-else"
    with pytest.raises(ValueError, match="not a replayssm KL log"):
        replayssm.open_log(p)
