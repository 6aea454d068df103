/* SPDX-License-Identifier: MIT */
/* The GIL as one sample sees it: held or not, by whom, where waiters block. */
#ifndef SPYC_PYGIL_H
#define SPYC_PYGIL_H

#include <stdint.h>

#include "py/pyruntime.h"

/* The GIL of one interpreter, as this sample saw it. */
struct gil_view {
	int locked;
	uint64_t holder; /* PyThreadState * of the last holder */
	uint64_t lo, hi; /* its struct: where waiters' futexes are */
};

/* Read the GIL serving interp into g; g is left zeroed if unknown. */
void pygil_read(const struct pyruntime *rt, uint64_t interp,
		struct gil_view *g);

#endif
