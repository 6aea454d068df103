/* SPDX-License-Identifier: MIT */
/*
 * A library whose loading ends the process: the target exits while spyc
 * is in the middle of injecting it, which spyc must report as such.
 */
#include <unistd.h>

__attribute__((constructor)) static void leave(void)
{
	_exit(7);
}
