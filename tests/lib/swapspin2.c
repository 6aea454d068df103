/* SPDX-License-Identifier: MIT */
/* swapspin.c's replacement: the same library, laid out otherwise. */
#define SWAPSPIN_SECOND 1
#include "swapspin.c"
