/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the CUDA driver (libcuda.so.1) for the tests of --gpu
 * with no GPU: a library of that name, so that a process that loads it
 * looks to spyc's agent like one that uses CUDA.  It does nothing.
 */
__attribute__((visibility("default"))) int fake_cuda_driver(void);

__attribute__((visibility("default"))) int fake_cuda_driver(void)
{
	return 1;
}
