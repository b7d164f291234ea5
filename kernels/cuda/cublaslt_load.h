/* cublaslt_load.h - cuBLASLt, loaded at first use: a table of the cuBLASLt functions ktrial
 * calls, filled by dlopen of libcublasLt.so.<CUBLAS_VER_MAJOR> and dlsym, once per process.
 *
 * Linking cuBLASLt costs every process ~0.4 s of static initialisers and page faults at
 * start-up, GPU or not; loading it when the CUDA backend opens (or a cuBLASLt variant
 * prepares) leaves that cost to the processes that use it. Each pointer has the type of the
 * function <cublasLt.h> declares, so a signature mismatch does not compile. */
#ifndef KT_CUBLASLT_LOAD_H
#define KT_CUBLASLT_LOAD_H

#include <cublasLt.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KT_LT_STR_(x) #x
#define KT_LT_STR(x)  KT_LT_STR_(x)
/* The soname of the toolkit's major version, "libcublasLt.so.13" for CUDA 13. */
#define KT_CUBLASLT_SONAME "libcublasLt.so." KT_LT_STR(CUBLAS_VER_MAJOR)

/* X(name): the suffix after "cublasLt" of every function in the table. */
#define KT_CUBLASLT_FUNCTIONS(X)                                                                   \
    X(Create)                                                                                      \
    X(Destroy)                                                                                     \
    X(GetStatusName)                                                                               \
    X(GetStatusString)                                                                             \
    X(GetVersion)                                                                                  \
    X(Matmul)                                                                                      \
    X(MatmulAlgoConfigGetAttribute)                                                                \
    X(MatmulAlgoGetHeuristic)                                                                      \
    X(MatmulDescCreate)                                                                            \
    X(MatmulDescDestroy)                                                                           \
    X(MatmulDescSetAttribute)                                                                      \
    X(MatmulPreferenceCreate)                                                                      \
    X(MatmulPreferenceDestroy)                                                                     \
    X(MatmulPreferenceSetAttribute)                                                                \
    X(MatrixLayoutCreate)                                                                          \
    X(MatrixLayoutDestroy)

typedef struct kt_cublaslt_table {
#define KT_LT_FIELD(name) __typeof__(&cublasLt##name) name;
    KT_CUBLASLT_FUNCTIONS(KT_LT_FIELD)
#undef KT_LT_FIELD
} kt_cublaslt_table;

/* The table; every pointer is NULL until kt_cublaslt_load has returned KT_OK. */
extern kt_cublaslt_table kt_lt;

/* Loads cuBLASLt and fills kt_lt, once per process (later calls return the first result).
 * Returns KT_OK, or KT_ERROR with "cannot load libcublasLt.so.N: <dlerror>" set. */
int kt_cublaslt_load(void);

#ifdef __cplusplus
}
#endif

#endif
