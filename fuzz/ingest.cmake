# Ingest fuzz targets: flow-export decoders (datagram sequences) and captures.
ba_add_fuzzer(netflow_v5 ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_netflow_v5.c)
ba_add_fuzzer(netflow_v9 ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_netflow_v9.c)
ba_add_fuzzer(ipfix ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_ipfix.c)
ba_add_fuzzer(pcap ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_pcap.c)
ba_add_fuzzer(flow_varlen ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_flow_varlen.c)
ba_add_fuzzer(flow_options ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_flow_options.c)
ba_add_fuzzer(flow_biflow ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_flow_biflow.c)
ba_add_fuzzer(sflow ${CMAKE_CURRENT_LIST_DIR}/ingest/fuzz_sflow.c)
