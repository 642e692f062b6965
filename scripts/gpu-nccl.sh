# Sourced by the GPU scripts: NCCL for ranks started by hand or `--gpus 1` (one rank in this
# process): the system library, else a wheel's libnccl.so.2 behind a libnccl.so link put first
# on the library path (`--gpus N` does this itself). Needs $T, a scratch folder.
mkdir -p "$T/lib"
NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) + "/lib")' 2>/dev/null \
  || python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "nccl", "lib"))' 2>/dev/null \
  || python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
for f in "$NCCL_DIR/libnccl.so.2" $(ldconfig -p 2>/dev/null | awk '/libnccl.so.2/ {print $NF}' | head -1); do
  if [ -f "$f" ]; then ln -sf "$f" "$T/lib/libnccl.so"; echo "NCCL: $f"; break; fi
done
export LD_LIBRARY_PATH="$T/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
