/* version.h - what this binary is and how it was built. */
#ifndef KT_VERSION_H
#define KT_VERSION_H

const char *kt_version(void);
const char *kt_build_commit(void);
const char *kt_build_type(void);
const char *kt_build_compiler(void);
const char *kt_build_flags(void);
/* nvcc's version when the CUDA backend was built, else NULL. */
const char *kt_build_cuda_compiler(void);

#endif
