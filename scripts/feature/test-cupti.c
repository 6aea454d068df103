/* SPDX-License-Identifier: MIT */
/* Feature probe: the CUPTI headers the GPU agent is compiled against. */
#include <cupti.h>

int main(void)
{
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemcpy6 m;

	(void)k;
	(void)m;
	return CUPTI_API_VERSION > 0 ? 0 : 1;
}
