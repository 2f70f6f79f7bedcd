/* sha256.h — SHA-256 (FIPS 180-4) for input fingerprints and plan ids.
 *
 * Does: streaming (init/update/final) and one-shot hex hashing of byte
 * strings of any length, portable C11, no dependencies, no global state.
 * Does not: HMAC, SHA-224/384/512, bit-granular (non-byte) messages, or
 * constant-time guarantees; it is not meant for secret-key cryptography.
 */
#ifndef TM_SHA256_H
#define TM_SHA256_H
#include <stddef.h>
#include <stdint.h>
typedef struct tm_sha256 {
    uint32_t h[8];          /* current hash state H0..H7 */
    uint64_t len;           /* total message length so far, in bytes */
    unsigned char buf[64];  /* pending partial block */
    size_t used;            /* number of bytes held in buf (0..63) */
} tm_sha256;
void tm_sha256_init(tm_sha256 *c);
void tm_sha256_update(tm_sha256 *c, const void *data, size_t n);
void tm_sha256_final(tm_sha256 *c, unsigned char out[32]);
/* one-shot: writes 64 lowercase hex digits and a NUL into hex[65] */
void tm_sha256_hex(const void *data, size_t n, char hex[65]);
#endif
