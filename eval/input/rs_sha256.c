/* rs_sha256.c — SHA-256 (FIPS 180-4): the digests of model, tokenizer and input files (provenance). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "replayssm/eval/rs_sha256.h"

static const uint32_t K_[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror_(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void block_(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = ((uint32_t)p[4 * i] << 24) | ((uint32_t)p[4 * i + 1] << 16) | ((uint32_t)p[4 * i + 2] << 8) | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        const uint32_t s0 = ror_(w[i - 15], 7) ^ ror_(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = ror_(w[i - 2], 17) ^ ror_(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        const uint32_t t1 = k + (ror_(e, 6) ^ ror_(e, 11) ^ ror_(e, 25)) + ((e & f) ^ (~e & g)) + K_[i] + w[i];
        const uint32_t t2 = (ror_(a, 2) ^ ror_(a, 13) ^ ror_(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void rs_sha256_init(rs_sha256_ctx *c)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof c->h);
    c->n = 0;
    memset(c->buf, 0, sizeof c->buf);
}

void rs_sha256_update(rs_sha256_ctx *c, const void *data, size_t n)
{
    if (n == 0) return; /* data may be NULL then (no memcpy from NULL) */
    const uint8_t *p = (const uint8_t *)data;
    size_t have = (size_t)(c->n % 64);
    c->n += n;
    if (have) { /* fill the pending block first */
        const size_t k = n < 64 - have ? n : 64 - have;
        memcpy(c->buf + have, p, k);
        p += k;
        n -= k;
        have += k;
        if (have < 64) return;
        block_(c->h, c->buf);
    }
    for (; n >= 64; p += 64, n -= 64) block_(c->h, p);
    if (n) memcpy(c->buf, p, n);
}

void rs_sha256_final(rs_sha256_ctx *c, char hex[65])
{
    const size_t r = (size_t)(c->n % 64);
    uint8_t last[128];
    memset(last, 0, sizeof last);
    if (r) memcpy(last, c->buf, r);
    last[r] = 0x80;
    const size_t tot = r + 9 <= 64 ? 64 : 128;
    const uint64_t bits = c->n * 8;
    for (int k = 0; k < 8; k++) last[tot - 1 - k] = (uint8_t)(bits >> (8 * k));
    block_(c->h, last);
    if (tot == 128) block_(c->h, last + 64);
    for (int k = 0; k < 8; k++) snprintf(hex + 8 * k, 9, "%08x", c->h[k]);
    hex[64] = '\0';
}

void rs_sha256(const void *data, size_t n, char hex[65])
{
    rs_sha256_ctx c;
    rs_sha256_init(&c);
    rs_sha256_update(&c, data, n);
    rs_sha256_final(&c, hex);
}
