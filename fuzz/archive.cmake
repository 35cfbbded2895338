# Fuzz targets of the archive and index modules (store owner).
ba_add_fuzzer(segment_reader ${CMAKE_CURRENT_LIST_DIR}/archive/fuzz_segment_reader.c)
ba_add_fuzzer(index_reader ${CMAKE_CURRENT_LIST_DIR}/archive/fuzz_index_reader.c)
