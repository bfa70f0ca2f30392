/* rs_cuda_scan_gdn.cu — the Gated DeltaNet instances of the chunk kernel of rs_cuda_scan.h
 * (rs_cuda_scan_kernel.cuh; one translation unit per SSM kind so that they compile in parallel). */
#include "rs_cuda_scan_kernel.cuh"

void rs_scan_launch_gdn(int rpw, int ns, const rs_scan_kargs &a, int nruns, cudaStream_t st)
{
    rs_scan_launch_kind<true>(rpw, ns, a, nruns, st);
}
