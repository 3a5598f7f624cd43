# Sourced by the scripts that run on the GPU host: NVRTC from the CUDA
# toolkit, and cuDNN 9 for the library alternative (the system's, else
# PyTorch's copy).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
if ! ldconfig -p | grep -q libcudnn.so.9; then
  d=$(python3 -c "import nvidia.cudnn as c, os; print(os.path.join(list(c.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$d" ] && export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
fi
# Inductor's max-autotune precompiles its Triton choices on this many
# threads (recorded in results.json's env). Its templates' Triton choices
# are compiled one at a time inside the autotuning benchmark whatever this
# says (bench/README.md, "Max-autotune's compile time").
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-$(nproc)}
