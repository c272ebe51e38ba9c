/* cl_sources.c — the OpenCL C sources (src/opencl/NAME.cl), embedded at build
 * time: CMakeLists.txt (and setup.py for the Python extension) write each
 * file's bytes as FY_CL_<NAME>_BYTES into the generated header
 * opencl_src.h, so that the .cl files stay real OpenCL C files. */
#include "opencl/opencl.h"
#include "opencl_src.h"

const char fy_cl_hamming_src[] = {FY_CL_HAMMING_BYTES, 0};
