# Run by the build (cmake -P) before a stage library of cpp/aoizora/ compiles: fails when a
# file of the stage includes a stage that is not among its dependencies (CMakeLists.txt,
# aoizora_stage), so an include that runs up the stage order fails the build.
#   -DSTAGE=hlo -DALLOWED="base;compute;topo" -DSOURCE_DIR=<cpp/aoizora> -DSTAMP=<file>
# Only lines `#include "aoizora/<stage>/..."` are read; the stage's own folder is allowed.
file(GLOB files "${SOURCE_DIR}/${STAGE}/*.h" "${SOURCE_DIR}/${STAGE}/*.cpp")
set(bad "")
foreach(f ${files})
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]aoizora/")
  foreach(line ${lines})
    string(REGEX MATCH "aoizora/([A-Za-z0-9_]+)/" _ "${line}")
    set(used "${CMAKE_MATCH_1}")
    if(NOT used STREQUAL STAGE AND NOT used IN_LIST ALLOWED)
      file(RELATIVE_PATH rel "${SOURCE_DIR}/../.." "${f}")
      string(STRIP "${line}" line)
      string(APPEND bad "  ${rel}: ${line}\n")
    endif()
  endforeach()
endforeach()
if(bad)
  string(REPLACE ";" ", " allowed_text "${ALLOWED}")
  message(FATAL_ERROR "cpp/aoizora/${STAGE}/ may include only its own folder and "
                      "${allowed_text} (CMakeLists.txt, aoizora_stage), but:\n${bad}")
endif()
file(WRITE "${STAMP}" "")
