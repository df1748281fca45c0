# Writes OUT, a C file defining `const char SYMBOL[]` with the text of IN, so that the kiln
# binary carries a helper script (scripts/kiln_ort.py for kiln validate) and needs nothing
# beside itself. Run with cmake -DIN=... -DOUT=... -DSYMBOL=... -P embed_text.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" hex "${hex}")
get_filename_component(name ${IN} NAME)
file(WRITE ${OUT}.tmp "/* Generated from ${name} by cmake/embed_text.cmake. */\nextern const char ${SYMBOL}[];\nconst char ${SYMBOL}[] = {\n${hex}0};\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
