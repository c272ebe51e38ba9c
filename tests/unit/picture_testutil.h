/* picture_testutil.h — the synthetic grey pictures the signature tests
 * share (test_signature, test_sigwin; CMakeLists.txt links
 * picture_testutil.c into both): a gradient, `blobs` discs of random
 * brightness (radius rmin + rand() % (w / rdiv)), a wave and noise, all
 * from srand(seed), so a seed gives the same picture every run. */
#ifndef FY_PICTURE_TESTUTIL_H
#define FY_PICTURE_TESTUTIL_H

#include <stdint.h>

/* A w x h grey picture (malloc'ed; free() it), blobs <= 16. */
uint8_t *test_picture(int w, int h, unsigned seed, int blobs, int rmin, int rdiv);

#endif
