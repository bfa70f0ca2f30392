# rs_install.cmake — what `cmake --install build --prefix P` puts under P (docs/architecture.md):
#
#   P/lib/libreplayssm-{core,theory,eval}.a, .so, .so.0, .so.0.1.0   the layer libraries
#   P/lib/libreplayssm_cuda.a                  the CUDA kernels, when they were built (RS_CUDA)
#   P/include/replayssm/**                     the public headers; private ones stay in the tree
#   P/bin/replayssm                            the CLI
#   P/lib/pkgconfig/replayssm-{core,theory,eval[,cuda]}.pc, replayssm.pc (= all of them)
#   P/lib/cmake/replayssm/                     replayssmConfig.cmake + version + exported targets
#
# Included by the top-level CMakeLists.txt after the libraries, kernels/ and the CLI exist.
# tests/install/run_install_test.sh checks all of this from a temporary prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RS_LAYERS core theory eval)
set(RS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/replayssm)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  # The .pc files and the CMake package locate everything relative to the prefix given at
  # install time (--prefix), which an absolute libdir would defeat.
  message(FATAL_ERROR "replayssm: CMAKE_INSTALL_LIBDIR must be relative")
endif()
# Headers always go to P/include: the exported targets say $<INSTALL_INTERFACE:include>
# (rs_add_layer), the .pc files and the config file say the same.
set(RS_INSTALL_INCLUDEDIR include)

# ---- libraries ----------------------------------------------------------------------------
# Exported as replayssm::<layer> (shared) and replayssm::<layer>_static (static). The shared
# libraries carry their dependencies themselves (DT_NEEDED).
#
# Run paths. libreplayssm-{theory,eval}.so get $ORIGIN, to find libreplayssm-core.so.0 beside them
# (a program's DT_RUNPATH does not apply to the dependencies of the libraries it loads), plus the
# non-system directories they were linked from (INSTALL_RPATH_USE_LINK_PATH: HDF5's and OpenBLAS's,
# as in the build tree). They, and the CLI, are linked with that run path directly
# (BUILD_WITH_INSTALL_RPATH): for a target that CMake must re-path at install time it appends an
# empty entry to the build-tree run path, which the loader reads as "the current directory". In
# the build tree $ORIGIN is the build directory, where libreplayssm-core.so.0 is, so nothing there
# resolves differently. core needs no run path (libm, libc) and gets none.
set(RS_INSTALL_LIB_TARGETS "")
foreach(layer ${RS_LAYERS})
  set_target_properties(replayssm_${layer} PROPERTIES EXPORT_NAME ${layer})
  set_target_properties(replayssm_${layer}_static PROPERTIES EXPORT_NAME ${layer}_static)
  list(APPEND RS_INSTALL_LIB_TARGETS replayssm_${layer} replayssm_${layer}_static)
endforeach()
set_target_properties(replayssm_theory replayssm_eval PROPERTIES INSTALL_RPATH "$ORIGIN"
                      INSTALL_RPATH_USE_LINK_PATH ON BUILD_WITH_INSTALL_RPATH ON)
# (The include directory comes with the targets: $<INSTALL_INTERFACE:include> in rs_add_layer.)
install(TARGETS ${RS_INSTALL_LIB_TARGETS} EXPORT replayssmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# replayssm_cuda (kernels/CMakeLists.txt, another owner) is installed as a plain archive, not
# through the export set: its build-tree include directories are absolute source paths, which
# install(EXPORT) refuses. replayssmConfig.cmake declares replayssm::cuda by hand instead.
set(RS_HAVE_CUDA_LIB 0)
set(RS_PC_FILES replayssm-core replayssm-theory replayssm-eval replayssm)
if(TARGET replayssm_cuda)
  set(RS_HAVE_CUDA_LIB 1)
  install(TARGETS replayssm_cuda ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  get_target_property(rs_cuda_output_name replayssm_cuda OUTPUT_NAME)
  if(NOT rs_cuda_output_name)
    set(rs_cuda_output_name replayssm_cuda)
  endif()
  set(RS_CUDA_LIB_NAME ${rs_cuda_output_name})   # -l name, for the .pc file
  set(RS_CUDA_LIB_FILE ${CMAKE_STATIC_LIBRARY_PREFIX}${rs_cuda_output_name}${CMAKE_STATIC_LIBRARY_SUFFIX})
  find_package(CUDAToolkit REQUIRED)               # for the runtime's directory in replayssm-cuda.pc
  set(RS_CUDA_LIBDIR ${CUDAToolkit_LIBRARY_DIR})
  list(APPEND RS_PC_FILES replayssm-cuda)
  set(RS_PC_CUDA_REQUIRES ", replayssm-cuda = ${PROJECT_VERSION}")
  set(RS_PC_CUDA_DESC ", cuda")
else()
  set(RS_CUDA_LIB_FILE "")
  set(RS_PC_CUDA_REQUIRES "")
  set(RS_PC_CUDA_DESC "")
endif()

# Optional dependencies of the eval layer, for the .pc file and the config file: PCRE2 when
# eval/tokenizer/deps.cmake found it (the BPE tokenizers are then compiled in).
set(RS_EVAL_PC_REQUIRES_PRIVATE "hdf5 zlib libcjson openblas")
if(PCRE2_FOUND)
  set(RS_EVAL_PCRE2 1)
  string(APPEND RS_EVAL_PC_REQUIRES_PRIVATE " libpcre2-8")
else()
  set(RS_EVAL_PCRE2 0)
endif()

# ---- public headers ------------------------------------------------------------------------
# include/replayssm/** only: headers beside the sources (quant/rs_check.h, lib/engine/rs_dot.h, ...)
# are private by construction. The cuda/ headers declare replayssm_cuda's functions, so they are
# installed only with that library; the GPU evaluator's (eval/rs_scorer_cuda.h, eval/rs_gpu_info.h)
# declare libreplayssm-evalcuda's, an in-tree library that is not installed.
set(RS_HEADER_EXCLUDES PATTERN "rs_scorer_cuda.h" EXCLUDE PATTERN "rs_gpu_info.h" EXCLUDE)
if(NOT RS_HAVE_CUDA_LIB)
  list(APPEND RS_HEADER_EXCLUDES PATTERN "cuda" EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/replayssm DESTINATION ${RS_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" ${RS_HEADER_EXCLUDES})

# ---- the CLI --------------------------------------------------------------------------------
# It links the layers statically; INSTALL_RPATH_USE_LINK_PATH keeps the run path to shared
# dependencies outside the system directories (HDF5's, OpenBLAS's, the CUDA runtime's), i.e. the
# installed CLI resolves them as the build-tree one does (BUILD_WITH_INSTALL_RPATH: see above).
set_target_properties(replayssm PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON BUILD_WITH_INSTALL_RPATH ON)
install(TARGETS replayssm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# ---- pkg-config -------------------------------------------------------------------------------
# The prefix is only known at install time (cmake --install --prefix P overrides the configured
# one), so the templates are filled in two passes: now with everything but @RS_PC_PREFIX@, then by
# an install(CODE) with the prefix of that install. Absolute prefix paths instead of ${pcfiledir}
# keep `pkg-config --cflags` output plain (-IP/include, not -IP/lib/pkgconfig/../../include).
set(RS_PC_DIR ${CMAKE_BINARY_DIR}/pkgconfig)
set(RS_PC_PREFIX "@RS_PC_PREFIX@")   # survives the first pass unchanged
foreach(pc ${RS_PC_FILES})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${RS_PC_DIR}/${pc}.pc.in @ONLY)
endforeach()
install(CODE "
  set(RS_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  foreach(pc ${RS_PC_FILES})
    configure_file(\"${RS_PC_DIR}/\${pc}.pc.in\" \"${RS_PC_DIR}/installed/\${pc}.pc\" @ONLY)
  endforeach()")
set(RS_PC_INSTALLED "")
foreach(pc ${RS_PC_FILES})
  list(APPEND RS_PC_INSTALLED ${RS_PC_DIR}/installed/${pc}.pc)
endforeach()
install(FILES ${RS_PC_INSTALLED} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- CMake package ------------------------------------------------------------------------------
install(EXPORT replayssmTargets NAMESPACE replayssm:: DESTINATION ${RS_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/replayssmConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/replayssmConfig.cmake
                              INSTALL_DESTINATION ${RS_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/replayssmConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/replayssmConfig.cmake ${CMAKE_BINARY_DIR}/cmake/replayssmConfigVersion.cmake
        DESTINATION ${RS_INSTALL_CMAKEDIR})
