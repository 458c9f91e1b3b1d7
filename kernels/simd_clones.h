/* simd_clones.h: HV_SIMD_CLONES marks a hot element-wise function to be compiled
 * three times, for AVX-512, AVX2 and the baseline the library is built for (x86-64's
 * SSE2), with the CPU's best picked once at load time (GCC's target_clones, an ifunc).
 * The kernels it marks keep 8 lanes x 16 channels of float sums (batchnorm_rows.h):
 * 2 x 128 floats, which SSE2's 16 registers of 4 floats spill to the stack and
 * AVX-512's 32 registers of 16 hold. Every clone performs the same IEEE operations in
 * the same order (the lanes are explicit in the code; GCC in C11 mode does not
 * contract a * b + c into an FMA), so all give the same bits. Clang (the fuzz builds)
 * contracts by default and gets no clones. A function it marks is not inlined, so it
 * goes on per-row functions, not on per-element ones. -DHV_NO_SIMD_CLONES turns it
 * off (the baseline code alone). */
#ifndef HV_KERNELS_SIMD_CLONES_H
#define HV_KERNELS_SIMD_CLONES_H

/* Not under ThreadSanitizer: the dynamic loader runs an ifunc's resolver while it
 * relocates the program, before TSan's runtime is set up, and the instrumented
 * resolver crashes there (SIGSEGV in batchnorm_block_row_sums_relu[resolver]). */
#if defined(__SANITIZE_THREAD__)
#define HV_SIMD_CLONES_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HV_SIMD_CLONES_TSAN 1
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(HV_NO_SIMD_CLONES) && \
    !defined(HV_SIMD_CLONES_TSAN)
#define HV_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HV_SIMD_CLONES
#endif

#endif /* HV_KERNELS_SIMD_CLONES_H */
