# FindBLIS: the BLIS library and its blis.h, as Debian installs them (one flavour per
# threading model under <multiarch>/blis-<flavour>/) or as BLIS's own `make install` does.
# Defines BLIS_FOUND, BLIS_INCLUDE_DIR, BLIS_LIBRARY and the imported target BLIS::BLIS.
include(FindPackageHandleStandardArgs)
set(_blis_flavours blis-openmp blis-pthread blis-serial blis)
set(_blis_hints "")
foreach(_f IN LISTS _blis_flavours)
  list(APPEND _blis_hints /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/${_f} /usr/include/${_f})
endforeach()
find_path(BLIS_INCLUDE_DIR NAMES blis.h HINTS ${_blis_hints})
set(_blis_lib_hints "")
foreach(_f IN LISTS _blis_flavours)
  list(APPEND _blis_lib_hints /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/${_f})
endforeach()
find_library(BLIS_LIBRARY NAMES blis-mt blis HINTS ${_blis_lib_hints})
find_package_handle_standard_args(BLIS REQUIRED_VARS BLIS_LIBRARY BLIS_INCLUDE_DIR)
if(BLIS_FOUND AND NOT TARGET BLIS::BLIS)
  add_library(BLIS::BLIS UNKNOWN IMPORTED)
  set_target_properties(BLIS::BLIS PROPERTIES IMPORTED_LOCATION "${BLIS_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${BLIS_INCLUDE_DIR}")
endif()
mark_as_advanced(BLIS_INCLUDE_DIR BLIS_LIBRARY)
