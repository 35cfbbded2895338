# What `cmake --install` puts where. Included by the top-level CMakeLists.txt.

# bitarc.pc: the prefix is written at install time (install(CODE) below), so
# `cmake --install build --prefix P` and DESTDIR staging both give a correct
# file. Directories under the prefix stay ${prefix}-relative when they are.
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(BA_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(BA_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
# Static linking needs what the objects inside libbitarc.a use beyond the
# Requires.private packages: libdl for the device modules' and libpcap's
# loaders (dlopen), libbz2, pthreads and libm. libpcap, OpenMP and the C++
# runtime are not linked: they are loaded when a capture is read or the omp
# device is opened (src/ingest/pcap_dl.c, src/gpu/module_loader.c).
set(BA_PC_LIBS_PRIVATE "")
foreach(l ${CMAKE_DL_LIBS})
  string(APPEND BA_PC_LIBS_PRIVATE " -l${l}")
endforeach()
string(APPEND BA_PC_LIBS_PRIVATE " -lbz2 -lpthread -lm")  # libbz2 has no .pc (nfdump BZ2 files)
string(STRIP "${BA_PC_LIBS_PRIVATE}" BA_PC_LIBS_PRIVATE)
set(BA_PC_PREFIX "@BA_PC_PREFIX@") # kept for the install-time pass
configure_file(${CMAKE_SOURCE_DIR}/cmake/bitarc.pc.in ${CMAKE_BINARY_DIR}/bitarc.pc.stage @ONLY)
install(CODE "
  set(BA_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_BINARY_DIR}/bitarc.pc.stage\" \"${CMAKE_BINARY_DIR}/install/bitarc.pc\" @ONLY)
" COMPONENT dev)
install(FILES ${CMAKE_BINARY_DIR}/install/bitarc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT dev)

install(TARGETS bitarc_cli RUNTIME COMPONENT bin)
install(TARGETS bitarc_shared LIBRARY COMPONENT lib NAMELINK_COMPONENT dev)
install(TARGETS bitarc ARCHIVE COMPONENT dev)
if(TARGET bitarc_omp)
  install(TARGETS bitarc_omp LIBRARY DESTINATION ${BA_GPU_MODULE_DIR} COMPONENT lib)
endif()
if(TARGET bitarc_cuda)
  install(TARGETS bitarc_cuda LIBRARY DESTINATION ${BA_GPU_MODULE_DIR} COMPONENT gpu)
endif()
install(DIRECTORY include/bitarc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

# Collector service and retention timer (systemd), their config example, the
# service user (sysusers.d), bash completion.
foreach(u bitarc-collect@.service bitarc-expire@.service)
  configure_file(${CMAKE_SOURCE_DIR}/dist/systemd/${u}.in ${CMAKE_BINARY_DIR}/dist/${u} @ONLY)
endforeach()
set(BA_SYSTEMD_UNITDIR lib/systemd/system CACHE STRING "systemd unit folder, relative to the prefix or absolute")
install(FILES ${CMAKE_BINARY_DIR}/dist/bitarc-collect@.service ${CMAKE_BINARY_DIR}/dist/bitarc-expire@.service
  ${CMAKE_SOURCE_DIR}/dist/systemd/bitarc-expire@.timer DESTINATION ${BA_SYSTEMD_UNITDIR} COMPONENT bin)
install(FILES ${CMAKE_SOURCE_DIR}/dist/sysusers-bitarc.conf DESTINATION lib/sysusers.d RENAME bitarc.conf
  COMPONENT bin)
install(FILES ${CMAKE_SOURCE_DIR}/dist/collect.conf.example DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT bin)
install(FILES ${CMAKE_SOURCE_DIR}/dist/bitarc.bash-completion DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME bitarc COMPONENT bin)
