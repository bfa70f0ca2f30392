/* rs_ring.c — ring buffer of ReplaySSM records with pointer commit and canaries. */
#include "rs_ring.h"
#include "rs_check.h"

#include <stdlib.h>
#include <string.h>

/* Freed slots are filled with this quiet-NaN pattern (payload 0xDEAD). */
static const uint32_t RS_RING_POISON = 0x7FC0DEADu;

static void poison_(float *x, size_t n)
{
    float p;
    memcpy(&p, &RS_RING_POISON, sizeof p);
    for (size_t i = 0; i < n; i++) x[i] = p;
}

static void free_slot_(rs_ring *r, size_t slot)
{
    r->seq[slot] = RS_RING_FREE;
    r->sum[slot] = 0;
    poison_(&r->alpha[slot], 1);
    poison_(&r->beta[slot], 1);
    poison_(r->v + slot * r->d_v, r->d_v);
    poison_(r->k + slot * r->d_k, r->d_k);
    if (r->has_u) poison_(r->u + slot * r->d_v, r->d_v);
}

rs_status rs_ring_init(rs_ring *ring, size_t cap, size_t d_v, size_t d_k, int has_u)
{
    RS_CHECK(ring != NULL, RS_E_INVAL, "rs_ring_init: NULL ring");
    memset(ring, 0, sizeof *ring);
    RS_CHECK(cap > 0 && d_v > 0 && d_k > 0, RS_E_INVAL,
             "rs_ring_init: capacity %zu, d_v %zu, d_k %zu must be positive", cap, d_v, d_k);
    ring->cap = cap;
    ring->d_v = d_v;
    ring->d_k = d_k;
    ring->has_u = has_u ? 1 : 0;
    ring->alpha = malloc(cap * sizeof(float));
    ring->beta = malloc(cap * sizeof(float));
    ring->v = malloc(cap * d_v * sizeof(float));
    ring->k = malloc(cap * d_k * sizeof(float));
    ring->u = has_u ? malloc(cap * d_v * sizeof(float)) : NULL;
    ring->seq = malloc(cap * sizeof(uint64_t));
    ring->sum = malloc(cap * sizeof(uint64_t));
    if (!ring->alpha || !ring->beta || !ring->v || !ring->k || (has_u && !ring->u) ||
        !ring->seq || !ring->sum) {
        rs_ring_free(ring);
        return rs_error_set(RS_E_NOMEM, "rs_ring_init: out of memory for %zu records", cap);
    }
    for (size_t s = 0; s < cap; s++) free_slot_(ring, s);
    return RS_OK;
}

void rs_ring_free(rs_ring *ring)
{
    if (!ring) return;
    free(ring->alpha);
    free(ring->beta);
    free(ring->v);
    free(ring->k);
    free(ring->u);
    free(ring->seq);
    free(ring->sum);
    memset(ring, 0, sizeof *ring);
}

rs_status rs_ring_put(rs_ring *ring, size_t i, uint64_t seq, float alpha, float beta,
                      const float *v, const float *k)
{
    RS_CHECK(i >= ring->h, RS_E_STATE,
             "ring: write of token %llu at record %zu would overwrite a committed record (h = %zu)",
             (unsigned long long)seq, i, ring->h);
    RS_CHECK(i < ring->cap, RS_E_STATE, "ring: record %zu beyond capacity %zu (token %llu)", i,
             ring->cap, (unsigned long long)seq);
    const size_t s = rs_ring_slot(ring, i);
    RS_CHECK(ring->seq[s] == RS_RING_FREE, RS_E_STATE,
             "ring canary: slot %zu still holds live token %llu, refusing to write token %llu",
             s, (unsigned long long)ring->seq[s], (unsigned long long)seq);
    ring->seq[s] = seq;
    ring->sum[s] = 0;
    ring->alpha[s] = alpha;
    ring->beta[s] = beta;
    memcpy(ring->v + s * ring->d_v, v, ring->d_v * sizeof(float));
    memcpy(ring->k + s * ring->d_k, k, ring->d_k * sizeof(float));
    return RS_OK;
}

/* FNV-1a over the bytes of the record (never 0, so 0 means "not sealed"). */
static uint64_t checksum_(const rs_ring *r, size_t s)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p;
#define RS_FNV_(ptr, bytes)                                                                \
    do {                                                                                   \
        p = (const unsigned char *)(ptr);                                                  \
        for (size_t b_ = 0; b_ < (bytes); b_++) h = (h ^ p[b_]) * 1099511628211ull;        \
    } while (0)
    RS_FNV_(&r->seq[s], sizeof(uint64_t));
    RS_FNV_(&r->alpha[s], sizeof(float));
    RS_FNV_(&r->beta[s], sizeof(float));
    RS_FNV_(r->v + s * r->d_v, r->d_v * sizeof(float));
    RS_FNV_(r->k + s * r->d_k, r->d_k * sizeof(float));
    if (r->has_u) RS_FNV_(r->u + s * r->d_v, r->d_v * sizeof(float));
#undef RS_FNV_
    return h ? h : 1;
}

void rs_ring_seal(rs_ring *ring, size_t i)
{
    const size_t s = rs_ring_slot(ring, i);
    ring->sum[s] = checksum_(ring, s);
}

void rs_ring_set_pending(rs_ring *ring, size_t n) { ring->pending = n; }

rs_status rs_ring_commit(rs_ring *ring, size_t a)
{
    RS_CHECK(a <= ring->pending && (a >= 1 || ring->pending == 0), RS_E_INVAL,
             "ring: commit of %zu records with %zu drafts pending (need 1 <= a <= pending)", a,
             ring->pending);
    for (size_t i = ring->h + a; i < ring->h + ring->pending; i++)
        free_slot_(ring, rs_ring_slot(ring, i));
    ring->h += a;
    ring->pending = 0;
    return RS_OK;
}

void rs_ring_drop(rs_ring *ring, size_t n)
{
    for (size_t i = 0; i < n; i++) free_slot_(ring, rs_ring_slot(ring, i));
    ring->start = rs_ring_slot(ring, n % ring->cap);
    ring->h -= n;
}

void rs_ring_reset(rs_ring *ring)
{
    for (size_t s = 0; s < ring->cap; s++) free_slot_(ring, s);
    ring->start = 0;
    ring->h = 0;
    ring->pending = 0;
}

rs_status rs_ring_check(const rs_ring *ring, uint64_t first_seq)
{
    const size_t live = ring->h + ring->pending;
    RS_CHECK(live <= ring->cap, RS_E_STATE, "ring canary: %zu live records exceed capacity %zu",
             live, ring->cap);
    for (size_t i = 0; i < live; i++) {
        const size_t s = rs_ring_slot(ring, i);
        RS_CHECK(ring->seq[s] == first_seq + i, RS_E_STATE,
                 "ring canary: record %zu (slot %zu) holds token %llu, expected %llu", i, s,
                 (unsigned long long)ring->seq[s], (unsigned long long)(first_seq + i));
        RS_CHECK(ring->sum[s] != 0 && ring->sum[s] == checksum_(ring, s), RS_E_STATE,
                 "ring canary: record %zu (slot %zu, token %llu) was modified after sealing", i, s,
                 (unsigned long long)ring->seq[s]);
    }
    return RS_OK;
}
