/* hash.h - a fast 64-bit hash of bytes: input hashes (arm/kernel/check.c) and point seeds
 * (kt_point_seed). Not cryptographic (util/sha256.h is). */
#ifndef KT_UTIL_HASH_H
#define KT_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit hash of 'bytes' (8-byte words, multiply-mix; not cryptographic). */
uint64_t kt_hash_bytes(const void *data, size_t bytes);

#endif
