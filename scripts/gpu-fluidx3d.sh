#!/usr/bin/env bash
# FluidX3D's own benchmark beside ours, on the GPU machine, from the repository root:
#   bash scripts/gpu-fluidx3d.sh        # needs FluidX3D's tree in .fx3d/src (git-excluded): carry: [".fx3d"]
# Per variant (D3Q27 SRT with FP32, FP16S, FP16C storage) it copies .fx3d/src to /tmp/fx3d-*, sets the
# defines with sed (BENCHMARK, 256^3 box, 10000 steps as upstream), builds with g++ and runs it.
# Prints: the device, the OpenCL set-up (ICD files, loaders, a probe of each loader), FluidX3D's
# "Peak MLUPs/s" and the run's average per variant, and a summary. Log: $OUT/log-fluidx3d.txt
# (OUT defaults to gpu-logs). Knobs: FX3D_VARIANTS, FX3D_N, FX3D_ITERS, FX3D_OPT, FX3D_JOBS,
# FX3D_TIMEOUT, FX3D_DEVICE, FX3D_LOADER, FX3D_ICD_LIB, FX3D_BUILD_ONLY=1 (compile and link only).
set -u -o pipefail
REPO=$(pwd)
SRC=$REPO/${FX3D_SRC:-.fx3d/src}
LOG=${OUT:-gpu-logs}
mkdir -p "$LOG" && LOG=$(cd "$LOG" && pwd)
VARIANTS=${FX3D_VARIANTS:-fp32 fp16s fp16c}
N=${FX3D_N:-256}
ITERS=${FX3D_ITERS:-}              # empty: upstream's 1000 x 10 steps
OPT=${FX3D_OPT:--O3}
JOBS=${FX3D_JOBS:-$(nproc)}
TMO=${FX3D_TIMEOUT:-110}
section() { echo; echo "=== $* ($(date +%T)) ==="; }
ldc() { { command -v ldconfig >/dev/null && ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null; }

main() {
status=0
section "FluidX3D device"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 || echo "(nvidia-smi failed)"
echo "FluidX3D commit: $(cat "$SRC/../COMMIT" 2>/dev/null || echo unknown)"
echo "g++: $(g++ --version 2>/dev/null | head -1)"
[ -f "$SRC/src/defines.hpp" ] || { echo "no $SRC/src/defines.hpp: carry .fx3d with the call"; return 1; }
WORK=$(mktemp -d /tmp/fx3d-XXXXXX)
echo "scratch: $WORK"

section "OpenCL set-up"
if command -v clinfo >/dev/null; then timeout 30 clinfo -l 2>&1 | head -20; else echo "clinfo: not installed"; fi
if ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
  for f in /etc/OpenCL/vendors/*.icd; do echo "ICD file $f -> $(head -c 200 "$f")"; done
else echo "ICD files: none in /etc/OpenCL/vendors"; fi
echo "ldconfig -p | grep -i opencl:"; ldc | grep -i opencl | sed 's/^/  /'
local libdirs="${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /lib/x86_64-linux-gnu /usr/lib"
DRV=""   # NVIDIA's OpenCL driver (the ICD the loader opens); FX3D_ICD_LIB overrides the search
for f in ${FX3D_ICD_LIB:-} $(ldc | awk '/libnvidia-opencl\.so/ {print $NF}') \
         $(for d in $libdirs; do ls "$d"/libnvidia-opencl.so* 2>/dev/null; done); do
  [ -e "$f" ] && { DRV=$f; break; }
done
echo "NVIDIA OpenCL driver: ${DRV:-NOT FOUND}"
if [ -z "$DRV" ]; then
  cu=$(ldc | awk '/libcuda\.so\.1/ {print $NF; exit}')
  [ -n "$cu" ] && { echo "libcuda.so.1 is $cu; nvidia libraries beside it:"; ls "$(dirname "$cu")" | grep -i nvidia | head -30 | sed 's/^/  /'; }
fi
# loaders (libOpenCL.so.1), each "label path"
LOADERS=()
local seen=" "
addl() { local r; r=$(readlink -f "$2" 2>/dev/null) || return; [ -e "$r" ] || return
         case "$seen" in *" $r "*) return;; esac; seen="$seen$r "; LOADERS+=("$1 $2"); }
[ -n "${FX3D_LOADER:-}" ] && addl env "$FX3D_LOADER"
for f in $(ldc | awk '/libOpenCL\.so\.1 / {print $NF}'); do addl system "$f"; done
for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do addl ld_library_path "$d/libOpenCL.so.1"; done
for f in /usr/local/cuda/lib64/libOpenCL.so.1 /usr/local/cuda/targets/x86_64-linux/lib/libOpenCL.so.1 \
         /usr/local/cuda-*/targets/x86_64-linux/lib/libOpenCL.so.1; do addl cuda "$f"; done
mkdir -p "$WORK/shipped" && cp "$SRC/src/OpenCL/lib/libOpenCL.so" "$WORK/shipped/libOpenCL.so.1" \
  && addl fluidx3d-shipped "$WORK/shipped/libOpenCL.so.1"   # a Khronos ICD loader (reads OPENCL_VENDOR_PATH)
[ -n "$DRV" ] && addl direct-driver "$DRV"
echo "loaders to try:"; for l in "${LOADERS[@]}"; do echo "  $l"; done
# our own vendors dir, naming the driver by its full path
mkdir -p "$WORK/vendors"; [ -n "$DRV" ] && echo "$DRV" > "$WORK/vendors/nvidia.icd"

section "OpenCL probe (our own small program: dlopen the loader, list platforms and devices)"
write_probe > "$WORK/probe.cpp"
g++ -O1 -o "$WORK/probe" "$WORK/probe.cpp" -ldl 2>&1 | tail -5
CHOSEN=""; CHOSEN_ENV=""; PROBE_OK=0
if [ -x "$WORK/probe" ]; then
  if [ -n "$DRV" ]; then
    echo "-- driver alone, through its ICD entry point (no loader): $DRV"
    timeout 30 "$WORK/probe" "$DRV" icd 2>&1 | sed 's/^/   /'
  fi
  local icdenv="OCL_ICD_VENDORS=$WORK/vendors OPENCL_VENDOR_PATH=$WORK/vendors"
  for l in "${LOADERS[@]}"; do
    lab=${l%% *}; lib=${l#* }
    envs=("")
    [ "$lab" != direct-driver ] && [ -n "$DRV" ] && envs+=("$icdenv" "$icdenv OCL_ICD_FILENAMES=$DRV")
    for e in "${envs[@]}"; do
      echo "-- loader $lab ($lib), env: ${e:-as is}"
      timeout 30 env $e "$WORK/probe" "$lib" 2>&1 | sed 's/^/   /'
      if [ "${PIPESTATUS[0]}" = 0 ] && [ -z "$CHOSEN" ]; then CHOSEN=$l; CHOSEN_ENV=$e; break 2; fi
    done
  done
else echo "probe did not build"; fi
if [ -n "$CHOSEN" ]; then PROBE_OK=1; echo "USING loader ${CHOSEN%% *} (${CHOSEN#* }), env: ${CHOSEN_ENV:-as is}"
else
  echo "NO loader/ICD combination listed a device; FluidX3D will be linked against ${LOADERS[0]:-nothing} and run once for its own message"
  CHOSEN=${LOADERS[0]:-}; CHOSEN_ENV=${DRV:+OCL_ICD_VENDORS=$WORK/vendors OPENCL_VENDOR_PATH=$WORK/vendors}; status=1
fi

section "FluidX3D build (${OPT}, ${JOBS} jobs): variants $VARIANTS"
local t0=$SECONDS
mkdir -p "$WORK/common"
local ok=""
for v in $VARIANTS; do
  mkdir -p "$WORK/$v" && cp -r "$SRC/." "$WORK/$v/" && edit_variant "$WORK/$v" "$v" && ok="$ok $v" \
    || { echo "$v: edit failed, variant dropped"; status=1; }
done
VARIANTS=${ok# }; [ -n "$VARIANTS" ] || return 1
# kernel.cpp, lodepng.cpp, shapes.cpp don't include defines.hpp: built once
local first; first=$(set -- $VARIANTS; echo "$1")
for f in kernel lodepng shapes; do cc1 "$WORK/$first" "$f" "$WORK/common/$f.o"; done
for v in $VARIANTS; do for f in graphics info lbm main setup; do cc1 "$WORK/$v" "$f" "$WORK/$v/$f.o"; done; done
wait
local bad=0
for e in "$WORK"/*/*.rc; do
  [ "$(cat "$e")" = 0 ] || { bad=1; echo "compile FAILED: ${e%.rc}"; tail -20 "${e%.rc}.err"; }
done
echo "compiled in $((SECONDS - t0)) s"
[ $bad = 0 ] || return 1
local lib=${CHOSEN#* }
for v in $VARIANTS; do
  if g++ "$WORK/$v"/*.o "$WORK"/common/*.o -o "$WORK/$v/FluidX3D" -pthread "$lib" -Wl,-rpath,"$(dirname "$lib")" \
       > "$WORK/$v/link.err" 2>&1; then
    echo "$v: linked against $lib; ldd: $(ldd "$WORK/$v/FluidX3D" | grep -i opencl | xargs)"
  else echo "$v: LINK FAILED against $lib:"; head -8 "$WORK/$v/link.err"; status=1; fi
done
[ "${FX3D_BUILD_ONLY:-0}" = 1 ] && { echo "FX3D_BUILD_ONLY=1: not running"; return $status; }

declare -A PEAK AVG WALL
for v in $VARIANTS; do
  [ -x "$WORK/$v/FluidX3D" ] || continue
  section "FluidX3D $v: $(active_defines "$WORK/$v") box ${N}^3 (timeout ${TMO} s)"
  local raw="$LOG/fluidx3d-$v.txt" t1=$SECONDS
  ( cd "$WORK/$v" && timeout -k 5 "$TMO" env $CHOSEN_ENV stdbuf -o0 ./FluidX3D ${FX3D_DEVICE:-} ) 2>&1 \
    | tr '\r' '\n' | sed -E 's/\x1b\[[0-9;]*m//g' > "$raw"
  local rc=${PIPESTATUS[0]}; WALL[$v]=$((SECONDS - t1))
  grep -E '^\| (Device (Name|Driver)|OpenCL Version|Grid Resolution|LBM Type|Memory Usage|Time Steps) ' "$raw" | sort -u
  grep -E 'Error|Warning|OpenCL C code|No OpenCL' "$raw" | head -10
  grep -E '^\|[[:space:]]*[0-9]+ \|[[:space:]]*[0-9]+ GB/s \|' "$raw" | tail -2
  grep -E 'MLUPs/s = [0-9]+' "$raw"
  PEAK[$v]=$(grep -oE 'Peak MLUPs/s = [0-9]+' "$raw" | grep -oE '[0-9]+$' | tail -1)
  AVG[$v]=$(grep -oE 'Average MLUPs/s = [0-9]+' "$raw" | grep -oE '[0-9]+$' | tail -1)
  echo "$v: exit $rc, ${WALL[$v]} s wall (full output: $raw)"
  [ "$rc" = 0 ] && [ -n "${PEAK[$v]}" ] || { status=1; [ -n "${PEAK[$v]}" ] || tail -25 "$raw"; }
  [ $PROBE_OK = 1 ] || { echo "(no device found by the probe: other variants skipped)"; break; }
done

section "FluidX3D summary (D3Q27 SRT, ${N}^3, MLUPs/s; peak = FluidX3D's own figure, avg = all steps)"
printf '%-6s %10s %10s %8s\n' variant peak avg wall_s
for v in $VARIANTS; do printf '%-6s %10s %10s %8s\n' "$v" "${PEAK[$v]:--}" "${AVG[$v]:--}" "${WALL[$v]:--}"; done
[ "${FX3D_KEEP:-0}" = 1 ] || rm -rf "$WORK"
return $status
}

# compile one FluidX3D source file in the background (at most $JOBS at once); rc and stderr beside the .o
cc1() {
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  ( cd "$1" && g++ $OPT -std=c++17 -pthread -Wno-comment -I./src/OpenCL/include -c "src/$2.cpp" -o "$3" \
      2> "$3.err"; echo $? > "$3.rc" ) &
}

# set the defines of one variant in its copy; fails unless the result is exactly what we asked for
edit_variant() {
  local d=$1/src/defines.hpp s=$1/src/setup.cpp
  sed -i -E \
    -e 's@^[[:space:]]*#define (D2Q9|D3Q15|D3Q19|TRT|FP16S|FP16C|INTERACTIVE_GRAPHICS|INTERACTIVE_GRAPHICS_ASCII|GRAPHICS)([[:space:]]+//)@//#define \1\2@' \
    -e 's@^//[[:space:]]*#define (D3Q27|SRT|BENCHMARK)([[:space:]]+//)@#define \1\2@' "$d"
  case $2 in   # (the option lines all carry a trailing // comment; derived defines further down don't)
    fp16s) sed -i -E 's@^//[[:space:]]*#define FP16S([[:space:]]+//)@#define FP16S\1@' "$d" ;;
    fp16c) sed -i -E 's@^//[[:space:]]*#define FP16C([[:space:]]+//)@#define FP16C\1@' "$d" ;;
    fp32) ;;
    *) echo "unknown variant $2"; return 1 ;;
  esac
  # the benchmark's box (upstream: 256^3), an optional step count, and one extra line printing the average
  sed -i -E '/^#ifdef BENCHMARK/,/^#endif \/\/ BENCHMARK/{
    s@^([[:space:]]*)LBM lbm\([0-9]+u, [0-9]+u, [0-9]+u, 1\.0f\);@\1LBM lbm('"$N"'u, '"$N"'u, '"$N"'u, 1.0f);@
    s@^([[:space:]]*)\} // make lbm object go out of scope@\1\tprint_info("Average MLUPs/s = "+to_string(to_uint(1E-6*(double)lbm.get_N()*(double)lbm.get_t()/info.runtime_lbm))); // added by gpu-fluidx3d.sh\n&@
  }' "$s"
  [ -n "$ITERS" ] && sed -i -E '/^#ifdef BENCHMARK/,/^#endif \/\/ BENCHMARK/{ s@i<1000u; i\+\+@i<'"$ITERS"'u; i++@; s@1000u\*10u@'"$ITERS"'u*10u@; }' "$s"
  local want="D3Q27 SRT $( [ "$2" = fp32 ] || echo "${2^^} ")BENCHMARK" got
  got=$(active_defines "$1")
  [ "$got" = "$want" ] || { echo "$2: defines are '$got', wanted '$want'"; return 1; }
  [ "$(sed -n '/^#ifdef BENCHMARK/,/^#endif/p' "$s" | grep -cE "^[[:space:]]*LBM lbm\(${N}u, ${N}u, ${N}u, 1\.0f\);")" = 1 ] \
    || { echo "$2: benchmark box not set to ${N}^3 in setup.cpp"; return 1; }
  grep -q 'added by gpu-fluidx3d.sh' "$s" || { echo "$2: average line not added"; return 1; }
  echo "$2: defines $got; box ${N}^3; steps $( [ -n "$ITERS" ] && echo "$ITERS x 10" || echo "upstream (1000 x 10)")"
}
active_defines() {
  grep -oE '^#define (D2Q9|D3Q15|D3Q19|D3Q27|SRT|TRT|FP16S|FP16C|BENCHMARK|INTERACTIVE_GRAPHICS|INTERACTIVE_GRAPHICS_ASCII|GRAPHICS)[[:space:]]+//' \
    "$1/src/defines.hpp" | awk '{print $2}' | xargs
}

# our OpenCL probe: argv[1] a loader (libOpenCL.so.1) or, with argv[2]=icd, NVIDIA's driver library itself
write_probe() { cat <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
typedef int32_t I; typedef uint32_t U; typedef void* P;
typedef I (*GetPlatforms)(U, P*, U*);
typedef I (*GetInfo)(P, U, size_t, void*, size_t*);
typedef I (*GetDevices)(P, uint64_t, U, P*, U*);
typedef void* (*GetExt)(const char*);
int main(int argc, char** argv) {
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen failed: %s\n", dlerror()); return 2; }
  bool icd = argc > 2 && !strcmp(argv[2], "icd");
  GetPlatforms gp; GetInfo gpi = 0, gdi = 0; GetDevices gd = 0;
  if (icd) {
    gp = (GetPlatforms)dlsym(h, "clIcdGetPlatformIDsKHR");
    GetExt ge = (GetExt)dlsym(h, "clGetExtensionFunctionAddress");
    if (!gp && ge) gp = (GetPlatforms)ge("clIcdGetPlatformIDsKHR");
    if (!gp) { printf("no clIcdGetPlatformIDsKHR\n"); return 3; }
  } else {
    gp = (GetPlatforms)dlsym(h, "clGetPlatformIDs");
    gpi = (GetInfo)dlsym(h, "clGetPlatformInfo");
    gd = (GetDevices)dlsym(h, "clGetDeviceIDs");
    gdi = (GetInfo)dlsym(h, "clGetDeviceInfo");
    if (!gp || !gpi || !gd || !gdi) { printf("not a loader: no clGetPlatformIDs/clGetDeviceIDs exported\n"); return 3; }
  }
  P p[16]; U np = 0; I e = gp(16, p, &np);
  printf("platforms: %u (error %d)\n", np, e);
  if (e || !np) return 4;
  int total = 0;
  for (U i = 0; i < np && i < 16; i++) {
    if (icd) { void** t = *(void***)p[i]; gpi = (GetInfo)t[1]; gd = (GetDevices)t[2]; gdi = (GetInfo)t[3]; }
    char name[256] = "", ver[256] = "";
    gpi(p[i], 0x0902, sizeof name, name, 0); gpi(p[i], 0x0901, sizeof ver, ver, 0);
    P d[16]; U nd = 0; e = gd(p[i], 0xFFFFFFFFull, 16, d, &nd);
    printf("platform %u: %s, %s: %u devices (error %d)\n", i, name, ver, nd, e);
    for (U j = 0; !e && j < nd && j < 16; j++) {
      char dn[256] = "", dv[256] = ""; uint64_t mem = 0;
      gdi(d[j], 0x102B, sizeof dn, dn, 0); gdi(d[j], 0x102D, sizeof dv, dv, 0); gdi(d[j], 0x101F, sizeof mem, &mem, 0);
      printf("  device %u: %s, driver %s, %llu MB\n", j, dn, dv, (unsigned long long)(mem >> 20));
      total++;
    }
  }
  return total ? 0 : 5;
}
EOF
}

main 2>&1 | tee "$LOG/log-fluidx3d.txt"
exit "${PIPESTATUS[0]}"
