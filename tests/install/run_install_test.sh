#!/usr/bin/env bash
# run_install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR CC CMAKE LIBDIR VERSION HAVE_CUDA
#
# CTest test `install`: install the build into a temporary prefix and
# use it the way README "Using the library from C" says, then check what was installed.
#   1. README's example code blocks are byte-equal to tests/examples/ (so they cannot drift).
#   2. README's pkg-config commands, run verbatim (HOME points into WORK_DIR, so its prefix
#      $HOME/.local is temporary): install, build the two core examples, run them.
#   3. README's CMake commands, verbatim: tests/examples/cmake with find_package(replayssm), a program
#      on the shared and one on the static eval + theory + core libraries; both run.
#   4. The core example, libreplayssm-core.so and libreplayssm-core.a need none of HDF5, OpenBLAS,
#      cJSON, GSL, OpenMP or zlib (readelf NEEDED, ldd, nm); the same probes do find them in
#      libreplayssm-eval.so, so they are not blind. The core example also links statically
#      against libreplayssm-core.a with -lm alone.
#   5. pkg-config output (exact for core), the layout (headers == include/replayssm, libraries,
#      CLI, .pc, CMake package), every installed header compiles on its own, the version file.
set -euo pipefail
if [ $# -ne 8 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR WORK_DIR CC CMAKE LIBDIR VERSION HAVE_CUDA" >&2
    exit 2
fi
BUILD=$1 SRC=$2 WORK=$3 CC_BIN=$4 CMAKE_BIN=$5 LIBDIR=$6 VERSION=$7 HAVE_CUDA=$8

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

rm -rf "$WORK"
mkdir -p "$WORK/home"
cd "$WORK"
# README's commands run from the repository root; give them one with only what they use.
ln -s "$BUILD" build
mkdir -p tests && ln -s "$SRC/tests/examples" tests/examples
ln -s "$SRC/data" data
export HOME="$WORK/home"
# README says `cc` and `cmake`: make those the configured compiler and this CMake.
cc() { "$CC_BIN" "$@"; }
cmake() { "$CMAKE_BIN" "$@"; }
export -f cc cmake
export CC_BIN CMAKE_BIN
export CC="$CC_BIN"   # the compiler CMake picks for tests/examples/cmake

# readme_block MARKER: the fenced block that follows the line "<!-- MARKER -->" in README.md.
readme_block() {
    awk -v m="<!-- $1 -->" '
        $0 == m { found = 1; next }
        found == 1 && /^```/ { found = 2; next }
        found == 2 && /^```/ { exit }
        found == 2 { print }' "$SRC/README.md"
}

# ---- 1. README code == tests/examples/ ------------------------------------------------------------------
step "README code blocks vs tests/examples/"
for f in tests/examples/quantize_nvfp4.c tests/examples/mamba2_split.c tests/examples/cmake/CMakeLists.txt; do
    readme_block "example: $f" > readme_block.txt
    [ -s readme_block.txt ] || fail "README.md has no code block after '<!-- example: $f -->'"
    diff -u "$SRC/$f" readme_block.txt || fail "README.md's code block differs from $f (diff above)"
done

# ---- 2. README pkg-config commands, verbatim ----------------------------------------------------------
step "README pkg-config commands"
readme_block "commands: pkg-config" > pc_commands.sh
[ -s pc_commands.sh ] || fail "README.md has no block after '<!-- commands: pkg-config -->'"
cat pc_commands.sh
# bash -e: the first failing line fails the test. The block defines P (the prefix) for the rest.
bash -euo pipefail -c "$(cat pc_commands.sh)"$'\n''printf "%s\n%s\n" "$P" "$PKG_CONFIG_PATH" > vars.txt' \
    > pc_commands.log 2>&1 || { cat pc_commands.log; fail "README's pkg-config commands failed"; }
grep -v '^-- \(Installing\|Up-to-date\|Install configuration\)' pc_commands.log || true   # the examples' output
P=$(sed -n 1p vars.txt)
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(sed -n 2p vars.txt)
case "$P" in "$WORK"/*) ;; *) fail "README's prefix P=$P is not under the temporary HOME" ;; esac
[ -x quantize_nvfp4 ] && [ -x mamba2_split ] || fail "README's commands did not build both core examples"
export P

# ---- 3. README CMake commands, verbatim -------------------------------------------------------------
step "README find_package commands"
readme_block "commands: cmake" > cmake_commands.sh
[ -s cmake_commands.sh ] || fail "README.md has no block after '<!-- commands: cmake -->'"
cat cmake_commands.sh
bash -euo pipefail -c "$(cat cmake_commands.sh)" > cmake_commands.log 2>&1 \
    || { cat cmake_commands.log; fail "README's find_package commands failed"; }
grep -v "^--" cmake_commands.log | grep -iv "^\[\|Scanning\|Built target\|Linking\|Building" || true
[ -x build-example/model_window ] && [ -x build-example/model_window_static ] \
    || fail "tests/examples/cmake did not build model_window and model_window_static"
./build-example/model_window_static data/models/gdn-tiny split:nvfp4-rtn/fp32 \
    || fail "model_window_static (static eval + theory + core) failed"
# the shared one uses the installed shared libraries; the static one none of ours
readelf -d build-example/model_window | grep 'NEEDED.*libreplayssm-eval\.so\.0' > /dev/null \
    || fail "model_window does not need libreplayssm-eval.so.0"
if readelf -d build-example/model_window_static | grep 'NEEDED.*libreplayssm'; then
    fail "model_window_static needs a shared replayssm library"
fi
ldd build-example/model_window | grep "libreplayssm-core.so.0 => $P/$LIBDIR/" > /dev/null \
    || { ldd build-example/model_window; fail "model_window does not load the installed libreplayssm-core"; }

# ---- 4. the core needs nothing but libm ---------------------------------------------------------------
step "core dependencies (readelf, ldd, nm)"
CORE_SO="$P/$LIBDIR/libreplayssm-core.so"
CORE_A="$P/$LIBDIR/libreplayssm-core.a"
EVAL_SO="$P/$LIBDIR/libreplayssm-eval.so"
FORBIDDEN_LIBS='hdf5|openblas|blas|lapack|cjson|gsl|gomp|omp|libz\.'
FORBIDDEN_SYMS='^(H5|cblas_|sgemm|cJSON_|gsl_|omp_|GOMP_|gz|inflate|deflate)'
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
undef_dyn() { nm -D --undefined-only "$1" | awk '{print $NF}'; }

echo "readelf -d quantize_nvfp4 (NEEDED):"; needed quantize_nvfp4 | sed 's/^/  /'
echo "ldd quantize_nvfp4:"; ldd quantize_nvfp4 | sed 's/^/ /'
echo "readelf -d libreplayssm-core.so (NEEDED):"; needed "$CORE_SO" | sed 's/^/  /'
for lib in $(needed quantize_nvfp4); do
    case "$lib" in libreplayssm-core.so.0|libm.so.6|libc.so.6) ;;
        *) fail "quantize_nvfp4 needs $lib (allowed: libreplayssm-core.so.0, libm, libc)" ;; esac
done
needed quantize_nvfp4 | grep -x 'libreplayssm-core.so.0' > /dev/null || fail "quantize_nvfp4 is not linked to libreplayssm-core.so"
for lib in $(needed "$CORE_SO"); do   # ld-linux: __tls_get_addr, for the thread-local error message
    case "$lib" in libm.so.6|libc.so.6|ld-linux*) ;;
        *) fail "libreplayssm-core.so needs $lib (allowed: libm, libc, the dynamic loader)" ;; esac
done
for exe in quantize_nvfp4 mamba2_split; do
    ! ldd "$exe" | grep -E "$FORBIDDEN_LIBS" || fail "$exe loads a forbidden library (above)"
    ldd "$exe" | grep "libreplayssm-core.so.0 => $P/$LIBDIR/" > /dev/null || fail "$exe does not load the installed core"
    ! undef_dyn "$exe" | grep -E "$FORBIDDEN_SYMS" || fail "$exe references a forbidden symbol (above)"
done
! undef_dyn "$CORE_SO" | grep -E "$FORBIDDEN_SYMS" || fail "libreplayssm-core.so references a forbidden symbol (above)"
! nm --undefined-only "$CORE_A" | awk 'NF {print $NF}' | grep -E "$FORBIDDEN_SYMS" \
    || fail "libreplayssm-core.a references a forbidden symbol (above)"
# the probes are not blind: they do see the evaluator's dependencies
ldd "$EVAL_SO" | grep -E 'hdf5' > /dev/null || fail "probe check: ldd does not show HDF5 in libreplayssm-eval.so"
undef_dyn "$EVAL_SO" | grep -E '^H5' > /dev/null || fail "probe check: nm does not show H5* in libreplayssm-eval.so"
nm --undefined-only "$P/$LIBDIR/libreplayssm-eval.a" | awk 'NF {print $NF}' | grep -E '^cJSON_' > /dev/null \
    || fail "probe check: nm does not show cJSON_* in libreplayssm-eval.a"
# static: the archive links with libm alone, and the program then needs no replayssm library
"$CC_BIN" -std=c11 tests/examples/quantize_nvfp4.c -I"$P/include" "$CORE_A" -lm -o quantize_static \
    || fail "quantize_nvfp4 does not link against libreplayssm-core.a with -lm alone"
./quantize_static > /dev/null || fail "statically linked quantize_nvfp4 failed"
! needed quantize_static | grep -E 'replayssm|hdf5|blas|cjson|gsl|gomp' || fail "quantize_static needs the above"

# ---- 5. pkg-config, layout, headers, version ------------------------------------------------------------
step "pkg-config"
expect_pc() { # expect_pc "ARGS" "EXPECTED OUTPUT"
    local got
    got=$(pkg-config $1 | xargs)
    echo "pkg-config $1: $got"
    [ "$got" = "$2" ] || fail "pkg-config $1 gave '$got', expected '$2'"
}
expect_pc "--cflags --libs replayssm-core" "-I$P/include -L$P/$LIBDIR -lreplayssm-core"
expect_pc "--static --libs replayssm-core" "-L$P/$LIBDIR -lreplayssm-core -lm"
expect_pc "--libs replayssm-theory" "-L$P/$LIBDIR -lreplayssm-theory -lreplayssm-core"
expect_pc "--libs replayssm-eval" "-L$P/$LIBDIR -lreplayssm-eval -lreplayssm-core"
for pc in replayssm replayssm-core replayssm-theory replayssm-eval; do
    [ "$(pkg-config --modversion $pc)" = "$VERSION" ] || fail "pkg-config --modversion $pc is not $VERSION"
done
all=$(pkg-config --libs replayssm)
for l in -lreplayssm-eval -lreplayssm-theory -lreplayssm-core; do
    case " $all " in *" $l "*) ;; *) fail "pkg-config --libs replayssm lacks $l: $all" ;; esac
done
static_eval=$(pkg-config --static --libs replayssm-eval)
for l in -lhdf5 -lz -lcjson -lopenblas -fopenmp -lreplayssm-core; do
    case " $static_eval " in *" $l "*) ;; *) fail "pkg-config --static --libs replayssm-eval lacks $l: $static_eval" ;; esac
done
static_theory=$(pkg-config --static --libs replayssm-theory)
case " $static_theory " in *" -lgsl "*) ;; *) fail "pkg-config --static --libs replayssm-theory lacks -lgsl" ;; esac
case " $static_theory " in *" -lgslcblas "*) fail "replayssm-theory brings gslcblas: $static_theory" ;; esac

step "layout"
for layer in core theory eval; do
    for f in "libreplayssm-$layer.a" "libreplayssm-$layer.so" "libreplayssm-$layer.so.0"; do
        [ -e "$P/$LIBDIR/$f" ] || fail "missing $LIBDIR/$f"
    done
    [ -f "$P/$LIBDIR/pkgconfig/replayssm-$layer.pc" ] || fail "missing replayssm-$layer.pc"
done
for f in replayssmConfig.cmake replayssmConfigVersion.cmake replayssmTargets.cmake; do
    [ -f "$P/$LIBDIR/cmake/replayssm/$f" ] || fail "missing $LIBDIR/cmake/replayssm/$f"
done
[ -x "$P/bin/replayssm" ] || fail "missing bin/replayssm"
"$P/bin/replayssm" --version | grep -F "$VERSION" > /dev/null || fail "installed replayssm --version does not say $VERSION"
! ldd "$P/bin/replayssm" | grep "not found" || fail "installed replayssm has unresolved libraries"
# headers: exactly include/replayssm (cuda/ only with the CUDA library), nothing private
excl=()
if [ "$HAVE_CUDA" = 1 ]; then
    [ -f "$P/$LIBDIR/libreplayssm_cuda.a" ] || fail "CUDA was built but libreplayssm_cuda.a is not installed"
    pkg-config --exists replayssm-cuda || fail "CUDA was built but replayssm-cuda.pc is not installed"
else
    [ ! -e "$P/include/replayssm/cuda" ] || fail "cuda headers installed without the CUDA library"
    excl=(-x cuda)
fi
if [ "$HAVE_CUDA" = 1 ]; then
    # replayssm::cuda is declared by hand in replayssmConfig.cmake: link a host-only call through
    # it (runs without a GPU: no kernel is launched, no device is touched)
    mkdir -p cuda-example
    cat > cuda-example/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.19)
project(replayssm_cuda_example LANGUAGES C)
find_package(replayssm 0.1 REQUIRED COMPONENTS core cuda)
add_executable(cuda_link main.c)
target_link_libraries(cuda_link PRIVATE replayssm::cuda)
EOF
    cat > cuda-example/main.c <<'EOF'
#include <stdio.h>
#include "replayssm/cuda/rs_cuda.h"
int main(void) {
    const rs_cuda_launch_opts opts = {0, 0, 0, 0, 0};
    size_t b = rs_cuda_dtype_bytes(RS_CUDA_BF16);
    int n = rs_cuda_replay_launches(RS_SSM_MAMBA2, NULL, NULL, NULL, &opts); /* NULL arguments: 0 */
    printf("replayssm::cuda linked: bf16 is %zu bytes\n", b);
    return b == 2 && n == 0 ? 0 : 1;
}
EOF
    "$CMAKE_BIN" -S cuda-example -B cuda-example/build -DCMAKE_PREFIX_PATH="$P" > cuda-example.log 2>&1 \
        && "$CMAKE_BIN" --build cuda-example/build >> cuda-example.log 2>&1 \
        || { cat cuda-example.log; fail "find_package(replayssm COMPONENTS cuda) + replayssm::cuda failed"; }
    ./cuda-example/build/cuda_link || fail "the replayssm::cuda program failed"
fi
# the GPU evaluator's headers declare libreplayssm-evalcuda, an in-tree library that is not
# installed (cmake/rs_install.cmake), so they are not installed either
for h in rs_scorer_cuda.h rs_gpu_info.h; do
    [ ! -e "$P/include/replayssm/eval/$h" ] || fail "eval/$h installed without its library"
    excl+=(-x "$h")
done
diff -r "${excl[@]}" "$SRC/include/replayssm" "$P/include/replayssm" \
    || fail "installed headers differ from include/replayssm (above)"
# every installed header compiles on its own, warning-free, as strict C11
n=0
while IFS= read -r h; do
    rel=${h#"$P/include/"}
    printf '#include "%s"\nint rs_header_check_;\n' "$rel" > header_check.c
    "$CC_BIN" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$P/include" header_check.c \
        || fail "installed header $rel does not compile on its own"
    n=$((n + 1))
done < <(find "$P/include" -name '*.h' | sort)
echo "$n headers compile alone"
for f in quantize_nvfp4.c mamba2_split.c cmake/model_window.c; do
    "$CC_BIN" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$P/include" "tests/examples/$f" \
        || fail "tests/examples/$f has warnings"
done
# the version file (what find_package(replayssm X.Y) consults): 0.x, so the same major.minor only
cat > version_check.cmake <<'EOF'
include("${F}")
if(PACKAGE_VERSION_COMPATIBLE)
  message("1")
else()
  message("0")
endif()
EOF
major=${VERSION%%.*} rest=${VERSION#*.} minor=${rest%%.*}
for want in "$major.$minor:1" "$major.$((minor + 1)):0" "$((major + 1)).$minor:0"; do
    v=${want%:*} ok=${want#*:}
    got=$("$CMAKE_BIN" -DPACKAGE_FIND_VERSION="$v" -DPACKAGE_FIND_VERSION_MAJOR="${v%%.*}" \
          -DPACKAGE_FIND_VERSION_MINOR="${v#*.}" -DF="$P/$LIBDIR/cmake/replayssm/replayssmConfigVersion.cmake" \
          -P version_check.cmake 2>&1)
    [ "$got" = "$ok" ] || fail "version file: find_package(replayssm $v) compatible=$got, expected $ok"
done

echo "install test: all checks passed (prefix $P)"
