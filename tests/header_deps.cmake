# Compiles a TU that includes HEADER with the compiler's include trace (-H) and fails if it
# pulls in a standard header the core promises not to need: the I/O streams, <string>,
# <memory>, the containers that allocate, <variant>, <functional>, <algorithm>.
file(WRITE ${WORK_DIR}/header_deps.cpp "#include <${HEADER}>\n")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -H -I${INCLUDE_DIR} ${WORK_DIR}/header_deps.cpp
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE trace)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} does not compile on its own:\n${trace}")
endif()
foreach(forbidden IN ITEMS string ostream istream iostream sstream memory vector map functional variant algorithm)
  if(trace MATCHES "[/\\\\]${forbidden}\n")
    message(FATAL_ERROR "${HEADER} includes <${forbidden}>:\n${trace}")
  endif()
endforeach()
