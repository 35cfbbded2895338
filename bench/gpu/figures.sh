#!/usr/bin/env bash
# Reproduces IMC'13 Fig. 5 and 6 and the range-query size sweep with the
# bitarc CLI: bench/gpu/figures.sh BUILD_DIR DEVICE [ROWS]
#   DEVICE: cpu, omp or gpu (gpu needs an NVIDIA GPU and a CUDA build)
# Writes fig5-DEVICE.png, fig5-DEVICE-steps.png (Fig. 6), range-DEVICE.png and
# the tables (*.txt) in the current directory.
set -euo pipefail
build=${1:?usage: figures.sh BUILD_DIR DEVICE [ROWS]}
dev=${2:?usage: figures.sh BUILD_DIR DEVICE [ROWS]}
rows=${3:-20000000}
"$build/bitarc" bench build --device "$dev" --rows "$rows" --codecs wah32,plwah,masc \
  --cards 256,1024,4096,16384,65536 --png "fig5-$dev.png" | tee "fig5-$dev.txt"
"$build/bitarc" bench range --device "$dev" --rows "$rows" --sizes 4,8,16,32,64 \
  --png "range-$dev.png" | tee "range-$dev.txt"
