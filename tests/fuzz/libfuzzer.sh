#!/usr/bin/env bash
# libfuzzer.sh — coverage-guided fuzzing of replayssm's input parsers with clang's libFuzzer
# (+ AddressSanitizer and UndefinedBehaviorSanitizer): builds one program per target of
# tests/fuzz/rs_fuzz.h and runs each for SECONDS.
#   tests/fuzz/libfuzzer.sh [SECONDS (60)] [OUTDIR (build-fuzz)] [TARGET ...]
# SECONDS 0 builds the programs and seeds without running them.
# Needs clang with libFuzzer (Debian: clang). Seeds come from tests/fixtures; the growing corpus
# stays in OUTDIR/corpus/<target>; committed regression inputs in tests/fuzz/corpus/<target> are
# read too. A crash leaves OUTDIR/crash-* and a non-zero exit: fix the parser, then commit the
# input as tests/fuzz/corpus/<target>/<name> (test_fuzz_regress replays it on every build).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-60}
OUT=${2:-build-fuzz}
ROOT=$PWD
shift $(( $# > 2 ? 2 : $# ))
TARGETS=${*:-safetensors st_index hf_config pg19_meta pg19_book policy h5log npy h5raw h5floats quant_config qmodel tok_json tok_tiktoken tok_encode}
command -v clang >/dev/null || { echo "libfuzzer.sh: clang not found (apt-get install clang)" >&2; exit 2; }
mkdir -p "$OUT"
# only the parsers and what they call (no OpenBLAS/OpenMP: a clang build of those is not needed);
# the log reader (h5log target) links the system libhdf5, uninstrumented (only our code is)
SRC="eval/model/rs_safetensors.c eval/model/rs_hf_config.c eval/model/rs_quant_config.c eval/model/rs_model_load.c eval/model/rs_model_names.c
     quant/rs_wdecode.c
     eval/input/rs_pg19.c eval/input/rs_input.c eval/input/rs_npy.c eval/input/rs_text.c
     eval/tokenizer/rs_tokenizer.c eval/tokenizer/rs_tok_bpe.c eval/tokenizer/rs_tok_encode.c eval/tokenizer/rs_tok_json.c
     eval/tokenizer/rs_tok_tiktoken.c eval/tokenizer/rs_tok_regex.c eval/tokenizer/rs_tok_nfc.c
     quant/rs_status.c quant/rs_format.c quant/rs_minifloat.c lib/engine/rs_policy.c
     eval/log/rs_h5attr.c eval/log/rs_h5attr_ds.c eval/log/rs_h5check.c eval/log/rs_h5place.c eval/log/rs_h5vfd.c
     eval/log/rs_h5log_create.c eval/log/rs_h5log_skeleton.c eval/log/rs_h5log_open.c eval/log/rs_h5log_write.c
     eval/log/rs_h5log_read.c eval/log/rs_h5dims.c eval/log/rs_h5log_prov.c eval/log/rs_h5log_xr.c eval/log/rs_h5io.c
     eval/log/rs_kl.c
     tests/fuzz/rs_fuzz_tokenizer.c tests/fuzz/rs_fuzz_npy.c tests/fuzz/rs_fuzz_h5floats.c tests/fuzz/rs_fuzz_quant.c
     tests/fuzz/rs_fuzz_targets.c tests/fuzz/fuzz_libfuzzer.c"
CF="-std=c11 -O1 -g -D_POSIX_C_SOURCE=200809L -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -Iinclude -Iquant -Ilib -Ieval -Itests/fuzz $(pkg-config --cflags hdf5)
    -DRS_HAVE_PCRE2 -DPCRE2_CODE_UNIT_WIDTH=8 -DRS_FIXTURE_DIR=\"$ROOT/tests/fixtures\""
seed() { mkdir -p "$OUT/seeds/$1"; cp "${@:2}" "$OUT/seeds/$1/"; }
python3 - "$OUT/seeds/safetensors" <<'PY'
import json, os, struct, sys
os.makedirs(sys.argv[1], exist_ok=True)
h = json.dumps({"__metadata__": {"format": "pt"},
                "a.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]},
                "c": {"dtype": "F16", "shape": [], "data_offsets": [32, 34]}}).encode()
h += b" " * (-len(h) % 8)
open(os.path.join(sys.argv[1], "small.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + bytes(range(63, 97)))
PY
mkdir -p "$OUT/seeds/st_index"   # the two shards are written by the target (rs_fuzz_targets.c)
printf '%s' '{"metadata":{"total_size":34},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}}' \
  > "$OUT/seeds/st_index/index.json"
seed hf_config tests/fixtures/models/gdn-tiny-random/config.json
cp tests/fixtures/models/mamba2-tiny-random/config.json "$OUT/seeds/hf_config/mamba2.json"
cp tests/fixtures/models/gdn-moe-tiny-random/config.json "$OUT/seeds/hf_config/gdn-moe.json"
cp tests/fixtures/models/mamba2-moe-tiny-random/config.json "$OUT/seeds/hf_config/mamba2-moe.json"
mkdir -p "$OUT/seeds/quant_config" "$OUT/seeds/qmodel"   # first byte: 0 hf_quant_config.json, 1 config.json
{ printf '\x00'; cat tests/fixtures/models/mamba2-moe-quant/hf_quant_config.json; } > "$OUT/seeds/quant_config/mixed"
{ printf '\x00'; cat tests/fixtures/models/qmodel-tiny/hf_quant_config.json; } > "$OUT/seeds/quant_config/tiny"
printf '\x01%s' '{"model_type":"nemotron_h","quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4","group_size":16,"ignore":["lm_head","*.gate"]}}' \
  > "$OUT/seeds/quant_config/config-json"
seed qmodel tests/fixtures/models/qmodel-tiny/model.safetensors
seed pg19_meta tests/fixtures/pg19-mini/metadata.csv
seed pg19_book tests/fixtures/pg19-mini/test/1023.txt.gz
mkdir -p "$OUT/seeds/policy"
for p in split:nvfp4-rtn/fp32 shared:fp8-sr+pow2 conv:bf16-rtn split-naive:nvfp4-sr8+floor/fp16-sr fp16-sr; do
  printf '%s' "$p" > "$OUT/seeds/policy/$(echo "$p" | tr ':/+' '___')"
done
mkdir -p "$OUT/seeds/h5log"   # edit programs over a valid log the target makes (rs_fuzz_targets.c)
: > "$OUT/seeds/h5log/empty"
printf '\x00\x02\x18\x00\x00\x00\x00\x00\x00\x00' > "$OUT/seeds/h5log/tokens24"
printf '\x07\x03\x64\x00\x00\x00\x00\x00\x00\x00' > "$OUT/seeds/h5log/grow-nll"
mkdir -p "$OUT/seeds/npy"   # valid and invalid .npy files are committed in tests/fuzz/corpus/npy (read below)
# the raw-file HDF5 targets: their seeds are the committed valid-* files (read below as corpus)
mkdir -p "$OUT/seeds/h5raw" "$OUT/seeds/h5floats"
seed tok_json tests/fixtures/tokenizers/fuzz/bytelevel.json tests/fixtures/tokenizers/fuzz/fallback.json
seed tok_tiktoken tests/fixtures/tokenizers/fuzz/small.tiktoken
mkdir -p "$OUT/seeds/tok_encode"   # first byte: tokenizer and modes (rs_fuzz_tokenizer.c)
printf '\x00Hello, world! caf\xc3\xa9\r\n' > "$OUT/seeds/tok_encode/a"
printf '\x01<|endoftext|>na\xefve \xff' > "$OUT/seeds/tok_encode/b"
printf '\x06plain text' > "$OUT/seeds/tok_encode/c"
# SHA-256 (the tokenizer files' digests) with ASan + UBSan but without libFuzzer's coverage
# instrumentation: its rounds are data-independent, and their compare hooks cost ~25% of tok_json's
# time and fill the fuzzer's compare table with hash words (docs/fuzzing.md, "Speed")
mkdir -p "$OUT/obj"
# shellcheck disable=SC2086
clang ${CF/-fsanitize=fuzzer,address,undefined/-fsanitize=address,undefined} -Iinclude -c eval/input/rs_sha256.c -o "$OUT/obj/rs_sha256.o"
rc=0
for t in $TARGETS; do
  # shellcheck disable=SC2086
  clang $CF -DRS_FUZZ_TARGET=rs_fuzz_$t $SRC "$OUT/obj/rs_sha256.o" -lcjson -lz -lm -lpcre2-8 $(pkg-config --libs hdf5) -o "$OUT/fuzz_$t"
  mkdir -p "$OUT/corpus/$t" "tests/fuzz/corpus/$t"
  [ "$SECS" = 0 ] && continue   # SECONDS 0: build only (make_campaign_pack.sh)
  echo "== $t: ${SECS} s"
  # h5raw / h5floats: whole HDF5 files (h5raw's seeds are 28 and 55 KB), and libhdf5 1.10.8's own
  # parser crashes on some hostile metadata or asks for absurd allocations (docs/threat-model.md):
  # fork mode records every crash (crash-*, its stack in fuzz-*.log) and goes on, so a campaign
  # counts them (to be triaged: ours or libhdf5's) instead of stopping at the first
  extra="-max_len=8192"
  [ "$t" = h5raw ] && extra="-max_len=65536 -timeout=20 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
  [ "$t" = qmodel ] && extra="-max_len=16384"   # the seed checkpoint is 11.8 KB
  [ "$t" = h5floats ] && extra="-max_len=8192 -timeout=20 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
  # shellcheck disable=SC2086
  # (a hostile size field makes libhdf5 ask malloc for ~2^62 bytes: NULL, as outside ASan, not a report)
  ( cd "$OUT" && ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1} "./fuzz_$t" -max_total_time="$SECS" $extra -print_final_stats=1 \
      "corpus/$t" "seeds/$t" "$ROOT/tests/fuzz/corpus/$t" 2>&1 | grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|Test unit written|rs_fuzz|INFO: fuzzed|crashes:" ) || rc=1
done
ls "$OUT"/crash-* 2>/dev/null && rc=1
exit $rc
