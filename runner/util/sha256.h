/* sha256.h - SHA-256 of a byte string, as lower-case hex (OpenSSL libcrypto underneath). */
#ifndef KT_SHA256_H
#define KT_SHA256_H

#include <stddef.h>

/* Writes the 64 hex digits of SHA-256('data', 'len' bytes) and a NUL to 'out'.
 * Returns 0, or -1 with kt_error_last() set when libcrypto fails. */
int kt_sha256_hex(char out[65], const void *data, size_t len);

#endif
