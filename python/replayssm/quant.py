"""quantize / dequantize / roundtrip of numpy float32 arrays through the C quantizers
(quant/rs_qflat.h over quant/rs_qtensor.c): the same bits as the C API, zero-copy.

Formats are the C grammar's strings (include/replayssm/quant/rs_format.h), parsed by the C library
itself, e.g. "fp32", "fp16-rtn", "bf16-sr", "fp8-rtn", "fp8-sr+pow2", "nvfp4-rtn", "nvfp4-sr",
"nvfp4-sr8", "nvfp4-rtn+floor"; a bare base ("nvfp4") is its RTN format, as in every command.
"""
import ctypes
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from ._lib import check, lib

# dtype of the codes array by code bytes per element (rs_qtensor.h's storage table): fp32 4, fp16 / bf16
# 2, fp8 1 and nvfp4 1/2 (uint8)
_CODE_DTYPE = {4.0: np.float32, 2.0: np.uint16}


@dataclass
class QTensor:
    """The encoded form of an array (rs_qtensor.h's storage, as numpy arrays).

    codes             fp32: float32[n]; fp16/bf16: uint16[n] bit patterns; fp8 / e5m2 / mxfp8: uint8[n] codes;
                      nvfp4 / mxfp4: uint8[n/2], element 2i in the low nibble, 2i+1 in the high nibble
    scale_inv         fp8 / e5m2: float32[n/128] decode scales (1/scale); else None
    block_scale       nvfp4: uint8[n/16] E4M3 block-scale codes; mxfp8 / mxfp4: uint8[n/32] E8M0 scale codes;
                      else None
    tensor_scale_dec  nvfp4: float32[n/E] per-tensor decode scales S_dec; else None
    format            canonical format string; shape: the input's shape; tensor_extent: E
    seed, stream      the SR key the codes were drawn with
    """
    format: str
    shape: Tuple[int, ...]
    tensor_extent: int
    codes: np.ndarray
    scale_inv: Optional[np.ndarray]
    block_scale: Optional[np.ndarray]
    tensor_scale_dec: Optional[np.ndarray]
    seed: int = 0
    stream: int = 0

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        """Storage bytes, scales included (== rs_qtensor_bytes)."""
        return sum(a.nbytes for a in (self.codes, self.scale_inv, self.block_scale, self.tensor_scale_dec)
                   if a is not None)

    def dequantize(self):
        return dequantize(self)


def _b(fmt):
    if not isinstance(fmt, str):
        raise TypeError(f"replayssm: format must be a string such as 'nvfp4-sr' (got {type(fmt).__name__})")
    return fmt.encode()


def canonical(fmt):
    """Canonical spelling of a format string (raises ReplaySSMError listing the valid ones)."""
    buf = ctypes.create_string_buffer(64)
    check(lib().rs_qflat_canonical(_b(fmt), buf, len(buf)))
    return buf.value.decode()


def _as_input(a, who):
    """The array itself if it is a C-contiguous native float32 numpy array; a clear error else
    (no silent copy: the C code reads the array's buffer directly)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"replayssm.{who}: expected a numpy.ndarray of float32, got {type(a).__name__} "
                        "(use np.asarray(x, dtype=np.float32))")
    if a.dtype != np.float32 or not a.dtype.isnative:
        raise TypeError(f"replayssm.{who}: expected dtype float32 (native byte order), got {a.dtype} "
                        "(convert with a.astype(np.float32))")
    if not a.flags.c_contiguous:
        raise ValueError(f"replayssm.{who}: array is not C-contiguous (strides {a.strides}); "
                         "pass np.ascontiguousarray(a)")
    return a


def _extent(n, tensor_extent):
    return int(n if tensor_extent is None else tensor_extent)


def _ptr(a):
    return None if a is None else a.ctypes.data


def _sizes(fmt, n, E):
    b = (ctypes.c_size_t * 4)()
    check(lib().rs_qflat_sizes(_b(fmt), n, E, b))
    return list(b)


def _key(seed, stream):
    for name, v in (("seed", seed), ("stream", stream)):
        if not (0 <= int(v) < 2 ** 64):
            raise ValueError(f"replayssm: {name} must be in [0, 2^64), got {v}")
    return int(seed), int(stream)


def quantize(array, fmt, seed=0, stream=0, tensor_extent=None):
    """Quantize a float32 array into `fmt`: returns a QTensor (codes and scales as numpy arrays).

    tensor_extent: elements per NVFP4 tensor scale (E; default: the whole array is one tensor);
    n must be a multiple of E and E of the block (128 fp8, 16 nvfp4). SR element i (in C order)
    draws rs_rand_u32(seed, stream, i). Raises ReplaySSMError for a bad format, shape or NaN/Inf.
    """
    x = _as_input(array, "quantize")
    n = x.size
    E = _extent(n, tensor_extent)
    seed, stream = _key(seed, stream)
    name = canonical(fmt)
    b = _sizes(name, n, E)
    dt = _CODE_DTYPE.get(b[0] / n, np.uint8)  # by the C layout's code bytes per element, not by the name
    codes = np.empty(b[0] // np.dtype(dt).itemsize, dtype=dt)
    si = np.empty(b[1] // 4, np.float32) if b[1] else None
    bs = np.empty(b[2], np.uint8) if b[2] else None
    ts = np.empty(b[3] // 4, np.float32) if b[3] else None
    check(lib().rs_qflat_quantize(_b(name), x.ctypes.data, n, E, seed, stream, codes.ctypes.data, _ptr(si), _ptr(bs),
                                  _ptr(ts)))
    return QTensor(name, tuple(x.shape), E, codes, si, bs, ts, seed, stream)


def dequantize(q, out=None):
    """float32 array of q's shape holding the dequantized values (into `out` if given)."""
    if not isinstance(q, QTensor):
        raise TypeError(f"replayssm.dequantize: expected a QTensor from replayssm.quantize, got {type(q).__name__}")
    n = q.size
    b = _sizes(q.format, n, q.tensor_extent)
    arrays = [("codes", q.codes, b[0]), ("scale_inv", q.scale_inv, b[1]), ("block_scale", q.block_scale, b[2]),
              ("tensor_scale_dec", q.tensor_scale_dec, b[3])]
    for nm, a, want in arrays:  # the C side trusts these sizes: check them here
        have = 0 if a is None else a.nbytes
        if have != want or (a is not None and not a.flags.c_contiguous):
            raise ValueError(f"replayssm.dequantize: {nm} has {have} bytes (C-contiguous: "
                             f"{None if a is None else a.flags.c_contiguous}), {q.format} of {n} elements needs {want}")
    y = np.empty(q.shape, np.float32) if out is None else _as_input(out, "dequantize")
    if y.size != n:
        raise ValueError(f"replayssm.dequantize: out has {y.size} elements, q has {n}")
    check(lib().rs_qflat_dequantize(_b(q.format), n, q.tensor_extent, q.codes.ctypes.data, _ptr(q.scale_inv),
                                    _ptr(q.block_scale), _ptr(q.tensor_scale_dec), y.ctypes.data))
    return y


def roundtrip(array, fmt, seed=0, stream=0, tensor_extent=None, out=None):
    """dequantize(quantize(array)) without the intermediate (rs_quantize_roundtrip): a new float32
    array, or `out` (which may be `array` itself, for in place)."""
    x = _as_input(array, "roundtrip")
    n = x.size
    E = _extent(n, tensor_extent)
    seed, stream = _key(seed, stream)
    y = np.empty_like(x) if out is None else _as_input(out, "roundtrip")
    if y.size != n:
        raise ValueError(f"replayssm.roundtrip: out has {y.size} elements, array has {n}")
    check(lib().rs_qflat_roundtrip(_b(fmt), x.ctypes.data, n, E, seed, stream, y.ctypes.data))
    return y
