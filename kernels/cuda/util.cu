/* util.cu - the SM clock sample taken after every timed call. */
#include "cuda_private.h"

/* One thread: waits for a globaltimer tick, then spins until ~10 us of globaltimer have
 * passed and another tick arrives, so both ends sit on a tick edge (the timer updates in
 * steps of up to 1 us on some parts). */
static __global__ void clock_sample_kernel(unsigned long long *stamps)
{
    unsigned long long t0, t1, c0, c1, start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    } while (t0 == start);
    c0 = (unsigned long long)clock64();
    unsigned long long last = t0;
    for (;;) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        if (t1 != last && t1 - t0 >= 10000)
            break;
        last = t1;
    }
    c1 = (unsigned long long)clock64();
    stamps[0] = c0;
    stamps[1] = t0;
    stamps[2] = c1;
    stamps[3] = t1;
}

static int launch_clock_sample(cudaStream_t stream, unsigned long long *stamps)
{
    clock_sample_kernel<<<1, 1, 0, stream>>>(stamps);
    KT_CUDA_CHECK_LAUNCH();
    return KT_OK;
}

extern "C" int kt_cuda_clock_sample(cudaStream_t stream, unsigned long long *stamps)
{
    return launch_clock_sample(stream, stamps);
}
