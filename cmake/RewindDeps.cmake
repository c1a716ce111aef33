# Dependencies: MPI, SUNDIALS, parallel HDF5, PETSc (io/ and apps/ only), Criterion (tests),
# BLAS, and optionally CUDA.
find_package(MPI REQUIRED COMPONENTS C)
find_package(SUNDIALS REQUIRED)
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "Rewind needs a parallel (MPI) HDF5; on Debian: libhdf5-openmpi-dev")
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(PETSC REQUIRED IMPORTED_TARGET PETSc)
# libyaml, the parser under PETSc's YAML reader (petsc-dev depends on it): the deck reads each
# YAML text with it first, for the line of a syntax error and the keys set twice.
pkg_check_modules(YAML REQUIRED IMPORTED_TARGET yaml-0.1)
# OpenBLAS for the neural-ODE MLP's matrix products (cblas_dgemm; Debian: libopenblas-dev).
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_library(REWIND_LIBM m)
# LIBXSMM (Debian: libxsmm-dev, a static library) for the MLP's small hidden-layer products
# (solvers/rw_smallgemm.c); without it those go to cblas_dgemm too.
set(REWIND_HAVE_LIBXSMM OFF)
if(NOT REWIND_WITH_LIBXSMM STREQUAL "OFF")
  pkg_check_modules(LIBXSMM IMPORTED_TARGET libxsmm)
  if(LIBXSMM_FOUND)
    set(REWIND_HAVE_LIBXSMM ON)
  elseif(REWIND_WITH_LIBXSMM STREQUAL "ON")
    message(FATAL_ERROR "REWIND_WITH_LIBXSMM=ON but libxsmm was not found (Debian: libxsmm-dev)")
  endif()
endif()
message(STATUS "Rewind: LIBXSMM ${REWIND_HAVE_LIBXSMM}")

# SUNDIALS 6 names its imported targets <comp>_shared.
foreach(comp generic nvecparallel cvodes)
  if(TARGET SUNDIALS::${comp}_shared)
    set(REWIND_SUNDIALS_${comp} SUNDIALS::${comp}_shared)
  elseif(TARGET SUNDIALS::${comp})
    set(REWIND_SUNDIALS_${comp} SUNDIALS::${comp})
  else()
    message(FATAL_ERROR "SUNDIALS component ${comp} not found (Debian: libsundials-dev)")
  endif()
endforeach()

if(REWIND_BUILD_TESTS)
  pkg_check_modules(CRITERION REQUIRED IMPORTED_TARGET criterion)
endif()

# CUDA: ON requires nvcc, AUTO uses it when found, OFF never.
set(REWIND_HAVE_CUDA OFF)
if(NOT REWIND_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # "native" fails where there is no GPU: name the architectures explicitly.
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(REWIND_HAVE_CUDA ON)
  elseif(REWIND_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "REWIND_ENABLE_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "Rewind: CUDA ${REWIND_HAVE_CUDA}")
