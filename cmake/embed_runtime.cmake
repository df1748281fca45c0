# Writes OUT, a C file holding the text of every runtime file (the kernels that ship inside
# bundles), so that the kiln binary needs nothing beside itself. Run with
# cmake -DOUT=... -DFILES="a;b" -P embed_runtime.cmake
set(body "/* Generated from runtime/ by cmake/embed_runtime.cmake. */\n#include \"backend/c/cgen.h\"\n\n")
set(table "const BundleRuntimeFile bundle_runtime_files[] = {\n")
set(i 0)
string(REPLACE "|" ";" FILES "${FILES}")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME)
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
  string(APPEND body "static const char rt_file_${i}[] = {\n${hex}0};\n")
  string(APPEND table "    {\"${name}\", rt_file_${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND table "};\nconst unsigned bundle_n_runtime_files = ${i};\n")
file(WRITE ${OUT}.tmp "${body}${table}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
