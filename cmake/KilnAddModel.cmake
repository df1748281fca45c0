# kiln_add_model: compiles an ONNX model with kiln at build time into a static library.
# Installed with kiln and included by KilnConfig.cmake (find_package(Kiln)); docs/cmake.md
# is the user's page.
#
#   kiln_add_model(<target> MODEL <file.onnx>
#                  [NAME <c_identifier>]      default: the model file's name, as kiln takes it
#                  [TARGET c|cuda]            default: c
#                  [PRECISION fp32|fp16]      CUDA matrix products (kiln --precision)
#                  [INT8 <file.qparams>]      int8 with these quantization parameters
#                  [WEIGHTS bin|embed]        default: bin
#                  [DIMS <NAME=VALUE>...]     symbolic dimensions fixed (kiln --dim)
#                  [OPTIONS <arg>...]         more arguments for kiln compile, as given
#                  [DEPENDS <file>...])       more inputs that rerun kiln (external data)
#
# <target> is a STATIC library of the bundle's sources whose PUBLIC include directory holds
# <NAME>.h; it links libm (C) or cudart and cuBLASLt (CUDA). With WEIGHTS bin the bundle's
# weights file stays in the build tree: the library carries its path as the compile
# definition <NAME_UPPER>_WEIGHTS_FILE="..." (for its users too) and as the target property
# KILN_WEIGHTS_FILE; with WEIGHTS embed the weights are the const array <NAME>_weights.
#
# kiln reruns when the model, a DEPENDS file, the kiln executable or the options change:
# the options are written to a stamp file at configure time, rewritten only when they
# differ, and the command depends on it (Make does not compare command lines itself).
#
# INT8: kiln takes --int8 FILE once it can quantize; a kiln that cannot (its help does not
# list --int8) makes INT8 a configure-time error, so that no build silently drops it.
include_guard(GLOBAL)

# The name kiln gives a bundle by default: the file name up to its first dot, characters
# other than letters, digits and _ replaced by _, and an "m" before a leading digit (or an
# empty name); what cli/compile.c's name_from_path does.
function(_kiln_default_name path out)
  get_filename_component(base "${path}" NAME)
  string(FIND "${base}" "." dot)
  if(dot GREATER_EQUAL 0)
    string(SUBSTRING "${base}" 0 ${dot} base)
  endif()
  string(REGEX REPLACE "[^A-Za-z0-9_]" "_" base "${base}")
  if(base STREQUAL "" OR base MATCHES "^[0-9]")
    set(base "m${base}")
  endif()
  set(${out} "${base}" PARENT_SCOPE)
endfunction()

# Whether kiln compile takes OPTION (its help lists it).
function(_kiln_has_option kiln option out)
  execute_process(COMMAND "${kiln}" compile --help OUTPUT_VARIABLE help
                  RESULT_VARIABLE rc ERROR_QUIET)
  string(FIND "${help}" "${option}" at)
  if(rc EQUAL 0 AND at GREATER_EQUAL 0)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

function(kiln_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 K "" "MODEL;NAME;TARGET;PRECISION;INT8;WEIGHTS"
                        "DIMS;OPTIONS;DEPENDS")
  set(where "kiln_add_model(${target})")
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments: ${K_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT K_MODEL)
    message(FATAL_ERROR "${where}: MODEL <file.onnx> is required")
  endif()
  if(NOT TARGET Kiln::kiln)
    message(FATAL_ERROR "${where}: no Kiln::kiln; call find_package(Kiln) first")
  endif()
  get_target_property(kiln Kiln::kiln LOCATION)
  get_filename_component(model "${K_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "${where}: MODEL ${model} does not exist")
  endif()

  if(K_NAME)
    set(name "${K_NAME}")
    if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      message(FATAL_ERROR "${where}: NAME '${name}' is not a C identifier")
    endif()
  else()
    _kiln_default_name("${model}" name)
  endif()
  if(NOT K_TARGET)
    set(K_TARGET c)
  endif()
  if(NOT K_TARGET MATCHES "^(c|cuda)$")
    message(FATAL_ERROR "${where}: TARGET is c or cuda, not '${K_TARGET}'")
  endif()
  if(NOT K_WEIGHTS)
    set(K_WEIGHTS bin)
  endif()
  if(NOT K_WEIGHTS MATCHES "^(bin|embed)$")
    message(FATAL_ERROR "${where}: WEIGHTS is bin or embed, not '${K_WEIGHTS}'")
  endif()

  set(args compile "${model}" -o "<out>" --name "${name}" --target "${K_TARGET}"
           --weights "${K_WEIGHTS}" --quiet)
  if(K_PRECISION)
    if(NOT K_TARGET STREQUAL "cuda")
      message(FATAL_ERROR "${where}: PRECISION is for TARGET cuda")
    endif()
    list(APPEND args --precision "${K_PRECISION}")
  endif()
  set(inputs "${model}")
  if(K_INT8)
    get_filename_component(qparams "${K_INT8}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    _kiln_has_option("${kiln}" "--int8" has_int8)
    if(NOT has_int8)
      message(FATAL_ERROR "${where}: INT8 needs 'kiln compile --int8', which this kiln "
                          "(${kiln}) does not have yet: int8 compilation is not written. "
                          "Drop INT8 to build the float model.")
    endif()
    list(APPEND args --int8 "${qparams}")
    list(APPEND inputs "${qparams}")
  endif()
  foreach(dim IN LISTS K_DIMS)
    if(NOT dim MATCHES "^[^=]+=[0-9]+$")
      message(FATAL_ERROR "${where}: DIMS wants NAME=VALUE, got '${dim}'")
    endif()
    list(APPEND args --dim "${dim}")
  endforeach()
  list(APPEND args ${K_OPTIONS})
  foreach(dep IN LISTS K_DEPENDS)
    get_filename_component(dep "${dep}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND inputs "${dep}")
  endforeach()

  set(out "${CMAKE_CURRENT_BINARY_DIR}/kiln/${target}")
  list(TRANSFORM args REPLACE "^<out>$" "${out}")
  if(K_TARGET STREQUAL "cuda")
    set(sources "${out}/${name}.cu")
  else()
    set(sources "${out}/${name}.c")
  endif()
  set(weights_file "${out}/${name}_weights.bin")
  if(K_WEIGHTS STREQUAL "embed")
    list(APPEND sources "${out}/${name}_weights.c")
    set(outputs ${sources} "${out}/${name}.h")
  else()
    set(outputs ${sources} "${out}/${name}.h" "${weights_file}")
  endif()

  # the options and the kiln that takes them, for the dependency: written only when they
  # differ from the last configure's
  set(stamp "${out}.options")
  string(REPLACE ";" "\n" stamp_text "${kiln};${args}")
  set(stamp_old "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" stamp_old)
  endif()
  if(NOT stamp_old STREQUAL "${stamp_text}\n")
    file(WRITE "${stamp}" "${stamp_text}\n")
  endif()

  add_custom_command(
    OUTPUT ${outputs}
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${out}"
    COMMAND Kiln::kiln ${args}
    DEPENDS ${inputs} "${stamp}" "${kiln}"
    COMMENT "kiln compile ${K_MODEL} -> ${name} (${K_TARGET})"
    VERBATIM)

  add_library(${target} STATIC ${sources})
  target_include_directories(${target} PUBLIC "${out}")
  set_target_properties(${target} PROPERTIES KILN_BUNDLE_DIR "${out}" KILN_BUNDLE_NAME "${name}")
  if(K_TARGET STREQUAL "cuda")
    if(NOT CMAKE_CUDA_COMPILER)
      message(FATAL_ERROR "${where}: TARGET cuda needs the CUDA language: "
                          "enable_language(CUDA) (or project(... CUDA)) first")
    endif()
    find_package(CUDAToolkit REQUIRED)
    target_link_libraries(${target} PUBLIC CUDA::cudart CUDA::cublasLt)
  else()
    set_target_properties(${target} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON)
    if(NOT MSVC)
      target_link_libraries(${target} PUBLIC m)
    endif()
  endif()
  if(K_WEIGHTS STREQUAL "bin")
    string(TOUPPER "${name}" upper)
    target_compile_definitions(${target} PUBLIC "${upper}_WEIGHTS_FILE=\"${weights_file}\"")
    set_target_properties(${target} PROPERTIES KILN_WEIGHTS_FILE "${weights_file}")
  endif()
endfunction()
