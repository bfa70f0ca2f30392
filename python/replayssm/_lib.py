"""Finding and loading libreplayssm-core (the core layer: common + quant + engine) with ctypes.

Lookup order (the first that exists wins; `replayssm.library_path()` says which):
  1. $REPLAYSSM_LIB: the path of the shared library file itself;
  2. $RS_LIBDIR: a directory holding libreplayssm-core.so (e.g. an install prefix's lib/);
  3. installed prefixes: $RS_PREFIX/lib, the prefix this file lives under (a copy of python/
     installed as PREFIX/lib/python*/site-packages/replayssm or PREFIX/python/replayssm),
     sys.prefix/lib, /usr/local/lib, /usr/lib, then the loader's own search
     (ctypes.util.find_library, i.e. ldconfig's cache);
  4. build directories of this source tree: <repo>/build*/libreplayssm-core.so, newest first.
"""
import ctypes
import ctypes.util
import glob
import os
import sys

LIBNAME = "libreplayssm-core.so"
_lib = None
_path = None


class ReplaySSMError(Exception):
    """A failed C call: `status` is the rs_status code, `status_name` its rs_strerror text, and
    the message is the library's rs_last_error() (it names the format, index or shape)."""

    def __init__(self, status, status_name, message):
        super().__init__(f"{message} [{status_name}]" if message else status_name)
        self.status, self.status_name, self.message = status, status_name, message


def _candidates():
    env = os.environ.get("REPLAYSSM_LIB")
    if env:
        yield env, "$REPLAYSSM_LIB"
        return  # an explicit file is not second-guessed
    d = os.environ.get("RS_LIBDIR")
    if d:
        yield os.path.join(d, LIBNAME), "$RS_LIBDIR"
        return
    here = os.path.dirname(os.path.abspath(__file__))
    prefixes = []
    if os.environ.get("RS_PREFIX"):
        prefixes.append(os.environ["RS_PREFIX"])
    # PREFIX/lib/python3.X/site-packages/replayssm -> PREFIX; PREFIX/python/replayssm -> PREFIX
    prefixes += [os.path.normpath(os.path.join(here, "..", "..", "..", "..")), os.path.normpath(os.path.join(here, "..", ".."))]
    prefixes += [sys.prefix, "/usr/local", "/usr"]
    for p in prefixes:
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
            yield os.path.join(p, libdir, LIBNAME), f"prefix {p}"
    found = ctypes.util.find_library("replayssm-core")
    if found:
        yield found, "ctypes.util.find_library"
    repo = os.path.normpath(os.path.join(here, "..", ".."))
    builds = glob.glob(os.path.join(repo, "build*", LIBNAME))
    for b in sorted(builds, key=os.path.getmtime, reverse=True):
        yield b, "build directory"


def _declare(lib):
    c = ctypes
    sz, u64, vp, fp, bp = c.c_size_t, c.c_uint64, c.c_void_p, c.c_void_p, c.c_void_p
    sig = {
        "rs_strerror": (c.c_char_p, [c.c_int]),
        "rs_last_error": (c.c_char_p, []),
        "rs_error_clear": (None, []),
        "rs_format_valid_list": (c.c_char_p, []),
        "rs_qflat_canonical": (c.c_int, [c.c_char_p, c.c_char_p, sz]),
        "rs_qflat_sizes": (c.c_int, [c.c_char_p, sz, sz, c.POINTER(sz)]),
        "rs_qflat_quantize": (c.c_int, [c.c_char_p, fp, sz, sz, u64, u64, vp, fp, bp, fp]),
        "rs_qflat_dequantize": (c.c_int, [c.c_char_p, sz, sz, vp, fp, bp, fp, fp]),
        "rs_qflat_roundtrip": (c.c_int, [c.c_char_p, fp, sz, sz, u64, u64, fp]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def lib():
    """The loaded core library (loaded once, on first use)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    tried = []
    for path, why in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        try:
            _declare(handle)
        except AttributeError as e:  # an older library without rs_qflat_*
            tried.append(f"{path} (lacks {e})")
            continue
        _lib, _path = handle, os.path.abspath(path) if os.path.exists(path) else path
        return _lib
    raise ImportError(
        f"replayssm: cannot find {LIBNAME} (the core library; build it with "
        "`cmake --build build --target replayssm_core` or `cmake --install build --prefix P`). "
        "Set REPLAYSSM_LIB=/path/to/libreplayssm-core.so or RS_LIBDIR=P/lib. Tried: " + "; ".join(tried[:12]))


def library_path():
    """Path of the loaded core library."""
    lib()
    return _path


def check(status):
    """Raise ReplaySSMError with the C message for a non-zero rs_status."""
    if status != 0:
        L = lib()
        msg = (L.rs_last_error() or b"").decode("utf-8", "replace")
        name = (L.rs_strerror(status) or b"").decode()
        L.rs_error_clear()
        raise ReplaySSMError(int(status), name, msg)
