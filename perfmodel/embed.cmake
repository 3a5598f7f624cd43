# Writes OUT: one raw string literal per JSON file in FILES, as
#   {"file.json", R"cutsjson(...)cutsjson"},
set(content "")
foreach(f ${FILES})
  file(READ ${f} text)
  get_filename_component(name ${f} NAME)
  string(APPEND content "{\"${name}\", R\"cutsjson(${text})cutsjson\"},\n")
endforeach()
file(WRITE ${OUT} "${content}")
