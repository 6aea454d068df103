/* SPDX-License-Identifier: MIT */
/* Feature probe: libstdc++'s demangler, for C++ kernel and native names. */
#include <stdlib.h>

extern char *__cxa_demangle(const char *mangled, char *out, size_t *len,
			    int *status);

int main(void)
{
	int status = -1;
	char *s = __cxa_demangle("_Z1fv", NULL, NULL, &status);

	free(s);
	return status;
}
