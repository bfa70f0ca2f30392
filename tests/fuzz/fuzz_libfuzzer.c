/* fuzz_libfuzzer.c — a libFuzzer program for one target of rs_fuzz.h, chosen at compile time:
 *   -DRS_FUZZ_TARGET=rs_fuzz_safetensors   (CMake -DRS_FUZZ=ON with clang builds fuzz_<target>)
 * Run e.g. `build-fuzz/fuzz_safetensors -max_total_time=300 CORPUS_DIR SEED_DIR`; a crash writes
 * crash-<sha1>: fix the parser, then commit the input under tests/fuzz/corpus/<target>/ so that
 * test_fuzz_regress replays it on every build (docs/fuzzing.md). */
#include "rs_fuzz.h"

#ifndef RS_FUZZ_TARGET
#error "define RS_FUZZ_TARGET, e.g. -DRS_FUZZ_TARGET=rs_fuzz_safetensors"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)RS_FUZZ_TARGET(data, size);
    return 0;
}
