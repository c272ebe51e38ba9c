/* test_opencl_hash.c — the OpenCL hash kernels (src/opencl/hash.cl,
 * hash_cl.c) against the CPU's compatible mode, bit for bit: the checks of
 * test_gpu_hash.c (corpus photos and hires, synthetic images of odd sizes
 * and patterns, `ferry hash --device opencl:N`, a catalog) run on OpenCL
 * device FERRY_TEST_OPENCL_DEVICE, else the default one (the first GPU,
 * else device 0: PoCL on a machine without a GPU, as in `make test`).
 * Without an OpenCL device: "SKIPPED test_opencl_hash: <reason>". */
#define FY_TEST_OPENCL 1
#include "test_gpu_hash.c"
