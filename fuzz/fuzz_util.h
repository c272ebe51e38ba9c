/* fuzz_util.h — helpers shared by the libFuzzer targets: writing fuzz input
 * to a private temporary file or directory (for readers that take a path). */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A per-process scratch directory under $TMPDIR (made once, reused). */
const char *fuzz_tmpdir(void);
/* Writes n bytes to path (truncating); aborts on I/O failure, which is the
 * harness's fault, not ferry's. */
void fuzz_write(const char *path, const void *data, size_t n);

#endif
