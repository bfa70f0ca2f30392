#!/usr/bin/env bash
# make_campaign_pack.sh — a self-contained libFuzzer campaign for a bigger machine without clang
# (docs/fuzzing.md, "Campaigns on a bigger machine"):
#   tests/fuzz/make_campaign_pack.sh [PACKDIR (build-pack-fuzz)] [TARGET ...]
# builds the targets with tests/fuzz/libfuzzer.sh (clang, libFuzzer + ASan + UBSan) in PACKDIR-work
# (PACK_WORK=DIR picks another) and writes
# PACKDIR/fuzz.tar.xz holding
#   campaign.sh            the driver (tests/fuzz/campaign.sh)
#   needs.txt              per target: executions still needed, measured executions/s per core
#   bin/fuzz_<target>      the programs
#   lib/                   every shared library they load except glibc's own, libstdc++, libgcc
#                          and zlib (libhdf5 and what it pulls in: libcurl, libsz/libaec, ...)
#   seeds/<target>/        libfuzzer.sh's seeds;  corpus/<target>/  the committed corpus
#   fixtures/              the fixture tokenizers tok_encode opens (RS_FUZZ_FIXTURES)
# On the machine:  tar -xJf fuzz.tar.xz -C DIR && bash DIR/campaign.sh SECONDS OUTDIR
set -euo pipefail
cd "$(dirname "$0")/../.."
PACK=${1:-build-pack-fuzz}
shift $(( $# > 0 ? 1 : 0 ))
TARGETS=${*:-h5log} # default: the HDF5 log target; name others (docs/fuzzing.md "Targets") to pack them
WORK=${PACK_WORK:-$PACK-work}   # the builds and the staging folder (PACKDIR holds only the archive)
BUILD=$WORK/build
bash tests/fuzz/libfuzzer.sh 0 "$BUILD" $TARGETS
STAGE=$WORK/stage
mkdir -p "$PACK"
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/seeds" "$STAGE/corpus" \
         "$STAGE/fixtures/tests/fixtures/tokenizers" "$STAGE/fixtures/data/tokenizers/qwen3.5"
for t in $TARGETS; do
  cp "$BUILD/fuzz_$t" "$STAGE/bin/"
  cp -r "$BUILD/seeds/$t" "$STAGE/seeds/$t"
  mkdir -p "$STAGE/corpus/$t"
  if [ -d "tests/fuzz/corpus/$t" ]; then cp -r "tests/fuzz/corpus/$t/." "$STAGE/corpus/$t/"; fi
done
# libraries: what ldd resolves, less the C runtime every Linux has in a compatible version
# (glibc's libraries must come from the machine: they are one package with its libc.so.6)
for t in $TARGETS; do ldd "$STAGE/bin/fuzz_$t"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  while read -r so; do
    case "$(basename "$so")" in
      libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|\
      ld-linux*|libstdc++.so.*|libgcc_s.so.*|libz.so.*) ;;
      *) cp -L "$so" "$STAGE/lib/" ;;
    esac
  done
cp -r tests/fixtures/tokenizers/books-llama3 tests/fixtures/tokenizers/books-fallback "$STAGE/fixtures/tests/fixtures/tokenizers/"
cp data/tokenizers/qwen3.5/qwen3_6.tiktoken.gz "$STAGE/fixtures/data/tokenizers/qwen3.5/"
cp tests/fuzz/campaign.sh tests/fuzz/campaign_needs.txt "$STAGE/"
mv "$STAGE/campaign_needs.txt" "$STAGE/needs.txt"
# the pack must not need the build machine's libraries: every carried one resolves inside it
for t in $TARGETS; do
  if LD_LIBRARY_PATH="$STAGE/lib" ldd "$STAGE/bin/fuzz_$t" | grep -q "not found"; then
    echo "make_campaign_pack.sh: fuzz_$t has an unresolved library" >&2; exit 1
  fi
done
tar -cJf "$PACK/fuzz.tar.xz" -C "$STAGE" .
ls -l "$PACK/fuzz.tar.xz"
