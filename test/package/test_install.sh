#!/usr/bin/env bash
# The installed package as a user meets it: `cmake --install` into a fresh
# prefix; the installed cuts compiles the example model (linking libmodel.so
# against the installed runtime); a C program calls model.h's functions
# through libmodel.so; examples/server builds on its own with
# find_package(cuts). Without a GPU, loading must fail cleanly
# (CUTS_ERROR_NO_DEVICE) and the server must say why and exit non-zero.
#   test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
"$tmp/prefix/bin/cuts" compile "$src/examples/models/tiny_convnet.onnx" \
  --input-shape input=1x3x32x32 --arch sm_90 -o "$tmp/out" >/dev/null
cat > "$tmp/app.c" <<'EOF'
#include "model.h"
#include <stdio.h>
int main(void) {
  cuts_model *m = NULL;
  cuts_status s = model_load(NULL, &m);
  printf("model_load: %s%s%s\n", cuts_status_name(s), s ? ": " : "",
         s ? cuts_last_error() : "");
  if (s == CUTS_OK)
    cuts_model_free(m);
  return s == CUTS_OK || s == CUTS_ERROR_NO_DEVICE ? 0 : 1;
}
EOF
cc -std=c11 -Wall -Werror "$tmp/app.c" -I"$tmp/out" -I"$tmp/prefix/include" \
  -L"$tmp/out" -lmodel -Wl,-rpath,"$tmp/out" -o "$tmp/app"
"$tmp/app"
cmake -S "$src/examples/server" -B "$tmp/server" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/server" >/dev/null
if nvidia-smi -L >/dev/null 2>&1; then
  "$tmp/server/cuts-server" "$tmp/out/model.cuts" --workers 2 --requests 50
else
  if "$tmp/server/cuts-server" "$tmp/out/model.cuts" 2>"$tmp/err"; then
    echo "cuts-server ran without a GPU"; exit 1
  fi
  grep -q "cuts-server: error:" "$tmp/err" || { cat "$tmp/err"; exit 1; }
  echo "cuts-server without a GPU: $(cat "$tmp/err")"
fi
echo "install test passed"
