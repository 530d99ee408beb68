# Fails unless each given source file appears verbatim in the README, so that the README's code
# cannot drift from the examples that CTest builds and runs.
#   cmake -DREADME=README.md -DSOURCES="a.cu;b.cu" -P readme_sync.cmake
file(READ "${README}" readme)
foreach(source ${SOURCES})
  file(READ "${source}" code)
  string(FIND "${readme}" "${code}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${source} is not quoted verbatim in ${README}: update one from the other")
  endif()
  message(STATUS "${source} matches its copy in ${README}")
endforeach()
