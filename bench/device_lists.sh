# Sourced by the multi-GPU benchmarks: device_lists prints this host's
# lists of 2, 4 and 8 GPUs ("0,1 0,1,2,3 0,1,...,7"), nothing on one GPU.
device_lists() {
  local n g lists=""
  n=$(nvidia-smi -L | wc -l)
  for g in 2 4 8; do
    [ "$n" -ge $g ] && lists="$lists $(seq -s, 0 $((g - 1)))"
  done
  echo $lists
}
