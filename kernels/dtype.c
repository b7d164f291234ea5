/* dtype.c - storage types and their round-to-nearest-even conversions. */
#include "kernel.h"

#include <math.h>
#include <string.h>

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

size_t kt_dtype_size(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
    case KT_DTYPE_BF16:
        return 2;
    case KT_DTYPE_FP8_E4M3:
        return 1;
    default:
        return 4;
    }
}

const char *kt_dtype_name(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
        return "fp16";
    case KT_DTYPE_BF16:
        return "bf16";
    case KT_DTYPE_FP8_E4M3:
        return "fp8_e4m3";
    default:
        return "fp32";
    }
}

int kt_dtype_parse(kt_dtype *out, const char *name)
{
    static const kt_dtype spec_types[] = {KT_DTYPE_FP32, KT_DTYPE_FP16, KT_DTYPE_BF16};
    for (size_t i = 0; i < sizeof(spec_types) / sizeof(spec_types[0]); i++) {
        if (strcmp(name, kt_dtype_name(spec_types[i])) == 0) {
            *out = spec_types[i];
            return KT_OK;
        }
    }
    return kt_error_code(KT_EINVAL, "unknown dtype '%s'", name);
}

double kt_dtype_unit_roundoff(kt_dtype dtype)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
        return ldexp(1.0, -11);
    case KT_DTYPE_BF16:
        return ldexp(1.0, -8);
    case KT_DTYPE_FP8_E4M3:
        return ldexp(1.0, -4);
    default:
        return ldexp(1.0, -24);
    }
}

uint16_t kt_fp32_to_bf16(float x)
{
    uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float kt_bf16_to_fp32(uint16_t x)
{
    return bits_float((uint32_t)x << 16);
}

uint16_t kt_fp32_to_fp16(float x)
{
    uint32_t u = float_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00u;
    if (a >= 0x477ff000u) /* >= 65520 rounds to Inf */
        return sign | 0x7c00u;
    if (a < 0x38800000u) { /* below 2^-14: subnormal, in units of 2^-24 */
        float scaled = bits_float(a) * 16777216.0f;
        return sign | (uint16_t)nearbyintf(scaled);
    }
    uint32_t h = ((((a >> 23) - 127 + 15)) << 10) | ((a & 0x7fffffu) >> 13);
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;
    return sign | (uint16_t)h;
}

float kt_fp16_to_fp32(uint16_t x)
{
    uint32_t sign = (uint32_t)(x & 0x8000u) << 16;
    uint32_t e = (x >> 10) & 0x1fu;
    uint32_t m = x & 0x3ffu;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31)
        return bits_float(sign | 0x7f800000u | (m << 13));
    return bits_float(sign | ((e - 15 + 127) << 23) | (m << 13));
}

uint8_t kt_fp32_to_fp8_e4m3(float x)
{
    uint8_t sign = signbit(x) ? 0x80u : 0u;
    float a = fabsf(x);
    /* 464 is the tie between 448 (mantissa 110, even) and 480 (mantissa 111, the NaN
     * encoding): ties-to-even keeps 448; above it e4m3fn, which has no Inf, gives NaN */
    if (isnan(x) || a > 464.0f)
        return sign | 0x7fu;
    if (a < 0.015625f) /* below 2^-6: subnormal, in units of 2^-9 */
        return sign | (uint8_t)nearbyintf(a * 512.0f);
    int e;
    frexpf(a, &e);
    int exp_unbiased = e - 1;
    int q = (int)nearbyintf((ldexpf(a, -exp_unbiased) - 1.0f) * 8.0f);
    if (q == 8) {
        q = 0;
        exp_unbiased++;
    }
    return sign | (uint8_t)(((exp_unbiased + 7) << 3) | q);
}

float kt_fp8_e4m3_to_fp32(uint8_t x)
{
    int e = (x >> 3) & 0xf;
    int m = x & 0x7;
    float v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m, -9);
    else
        v = ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return (x & 0x80u) ? -v : v;
}

float kt_dtype_load(const void *src, kt_dtype dtype, size_t i)
{
    switch (dtype) {
    case KT_DTYPE_FP16:
        return kt_fp16_to_fp32(((const uint16_t *)src)[i]);
    case KT_DTYPE_BF16:
        return kt_bf16_to_fp32(((const uint16_t *)src)[i]);
    case KT_DTYPE_FP8_E4M3:
        return kt_fp8_e4m3_to_fp32(((const uint8_t *)src)[i]);
    default:
        return ((const float *)src)[i];
    }
}

void kt_dtype_to_double(double *dst, const void *src, kt_dtype dtype, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (double)kt_dtype_load(src, dtype, i);
}

/* double -> float with round-to-odd (truncate, then set the last bit when inexact), then
 * float -> storage with round-to-nearest-even. float keeps at least two more bits than every
 * narrower storage type, so the pair rounds correctly: a plain (float) cast would round
 * twice and turn values just above a storage tie into exact ties (1 + 2^-8 + 2^-40 would
 * become bf16 1.0 instead of 1 + 2^-7). */
static float double_to_float_odd(double d)
{
    float f = (float)d;
    if (isnan(d) || isinf(f) || (double)f == d)
        return f;
    if (fabs((double)f) > fabs(d))
        f = nextafterf(f, 0.0f);
    uint32_t u = float_bits(f) | 1u;
    return bits_float(u);
}

void kt_dtype_from_double(void *dst, const double *src, kt_dtype dtype, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float f = dtype == KT_DTYPE_FP32 ? (float)src[i] : double_to_float_odd(src[i]);
        switch (dtype) {
        case KT_DTYPE_FP16:
            ((uint16_t *)dst)[i] = kt_fp32_to_fp16(f);
            break;
        case KT_DTYPE_BF16:
            ((uint16_t *)dst)[i] = kt_fp32_to_bf16(f);
            break;
        case KT_DTYPE_FP8_E4M3:
            ((uint8_t *)dst)[i] = kt_fp32_to_fp8_e4m3(f);
            break;
        default:
            ((float *)dst)[i] = f;
        }
    }
}
