# build_commit.cmake - writes OUT with the source tree's commit and dirty flag. Run on every
# build (a custom target), it rewrites OUT only when they changed, so an unchanged tree
# recompiles nothing and a new commit recompiles one file.
execute_process(COMMAND git rev-parse HEAD WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit unknown)
  set(dirty 0)
else()
  # tracked files only: build outputs and scratch files do not make a binary 'dirty'
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
    OUTPUT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(status)
    set(dirty 1)
  else()
    set(dirty 0)
  endif()
endif()
set(text "/* generated on every build by cmake/build_commit.cmake; do not edit */
#define KT_BUILD_COMMIT \"${commit}\"
#define KT_BUILD_DIRTY ${dirty}
")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
