# rs_cuda.cmake — the one CUDA preamble, included by the top level when RS_CUDA is on, before
# kernels/, eval/gpu/ and tests/cuda/ are added. CI has nvcc but no GPU: everything CUDA must
# compile there, and the GPU tests exit 77 (CTest: skipped) without a device.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)   # H100/H200 (sm_90); override on the command line
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
message(STATUS "replayssm: CUDA enabled (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, arch ${CMAKE_CUDA_ARCHITECTURES})")
# The top level's warning and arithmetic options are C-only (handed to nvcc they would reach the
# host compiler with cudafe's output, where -Wpedantic flags every line directive); the .cu files'
# host side gets the arithmetic ones and -Wall through -Xcompiler.
add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-ffp-contract=off,-fno-fast-math>)
# IEEE-exact device arithmetic for every CUDA source: the codec (rs_codec.h) is bit-identical to
# the CPU only with denormals kept; kernels state their own rounding with explicit intrinsics.
set(RS_CUDA_EXACT_FLAGS $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false --ftz=false --prec-div=true --prec-sqrt=true>)
