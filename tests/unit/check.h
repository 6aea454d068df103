/* SPDX-License-Identifier: MIT */
/* The unit tests' one assertion: report a failed check and carry on. */
#ifndef SPYC_TEST_CHECK_H
#define SPYC_TEST_CHECK_H

#include <stdio.h>

/* Set by a failed CHECK; each test's main returns it. */
static int failed;

#define CHECK(expr)                                                            \
	do {                                                                   \
		if (!(expr)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #expr);                              \
			failed = 1;                                            \
		}                                                              \
	} while (0)

#endif
