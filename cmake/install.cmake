# Installation: header, both libraries, pkg-config file, CMake package, the qmdb tool and the
# man pages. `cmake --install <build> --prefix P` relocates everything: qmdb.pc finds its
# prefix from its own directory and the CMake package uses relative paths.
include(CMakePackageConfigHelpers)

install(FILES ${PROJECT_SOURCE_DIR}/include/qmdb.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS qmdb_shared qmdb_lib EXPORT qmdbTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS qmdb_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/man/qmdb.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/man/qmdb.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)

set(QMDB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qmdb)
install(EXPORT qmdbTargets NAMESPACE qmdb:: DESTINATION ${QMDB_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qmdbConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/qmdbConfig.cmake
                              INSTALL_DESTINATION ${QMDB_CMAKE_DIR})
# 0.x: a minor release may change the API, so only the same major.minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qmdbConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qmdbConfig.cmake ${PROJECT_BINARY_DIR}/qmdbConfigVersion.cmake
        DESTINATION ${QMDB_CMAKE_DIR})

# pkg-config: prefix relative to the .pc file, so an install under any --prefix works.
set(QMDB_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH QMDB_PC_TO_PREFIX /p/${QMDB_PC_DIR} /p)
string(REGEX REPLACE "/$" "" QMDB_PC_TO_PREFIX "${QMDB_PC_TO_PREFIX}")
if(URING_FOUND)
  set(QMDB_PC_REQUIRES_PRIVATE "liburing")
else()
  set(QMDB_PC_REQUIRES_PRIVATE "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/qmdb.pc.in ${PROJECT_BINARY_DIR}/qmdb.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/qmdb.pc DESTINATION ${QMDB_PC_DIR})
