# Ingest fuzz targets: flow-export decoders (datagram sequences) and captures.
ba_add_fuzzer(netflow_v5 ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_netflow_v5.c)
ba_add_fuzzer(netflow_v9 ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_netflow_v9.c)
ba_add_fuzzer(ipfix ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_ipfix.c)
ba_add_fuzzer(pcap ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_pcap.c)
