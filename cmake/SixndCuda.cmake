# The CUDA part of sixnd_model: model/cuda/*.cu and *.cpp, compiled for SIXND_CUDA_ARCHS
# (default 80;90: A100 and H100/H200 machine code, so nothing is JIT-compiled at start-up).
# nvcc warnings are errors; the flash-attention kernels must also assemble without register
# spills (ptxas -warn-spills as an error) and print their register report (-v) in the build log.
# The CUDA runtime is linked statically; cuBLASLt dynamically, since CUDA 13 ships no
# libcublasLt_static.a (the device machine's toolkit and its PyTorch both carry libcublasLt.so.13).
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
file(GLOB SIXND_CUDA_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/model/cuda/*.cu ${CMAKE_SOURCE_DIR}/model/cuda/*.cpp)
if(SIXND_CUDA_SRC)
  target_sources(sixnd_model PRIVATE ${SIXND_CUDA_SRC})
  set_target_properties(sixnd_model PROPERTIES CUDA_ARCHITECTURES "${SIXND_CUDA_ARCHS}" CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(sixnd_model PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Wall,-Wextra --expt-relaxed-constexpr>)
  file(GLOB SIXND_FLASH_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/model/cuda/flash_attention_*.cu)
  set_source_files_properties(${SIXND_FLASH_SRC} PROPERTIES COMPILE_OPTIONS "-Xptxas=-v,-warn-spills,-Werror")
  target_link_libraries(sixnd_model PUBLIC CUDA::cudart_static CUDA::cublasLt)
  target_compile_definitions(sixnd_model PUBLIC SIXND_HAVE_CUDA=1)
endif()
