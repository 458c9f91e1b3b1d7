# Install rules: libhvcoll with hv.h / hv_mpi.h, a CMake package (find_package(hv)
# gives hv::hvcoll) and a pkg-config file (pkg-config hv).
include(CMakePackageConfigHelpers)

install(EXPORT hvTargets NAMESPACE hv:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hv)
configure_package_config_file(cmake/hvConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hvConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hv)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hvConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hvConfig.cmake ${PROJECT_BINARY_DIR}/hvConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hv)

# pkg-config: the prefix relative to the .pc file's own directory, so the install
# can be moved (and `cmake --install --prefix` works).
file(RELATIVE_PATH HV_PC_UP "/x/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/x")
configure_file(cmake/hv.pc.in ${PROJECT_BINARY_DIR}/hv.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hv.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES LICENSE README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
