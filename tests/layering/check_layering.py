#!/usr/bin/env python3
"""check_layering.py — the module whiteboard of docs/architecture.md, enforced on every include.

Usage: check_layering.py ROOT          check the tree at ROOT (exit 1 listing every violation)
       check_layering.py --self-test   plant one violation of each kind in a copy of this tree
                                       (from the script's location) and require each to be caught

Every `#include "..."` of every .c/.h/.cu/.cuh under common/ quant/ engine/ theory/ eval/
kernels/ cli/ include/replayssm/ examples/ is resolved the way the build resolves it:
  1. the includer's own directory            (the compiler's first stop for "...")
  2. include/                                (RS_PUBLIC_INCLUDE, on every target's path)
  3. common/, engine/                        (RS_PRIVATE_INCLUDE, on every library target's path)
  4. the includer's module root              (e.g. kernels/ for kernels/tests/*.cu)
  5. any other module root                   (a target may add one, as kernels' bench driver
                                              adds cli/; the rules below then judge it)
An include that resolves nowhere, or only ambiguously in step 5, is a violation.

The target file's module is its top directory (include/replayssm/<m>/ is module m's public set;
include/replayssm/cuda/ belongs to kernels). Rules — a file of module M may include:
  common   common
  quant    common, quant
  engine   common, quant, engine
  theory   common, quant, engine, theory         (not eval, kernels, cli)
  eval     common, quant, engine, eval           (not theory, kernels, cli)
  kernels  common, quant, engine, theory, kernels (not eval, cli)
  evalcuda common, quant, engine, eval, kernels, evalcuda (eval/cuda/: the GPU evaluator)
  cli      every module
and moreover:
  - a public header (include/replayssm/**) obeys its module's rule and includes public
    headers only; include/replayssm/replayssm.h (the core umbrella) includes public headers of
    common, quant and engine only, and all of them but the building blocks in UMBRELLA_EXEMPT;
  - library modules may include private headers of modules they may include (they are built
    together: eval/model/rs_backend_cpu.c uses engine/rs_dot.h); these are listed as notes;
  - cli may include its own private headers and, of other modules, common/rs_check.h only:
    it is a client of the libraries' public API;
  - examples/ include public headers only (they build against an installed prefix);
  - no public header includes a header of a private dependency: <hdf5.h>, <H5*.h>, <cblas.h>,
    <gsl/...>, <cjson/...>, <omp.h>, <zlib.h> (the libraries must stay usable without them).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCANNED = ["common", "quant", "engine", "theory", "eval", "kernels", "cli", "include/replayssm", "examples"]
MODULE_ROOTS = ["common", "quant", "engine", "theory", "eval", "kernels", "cli"]
# sub-modules: a folder inside a module root that is a module of its own (checked first)
SUB_MODULES = {"eval/cuda": "evalcuda"}
PRIVATE_PATH = ["common", "engine"]  # RS_PRIVATE_INCLUDE in CMakeLists.txt
EXTENSIONS = (".c", ".h", ".cu", ".cuh")
PUBLIC_DIRS = {"common": "common", "quant": "quant", "engine": "engine", "theory": "theory",
               "eval": "eval", "cuda": "kernels", "evalcuda": "evalcuda"}
ALLOWED = {
    "common": {"common"},
    "quant": {"common", "quant"},
    "engine": {"common", "quant", "engine"},
    "theory": {"common", "quant", "engine", "theory"},
    "eval": {"common", "quant", "engine", "eval"},
    "kernels": {"common", "quant", "engine", "theory", "kernels"},
    "evalcuda": {"common", "quant", "engine", "eval", "kernels", "evalcuda"},
    "cli": set(MODULE_ROOTS) | {"evalcuda"},
}
UMBRELLA = "include/replayssm/replayssm.h"
UMBRELLA_MODULES = {"common", "quant", "engine"}
# Core public headers the umbrella leaves out on purpose: building blocks shared by the C and
# CUDA sources, not API (their public wrappers are rs_minifloat.h, rs_philox.h, rs_qtensor.h).
# Any other core public header must be in the umbrella.
UMBRELLA_EXEMPT = {
    "include/replayssm/common/rs_hostdev.h",  # RS_HD / RS_HD_INLINE macros for C + nvcc code
    "include/replayssm/quant/rs_codec.h",     # header-only integer codec + Philox core
}
CLI_PRIVATE_OK = {"common/rs_check.h"}
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
    """(module, kind) of a repository-relative path; kind is public, umbrella, private or example."""
    parts = rel.split("/")
    if rel == UMBRELLA:
        return "core", "umbrella"
    if parts[0] == "include":
        if len(parts) >= 4 and parts[1] == "replayssm" and parts[2] in PUBLIC_DIRS:
            return PUBLIC_DIRS[parts[2]], "public"
        return None, "public"
    if parts[0] == "examples":
        return "examples", "example"
    for prefix, mod in SUB_MODULES.items():
        if rel.startswith(prefix + "/"):
            return mod, "private"
    if parts[0] in MODULE_ROOTS:
        return parts[0], "private"
    return None, "private"


def resolve(root, includer, name):
    """Repository-relative path of the file `#include "name"` in `includer` reaches, and how;
    or (None, reason)."""
    def rel_if_file(d):
        p = os.path.normpath(os.path.join(root, d, name))
        if os.path.isfile(p):
            return os.path.relpath(p, root).replace(os.sep, "/")
        return None

    here = os.path.dirname(includer)
    own_root = includer.split("/")[0]
    for d in [here, "include"] + PRIVATE_PATH + ([own_root] if own_root in MODULE_ROOTS else []):
        r = rel_if_file(d)
        if r:
            return r, d
    hits = [r for r in (rel_if_file(d) for d in MODULE_ROOTS) if r]
    if len(hits) == 1:
        return hits[0], "other module root"
    if len(hits) > 1:
        return None, "ambiguous: found in " + ", ".join(hits) + " (none on the standard include path)"
    return None, "not found in the includer's directory, include/, common/, engine/ or any module root"


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
            violations.append(f"{rel}: not in any module (public headers go in include/replayssm/<module>/, "
                              f"modules: {', '.join(sorted(PUBLIC_DIRS))})")
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
                violations.append(f"{where}: resolves to {target}, which is in no module")
                continue
            if tkind == "example":
                violations.append(f"{where}: resolves to {target}: nothing may include examples/")
                continue
            tpublic = tkind in ("public", "umbrella")
            arrow = f"{where} -> {target}"
            if kind == "umbrella":
                umbrella_includes.add(target)
                if not tpublic or tmod not in UMBRELLA_MODULES:
                    violations.append(f"{arrow}: the core umbrella may include public headers of "
                                      f"common, quant and engine only")
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
                        violations.append(f"{arrow}: cli may include private headers of other modules "
                                          f"only for {', '.join(sorted(CLI_PRIVATE_OK))}")
                    continue
                if target != "common/rs_check.h":
                    notes.append(f"{arrow}: {mod} uses a private header of {tmod} (allowed: {mod} builds on {tmod})")
            if how == "other module root":
                notes.append(f"{arrow}: found only through a module root its target adds to the include path")
    expected = {f for f in files if classify(f)[1] == "public" and classify(f)[0] in UMBRELLA_MODULES
                and f not in UMBRELLA_EXEMPT}
    if os.path.isfile(os.path.join(root, UMBRELLA)):
        for missing in sorted(expected - umbrella_includes):
            violations.append(f"{UMBRELLA}: does not include the core public header {missing}")
    else:
        violations.append(f"{UMBRELLA}: missing (the core umbrella header)")
    return files, violations, notes


def main_check(root):
    files, violations, notes = check(root)
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
    ("engine/rs_plant_2.c", '#include "replayssm/eval/rs_kl.h"\n', "engine may not include eval"),
    ("eval/rs_plant_3.c", '#include "replayssm/theory/rs_theory.h"\n', "eval may not include theory"),
    ("eval/model/rs_plant_4.c", '#include "replayssm/cuda/rs_cuda.h"\n', "eval may not include kernels"),
    ("kernels/rs_plant_5.cu", '#include "replayssm/eval/rs_kl.h"\n', "kernels may not include eval"),
    ("kernels/rs_plant_6.cu", '#include "rs_plant_cli.h"\n', "kernels may not include cli"),
    ("cli/rs_plant_cli.h", "/* planted */\n", None),
    ("common/rs_plant_7.c", '#include "replayssm/quant/rs_format.h"\n', "common may not include quant"),
    ("theory/rs_plant_8.c", '#include "rs_no_such_header.h"\n', "unresolvable"),
    ("include/replayssm/quant/rs_plant_9.h", "#include <hdf5.h>\n", "private dependency's header"),
    ("include/replayssm/engine/rs_plant_10.h", '#include "rs_dot.h"\n', "public headers only"),
    ("cli/rs_plant_11.c", '#include "rs_dot.h"\n', "cli may include private headers of other modules only"),
    ("examples/rs_plant_12.c", '#include "rs_check.h"\n', "examples may include public headers only"),
    ("include/replayssm/nomodule/rs_plant_13.h", "/* planted */\n", "not in any module"),
    ("include/replayssm/quant/rs_plant_14.h", "/* a new core header the umbrella lacks */\n",
     "does not include the core public header include/replayssm/quant/rs_plant_14.h"),
]
# must NOT be reported: commented-out includes, and what the rules allow
CLEAN_PLANTS = [
    ("quant/rs_plant_ok_1.c", '/* #include "replayssm/eval/rs_kl.h" */\n// #include "rs_nothing.h"\n'),
    ("eval/rs_plant_ok_2.c", '#include "rs_dot.h"\n#include "replayssm/engine/rs_head.h"\n'),
    ("kernels/rs_plant_ok_3.cu", '#include "replayssm/theory/rs_theory.h"\n#include "rs_check.h"\n'),
    ("cli/rs_plant_ok_4.c", '#include "rs_check.h"\n#include "replayssm/eval/rs_kl.h"\n'),
]


def self_test():
    src = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="rs-layering-") as tmp:
        for top in MODULE_ROOTS + ["include", "examples"]:
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
