"""replayssm: the toolkit's quantizers and KL logs from Python (python/README.md).

    import numpy as np, replayssm
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    q = replayssm.quantize(x, "nvfp4-sr", seed=1)   # codes + scales as numpy arrays
    y = replayssm.dequantize(q)                      # == replayssm.roundtrip(x, "nvfp4-sr", seed=1)
    ds = replayssm.open_log("kl.h5")                 # xarray Dataset: kl/nll/dp/top1 over (run, book, position)

The quantizers are the C library's (libreplayssm-core, through ctypes: no build step); open_log
needs h5py and xarray.
"""
from ._lib import ReplaySSMError, library_path
from .log import open_log
from .quant import QTensor, canonical, dequantize, quantize, roundtrip

__all__ = ["QTensor", "ReplaySSMError", "canonical", "dequantize", "library_path", "open_log", "quantize",
           "roundtrip"]
__version__ = "0.1.0"
