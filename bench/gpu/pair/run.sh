#!/usr/bin/env bash
# On the GPU machine, in the folder bench/gpu/pair/prepare.sh wrote: unpacks the weights,
# builds bb0, bb1 and pair_timing.cu with nvcc (sm_90a) and runs the timing; prints its output.
set -euo pipefail
cd "$(dirname "$0")"
for i in 0 1; do xz -dc "bb$i.weights.xz" >"bb$i/bb${i}_weights.bin" & done
nvcc -O3 -arch=sm_90a -c bb0/bb0.cu -o bb0.o &
nvcc -O3 -arch=sm_90a -c bb1/bb1.cu -o bb1.o &
nvcc -O3 -arch=sm_90a -c pair_timing.cu -o pair_timing.o &
wait
nvcc -o pair_timing pair_timing.o bb0.o bb1.o -lcublasLt -lcudart
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
./pair_timing
