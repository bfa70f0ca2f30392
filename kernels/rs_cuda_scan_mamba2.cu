/* rs_cuda_scan_mamba2.cu — the Mamba-2 instances of the chunk kernel of rs_cuda_scan.h
 * (rs_cuda_scan_kernel.cuh; one translation unit per SSM kind so that they compile in parallel). */
#include "rs_cuda_scan_kernel.cuh"

void rs_scan_launch_mamba2(int rpw, int ns, const rs_scan_kargs &a, int nruns, cudaStream_t st)
{
    rs_scan_launch_kind<false>(rpw, ns, a, nruns, st);
}
