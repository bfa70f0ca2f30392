/* rs_ring.h — the ReplaySSM record ring buffer of one head, with pointer commit and canaries.
 * Private to lib/engine/ (not installed): rs_head owns one inside its implementation part.
 *
 * Legend: cap = capacity = L + T (window L, at most T drafts); d_v, d_k as in rs_ssm.h.
 * Logical record i (0-based; the paper's B[i+1]) lives in physical slot (start + i) % cap.
 *   records 0 .. h-1           committed, not yet folded into the checkpoint
 *   records h .. h+pending-1   drafts written by a verification, awaiting commit(a)
 * commit(a): h <- h + a (pointer rollback: the rejected drafts are simply freed).
 * drop(n):   the first n records were folded; start advances by n (rotating origin, as
 *            the kernels' rings do), h <- h - n. Drafts keep their contents.
 *
 * Record fields (structure of arrays, one slot = one row):
 *   alpha[cap], beta[cap] (GDN), v[cap][d_v], k[cap][d_k], u[cap][d_v] (GDN only; for
 *   Mamba-2 rs_ring_u() returns v, since the Mamba-2 record's outer-product vector is v).
 *
 * Canaries (cheap, always on):
 *  - every live slot holds the token sequence number it was written for; rs_ring_put()
 *    refuses (RS_E_STATE) to write a slot that still holds a live record, so a draft can
 *    never silently overwrite a committed-but-unfolded record;
 *  - rs_ring_seal() stores a checksum of the finished record; rs_ring_check() verifies
 *    that every live record still has its sequence number and checksum;
 *  - freed slots are filled with a NaN pattern, so replaying a stale record shows up as
 *    a non-finite output instead of a plausible number.
 */
#ifndef RS_RING_H
#define RS_RING_H

#include <stddef.h>
#include <stdint.h>

#include "replayssm/quant/rs_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RS_RING_FREE UINT64_MAX

typedef struct rs_ring {
    size_t cap, d_v, d_k;
    int has_u;          /* GDN: separate u rows */
    size_t start;       /* physical slot of logical record 0 */
    size_t h;           /* committed records */
    size_t pending;     /* draft records past h awaiting commit */
    float *alpha;       /* [cap] */
    float *beta;        /* [cap] */
    float *v;           /* [cap][d_v] */
    float *k;           /* [cap][d_k] */
    float *u;           /* [cap][d_v] GDN only, else NULL */
    uint64_t *seq;      /* [cap] canary: sequence number of the token held, RS_RING_FREE */
    uint64_t *sum;      /* [cap] canary: checksum at sealing (0 = not sealed) */
} rs_ring;

/*! rs_ring_init() : allocate a ring of cap slots (all free). has_u: GDN records.
 *  @return RS_OK, RS_E_INVAL, RS_E_NOMEM (ring left safe to free). */
rs_status rs_ring_init(rs_ring *ring, size_t cap, size_t d_v, size_t d_k, int has_u);

/*! rs_ring_free() : release; accepts NULL and zeroed rings. */
void rs_ring_free(rs_ring *ring);

/*! rs_ring_slot() : physical slot of logical record i (i < cap). */
static inline size_t rs_ring_slot(const rs_ring *ring, size_t i)
{
    size_t s = ring->start + i;
    return s >= ring->cap ? s - ring->cap : s;
}

static inline float rs_ring_alpha(const rs_ring *r, size_t i) { return r->alpha[rs_ring_slot(r, i)]; }
static inline float rs_ring_beta(const rs_ring *r, size_t i) { return r->beta[rs_ring_slot(r, i)]; }
static inline float *rs_ring_v(const rs_ring *r, size_t i) { return r->v + rs_ring_slot(r, i) * r->d_v; }
static inline float *rs_ring_k(const rs_ring *r, size_t i) { return r->k + rs_ring_slot(r, i) * r->d_k; }
/* the outer-product vector of record i: u (GDN) or v (Mamba-2) */
static inline float *rs_ring_u(const rs_ring *r, size_t i)
{
    return (r->has_u ? r->u : r->v) + rs_ring_slot(r, i) * r->d_v;
}

/*! rs_ring_put() : write the raw inputs of the token with sequence number seq as logical
 *  record i (i >= h, i < cap). GDN's u is left to the caller (rs_ring_u()), then seal.
 *  @return RS_OK; RS_E_STATE if i is committed, beyond capacity, or the slot is live. */
rs_status rs_ring_put(rs_ring *ring, size_t i, uint64_t seq, float alpha, float beta,
                      const float *v, const float *k);

/*! rs_ring_seal() : record the checksum of logical record i once it is complete. */
void rs_ring_seal(rs_ring *ring, size_t i);

/*! rs_ring_set_pending() : declare records h .. h+n-1 drafts (after their puts). */
void rs_ring_set_pending(rs_ring *ring, size_t n);

/*! rs_ring_commit() : h <- h + a for 1 <= a <= pending (a = 0 allowed only with no
 *  pending drafts); the pending - a rejected drafts are freed.
 *  @return RS_OK or RS_E_INVAL. */
rs_status rs_ring_commit(rs_ring *ring, size_t a);

/*! rs_ring_drop() : the first n <= h committed records were folded: free them, advance
 *  the origin. Drafts stay at logical h-n .. */
void rs_ring_drop(rs_ring *ring, size_t n);

/*! rs_ring_reset() : free every slot (committed and draft), origin back to slot 0. */
void rs_ring_reset(rs_ring *ring);

/*! rs_ring_check() : verify the canaries of every live record (sequence numbers
 *  consecutive from first_seq, checksums intact).
 *  @return RS_OK, or RS_E_STATE naming the record. */
rs_status rs_ring_check(const rs_ring *ring, uint64_t first_seq);

#ifdef __cplusplus
}
#endif
#endif /* RS_RING_H */
