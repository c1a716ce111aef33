#!/usr/bin/env bash
# Packs Rewind's GPU tests and benchmarks, with every shared library they load except libc,
# libstdc++ and libcudart, and the Open MPI runtime that runs them (mpiexec, its components,
# PMIx's), into one folder that runs on a machine with CUDA but none of our Debian packages.
#
#   scripts/gpu-bundle.sh [ARCH] [OUT]     ARCH: CUDA architectures, default 90 (H100/H200;
#                                           80 for A100); OUT: default gpu-bundle (git-ignored)
#
# Then, on the GPU machine:  tar xJf OUT.tar.xz; OUT/run-tests.sh            every GPU test, 1 and 2 ranks
#                            OUT/run-bench.sh           the issue-11 figures (bench_pde --device cuda)
#                            OUT/run.sh -n 2 PROGRAM ARGS one program under mpiexec
# The programs link librewind only (not the PETSc-linked apps, whose libraries alone exceed
# what a bundle may carry). cuBLAS (the neural ODE's products) is not packed either: librewind
# loads it at the first matrix product, and run.sh finds the GPU machine's own (CUDA's lib64,
# or a Python environment's nvidia-cublas package).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
out=${2:-gpu-bundle}
build=build/gpu-sm$arch
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "gpu-bundle: no nvcc (CUDA toolkit) on this machine" >&2; exit 1; }
scripts/deps.sh >/dev/null
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DREWIND_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
programs=(tests/mpi/test_device tests/unit/test_cuda tests/bench/bench_pde tests/bench/bench_node)
cmake --build "$build" -j "$(nproc)" --target test_device test_cuda bench_pde bench_node >/dev/null

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/pmix"
for p in "${programs[@]}"; do cp "$build/$p" "$out/bin/"; done

# The Open MPI runtime, laid out as its prefix (/usr) so OPAL_PREFIX relocates it.
mpilib=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libmpi\.so\.40 .*x86-64/{print $NF; exit}')")")
pkglib=$(ompi_info --path pkglibdir --parsable 2>/dev/null | awk -F: '{print $NF}')
pkglib=${pkglib:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
mkdir -p "$out/ompi/bin" "$out/ompi${pkglib#/usr}" "$out/ompi/share"
cp "$(readlink -f "$(command -v orterun)")" "$out/ompi/bin/orterun"
cp "$(readlink -f "$(command -v orted)")" "$out/ompi/bin/orted"
cp -r /usr/share/openmpi "$out/ompi/share/"
# components: the shared-memory and self transports and what a single node needs; the
# network ones (verbs, UCX, libfabric) would pull in hundreds of MB of fabric libraries.
for so in "$pkglib"/mca_*.so; do
  case $(basename "$so") in
    *ucx* | *ofi* | *openib* | *verbs* | *psm* | *portals* | *usnic* | *java*) continue ;;
  esac
  cp "$so" "$out/ompi${pkglib#/usr}/"
done
pmixlib=$(ls -d /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix 2>/dev/null || true)
[ -n "$pmixlib" ] && cp "$pmixlib"/*.so "$out/pmix/"

# Every library the binaries and plugins load, except the C runtime, libstdc++ and libcudart
# (the GPU machine's own). Found with ldd on this machine's paths.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so|libcudart\.so|libcuda\.so)'
objs=("$out"/bin/* "$out"/ompi/bin/* "$out/ompi${pkglib#/usr}"/*.so "$out"/pmix/*.so)
ldd "${objs[@]}" 2>/dev/null | awk '/=> \//{print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done
# libraries that Open MPI opens by name at run time
for extra in "$mpilib"/libmca_common_sm.so.* "$mpilib"/libmca_common_monitoring.so.* \
  "$mpilib"/libmca_common_ompio.so.*; do
  [ -e "$extra" ] && cp -L "$extra" "$out/lib/$(basename "$extra" | sed 's/\(\.so\.[0-9]*\).*/\1/')"
done

cat >"$out/run.sh" <<'EOF'
#!/bin/sh
# Runs one bundled program under the bundled mpiexec: run.sh [-n NP] PROGRAM [ARGS...]
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$here/ompi" PMIX_MCA_mca_base_component_path="$here/pmix"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
# cuBLAS, loaded by name at the first matrix product: the machine's own copy
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.@CUMAJ@ '; then
  cub=$(find /usr/local /opt /usr/lib -name 'libcublas.so.@CUMAJ@*' 2>/dev/null | head -n 1)
  [ -n "$cub" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$cub")"
fi
np=1
if [ "${1:-}" = -n ]; then np=$2; shift 2; fi
prog=$1
shift
exec "$here/ompi/bin/orterun" -n "$np" "$here/bin/$prog" "$@"
EOF
# the cuBLAS major version librewind asks for: the toolkit's it was built with
cumaj=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
sed -i "s/@CUMAJ@/${cumaj:-13}/g" "$out/run.sh"
cat >"$out/run-tests.sh" <<'EOF'
#!/bin/sh
# Every bundled GPU test, as ctest runs them: exit 0 passed, 77 skipped (with the reason).
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0 skip=0
run() {
  echo "=== $*"
  "$here/run.sh" "$@"
  rc=$?
  case $rc in 0) pass=$((pass + 1)) ;; 77) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
  echo "=== exit $rc"
}
run -n 1 test_cuda
run -n 1 test_device cuda
run -n 2 test_device cuda
run -n 1 test_device emulated
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
EOF
cat >"$out/run-bench.sh" <<'EOF'
#!/bin/sh
# The issue-11 figures on one GPU: Gray-Scott 2048^2 RK4 stage roofline (forward and adjoint
# step against a device-to-device copy), then the whole gradient of 10^4 steps under binomial
# checkpointing in device memory (200 slots of 64 MiB), and under three tiers (device, host,
# disk), 1 rank; the same roofline on 2 ranks;
# the heat 256^3 roofline.
here=$(cd "$(dirname "$0")" && pwd)
"$here/run.sh" -n 1 bench_pde --problem grayscott --n 2048 --stage 20 --device cuda
"$here/run.sh" -n 1 bench_pde --problem grayscott --n 2048 --steps 10000 --slots 200 \
  --max-store-bytes 1GiB --device cuda
# The three-tier budget: 50 device slots, 400 page-locked host slots (25 GiB) and 200 disk
# slots (12.5 GiB of HDF5 files), copy and disk costs measured at start-up.
ck=$(mktemp -d "${TMPDIR:-/tmp}/rewind-bench-XXXXXX")
"$here/run.sh" -n 1 bench_pde --problem grayscott --n 2048 --steps 10000 --slots 50 \
  --host-slots 400 --disk-slots 200 --checkpoint-dir "$ck" --max-store-bytes 1GiB --device cuda
rm -rf "$ck"
# What overlapping the host tier's copies gains: device + host tiers, asynchronous copies
# (staging, read-ahead) and then synchronous ones, same schedule.
for sync in 0 1; do
  "$here/run.sh" -n 1 bench_pde --problem grayscott --n 2048 --steps 2000 --slots 12 \
    --host-slots 60 --host-sync $sync --max-store-bytes 1GiB --device cuda
done
# What overlapping the disk tier's copies from the device gains: device + disk tiers, the
# copies through a device staging snapshot and then synchronous, same schedule.
for sync in 0 1; do
  ck=$(mktemp -d "${TMPDIR:-/tmp}/rewind-bench-XXXXXX")
  "$here/run.sh" -n 1 bench_pde --problem grayscott --n 2048 --steps 2000 --slots 12 \
    --disk-slots 40 --disk-sync $sync --checkpoint-dir "$ck" --max-store-bytes 1GiB --device cuda
  rm -rf "$ck"
done
# The neural ODE's MLP through cuBLAS: P0's shape (batch 256, 1000 steps), then batches large
# enough to fill the GPU, each against the CPU (one BLAS thread) in the same program.
"$here/run.sh" -n 1 bench_node --steps 1000 --device cuda
"$here/run.sh" -n 1 bench_node --steps 1000 --slots 32 --device cuda
"$here/run.sh" -n 1 bench_node --batch 16384 --steps 100 --repeat 2 --device cuda
"$here/run.sh" -n 1 bench_node --batch 65536 --width 256 --steps 20 --repeat 2 --device cuda
"$here/run.sh" -n 2 bench_pde --problem grayscott --n 2048 --stage 20 --device cuda
"$here/run.sh" -n 1 bench_pde --problem heat3d --n 256 --stage 10 --device cuda
EOF
chmod +x "$out/run.sh" "$out/run-tests.sh" "$out/run-bench.sh"
# One compressed file as well: the folder is above what a device run may carry (64 MiB), the
# archive about 15 MB. On the device: tar xJf gpu-bundle.tar.xz && gpu-bundle/run-tests.sh
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
echo "gpu-bundle: $out ($(du -sh "$out" | cut -f1)) and $out.tar.xz ($(du -sh "$out.tar.xz" | cut -f1)), built for sm_$arch from $build"
