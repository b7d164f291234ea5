/* sha256.c - SHA-256 through libcrypto's EVP interface. */
#include "util/sha256.h"
/* the error convention of every layer, from the public header below kernels/ */
#define KT_PLUGIN_HOST 1
#include "ktrial/plugin.h"

#include <openssl/evp.h>
#include <stdio.h>

int kt_sha256_hex(char out[65], const void *data, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    out[0] = '\0';
    if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32)
        return kt_error_set("sha256 failed in libcrypto");
    for (unsigned int i = 0; i < md_len; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}
