# The CMake helpers every cudalab target goes through, so that the starter, the
# solution, every ladder rung and an outside submission are built the same way.

set(CUDALAB_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." CACHE INTERNAL "")
cmake_path(NORMAL_PATH CUDALAB_ROOT)

# The labs of a student bundle, from the cudalab-bundle.json that `cudalab export` writes
# at its root; empty in the course's own repository, which has no such file.
function(cudalab_read_bundle_marker out)
  set(marker "${CUDALAB_ROOT}/cudalab-bundle.json")
  set(labs "")
  if(EXISTS "${marker}")
    set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${marker}")
    file(READ "${marker}" text)
    string(JSON count ERROR_VARIABLE error LENGTH "${text}" labs)
    if(error OR count EQUAL 0)
      message(FATAL_ERROR "${marker} names no labs (${error}). It is written by `cudalab export`: "
                          "export the bundle again, or delete the file to build the course's full tree.")
    endif()
    math(EXPR last "${count} - 1")
    set(labs "")
    foreach(index RANGE ${last})
      string(JSON lab GET "${text}" labs ${index})
      list(APPEND labs "${lab}")
    endforeach()
  endif()
  set(${out} "${labs}" PARENT_SCOPE)
endfunction()

# The labs of the course's own tree: every labs/<lab>/lab.toml, found at each configure and
# never cached. The glob is CONFIGURE_DEPENDS, so a lab folder added (or removed) re-runs
# the configure of an existing build by itself: a new lab needs no list edited anywhere.
function(cudalab_find_labs out)
  file(GLOB specs CONFIGURE_DEPENDS "${CUDALAB_ROOT}/labs/*/lab.toml")
  set(labs "")
  foreach(spec IN LISTS specs)
    cmake_path(GET spec PARENT_PATH dir)
    cmake_path(GET dir FILENAME lab)
    list(APPEND labs "${lab}")
  endforeach()
  list(SORT labs)
  set(${out} "${labs}" PARENT_SCOPE)
endfunction()

# The toolchain every build needs (the official tree and a submission alike): the CUDA
# toolkit and threads.
macro(cudalab_find_toolchain)
  # CMake 3.25 predates nvcc's C++20 support and leaves its flag empty.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  find_package(Threads REQUIRED)
endmacro()

# What the official tree needs besides: Python (lab.toml is read at configure time, and
# the SDKs are assembled at build time) and JSON. Headers that a machine lacks may be
# staged under <root>/.deps/include (tools/stage-deps.sh).
macro(cudalab_find_dependencies)
  cudalab_find_toolchain()
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

# A lab binary: the official objects (the lab's harness with main(), its problem, labkit)
# followed by the object of one implementation source, compiled against INCLUDE_DIR (an
# SDK's include folder: labkit's headers and the lab's API header, nothing else). The
# official objects come first on the link line, so wherever the implementation repeats
# an inline function or a template of theirs, their copy is the one kept; a strong
# definition of anything they define fails to link (and the grader's symbol check says
# so in words first). The starter, the solution, every ladder rung and every submission
# are built by this one function.
function(cudalab_add_lab_binary)
  cmake_parse_arguments(ARG "" "NAME;SOURCE;INCLUDE_DIR;OUTPUT_DIR" "OBJECTS;DEPENDS" ${ARGN})
  if(NOT EXISTS "${ARG_SOURCE}")
    message(FATAL_ERROR "implementation source ${ARG_SOURCE} does not exist")
  endif()
  add_library(${ARG_NAME}_impl OBJECT "${ARG_SOURCE}")
  target_include_directories(${ARG_NAME}_impl PRIVATE "${ARG_INCLUDE_DIR}")
  target_link_libraries(${ARG_NAME}_impl PRIVATE CUDA::cudart_static)  # for cuda_runtime.h
  cudalab_target_defaults(${ARG_NAME}_impl)
  if(ARG_DEPENDS)
    add_dependencies(${ARG_NAME}_impl ${ARG_DEPENDS})
  endif()
  add_executable(${ARG_NAME} ${ARG_OBJECTS} $<TARGET_OBJECTS:${ARG_NAME}_impl>)
  set_target_properties(${ARG_NAME} PROPERTIES LINKER_LANGUAGE CXX RUNTIME_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIR}")
  target_link_libraries(${ARG_NAME} PRIVATE CUDA::cudart_static Threads::Threads)
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

# The CUDA architectures as a list a build without a GPU can use: "native" (the gpu
# preset) resolved to what CMake found on this machine.
function(cudalab_concrete_architectures out)
  set(archs "${CMAKE_CUDA_ARCHITECTURES}")
  if(archs STREQUAL "native" OR archs STREQUAL "all" OR archs STREQUAL "all-major")
    if(NOT CMAKE_CUDA_ARCHITECTURES_NATIVE OR NOT archs STREQUAL "native")
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES=${archs} cannot be handed to submission builds: "
                          "give an explicit list (e.g. 90-real)")
    endif()
    set(archs "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
  endif()
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

# Everything of one lab: the header generated from lab.toml, the CPU problem (cases and
# inputs) and reference, the harness object, the trusted checker, the lab's SDK (what a
# submission is compiled and linked against, in build/<preset>/sdk/<lab>), the starter,
# the solution, every ladder rung and the lab's tests. A student bundle
# (CUDALAB_STUDENT_BUNDLE) stops at the starter: it has no solutions/ and no tests.
function(cudalab_add_lab lab)
  set(dir "${CUDALAB_ROOT}/labs/${lab}")
  set(gen_dir "${CMAKE_BINARY_DIR}/generated/${lab}")
  set(sdk_dir "${CMAKE_BINARY_DIR}/sdk/${lab}")
  if(NOT EXISTS "${dir}/lab.toml")
    message(FATAL_ERROR "lab '${lab}' has no labs/${lab}/lab.toml")
  endif()
  if(NOT CUDALAB_STUDENT_BUNDLE AND NOT EXISTS "${CUDALAB_ROOT}/solutions/${lab}/${lab}.cu")
    message(FATAL_ERROR "lab '${lab}' has no solutions/${lab}/${lab}.cu. A student bundle builds without "
                        "solutions: configure it with -DCUDALAB_STUDENT_BUNDLE=ON (the cudalab-bundle.json "
                        "that `cudalab export` writes turns it on).")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.lab.labspec emit-header "${dir}/lab.toml" "${gen_dir}/lab_spec.hpp"
    RESULT_VARIABLE status ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "labs/${lab}/lab.toml: ${errors}")
  endif()
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.lab.labspec api-header "${dir}/lab.toml"
    RESULT_VARIABLE status OUTPUT_VARIABLE api_header ERROR_VARIABLE errors OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "labs/${lab}/lab.toml: ${errors}")
  endif()
  # The dataset images the cases name, embedded (labkit/datasets.hpp); empty for most labs.
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.lab.labspec emit-datasets "${dir}/lab.toml" "${gen_dir}/datasets.cpp"
            "${CUDALAB_ROOT}/datasets"
    RESULT_VARIABLE status OUTPUT_VARIABLE dataset_files ERROR_VARIABLE errors OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "labs/${lab}/lab.toml: ${errors}")
  endif()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               "${dir}/lab.toml" "${CUDALAB_ROOT}/grader/cudalab/lab/labspec.py" ${dataset_files})

  add_library(${lab}_problem STATIC "${dir}/problem.cpp" "${gen_dir}/datasets.cpp")
  target_include_directories(${lab}_problem PUBLIC "$<BUILD_INTERFACE:${dir}>" "$<BUILD_INTERFACE:${gen_dir}>")
  target_link_libraries(${lab}_problem PUBLIC labkit_core)
  cudalab_target_defaults(${lab}_problem STRICT)

  add_library(${lab}_reference STATIC "${dir}/reference.cpp")
  target_link_libraries(${lab}_reference PUBLIC ${lab}_problem)
  # Host code only, but it may use the toolkit's host-side headers (cuda_occupancy.h).
  target_include_directories(${lab}_reference SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  cudalab_target_defaults(${lab}_reference STRICT)

  add_library(${lab}_harness OBJECT "${dir}/harness.cu")
  target_link_libraries(${lab}_harness PRIVATE ${lab}_problem labkit_cuda)
  cudalab_target_defaults(${lab}_harness STRICT)

  # Every lab's checker is the same few lines up to its name, generated here; a lab whose
  # checker differs (occupancy's asks the GPU) keeps its own checker.cpp.
  set(checker_source "${dir}/checker.cpp")
  if(NOT EXISTS "${checker_source}")
    set(checker_source "${gen_dir}/checker.cpp")
    configure_file("${CUDALAB_ROOT}/cmake/lab_checker.cpp.in" "${checker_source}" @ONLY)
  endif()
  add_executable(${lab}_checker "${checker_source}")
  target_link_libraries(${lab}_checker PRIVATE ${lab}_reference labkit_checker)
  if(EXISTS "${dir}/checker_libs.cmake")
    include("${dir}/checker_libs.cmake")  # a checker whose reference asks the GPU (lab.toml [checker] gpu)
  endif()
  cudalab_target_defaults(${lab}_checker STRICT)
  set_target_properties(${lab}_checker PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CUDALAB_BIN_DIR}")

  # The official objects in link order: the harness (with main) first. A submission's
  # program gets the library baselines' loaders that load nothing; only the official
  # solution and ladder rungs get the real ones (common/CMakeLists.txt).
  set(shared_objects $<TARGET_OBJECTS:${lab}_harness> $<TARGET_OBJECTS:${lab}_problem>
                     $<TARGET_OBJECTS:labkit_cuda> $<TARGET_OBJECTS:labkit_core>)
  set(objects ${shared_objects} $<TARGET_OBJECTS:labkit_baselines_absent>)
  set(official_objects ${shared_objects} $<TARGET_OBJECTS:labkit_baselines>)
  file(GLOB labkit_headers "${CUDALAB_ROOT}/common/labkit/*.hpp")
  # The harness's cuBLAS loader and the CPU matmul reference are not for submissions.
  list(FILTER labkit_headers EXCLUDE REGEX "/(cublas|npp|matmul_reference)\\.hpp$")
  cudalab_concrete_architectures(archs)
  # COMMAND_EXPAND_LISTS (for the object lists) would split a list of several architectures
  # ("75-real;80-real;...", the default preset's, or two GPUs' native ones) into several
  # arguments: the list travels comma-separated, and cmake/submission makes it a list again.
  string(REPLACE ";" "," archs "${archs}")
  add_custom_command(
    OUTPUT "${sdk_dir}/sdk.cmake"
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.building.sdk assemble --lab ${lab} --out "${sdk_dir}"
            --architectures "${archs}" --build-type "${CMAKE_BUILD_TYPE}"
            --api-header "${dir}/${api_header}" --headers ${labkit_headers} --objects ${objects}
            --root "${CUDALAB_ROOT}" --cmake "${CMAKE_COMMAND}" --ninja "${CMAKE_MAKE_PROGRAM}"
            --source-name "${lab}.cu"
    DEPENDS ${objects} ${labkit_headers} "${dir}/${api_header}" "${CUDALAB_ROOT}/grader/cudalab/building/sdk.py"
            "${CUDALAB_ROOT}/grader/cudalab/intake/symbols.py" "${CUDALAB_ROOT}/cmake/submission/CMakeLists.txt"
            "${CUDALAB_ROOT}/cmake/CudalabLab.cmake"
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.building.sdk manifest --out "${CMAKE_BINARY_DIR}/manifests/${lab}_sdk.json"
            --root "${CMAKE_BINARY_DIR}" --files "${sdk_dir}/sdk.cmake"
    COMMAND_EXPAND_LISTS VERBATIM
    COMMENT "Assembling the ${lab} SDK (headers, official objects, symbol index, submission commands)")
  add_custom_target(${lab}_sdk ALL DEPENDS "${sdk_dir}/sdk.cmake")
  set_property(GLOBAL APPEND PROPERTY CUDALAB_OFFICIAL_FILES "${sdk_dir}/sdk.cmake")

  # The starter is linked as a submission is; the solution and the ladder with the baselines.
  set(binary_args INCLUDE_DIR "${sdk_dir}/include" OUTPUT_DIR "${CUDALAB_BIN_DIR}" OBJECTS ${objects} DEPENDS ${lab}_sdk)
  set(official_args INCLUDE_DIR "${sdk_dir}/include" OUTPUT_DIR "${CUDALAB_BIN_DIR}" OBJECTS ${official_objects}
                    DEPENDS ${lab}_sdk)
  if(CUDALAB_STUDENT_BUNDLE)
    cudalab_add_lab_binary(NAME ${lab}_starter SOURCE "${CUDALAB_ROOT}/starter/${lab}/${lab}.cu" ${binary_args})
    set(official ${lab}_checker ${lab}_starter)
  else()
    cudalab_add_lab_binary(NAME ${lab}_solution SOURCE "${CUDALAB_ROOT}/solutions/${lab}/${lab}.cu" ${official_args})
    cudalab_add_lab_binary(NAME ${lab}_starter SOURCE "${CUDALAB_ROOT}/starter/${lab}/${lab}.cu" ${binary_args})
    set(official ${lab}_checker ${lab}_solution ${lab}_starter)
    file(GLOB rungs CONFIGURE_DEPENDS "${CUDALAB_ROOT}/solutions/${lab}/ladder/*.cu")
    set(rung_names "")
    foreach(rung IN LISTS rungs)
      cmake_path(GET rung STEM stem)
      cudalab_add_lab_binary(NAME ${lab}_ladder_${stem} SOURCE "${rung}" ${official_args})
      list(APPEND rung_names ${lab}_ladder_${stem})
    endforeach()
    list(APPEND official ${rung_names})
  endif()
  # Each official binary records its own hash whenever it is linked (manifests/<target>.json),
  # as the SDK does when it is assembled: a build of one lab's targets alone (what the
  # grader asks for, `cmake --build ... --target vector_add_checker ...`) leaves a record of
  # everything it made. official-manifest.json gathers them all in a whole build.
  foreach(target IN LISTS official)
    set_property(GLOBAL APPEND PROPERTY CUDALAB_OFFICIAL_FILES "$<TARGET_FILE:${target}>")
    set_property(GLOBAL APPEND PROPERTY CUDALAB_OFFICIAL_TARGETS ${target})
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
              "${Python3_EXECUTABLE}" -m cudalab.building.sdk manifest --out "${CMAKE_BINARY_DIR}/manifests/${target}.json"
              --root "${CMAKE_BINARY_DIR}" --files "$<TARGET_FILE:${target}>"
      VERBATIM)
  endforeach()

  if(CUDALAB_BUILD_TESTS)
    file(GLOB cpu_tests CONFIGURE_DEPENDS "${dir}/tests/*.cpp")
    if(cpu_tests)
      cudalab_add_cpu_test(test_${lab} ${cpu_tests})
      target_link_libraries(test_${lab} PRIVATE ${lab}_reference)
    endif()
    # A lab's own GPU tests (tests/*_gpu.cu): its reference against what the GPU says.
    file(GLOB gpu_tests CONFIGURE_DEPENDS "${dir}/tests/*_gpu.cu")
    if(gpu_tests)
      cudalab_add_gpu_test(test_${lab}_gpu ${gpu_tests})
      target_link_libraries(test_${lab}_gpu PRIVATE ${lab}_reference)
    endif()
    set(bin "${CUDALAB_BIN_DIR}")
    set(checker "${bin}/${lab}_checker")
    foreach(implementation IN ITEMS ${lab}_solution ${rung_names})
      cudalab_add_labtest(${implementation}_passes GPU
        ARGS roundtrip --binary "${bin}/${implementation}" --checker "${checker}")
    endforeach()
    cudalab_add_labtest(${lab}_checker_catches_starter GPU
      ARGS roundtrip --expect-fail --binary "${bin}/${lab}_starter" --checker "${checker}")
    cudalab_add_labtest(${lab}_bench_sample_passes_the_checker GPU
      ARGS bench-roundtrip --binary "${bin}/${lab}_solution" --checker "${checker}")
    cudalab_add_labtest(${lab}_bench_skips_a_case_too_large_for_the_gpu GPU
      ARGS memory-fit --binary "${bin}/${lab}_solution")
    cudalab_add_labtest(${lab}_checker_needs_its_inputs ARGS checker-usage --checker "${checker}")
    cudalab_add_labtest(${lab}_says_the_driver_is_too_old
      ARGS driver-too-old --binary "${bin}/${lab}_solution" --fake-driver-dir "${CUDALAB_FAKE_OLD_DRIVER_DIR}")
  endif()
endfunction()

# The record of what the official build made: a SHA-256 of every official binary and
# SDK, written at build time, which the grader checks before every use.
function(cudalab_write_manifest)
  get_property(files GLOBAL PROPERTY CUDALAB_OFFICIAL_FILES)
  get_property(targets GLOBAL PROPERTY CUDALAB_OFFICIAL_TARGETS)
  set(manifest "${CMAKE_BINARY_DIR}/official-manifest.json")
  add_custom_command(
    OUTPUT "${manifest}"
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${CUDALAB_ROOT}/grader"
            "${Python3_EXECUTABLE}" -m cudalab.building.sdk manifest --out "${manifest}" --root "${CMAKE_BINARY_DIR}" --files ${files}
    DEPENDS ${targets} ${files} "${CUDALAB_ROOT}/grader/cudalab/building/sdk.py"
    COMMAND_EXPAND_LISTS VERBATIM
    COMMENT "Recording the hashes of the official binaries")
  add_custom_target(cudalab_manifest ALL DEPENDS "${manifest}")
  file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/cudalab-build.cmake" CONTENT [[
# Written by the official build.
set(CUDALAB_OFFICIAL_ARCHITECTURES "@CMAKE_CUDA_ARCHITECTURES@")
set(CUDALAB_OFFICIAL_BUILD_TYPE "@CMAKE_BUILD_TYPE@")
set(CUDALAB_OFFICIAL_LABS "@CUDALAB_LABS@")
]] @ONLY)
endfunction()
