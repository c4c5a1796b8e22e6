# Writes OUT, a C file defining `const char NAME[]` with the bytes of IN
# (NUL-terminated), so the binary carries tools.json without a copy of it
# in C string syntax. Run with cmake -DIN=... -DOUT=... -DNAME=... -P.
# SPDX-License-Identifier: Apache-2.0
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp" "/* Generated from ${IN} by embed.cmake. */\nextern const char ${NAME}[];\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
