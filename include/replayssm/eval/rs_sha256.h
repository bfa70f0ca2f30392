/* rs_sha256.h — SHA-256 (FIPS 180-4) of the input room: the digests a log records for its
 * model files, tokenizer file and input files (provenance), one shot or in pieces. */
#ifndef RS_SHA256_H
#define RS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! rs_sha256() : hex SHA-256 of data[n] into hex[65] (64 lowercase hex digits and a NUL). */
void rs_sha256(const void *data, size_t n, char hex[65]);

/* The same digest over data given in pieces (a file read in blocks): init, update any number of
 * times, final writes hex[65]. rs_sha256(d, n) == init + update(d, n) + final. */
typedef struct rs_sha256_ctx {
    uint32_t h[8];
    uint64_t n;      /* bytes so far */
    uint8_t buf[64]; /* the pending partial block */
} rs_sha256_ctx;
void rs_sha256_init(rs_sha256_ctx *c);
void rs_sha256_update(rs_sha256_ctx *c, const void *data, size_t n);
void rs_sha256_final(rs_sha256_ctx *c, char hex[65]);

#ifdef __cplusplus
}
#endif
#endif /* RS_SHA256_H */
