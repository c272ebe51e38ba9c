/* isa.c — which kernels this CPU runs, decided once at run time from
 * CPUID (__builtin_cpu_supports), so one binary uses AVX-512 where it is
 * and still runs on any x86-64 (or any other CPU, with the portable C). */
#include "search/search.h"

#include "core/testctl.h"

#include <string.h>
#include <strings.h>

static int has(const char *name) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (!strcmp(name, "avx512"))
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  if (!strcmp(name, "avx2"))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  if (!strcmp(name, "popcnt"))
    return __builtin_cpu_supports("popcnt");
#endif
  return !strcmp(name, "scalar");
}

const fy_kernels *fy_search_kernels_named(const char *name) {
  static const fy_kernels *const all[] = {&fy_kernels_avx512, &fy_kernels_avx2, &fy_kernels_popcnt,
                                          &fy_kernels_scalar};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (!strcasecmp(name, all[i]->name))
      return all[i]->tile && has(all[i]->name) ? all[i] : NULL;
  return NULL;
}

const fy_kernels *fy_search_kernels(void) {
  /* The test control FERRY_ISA caps the choice (tests of the slower paths). */
  char forced[16];
  if (fy_tc_value_text(FY_TC_ISA, forced, sizeof forced)) {
    const fy_kernels *k = fy_search_kernels_named(forced);
    if (k)
      return k;
  }
  static const char *const order[] = {"avx512", "avx2", "popcnt", "scalar"};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    const fy_kernels *k = fy_search_kernels_named(order[i]);
    if (k)
      return k;
  }
  return &fy_kernels_scalar;
}

const char *ferry_search_isa(void) { return fy_search_kernels()->name; }
