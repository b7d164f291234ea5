/* version.h - what this binary is and how it was built. */
#ifndef KT_VERSION_H
#define KT_VERSION_H

const char *kt_version(void);
/* The source tree's commit when this binary was built (read on every build, not at
 * configure time), and whether tracked files differed from it. */
const char *kt_build_commit(void);
int kt_build_dirty(void);
/* The source tree this binary was built from, with a trailing slash. */
const char *kt_build_source_dir(void);
const char *kt_build_type(void);
const char *kt_build_compiler(void);
const char *kt_build_flags(void);
/* nvcc's version when the CUDA backend was built, else NULL. */
const char *kt_build_cuda_compiler(void);

#endif
