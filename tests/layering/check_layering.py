#!/usr/bin/env python3
"""check_layering.py — the rooms of docs/architecture.md, enforced on every include.

Usage: check_layering.py ROOT          check the tree at ROOT (exit 1 listing every violation)
       check_layering.py --self-test   plant one violation of each kind in a copy of this tree
                                       (from the script's location) and require each to be caught

Every `#include "..."` of every .c/.h/.cu/.cuh under quant/ lib/ kernels/ eval/ include/replayssm/
tests/examples/ is resolved the way the build resolves it:
  1. the includer's own directory            (the compiler's first stop for "...")
  2. include/                                (RS_PUBLIC_INCLUDE, on every target's path)
  3. quant/, lib/, eval/, kernels/           (RS_PRIVATE_INCLUDE: rs_check.h bare, another room's
                                              private header by its room path, "engine/rs_dot.h",
                                              "model/rs_runner.h"; the kernels' CUDA helpers bare,
                                              "rs_cuda_common.cuh", for the rooms that may see kernels)
An include that resolves nowhere is a violation.

A file's room is where it lives (quant/ -> quant, lib/engine/ -> engine, lib/theory/ -> theory,
kernels/** -> kernels, eval/<room>/ -> <room>, tests/examples/ -> examples); a public header's room
is its folder under include/replayssm/ (cuda/ is kernels'), and for include/replayssm/eval/ the
table EVAL_PUBLIC below. One-way rooms, each may include (besides itself):
  quant      -
  engine     quant                                 (lib/: the state engine)
  theory     quant, engine                         (lib/: Appendix C)
  kernels    quant, engine, theory
  input      quant                                 (eval/ rooms, bottom-up)
  tokenizer  quant, input
  model      quant, engine, input, tokenizer
  log        quant, input
  kleval     quant, engine, input, tokenizer, model, log
  gpu        quant, engine, kernels, input, tokenizer, model, log, kleval
  cli        every room (the program: argument parsing and library calls)
and moreover:
  - a public header obeys its room's rule and includes public headers only; the core umbrella
    include/replayssm/replayssm.h includes public headers of quant and engine only, and all of
    them but the building blocks in UMBRELLA_EXEMPT;
  - a room may include private headers of the rooms it may include (they are built together);
    these are listed as notes;
  - cli may include its own private headers and, of other rooms, quant/rs_check.h only: it is a
    client of the libraries' public API;
  - tests/examples/ include public headers only (they build against an installed prefix);
  - no public header includes a header of a private dependency: <hdf5.h>, <H5*.h>, <cblas.h>,
    <gsl/...>, <cjson/...>, <omp.h>, <zlib.h> (the libraries must stay usable without them).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCANNED = ["quant", "lib", "kernels", "eval", "include/replayssm", "tests/examples"]
# folder -> room, longest prefix first
ROOM_DIRS = [("lib/engine", "engine"), ("lib/theory", "theory"), ("quant", "quant"), ("kernels", "kernels"),
             ("eval/input", "input"), ("eval/tokenizer", "tokenizer"), ("eval/model", "model"),
             ("eval/log", "log"), ("eval/kleval", "kleval"), ("eval/gpu", "gpu"), ("eval/cli", "cli"),
             ("tests/examples", "examples")]
PRIVATE_PATH = ["quant", "lib", "eval", "kernels"]  # RS_PRIVATE_INCLUDE in CMakeLists.txt
EXTENSIONS = (".c", ".h", ".cu", ".cuh")
PUBLIC_DIRS = {"quant": "quant", "engine": "engine", "theory": "theory", "cuda": "kernels"}
# include/replayssm/eval/<header> -> the eval room that implements it
EVAL_PUBLIC = {
    "rs_sha256.h": "input", "rs_pg19.h": "input", "rs_text.h": "input",
    "rs_tokenizer.h": "tokenizer",
    "rs_model.h": "model", "rs_hf_config.h": "model", "rs_safetensors.h": "model", "rs_quant_config.h": "model",
    "rs_h5log.h": "log", "rs_h5log_merge.h": "log", "rs_h5io.h": "log", "rs_h5file.h": "log", "rs_outfile.h": "log",
    "rs_kl.h": "log", "rs_kleval.h": "kleval", "rs_scorer.h": "kleval",
    "rs_scorer_cuda.h": "gpu", "rs_gpu_info.h": "gpu",
}
BELOW = {
    "quant": set(),
    "engine": {"quant"},
    "theory": {"quant", "engine"},
    "kernels": {"quant", "engine", "theory"},
    "input": {"quant"},
    "tokenizer": {"quant", "input"},
    "model": {"quant", "engine", "input", "tokenizer"},
    "log": {"quant", "input"},
    "kleval": {"quant", "engine", "input", "tokenizer", "model", "log"},
    "gpu": {"quant", "engine", "kernels", "input", "tokenizer", "model", "log", "kleval"},
}
BELOW["cli"] = set(BELOW) | {"theory"}
ALLOWED = {m: s | {m} for m, s in BELOW.items()}
UMBRELLA = "include/replayssm/replayssm.h"
UMBRELLA_MODULES = {"quant", "engine"}
# Core public headers the umbrella leaves out on purpose: building blocks shared by the C and
# CUDA sources, not API (their public wrappers are rs_minifloat.h, rs_philox.h, rs_qtensor.h).
# Any other core public header must be in the umbrella.
UMBRELLA_EXEMPT = {
    "include/replayssm/quant/rs_hostdev.h",  # RS_HD / RS_HD_INLINE macros for C + nvcc code
    "include/replayssm/quant/rs_codec.h",    # header-only integer codec + Philox core
}
CLI_PRIVATE_OK = {"quant/rs_check.h"}
# The top level of the tree (docs/architecture.md "The rooms"): the layout card's entries, plus
# docs/, cmake/, .ci/, the one public include root, python/ (the installable Python package) and
# scripts/ (bootstrap and the GPU check a person runs); dot-files such as .gitignore are allowed.
TOP_LEVEL = {"CMakeLists.txt", "README.md", "lib", "quant", "kernels", "eval", "data", "notebooks", "tests",
             "docs", "cmake", ".ci", "include", "python", "scripts"}
FORBIDDEN_SYSTEM = re.compile(r"^(hdf5\.h|H5[A-Za-z0-9_]*\.h|cblas\.h|gsl/.*|cjson/.*|omp\.h|zlib\.h)$")
INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]')


def strip_comments(text):
    """Blank out /* */ and // comments (keeping newlines, so line numbers hold) and leave
    string and character literals alone: a commented-out include is not an include."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def classify(rel):
    """(room, kind) of a repository-relative path; kind is public, umbrella, private or example."""
    parts = rel.split("/")
    if rel == UMBRELLA:
        return "core", "umbrella"
    if parts[0] == "include":
        if len(parts) == 4 and parts[1] == "replayssm" and parts[2] in PUBLIC_DIRS:
            return PUBLIC_DIRS[parts[2]], "public"
        if len(parts) == 4 and parts[1] == "replayssm" and parts[2] == "eval" and parts[3] in EVAL_PUBLIC:
            return EVAL_PUBLIC[parts[3]], "public"
        return None, "public"
    for prefix, room in ROOM_DIRS:
        if rel.startswith(prefix + "/"):
            return room, ("example" if room == "examples" else "private")
    return None, "private"


def resolve(root, includer, name):
    """Repository-relative path of the file `#include "name"` in `includer` reaches, and how;
    or (None, reason)."""
    here = os.path.dirname(includer)
    path = [here, "include"] + PRIVATE_PATH
    for d in path:
        p = os.path.normpath(os.path.join(root, d, name))
        if os.path.isfile(p):
            return os.path.relpath(p, root).replace(os.sep, "/"), d
    return None, "not found in the includer's directory, include/, quant/, lib/, eval/ or kernels/"


def check(root):
    violations, notes = [], []
    files = []
    for top in SCANNED:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(EXTENSIONS):
                    files.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
    umbrella_includes = set()
    for rel in files:
        mod, kind = classify(rel)
        if mod is None:
            violations.append(f"{rel}: not in any room (public headers go in include/replayssm/<room>/ "
                              f"({', '.join(sorted(PUBLIC_DIRS))}) or include/replayssm/eval/ with an entry in "
                              f"EVAL_PUBLIC; sources in one of {', '.join(d for d, _ in ROOM_DIRS)})")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = strip_comments(fh.read())
        for lineno, line in enumerate(text.split("\n"), 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            delim, name = m.groups()
            where = f"{rel}:{lineno}: #include {delim}{name}{'>' if delim == '<' else chr(34)}"
            if delim == "<":
                if kind in ("public", "umbrella") and FORBIDDEN_SYSTEM.match(name):
                    violations.append(f"{where}: a public header may not include a private dependency's "
                                      f"header (HDF5, CBLAS, GSL, cJSON, OpenMP, zlib)")
                continue
            target, how = resolve(root, rel, name)
            if target is None:
                violations.append(f"{where}: unresolvable ({how})")
                continue
            tmod, tkind = classify(target)
            if tmod is None:
                violations.append(f"{where}: resolves to {target}, which is in no room")
                continue
            if tkind == "example":
                violations.append(f"{where}: resolves to {target}: nothing may include tests/examples/")
                continue
            tpublic = tkind in ("public", "umbrella")
            arrow = f"{where} -> {target}"
            if kind == "umbrella":
                umbrella_includes.add(target)
                if not tpublic or tmod not in UMBRELLA_MODULES:
                    violations.append(f"{arrow}: the core umbrella may include public headers of "
                                      f"quant and engine only")
                continue
            if kind == "example":
                if not tpublic:
                    violations.append(f"{arrow}: examples may include public headers only")
                continue
            if tkind == "umbrella":
                tmod_set = UMBRELLA_MODULES
            else:
                tmod_set = {tmod}
            bad = sorted(tmod_set - ALLOWED[mod])
            if bad:
                violations.append(f"{arrow}: {mod} may not include {', '.join(bad)} "
                                  f"(allowed: {', '.join(sorted(ALLOWED[mod]))})")
                continue
            if kind == "public" and not tpublic:
                violations.append(f"{arrow}: a public header may include public headers only "
                                  f"({target} is private to {tmod})")
                continue
            if not tpublic and tmod != mod:
                if mod == "cli":
                    if target not in CLI_PRIVATE_OK:
                        violations.append(f"{arrow}: cli may include private headers of other rooms "
                                          f"only for {', '.join(sorted(CLI_PRIVATE_OK))}")
                    continue
                if target != "quant/rs_check.h":
                    notes.append(f"{arrow}: {mod} uses a private header of {tmod} (allowed: {mod} builds on {tmod})")
    expected = {f for f in files if classify(f)[1] == "public" and classify(f)[0] in UMBRELLA_MODULES
                and f not in UMBRELLA_EXEMPT}
    if os.path.isfile(os.path.join(root, UMBRELLA)):
        for missing in sorted(expected - umbrella_includes):
            violations.append(f"{UMBRELLA}: does not include the core public header {missing}")
    else:
        violations.append(f"{UMBRELLA}: missing (the core umbrella header)")
    return files, violations, notes


def check_top_level(root):
    """Top-level entries of the tracked tree outside TOP_LEVEL (nothing when ROOT is no git checkout)."""
    if not os.path.exists(os.path.join(root, ".git")):
        return []
    out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if out.returncode != 0:
        return [f"git ls-files failed in {root}: {out.stderr.strip()}"]
    tops = {p.split("/")[0] for p in out.stdout.split("\n") if p}
    return [f"{t}: top-level entry outside the layout (allowed: {', '.join(sorted(TOP_LEVEL))})"
            for t in sorted(tops) if t not in TOP_LEVEL and not t.startswith(".")]


def main_check(root):
    files, violations, notes = check(root)
    violations += check_top_level(root)
    print(f"layering: {len(files)} files scanned under {', '.join(SCANNED)}")
    for n in notes:
        print(f"note: {n}")
    if violations:
        print(f"\n{len(violations)} layering violation(s) (rules: tests/layering/check_layering.py, "
              f"docs/architecture.md):")
        for v in violations:
            print(f"  {v}")
        return 1
    print("layering: ok")
    return 0


# ---- self-test: every rule must be able to fail ------------------------------------------------------
PLANTS = [
    # (file to append to or create, text, substring the report must contain)
    ("quant/rs_plant_1.c", '#include "replayssm/engine/rs_head.h"\n', "quant may not include engine"),
    ("lib/engine/rs_plant_2.c", '#include "replayssm/eval/rs_kleval.h"\n', "engine may not include kleval"),
    ("lib/engine/rs_plant_2b.c", '#include "replayssm/theory/rs_theory.h"\n', "engine may not include theory"),
    ("eval/kleval/rs_plant_3.c", '#include "replayssm/theory/rs_theory.h"\n', "kleval may not include theory"),
    ("eval/model/rs_plant_4.c", '#include "replayssm/cuda/rs_cuda.h"\n', "model may not include kernels"),
    ("kernels/rs_plant_5.cu", '#include "replayssm/eval/rs_kl.h"\n', "kernels may not include log"),
    ("kernels/rs_plant_6.cu", '#include "cli/rs_plant_cli.h"\n', "kernels may not include cli"),
    ("eval/cli/rs_plant_cli.h", "/* planted */\n", None),
    ("eval/input/rs_plant_7.c", '#include "replayssm/eval/rs_tokenizer.h"\n', "input may not include tokenizer"),
    ("eval/tokenizer/rs_plant_7b.c", '#include "model/rs_runner.h"\n', "tokenizer may not include model"),
    ("eval/log/rs_plant_7c.c", '#include "replayssm/eval/rs_kleval.h"\n', "log may not include kleval"),
    ("eval/kleval/rs_plant_7d.c", '#include "replayssm/eval/rs_scorer_cuda.h"\n', "kleval may not include gpu"),
    ("lib/theory/rs_plant_8.c", '#include "rs_no_such_header.h"\n', "unresolvable"),
    ("include/replayssm/quant/rs_plant_9.h", "#include <hdf5.h>\n", "private dependency's header"),
    ("include/replayssm/engine/rs_plant_10.h", '#include "engine/rs_dot.h"\n', "public headers only"),
    ("eval/cli/rs_plant_11.c", '#include "engine/rs_dot.h"\n', "cli may include private headers of other rooms only"),
    ("tests/examples/rs_plant_12.c", '#include "rs_check.h"\n', "examples may include public headers only"),
    ("include/replayssm/nomodule/rs_plant_13.h", "/* planted */\n", "not in any room"),
    ("include/replayssm/eval/rs_plant_13b.h", "/* planted: no EVAL_PUBLIC entry */\n", "not in any room"),
    ("include/replayssm/quant/rs_plant_14.h", "/* a new core header the umbrella lacks */\n",
     "does not include the core public header include/replayssm/quant/rs_plant_14.h"),
]
# must NOT be reported: commented-out includes, and what the rules allow
CLEAN_PLANTS = [
    ("quant/rs_plant_ok_1.c", '/* #include "replayssm/eval/rs_kl.h" */\n// #include "rs_nothing.h"\n'),
    ("eval/model/rs_plant_ok_2.c", '#include "engine/rs_dot.h"\n#include "replayssm/engine/rs_head.h"\n'),
    ("kernels/rs_plant_ok_3.cu", '#include "replayssm/theory/rs_theory.h"\n#include "rs_check.h"\n'),
    ("eval/cli/rs_plant_ok_4.c", '#include "rs_check.h"\n#include "replayssm/eval/rs_kl.h"\n'),
    ("eval/gpu/rs_plant_ok_5.cu", '#include "replayssm/cuda/rs_cuda.h"\n#include "kleval/rs_scorer_impl.h"\n'),
]


def self_test():
    src = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="rs-layering-") as tmp:
        for top in ["quant", "lib", "kernels", "eval", "include", "tests/examples"]:
            if os.path.isdir(os.path.join(src, top)):
                shutil.copytree(os.path.join(src, top), os.path.join(tmp, top),
                                ignore=shutil.ignore_patterns("*.o", "*.a", "*.so*"))
        _, base_violations, _ = check(tmp)
        for rel, text, _ in PLANTS + [(r, t, None) for r, t in CLEAN_PLANTS]:
            p = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "a", encoding="utf-8") as fh:
                fh.write(text)
        _, violations, _ = check(tmp)
        new = [v for v in violations if v not in base_violations]
        for rel, _, expect in PLANTS:
            if expect is None:
                continue
            hit = [v for v in new if rel in v and expect in v]
            print(f"{'caught' if hit else 'MISSED'}: {rel}: {expect}")
            failures += not hit
        for rel, _ in CLEAN_PLANTS:
            wrong = [v for v in new if v.startswith(rel)]
            for v in wrong:
                print(f"FALSE ALARM: {v}")
            failures += len(wrong)
        # the command line reports planted violations with exit status 1
        rc = subprocess.run([sys.executable, os.path.abspath(__file__), tmp], stdout=subprocess.DEVNULL).returncode
        print(f"exit status on the planted tree: {rc} (expected 1)")
        failures += rc != 1
    print("self-test:", "ok" if failures == 0 else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        sys.exit(2)
    sys.exit(main_check(sys.argv[1]))
