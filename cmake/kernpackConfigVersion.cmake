# Version check for find_package(kernpack <version>), installed beside
# kernpackConfig.cmake. The version is read from the installed header's
# KP_VERSION, which a unit test holds equal to the crate version, so this file
# never needs editing on a release.
#
# Compatibility follows the shared library's SONAME (libkernpack.so.<major>):
# any installed version with the requested major version and at least the
# requested version is accepted.

get_filename_component(_kernpack_header
  "${CMAKE_CURRENT_LIST_DIR}/../../../include/kernpack/kernpack.h" ABSOLUTE)
set(PACKAGE_VERSION "")
if(EXISTS "${_kernpack_header}")
  file(STRINGS "${_kernpack_header}" _kernpack_line
    REGEX "^#define KP_VERSION \"[0-9]+\\.[0-9]+\\.[0-9]+")
  string(REGEX REPLACE "^#define KP_VERSION \"([^\"]+)\".*$" "\\1"
    PACKAGE_VERSION "${_kernpack_line}")
endif()

if(PACKAGE_VERSION STREQUAL "")
  # No readable header: the package is unusable (kernpackConfig.cmake says why).
  set(PACKAGE_VERSION "0.0.0")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  string(REGEX MATCH "^[0-9]+" _kernpack_major "${PACKAGE_VERSION}")
  if(PACKAGE_FIND_VERSION_MAJOR STREQUAL _kernpack_major)
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

unset(_kernpack_header)
unset(_kernpack_line)
unset(_kernpack_major)
