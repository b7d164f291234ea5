# Turns a file into a C source that defines 'const char NAME[]' (NUL-terminated) and
# 'const unsigned long NAME_len'. Run as: cmake -DIN=file -DOUT=file.c -DNAME=sym -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* generated from ${IN}; do not edit */\n"
    "const char ${NAME}[] = {\n${bytes}0x00};\n"
    "const unsigned long ${NAME}_len = ${len};\n")
