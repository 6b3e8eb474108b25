# Warnings as in htop/git developer builds; -Werror under VYRE_WERROR.
set(VYRE_WARNINGS
  -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
  -Wwrite-strings -Wformat=2 -Wcast-qual -Wundef -Wpointer-arith)
if(VYRE_WERROR)
  list(APPEND VYRE_WARNINGS -Werror)
endif()

# Applied to every target of ours (not to third-party headers, which are
# included as SYSTEM directories).
function(vyre_target_defaults tgt)
  target_compile_options(${tgt} PRIVATE ${VYRE_WARNINGS})
  target_compile_definitions(${tgt} PRIVATE _GNU_SOURCE)
endfunction()

if(VYRE_SANITIZE)
  string(REPLACE "," ";" _vyre_san_list "${VYRE_SANITIZE}")
  foreach(s IN LISTS _vyre_san_list)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "VYRE_SANITIZE: unknown sanitizer '${s}' (use address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _vyre_san_list AND "address" IN_LIST _vyre_san_list)
    message(FATAL_ERROR "VYRE_SANITIZE: 'thread' cannot be combined with 'address'")
  endif()
  add_compile_options(-fsanitize=${VYRE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${VYRE_SANITIZE})
endif()
