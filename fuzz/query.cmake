# Query module fuzz targets (owner: query).
ba_add_fuzzer(filter ${CMAKE_CURRENT_LIST_DIR}/fuzz_filter.c)
ba_add_fuzzer(filter_plan ${CMAKE_CURRENT_LIST_DIR}/fuzz_filter_plan.c)
