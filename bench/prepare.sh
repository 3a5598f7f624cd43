# Sourced by the benchmarks that compile an exported model once (BIN set):
#   inflate_model WORK NAME           test/models/exported/NAME.onnx with
#                                     random weights into WORK/in/NAME
#   compile_model WORK NAME OUT FLAGS  inflated, then compiled to OUT with
#                                     FLAGS unless OUT/model.cuts exists
#                                     (the log in OUT.log; its tail and a
#                                     nonzero status where it fails)
inflate_model() {
  [ -d "$1/in/$2" ] || python3 test/models/inflate.py \
    "test/models/exported/$2.onnx" "$1/in/$2" >/dev/null
}
compile_model() {
  local w=$1 m=$2 out=$3
  shift 3
  inflate_model "$w" "$m" || return 1
  [ -f "$out/model.cuts" ] && return 0
  "$BIN/cuts" compile "$w/in/$m/$m.onnx" -o "$out" "$@" >"$out.log" 2>&1 ||
    { tail -3 "$out.log"; return 1; }
}
