/* rs_philox.h — the counter-based random generator behind every stochastic rounding.
 *
 * Philox4x32-10 (Salmon et al., SC'11; Random123). The random word used for element i of a
 * tensor is a pure function of (seed, stream, i):
 *
 *     ctr = { lo32(i >> 2), hi32(i >> 2), lo32(stream), hi32(stream) }
 *     key = { lo32(seed),   hi32(seed) }
 *     word(seed, stream, i) = philox4x32_10(ctr, key)[i & 3]
 *
 * so four consecutive elements share one Philox call, any element can be computed alone
 * (threads, GPU lanes, a resumed run), and the CUDA twin reproduces the CPU bit for bit.
 * Streams name where a rounding happens; rs_stream_id() packs the toolkit's key.
 */
#ifndef RS_PHILOX_H
#define RS_PHILOX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_philox4x32_10() : one Philox4x32 block with 10 rounds (Random123 reference). */
void rs_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/*! rs_rand_u32() : the 32-bit random word of element `i` in `stream` under `seed`. */
uint32_t rs_rand_u32(uint64_t seed, uint64_t stream, uint64_t i);

/*! rs_rand_fill() : out[j] = rs_rand_u32(seed, stream, i0 + j) for j < n (fast path). */
void rs_rand_fill(uint64_t seed, uint64_t stream, uint64_t i0, size_t n, uint32_t *out);

/* Stream key layout (64 bits): slot 4 | layer 10 | head 12 | step 38.
 * slot separates independent rounding sites at the same (layer, head, step), e.g. the HP
 * and LP checkpoints of a split policy. Fields are masked to their widths. */
#define RS_STREAM_SLOT_BITS 4
#define RS_STREAM_LAYER_BITS 10
#define RS_STREAM_HEAD_BITS 12
#define RS_STREAM_STEP_BITS 38

/*! rs_stream_id() : pack (slot, layer, head, step) into one stream id. */
uint64_t rs_stream_id(uint32_t slot, uint32_t layer, uint32_t head, uint64_t step);

#ifdef __cplusplus
}
#endif
#endif /* RS_PHILOX_H */
