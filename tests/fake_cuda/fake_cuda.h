/* What the fake CUDA libraries share (tests/fake_cuda). */
#ifndef GCK_FAKE_CUDA_H
#define GCK_FAKE_CUDA_H

/** Raise a sticky error, as an illegal address in a kernel does: every later runtime call
 *  fails with cudaErrorIllegalAddress (libcudart). */
void gck_fake_cuda_fault(void);

#endif
