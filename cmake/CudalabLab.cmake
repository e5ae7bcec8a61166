# The CMake helpers every cudalab target goes through, so that the starter, the
# solution, every ladder rung and an outside submission are built the same way.

set(CUDALAB_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." CACHE INTERNAL "")
cmake_path(NORMAL_PATH CUDALAB_ROOT)

# Toolkit, Python (lab.toml is read at configure time), JSON and doctest. Headers that a
# machine lacks may be staged under <root>/.deps/include (tools/stage-deps.sh).
macro(cudalab_find_dependencies)
  # CMake 3.25 predates nvcc's C++20 support and leaves its flag empty.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  find_package(Threads REQUIRED)
  find_package(Python3 3.11 REQUIRED COMPONENTS Interpreter)
  if(NOT TARGET cudalab::json)
    find_path(CUDALAB_JSON_INCLUDE_DIR nlohmann/json.hpp HINTS "${CUDALAB_ROOT}/.deps/include")
    if(NOT CUDALAB_JSON_INCLUDE_DIR)
      message(FATAL_ERROR "nlohmann/json.hpp was not found. Install it (Debian: apt-get install "
                          "nlohmann-json3-dev) or run tools/setup.sh, which does.")
    endif()
    add_library(cudalab::json INTERFACE IMPORTED GLOBAL)
    target_include_directories(cudalab::json SYSTEM INTERFACE "${CUDALAB_JSON_INCLUDE_DIR}")
  endif()
endmacro()

function(cudalab_find_doctest)
  if(NOT TARGET cudalab::doctest)
    find_path(CUDALAB_DOCTEST_INCLUDE_DIR doctest/doctest.h HINTS "${CUDALAB_ROOT}/.deps/include")
    if(NOT CUDALAB_DOCTEST_INCLUDE_DIR)
      message(FATAL_ERROR "doctest/doctest.h was not found. Install it (Debian: apt-get install "
                          "doctest-dev) or run tools/setup.sh, or configure with -DCUDALAB_BUILD_TESTS=OFF.")
    endif()
    add_library(cudalab::doctest INTERFACE IMPORTED GLOBAL)
    target_include_directories(cudalab::doctest SYSTEM INTERFACE "${CUDALAB_DOCTEST_INCLUDE_DIR}")
  endif()
endfunction()

# Standards, warnings and debug line info (compute-sanitizer reports source lines) for
# every target. STRICT turns warnings into errors: used for our own code, never for a
# student's.
function(cudalab_target_defaults target)
  cmake_parse_arguments(ARG "STRICT" "" "" ${ARGN})
  set_target_properties(${target} PROPERTIES
    CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
    CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo -Xcompiler=-Wall,-Wextra>)
  if(ARG_STRICT)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Werror>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
endfunction()

set(CUDALAB_BIN_DIR "${CMAKE_BINARY_DIR}/bin" CACHE INTERNAL "")

# A lab binary: the lab's official harness + one implementation source.
function(cudalab_add_lab_binary)
  cmake_parse_arguments(ARG "" "LAB;NAME;SOURCE" "" ${ARGN})
  if(NOT EXISTS "${ARG_SOURCE}")
    message(FATAL_ERROR "lab ${ARG_LAB}: implementation source ${ARG_SOURCE} does not exist")
  endif()
  add_executable(${ARG_NAME} "${ARG_SOURCE}")
  target_link_libraries(${ARG_NAME} PRIVATE cudalab::${ARG_LAB}_harness)
  cudalab_target_defaults(${ARG_NAME})
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CUDALAB_BIN_DIR}")
endfunction()

# Runs `python3 tools/labtest.py ...` as a ctest test; exit 4 (no CUDA device) skips.
function(cudalab_add_labtest name)
  cmake_parse_arguments(ARG "GPU" "" "ARGS" ${ARGN})
  add_test(NAME ${name} COMMAND "${Python3_EXECUTABLE}" "${CUDALAB_ROOT}/tools/labtest.py" ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 4)
  if(ARG_GPU)
    set_tests_properties(${name} PROPERTIES LABELS gpu)
  else()
    set_tests_properties(${name} PROPERTIES LABELS cpu)
  endif()
endfunction()

function(cudalab_add_cpu_test name)
  cudalab_find_doctest()
  add_executable(${name} ${ARGN} "${CUDALAB_ROOT}/common/tests/doctest_main.cpp")
  target_link_libraries(${name} PRIVATE cudalab::doctest)
  cudalab_target_defaults(${name} STRICT)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS cpu)
endfunction()

# GPU tests are always built; where there is no device they print why and exit 4,
# which ctest reports as skipped.
function(cudalab_add_gpu_test name)
  cudalab_find_doctest()
  add_executable(${name} ${ARGN} "${CUDALAB_ROOT}/common/tests/doctest_gpu_main.cpp")
  target_link_libraries(${name} PRIVATE cudalab::doctest CUDA::cudart_static)
  cudalab_target_defaults(${name} STRICT)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS gpu SKIP_RETURN_CODE 4)
endfunction()

# Everything of one lab: the header generated from lab.toml, the CPU problem (inputs
# and reference), the harness library, the trusted checker, the starter, the solution,
# every ladder rung and the lab's tests.
function(cudalab_add_lab lab)
  set(dir "${CUDALAB_ROOT}/labs/${lab}")
  set(gen_dir "${CMAKE_BINARY_DIR}/generated/${lab}")
  if(NOT EXISTS "${dir}/lab.toml")
    message(FATAL_ERROR "lab '${lab}' has no labs/${lab}/lab.toml")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.labspec emit-header "${dir}/lab.toml" "${gen_dir}/lab_spec.hpp"
    RESULT_VARIABLE status ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "labs/${lab}/lab.toml: ${errors}")
  endif()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               "${dir}/lab.toml" "${CUDALAB_ROOT}/grader/cudalab/labspec.py")

  add_library(${lab}_problem STATIC "${dir}/problem.cpp")
  target_include_directories(${lab}_problem PUBLIC "$<BUILD_INTERFACE:${dir}>" "$<BUILD_INTERFACE:${gen_dir}>")
  target_link_libraries(${lab}_problem PUBLIC labkit_core)
  cudalab_target_defaults(${lab}_problem STRICT)

  add_library(${lab}_harness STATIC "${dir}/harness.cu")
  target_link_libraries(${lab}_harness PUBLIC ${lab}_problem labkit_cuda)
  if(EXISTS "${dir}/harness_libs.cmake")
    include("${dir}/harness_libs.cmake")  # a lab's library baseline (CUB, cuBLAS, NPP)
  endif()
  cudalab_target_defaults(${lab}_harness STRICT)
  add_library(cudalab::${lab}_harness ALIAS ${lab}_harness)
  set_property(GLOBAL APPEND PROPERTY CUDALAB_EXPORTED_TARGETS ${lab}_problem ${lab}_harness)

  add_executable(${lab}_checker "${dir}/checker.cpp")
  target_link_libraries(${lab}_checker PRIVATE ${lab}_problem)
  cudalab_target_defaults(${lab}_checker STRICT)
  set_target_properties(${lab}_checker PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CUDALAB_BIN_DIR}")

  cudalab_add_lab_binary(LAB ${lab} NAME ${lab}_solution SOURCE "${CUDALAB_ROOT}/solutions/${lab}/${lab}.cu")
  cudalab_add_lab_binary(LAB ${lab} NAME ${lab}_starter SOURCE "${CUDALAB_ROOT}/starter/${lab}/${lab}.cu")
  file(GLOB rungs CONFIGURE_DEPENDS "${CUDALAB_ROOT}/solutions/${lab}/ladder/*.cu")
  set(rung_names "")
  foreach(rung IN LISTS rungs)
    cmake_path(GET rung STEM stem)
    cudalab_add_lab_binary(LAB ${lab} NAME ${lab}_ladder_${stem} SOURCE "${rung}")
    list(APPEND rung_names ${lab}_ladder_${stem})
  endforeach()

  if(CUDALAB_BUILD_TESTS)
    file(GLOB cpu_tests CONFIGURE_DEPENDS "${dir}/tests/*.cpp")
    if(cpu_tests)
      cudalab_add_cpu_test(test_${lab} ${cpu_tests})
      target_link_libraries(test_${lab} PRIVATE ${lab}_problem)
    endif()
    set(bin "${CUDALAB_BIN_DIR}")
    cudalab_add_labtest(${lab}_solution_passes GPU ARGS expect 0 -- "${bin}/${lab}_solution")
    cudalab_add_labtest(${lab}_starter_fails_with_feedback GPU
      ARGS expect 1 --stdout-contains "is wrong" -- "${bin}/${lab}_starter")
    foreach(rung IN LISTS rung_names)
      cudalab_add_labtest(${rung}_passes GPU ARGS expect 0 -- "${bin}/${rung}")
    endforeach()
    cudalab_add_labtest(${lab}_checker_agrees GPU
      ARGS roundtrip --binary "${bin}/${lab}_solution" --checker "${bin}/${lab}_checker")
    cudalab_add_labtest(${lab}_checker_catches_starter GPU
      ARGS roundtrip --expect-fail --binary "${bin}/${lab}_starter" --checker "${bin}/${lab}_checker")
    cudalab_add_labtest(${lab}_checker_needs_its_inputs
      ARGS checker-usage --checker "${bin}/${lab}_checker")
  endif()
endfunction()

# Lets cmake/submission import the harness libraries of this build tree.
function(cudalab_write_exports)
  get_property(targets GLOBAL PROPERTY CUDALAB_EXPORTED_TARGETS)
  export(TARGETS ${targets} NAMESPACE cudalab:: FILE "${CMAKE_BINARY_DIR}/cudalab-exports.cmake")
  file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/cudalab-build.cmake" CONTENT [[
# Written by the official build: what a submission build must match.
set(CUDALAB_OFFICIAL_ARCHITECTURES "@CMAKE_CUDA_ARCHITECTURES@")
set(CUDALAB_OFFICIAL_BUILD_TYPE "@CMAKE_BUILD_TYPE@")
set(CUDALAB_OFFICIAL_LABS "@CUDALAB_LABS@")
]] @ONLY)
endfunction()
