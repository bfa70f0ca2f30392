#!/usr/bin/env python3
"""check_narrative.py — the tree speaks of the product, not of how it was made.

Usage: check_narrative.py ROOT          scan every tracked text file of the git checkout ROOT
       check_narrative.py --self-test   run the patterns on planted lines (each must be caught)
                                        and on allowed lines (none may be)

Fails (exit 1, one line per hit) on:
  - development narrative: "Nth session", "this / earlier / next session", "device call",
    "lent machine", ticket references ("issue 18", "issue 8 acceptance 3", "since the issue");
  - a commit hash (7-40 hex digits with at least one letter and one digit) in a comment of a
    source file. (A Markdown page may name the commit a measurement ran on, as a results table
    does; a comment states the rule, not where it came from.)
Files in ALLOW_FILES are skipped; a line matching ALLOW_LINE (an upstream project's issue or pull
request, such as a vLLM PR number) is not a hit. History lives in git log and the issue notes.
"""
import os
import re
import subprocess
import sys

NARRATIVE = re.compile(
    r"\b[0-9]+(st|nd|rd|th) session"
    r"|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth"
    r"|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|last|previous) session"
    r"|\b(this|earlier|next|a later|later|each) session"
    r"|\bdevice calls?\b|\blent (machine|h200|gpu)"
    r"|\bissues? #?[0-9]+\b|\bissue [0-9]+ acceptance|\bsince (the )?(issue|session)",
    re.IGNORECASE)
# upstream references: another project's issue or pull request may be cited by number
ALLOW_LINE = re.compile(r"github\.com/|vllm|sglang|flashinfer|transformers|pytorch|llama\.cpp|\bPR\b|pull/",
                        re.IGNORECASE)
ALLOW_FILES = {"tests/narrative/check_narrative.py"}
HASH = re.compile(r"(?<![0-9A-Za-z_./#x-])[0-9a-f]{7,40}(?![0-9A-Za-z_])")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".py", ".sh", ".cmake", ".txt", ".in")
BINARY_EXT = (".h5", ".png", ".pdf", ".gz", ".safetensors", ".npy", ".bin", ".tiktoken")


def looks_like_hash(tok):
    return any(c.isdigit() for c in tok) and any(c in "abcdef" for c in tok)


def comment_spans(path, line):
    """The comment text of one source line (approximate: //, /* */, *, # comments)."""
    if path.endswith((".py", ".sh", ".cmake", ".txt", ".in")) or os.path.basename(path) == "CMakeLists.txt":
        i = line.find("#")
        return line[i:] if i >= 0 else ""
    s = line.lstrip()
    if s.startswith(("*", "/*", "//")):
        return line
    parts = []
    for m in re.finditer(r"/\*.*?(\*/|$)|//.*$", line):
        parts.append(m.group(0))
    return " ".join(parts)


def scan_line(path, line):
    hits = []
    if NARRATIVE.search(line) and not ALLOW_LINE.search(line):
        hits.append("development narrative")
    if path.endswith(SOURCE_EXT) or os.path.basename(path) == "CMakeLists.txt":
        text = comment_spans(path, line)
    else:
        text = ""
    text = re.sub(r"\b[0-9a-f]{41,}\b", " ", text)   # digests (SHA-256) are data, not commits
    for m in HASH.finditer(text):
        if looks_like_hash(m.group(0)):
            hits.append(f"commit hash {m.group(0)}")
            break
    return hits


def main_check(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"check_narrative: git ls-files failed: {out.stderr.strip()}")
        return 2
    n_files, bad = 0, []
    for rel in out.stdout.split("\n"):
        if not rel or rel in ALLOW_FILES or rel.endswith(BINARY_EXT) or "/fuzz/corpus/" in rel:
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                lines = fh.read().split("\n")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        n_files += 1
        for no, line in enumerate(lines, 1):
            for h in scan_line(rel, line):
                bad.append(f"{rel}:{no}: {h}: {line.strip()[:140]}")
    print(f"narrative: {n_files} tracked text files scanned")
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} line(s) tell the development story or cite a commit in a comment "
              f"(tests/narrative/check_narrative.py says what is allowed)")
        return 1
    print("narrative: ok")
    return 0


PLANTED = [
    ("a.c", "/* default since the fifteenth session */"),
    ("a.c", "// measured in the 12th session"),
    ("a.md", "Measured this session on the H200."),
    ("a.sh", "# one device call brings back 8 files"),
    ("a.md", "The lent machine has no HDF5."),
    ("a.c", " * issue 8 acceptance 3: the decode matches"),
    ("a.md", "Fixed in issue 18."),
    ("a.c", "    x = 1; /* before c742edc the default was 0 */"),
    ("a.cu", " * the prefetch (e39f8ee) is the default"),
    ("a.py", "# see 2eb4eec for the benchmark"),
]
ALLOWED = [
    ("a.md", "| H200 | `replayssm bench` | c3bebae | 174.6 us |"),
    ("a.md", "Measured at commit c3bebae on an H200 (`replayssm bench`)."),
    ("a.c", "static const uint32_t K_[2] = {0x428a2f98, 0x71374491};"),
    ("a.md", "The same bug as vLLM PR 12345 (github.com/vllm-project/vllm/pull/12345)."),
    ("a.c", "/* sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file */"),
    ("a.c", "const char *h = \"deadbeef1\"; /* a test string, not a comment hash */"),
    ("a.md", "The state engine keeps a checkpoint and a ring of inputs."),
    ("a.c", "/* bf16 values 0x3f80 and fp8 e4m3 */"),
]


def self_test():
    fails = 0
    for path, line in PLANTED:
        ok = bool(scan_line(path, line))
        print(f"{'caught' if ok else 'MISSED'}: {path}: {line}")
        fails += not ok
    for path, line in ALLOWED:
        h = scan_line(path, line)
        if h:
            print(f"FALSE ALARM ({h}): {path}: {line}")
            fails += 1
    print("self-test:", "ok" if not fails else f"{fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        sys.exit(2)
    sys.exit(main_check(sys.argv[1]))
