/* rs_philox.c — Philox4x32-10 (Random123 reference algorithm) and the element keying.
 * The block function and the keying are replayssm/quant/rs_codec.h's (nvcc compiles the same
 * source for the CUDA quantizers); this file adds the array API and the vectorised fill. */
#include "replayssm/quant/rs_philox.h"

#include "replayssm/quant/rs_codec.h"

void rs_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    const rs_philox_words w = rs_codec_philox(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1]);
    out[0] = w.x;
    out[1] = w.y;
    out[2] = w.z;
    out[3] = w.w;
}

static inline void block_of(uint64_t seed, uint64_t stream, uint64_t blk, uint32_t out[4])
{
    const rs_philox_words w = rs_codec_rand_block(seed, stream, blk);
    out[0] = w.x;
    out[1] = w.y;
    out[2] = w.z;
    out[3] = w.w;
}

uint32_t rs_rand_u32(uint64_t seed, uint64_t stream, uint64_t i) { return rs_codec_rand_u32(seed, stream, i); }

/* RS_PHILOX_LANES consecutive blocks blk0, blk0 + 1, ... at once, out[4 l + w] = word w of block
 * blk0 + l: per block exactly the operations of rs_codec_philox (integer arithmetic, so the
 * words are identical), laid out lane by lane so that the compiler vectorises the 32 x 32 -> 64
 * multiplies across blocks (SSE2 pmuludq). rs_rand_fill spends most of its time here. CPU-only
 * by design (the GPU computes one block per thread); tests/test_philox.c compares rs_rand_fill
 * with rs_rand_u32 at every alignment, and bench_quant with the scalar block loop. */
#define RS_PHILOX_LANES 8
static void blocks_(uint64_t seed, uint64_t stream, uint64_t blk0, uint32_t *out)
{
    uint32_t c0[RS_PHILOX_LANES], c1[RS_PHILOX_LANES], c2[RS_PHILOX_LANES], c3[RS_PHILOX_LANES];
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int l = 0; l < RS_PHILOX_LANES; ++l) {
        const uint64_t b = blk0 + (uint64_t)l; /* carries into the counter's high word like block_of */
        c0[l] = (uint32_t)b;
        c1[l] = (uint32_t)(b >> 32);
        c2[l] = (uint32_t)stream;
        c3[l] = (uint32_t)(stream >> 32);
    }
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += RS_PHILOX_W0;
            k1 += RS_PHILOX_W1;
        }
        for (int l = 0; l < RS_PHILOX_LANES; ++l) {
            const uint64_t p0 = (uint64_t)RS_PHILOX_M0 * c0[l];
            const uint64_t p1 = (uint64_t)RS_PHILOX_M1 * c2[l];
            const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0;
            const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c0[l] = n0;
            c1[l] = (uint32_t)p1;
            c2[l] = n2;
            c3[l] = (uint32_t)p0;
        }
    }
    for (int l = 0; l < RS_PHILOX_LANES; ++l) {
        out[4 * l + 0] = c0[l];
        out[4 * l + 1] = c1[l];
        out[4 * l + 2] = c2[l];
        out[4 * l + 3] = c3[l];
    }
}

void rs_rand_fill(uint64_t seed, uint64_t stream, uint64_t i0, size_t n, uint32_t *out)
{
    size_t j = 0;
    /* head: up to the first index that starts a block */
    while (j < n && ((i0 + j) & 3) != 0) {
        uint64_t i = i0 + j;
        uint32_t blk[4];
        block_of(seed, stream, i >> 2, blk);
        for (unsigned lane = (unsigned)(i & 3); lane < 4 && j < n; ++lane, ++j) out[j] = blk[lane];
    }
    /* body: whole groups of RS_PHILOX_LANES blocks */
    for (; j + 4 * RS_PHILOX_LANES <= n; j += 4 * RS_PHILOX_LANES) blocks_(seed, stream, (i0 + j) >> 2, out + j);
    /* tail */
    while (j < n) {
        uint64_t i = i0 + j;
        uint32_t blk[4];
        block_of(seed, stream, i >> 2, blk);
        for (unsigned lane = (unsigned)(i & 3); lane < 4 && j < n; ++lane, ++j) out[j] = blk[lane];
    }
}

uint64_t rs_stream_id(uint32_t slot, uint32_t layer, uint32_t head, uint64_t step)
{
    return rs_codec_stream_id(slot, layer, head, step);
}
