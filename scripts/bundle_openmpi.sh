#!/usr/bin/env bash
# bundle_openmpi.sh — this machine's Open MPI runtime (Debian 12's 4.1) as a relocatable folder, for
# a host that has no MPI (the lent GPU machines' image): with the MPI build of the static CPU binary
# (RS_MPI=1 scripts/build_static_cpu.sh) it lets `mpirun replayssm sweep|kl` run there, e.g. for the
# rank-scaling benchmark (scripts/bench_mpi_scaling.sh; issue 19).
#   scripts/bundle_openmpi.sh OUTDIR
# OUTDIR gets usr/bin/{orterun,orted}, usr/lib/.../openmpi (the MCA plugins that load with what the
# folder holds: shared memory, TCP and self transports, ob1; no UCX / libfabric / PSM / verbs, which
# a single host does not need), the PMIx library and plugins, the help texts, lib/ with every shared
# library these need apart from glibc and zlib, and `mpirun`, a wrapper that sets OPAL_PREFIX,
# PMIX_INSTALL_PREFIX, LD_LIBRARY_PATH and the single-host MCA choices, then runs orterun.
# Nothing is installed; the folder works from any path (Open MPI's OPAL_PREFIX relocation).
set -euo pipefail
OUT=${1:?usage: bundle_openmpi.sh OUTDIR}
A=/usr/lib/x86_64-linux-gnu
[ -x /usr/bin/orterun ] && [ -f $A/libmpi.so.40 ] || { echo "bundle_openmpi: needs openmpi-bin and libopenmpi3" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT/usr/bin" "$OUT/lib" "$OUT/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$OUT/usr/share" \
  "$OUT/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix"
cp -L /usr/bin/orterun /usr/bin/orted "$OUT/usr/bin/"
cp -r /usr/share/openmpi "$OUT/usr/share/"
cp -r $A/pmix2/share "$OUT/usr/lib/x86_64-linux-gnu/pmix2/"
cp -L $A/pmix2/lib/pmix/*.so "$OUT/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/"
# the libraries every kept piece links (transitively), except glibc's and zlib (on every image)
BASE='^(libc|libm|libdl|libpthread|librt|libz|ld-linux-x86-64)\.so'
LIBS="libmpi.so.40 libopen-rte.so.40 libopen-pal.so.40 libpmix.so.2 libmca_common_ompio.so.41 libmca_common_sm.so.40
      libmca_common_monitoring.so.50"
for l in $LIBS; do cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}' || true)" "$OUT/lib/" 2>/dev/null ||
  cp -L $A/$l "$OUT/lib/" 2>/dev/null || cp -L $A/pmix2/lib/$l "$OUT/lib/"; done
# a plugin is kept when each library it links is glibc / zlib or one of the bundle's
D=$A/openmpi/lib/openmpi3
kept=0 dropped=
for f in $D/*.so; do
  ok=1
  for dep in $(ldd "$f" | awk '/=>/ {print $1}'); do
    [[ $dep =~ $BASE ]] && continue
    case $dep in libmpi.so.40 | libopen-rte.so.40 | libopen-pal.so.40 | libpmix.so.2 | libhwloc.so.15 | libevent_core-2.1.so.7 | \
      libevent_pthreads-2.1.so.7 | libudev.so.1 | libmca_common_ompio.so.41 | libmca_common_sm.so.40 | \
      libmca_common_monitoring.so.50 | libnuma.so.1 | libuuid.so.1 | libatomic.so.1 | libmunge.so.2) ;;
    *) ok=0 ;;
    esac
  done
  if [ $ok = 1 ]; then cp -L "$f" "$OUT/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/"; kept=$((kept + 1))
  else dropped="$dropped $(basename "$f" .so)"; fi
done
# the second-level libraries of everything kept
for f in "$OUT"/lib/*.so* "$OUT"/usr/bin/* "$OUT"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
  "$OUT"/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
  ldd "$f" | awk '/=>/ {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $BASE ]] && continue
  [ -e "$OUT/lib/$name" ] || cp -L "$path" "$OUT/lib/"
done
cat > "$OUT/mpirun" <<'SH'
#!/usr/bin/env bash
# the bundled Open MPI's mpirun (scripts/bundle_openmpi.sh): relocation and single-host choices
H=$(cd "$(dirname "$0")" && pwd)
export OPAL_PREFIX=$H/usr PMIX_INSTALL_PREFIX=$H/usr/lib/x86_64-linux-gnu/pmix2
export PMIX_MCA_mca_base_component_path=$H/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
export LD_LIBRARY_PATH=$H/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$H/usr/bin:$PATH
# one host: no ssh launcher (plm isolated), shared memory + self transports, the ob1 PML
export OMPI_MCA_plm=isolated OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export PMIX_MCA_pcompress_base_silence_warning=1 OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec "$H/usr/bin/orterun" "$@"
SH
chmod +x "$OUT/mpirun"
echo "bundle_openmpi: $OUT ($(du -sh "$OUT" | cut -f1); $kept plugins kept; dropped:$dropped)"
