# Writes OUT: the text of IN (cuda_host.h) as a raw string literal, so that
# HostCompile can write the header next to each kernel it builds without
# depending on the source tree at run time.
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from cuda_host.h by embed_header.cmake.\nstatic const char kCudaHostHeader[] = R\"cutshost(${text})cutshost\";\n")
