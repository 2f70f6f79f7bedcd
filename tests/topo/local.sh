#!/bin/sh
# tests/topo/local.sh: `thermap topo --local` (docs/topology.md, "This
# machine") against a stand-in NVML (tests/fake_nvml.c, built as
# build/fakenvml/libnvidia-ml.so.1; FAKENVML names its folder) and a
# stand-in nvidia-smi (a script on PATH): there is no GPU here. hwloc
# reads the recorded 4xH200 host's XML (HWLOC_XMLFILE), whose GPUs sit at
# the bus ids the fake NVML gives its GPUs.
#  - NVML's view: GPU pairs with their own NVLinks, an NVSwitch, PCIe
#    only; the cluster and the warnings are pinned in tests/topo/expected/;
#  - the NVSwitch machine through NVML and through nvidia-smi (NVML
#    hidden or absent, not starting, without GPUs): the same cluster, one
#    line saying why nvidia-smi was asked;
#  - what no machine says (links to bus ids of no GPU, to the GPU itself,
#    to devices of no known type, seen from one end only, no PCIe path,
#    an absurd GPU count or one hwloc does not see): one line each, never
#    a crash.
#
#   sh tests/topo/local.sh            compare (part of make check)
#   sh tests/topo/local.sh --update   rewrite the expected files
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "topo local" "$@"
E=tests/topo/expected
L=${FAKENVML:-build/fakenvml}
[ -f "$L/libnvidia-ml.so.1" ] ||
	{ echo "topo local: $L/libnvidia-ml.so.1 is not built (make check builds it)"; exit 1; }
HWLOC_XMLFILE=$PWD/fixtures/h200x4-a/hwloc.xml
export HWLOC_XMLFILE
unset FAKE_NVML FAKE_NVML_GPUS FAKE_NVML_PCIE FAKE_NVML_NVLINK

# nvidia-smi as the recorded host's (topo -m: all pairs NV18) with the
# fake NVML's GPUs (tests/topo/data/fake-gpus.csv); and one that fails
mkdir -p "$W/smi" "$W/nosmi" "$W/nolib"
cat >"$W/smi/nvidia-smi" <<STUB
#!/bin/sh
case "\$*" in
"topo -m") cat "$PWD/fixtures/h200x4-a/topo-m.txt" ;;
--query-gpu=*) cat "$PWD/tests/topo/data/fake-gpus.csv" ;;
*) exit 1 ;;
esac
STUB
printf '#!/bin/sh\nexit 9\n' >"$W/nosmi/nvidia-smi"
chmod +x "$W/smi/nvidia-smi" "$W/nosmi/nvidia-smi"
SMI=$W/smi:$PATH
NOSMI=$W/nosmi:$PATH

# case NAME [VAR=VALUE...]: thermap topo --host h --local with the fake
# NVML and no nvidia-smi, its cluster, stderr and exit code pinned
case_() {
	name=$1; shift
	env LD_LIBRARY_PATH="$L" PATH="$NOSMI" "$@" "$T" topo --host h --local \
	    >"$W/c.json" 2>"$W/err"
	rc=$?
	printf '%s\n' "$rc" >"$W/rc"
	if ! pinned_run "local-$name" "topo --local $name"; then
		ok
		return
	fi
	# an error is one line; warnings are one line each, never a crash
	if [ $rc -ne 0 ] && [ "$(grep -vc '^thermap: warning: ' "$W/err")" != 1 ]; then
		bad "topo --local $name: exit $rc without one error line"
	fi
}

SW="0>S*18,1>S*18,2>S*18,3>S*18"
case_ pairs FAKE_NVML_GPUS=4 FAKE_NVML_PCIE=40 FAKE_NVML_NVLINK="0-1*4,2-3*4,0-2*2"
case_ nvswitch FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="$SW"
case_ pcie FAKE_NVML_GPUS=4 FAKE_NVML_PCIE=50
# hostile NVML
case_ stray FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="0-1*2,0>@0000:ff:00.0*3,2>@0000:00:1f.0*1"
case_ self FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="1>1*3,2-3*1"
case_ kind FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="0>?7*2,0>?255*1"
case_ badbus FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="0>@zz:00*2,0-3*1"
case_ oneway FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="0>1*4,2>3*2,3>2*1"
case_ mixed FAKE_NVML_GPUS=4 FAKE_NVML_NVLINK="0-1*4,0>S*12,1>S*12,2>S*18,3>S*6"
case_ nopath FAKE_NVML_GPUS=4 FAKE_NVML_PCIE=fail FAKE_NVML_NVLINK="0-1*2"
case_ oddpath FAKE_NVML_GPUS=4 FAKE_NVML_PCIE=77
case_ absurd FAKE_NVML_GPUS=4000000000
case_ three FAKE_NVML_GPUS=3
case_ five FAKE_NVML_GPUS=5
case_ nogpu-nosmi FAKE_NVML=nogpu
case_ nolib-nosmi LD_LIBRARY_PATH="$W/nolib"

# the NVSwitch machine: NVML, and nvidia-smi in its stead, give one cluster
nvml() { env LD_LIBRARY_PATH="$L" PATH="$SMI" FAKE_NVML_GPUS=4 \
	FAKE_NVML_NVLINK="$SW" "$@" "$T" topo --host h --local; }
nvml >"$W/nvml.json" 2>"$W/nvml.err"
for how in "nolib LD_LIBRARY_PATH=$W/nolib" "fail FAKE_NVML=fail" "nogpu FAKE_NVML=nogpu" \
           "hidden THERMAP_NO_NVML=1"; do
	# shellcheck disable=SC2086 # the words are the name and a setting
	set -- $how
	nvml "$2" >"$W/smi.json" 2>"$W/smi.err"
	rc=$?
	if [ $rc = 0 ] && cmp -s "$W/nvml.json" "$W/smi.json"; then ok
	else bad "nvswitch through nvidia-smi ($1): exit $rc, differs from NVML's"
		diff "$W/nvml.json" "$W/smi.json" | head -10; fi
	# one more line, the reason, and nothing else
	if [ "$(grep -c 'asking nvidia-smi instead$' "$W/smi.err")" = 1 ] &&
	   [ "$(grep -vc 'asking nvidia-smi instead$' "$W/smi.err")" = "$(wc -l <"$W/nvml.err")" ]
	then ok; else bad "nvswitch through nvidia-smi ($1): stderr $(cat "$W/smi.err")"; fi
done
nvml LD_LIBRARY_PATH="$W/nolib" >/dev/null 2>"$W/smi.err"
has nolib-why "$W/smi.err" "thermap: warning: host h: cannot load NVML (libnvidia-ml.so.1): libnvidia-ml.so.1: cannot open shared object file: No such file or directory; asking nvidia-smi instead"
nvml FAKE_NVML=fail >/dev/null 2>"$W/smi.err"
has fail-why "$W/smi.err" "thermap: warning: host h: NVML does not start: Driver Not Loaded; asking nvidia-smi instead"
nvml THERMAP_NO_NVML=1 >/dev/null 2>"$W/smi.err"
has hidden-why "$W/smi.err" "thermap: warning: host h: NVML not loaded: THERMAP_NO_NVML is set; asking nvidia-smi instead"

[ "$update" = --update ] && { echo "topo local: expected files rewritten"; exit 0; }
finish
