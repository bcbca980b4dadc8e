#!/usr/bin/env bash
# One device check on a machine with an NVIDIA GPU (JAX with CUDA preinstalled, no network):
# the accelerator path (vmapped replicate batches, batching.default_vmap_width = None) gives the
# CPU's numbers, and how far the non-collapsing fit, its bootstrap and SVI scale on a GPU.
# Expects arviz 1.x wheels in .whl/ and the MT-Bench release in $OSCAR_DATA_DIR/xu2026/.
# Writes to $OUT (default ./gpu_out).
set -uo pipefail
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi -L; nproc
python3 -c "import jax, numpyro, optax; print('jax', jax.__version__, jax.default_backend(), jax.devices())"
MT=${OSCAR_DATA_DIR:-../shared/data}/xu2026/judge_results_10k_mtbench.json
OSCAR=(python3 -c "import sys; from oscar_jax.cli.main import main; sys.exit(main())")

echo "== 1. MT-Bench bootstrap (500 replicates, vmapped on the GPU)"
time timeout 120 "${OSCAR[@]}" bootstrap "$MT" --replicates 500 --seed 0 --format json > "$OUT/boot_gpu.json"
time JAX_PLATFORMS=cpu timeout 90 "${OSCAR[@]}" bootstrap "$MT" --replicates 500 --seed 0 --format json > "$OUT/boot_cpu.json"
python3 - "$OUT/boot_cpu.json" "$OUT/boot_gpu.json" <<'PY'
import json, sys
def nums(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            if "time" in k or "seconds" in k or k in ("versions", "command", "device", "backend"):
                continue
            yield from nums(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from nums(v, f"{path}[{i}]")
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path, float(x)
a, b = (dict(nums(json.load(open(f)))) for f in sys.argv[1:3])
common = sorted(set(a) & set(b))
diff = max((abs(a[k] - b[k]), k) for k in common)
print(f"CPU vs GPU bootstrap JSON: {len(common)} numbers, max |diff| {diff[0]:.3g} at {diff[1]}; "
      f"keys only in one: {len(set(a) ^ set(b))}")
PY
echo "== 2. MT-Bench fit"
time timeout 60 "${OSCAR[@]}" fit "$MT" --model oscar --format json > "$OUT/fit_gpu.json"
echo "== 3. tests on the GPU backend (accelerator paths)"
timeout 130 python3 -m pytest -q -p no:cacheprovider -o addopts="" -W ignore \
  tests/test_resample.py tests/test_fit.py tests/test_model.py tests/test_properties.py 2>&1 | tail -25
echo "== 4. non-collapsing fit at 1e5..1e7 records (C = 100, K = 20)"
timeout 200 python3 benchmarks/bench_scaling.py --records 100000,1000000,10000000 --base-candidates 100 \
  --judges 20 --candidates 100 --sweep-records 100000 --scipy-max 0 --repeats 3 --out-dir "$OUT" 2>&1 | tail -30
echo "== 5. SVI at 1e6 records"
timeout 80 python3 benchmarks/bench_svi.py --no-calibration --sizes 1000000 --guides normal --out "$OUT/svi_gpu.md" 2>&1 | tail -15
