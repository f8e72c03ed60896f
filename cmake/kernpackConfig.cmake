# CMake package configuration for kernpack, installed by
# `cargo cinstall --prefix PREFIX --libdir lib` to PREFIX/share/cmake/kernpack/
# (source: cmake/kernpackConfig.cmake in the kernpack repository).
#
#   find_package(kernpack 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE kernpack::kernpack)         # libkernpack.so
#   target_link_libraries(app PRIVATE kernpack::kernpack_static)  # libkernpack.a
#
# Relocatable: every path is computed from this file's own location, so the
# installed tree may be moved or copied as a whole. Nothing is cached.
# kernpack::kernpack is the shared library, or the static one when the prefix
# holds only that (`cargo cinstall --library-type staticlib`).

# PREFIX/share/cmake/kernpack -> PREFIX
get_filename_component(_kernpack_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(_kernpack_include_dir "${_kernpack_prefix}/include/kernpack")
if(NOT EXISTS "${_kernpack_include_dir}/kernpack.h")
  set(kernpack_FOUND FALSE)
  set(kernpack_NOT_FOUND_MESSAGE
      "kernpack.h is not in ${_kernpack_include_dir}: this config file expects PREFIX/share/cmake/kernpack/ and PREFIX/include/kernpack/kernpack.h")
  unset(_kernpack_prefix)
  unset(_kernpack_include_dir)
  return()
endif()

# cargo-c's default libdir is lib/<multiarch> on Debian-like systems and
# lib64 on some others; `--libdir lib` gives lib.
set(_kernpack_lib_dirs "${_kernpack_prefix}/lib")
if(CMAKE_LIBRARY_ARCHITECTURE)
  list(INSERT _kernpack_lib_dirs 0 "${_kernpack_prefix}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()
list(APPEND _kernpack_lib_dirs "${_kernpack_prefix}/lib64")

set(_kernpack_shared "")
set(_kernpack_static "")
foreach(_kernpack_dir IN LISTS _kernpack_lib_dirs)
  set(_kernpack_so "${_kernpack_dir}/${CMAKE_SHARED_LIBRARY_PREFIX}kernpack${CMAKE_SHARED_LIBRARY_SUFFIX}")
  set(_kernpack_a "${_kernpack_dir}/${CMAKE_STATIC_LIBRARY_PREFIX}kernpack${CMAKE_STATIC_LIBRARY_SUFFIX}")
  if(NOT _kernpack_shared AND EXISTS "${_kernpack_so}")
    set(_kernpack_shared "${_kernpack_so}")
  endif()
  if(NOT _kernpack_static AND EXISTS "${_kernpack_a}")
    set(_kernpack_static "${_kernpack_a}")
  endif()
endforeach()

if(NOT _kernpack_shared AND NOT _kernpack_static)
  set(kernpack_FOUND FALSE)
  set(kernpack_NOT_FOUND_MESSAGE "no libkernpack in any of: ${_kernpack_lib_dirs}")
else()
  if(_kernpack_shared AND NOT TARGET kernpack::kernpack_shared)
    add_library(kernpack::kernpack_shared SHARED IMPORTED)
    set_target_properties(kernpack::kernpack_shared PROPERTIES
      IMPORTED_LOCATION "${_kernpack_shared}"
      INTERFACE_INCLUDE_DIRECTORIES "${_kernpack_include_dir}")
  endif()

  if(_kernpack_static AND NOT TARGET kernpack::kernpack_static)
    add_library(kernpack::kernpack_static STATIC IMPORTED)
    # What a Rust staticlib needs besides itself (Rust's std; kernpack links
    # nothing native, libcuda is opened at run time): the `Libs.private` of
    # kernpack.pc, which cargo-c takes from rustc's `--print native-static-libs`.
    # Only linux-gnu is verified (scripts/test-c-install.sh); elsewhere take
    # the list from `pkg-config --static --libs kernpack`.
    if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
      set(_kernpack_native dl gcc_s util rt pthread m dl c)
    else()
      set(_kernpack_native "")
    endif()
    set_target_properties(kernpack::kernpack_static PROPERTIES
      IMPORTED_LOCATION "${_kernpack_static}"
      IMPORTED_LINK_INTERFACE_LANGUAGES "C"
      INTERFACE_INCLUDE_DIRECTORIES "${_kernpack_include_dir}"
      INTERFACE_LINK_LIBRARIES "${_kernpack_native}")
    unset(_kernpack_native)
  endif()

  if(NOT TARGET kernpack::kernpack)
    add_library(kernpack::kernpack INTERFACE IMPORTED)
    if(TARGET kernpack::kernpack_shared)
      set_target_properties(kernpack::kernpack PROPERTIES
        INTERFACE_LINK_LIBRARIES kernpack::kernpack_shared)
    else()
      set_target_properties(kernpack::kernpack PROPERTIES
        INTERFACE_LINK_LIBRARIES kernpack::kernpack_static)
    endif()
  endif()

  set(kernpack_INCLUDE_DIRS "${_kernpack_include_dir}")
  set(kernpack_LIBRARIES kernpack::kernpack)
endif()

unset(_kernpack_prefix)
unset(_kernpack_include_dir)
unset(_kernpack_lib_dirs)
unset(_kernpack_dir)
unset(_kernpack_so)
unset(_kernpack_a)
unset(_kernpack_shared)
unset(_kernpack_static)
