# nfdump file reader (bitarc import): seeds in fuzz/corpus/nffile are small
# files of each layout and compression (tests/ingest/nffile_gen).
ba_add_fuzzer(nffile ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_nffile.c)
