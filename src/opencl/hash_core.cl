/* hash_core.cl — kernels over the hash arithmetic that the CPU and CUDA
 * share (src/hash/fp_core.h, dct_core.h, haar_core.h: the program is built
 * from those headers followed by this file, so there is no third copy of
 * the DCT or the Haar steps). These run each step on its own, for tests
 * that compare them bit for bit with the CPU (test_opencl_hash_core.c); the
 * hash kernels themselves are hash.cl's. */

/* rows[r * n .. r * n + n - 1] = the DCT-II of that row (scipy's), one
 * work-item per row; n = plan->n <= FY_DCT_MAX. */
__kernel void fy_dct_rows(__global const fy_dct_plan *plan, __global double *rows, uint count) {
  uint r = (uint)get_global_id(0);
  if (r >= count)
    return;
  fy_dct_plan p = *plan; /* OpenCL 1.2: the shared functions take private pointers */
  double c[FY_DCT_MAX];
  size_t n = (size_t)p.n;
  for (size_t i = 0; i < n; i++)
    c[i] = rows[r * n + i];
  fy_dct2_core(&p, c);
  for (size_t i = 0; i < n; i++)
    rows[r * n + i] = c[i];
}

/* out[5 i .. 5 i + 4] = haar lo, hi, even, odd and the median of two of
 * (x[2 i], x[2 i + 1]). */
__kernel void fy_haar_steps(__global const double *x, __global double *out, uint count) {
  uint i = (uint)get_global_id(0);
  if (i >= count)
    return;
  double a = x[2 * i], b = x[2 * i + 1];
  out[5 * i] = fy_haar_lo(a, b);
  out[5 * i + 1] = fy_haar_hi(a, b);
  out[5 * i + 2] = fy_haar_even(a, b);
  out[5 * i + 3] = fy_haar_odd(a, b);
  out[5 * i + 4] = fy_median_mid(a, b);
}
