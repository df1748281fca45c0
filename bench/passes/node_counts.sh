#!/usr/bin/env bash
# Node counts of the real-model suite (tests/models/models.txt) through the pass pipeline:
# per model, the nodes `kiln compile` starts from (the ONNX graph after loading), the
# kernels it emits with every pass on and with --passes=none, and the Transpose nodes left
# in each (counted from the per-node comments of the generated C). Models come from the
# suite's export cache (tests/models/run.sh exports what is missing; so does this script).
# Prints a markdown table and, with --write-docs, puts it into docs/passes.md between the
# node-counts markers.
# Usage: bench/passes/node_counts.sh [PATH/TO/kiln] [--write-docs]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
WRITE_DOCS="${2:-}"
PY="${KILN_PY:-/root/.cache/kiln/venv/bin/python}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# name<TAB>path<TAB>--dim options, from the suite's own list and cache (exports if missing)
"$PY" - "$ROOT/tests/models" "$WORK" >"$WORK/models.tsv" <<'PY'
import contextlib, io, pathlib, sys
sys.path.insert(0, sys.argv[1])
import run
models = run.read_models(run.HERE / "models.txt")
with contextlib.redirect_stdout(io.StringIO()):
    paths = run.ensure_models(models, run.cache_dir(), pathlib.Path(sys.argv[2]))
for m in models:
    p = paths.get(m["name"])
    if p and pathlib.Path(p).exists():
        dims = " ".join(f"--dim {d}" for d in m["dims"])
        print(f"{m['name']}\t{p}\t{dims}")
PY

count_transposes() { grep -c "/\* Transpose '" "$1" || true; }

table="$WORK/table.md"
{
    printf '| model | ONNX nodes | kernels, passes off | kernels, all passes |'
    printf ' kernels / ONNX nodes | Transposes: off -> on |\n'
    echo "|---|---:|---:|---:|---:|---:|"
    while IFS=$'\t' read -r name path dims; do
        # shellcheck disable=SC2086  # dims is a list of options
        if ! "$KILN" compile "$path" -o "$WORK/$name-on" --name m $dims >"$WORK/on.log" 2>&1 ||
            ! "$KILN" compile "$path" -o "$WORK/$name-off" --name m --passes=none $dims \
                >"$WORK/off.log" 2>&1; then
            echo "| $name | does not compile | | | | |"
            continue
        fi
        before="$(sed -n 's/.* (\([0-9]*\) before the passes).*/\1/p' "$WORK/on.log")"
        on="$(sed -n 's/.*: \([0-9]*\) nodes (.*/\1/p' "$WORK/on.log")"
        off="$(sed -n 's/.*: \([0-9]*\) nodes (.*/\1/p' "$WORK/off.log")"
        t_off="$(count_transposes "$WORK/$name-off/m.c")"
        t_on="$(count_transposes "$WORK/$name-on/m.c")"
        ratio="$(awk -v a="$on" -v b="$before" 'BEGIN { printf "%.2f", a / b }')"
        echo "| $name | $before | $off | $on | $ratio | $t_off -> $t_on |"
    done <"$WORK/models.tsv"
} >"$table"
cat "$table"

if [ "$WRITE_DOCS" = "--write-docs" ]; then
    doc="$ROOT/docs/passes.md"
    begin='<!-- node-counts:begin (bench/passes/node_counts.sh --write-docs) -->'
    end='<!-- node-counts:end -->'
    grep -qF "$begin" "$doc" || { echo "$doc: no node-counts markers" >&2; exit 1; }
    "$PY" - "$doc" "$table" "$begin" "$end" <<'PY'
import sys
doc, table, begin, end = sys.argv[1:]
text = open(doc).read()
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(doc, "w").write(head + begin + "\n" + open(table).read() + end + tail)
PY
    echo "wrote the table into $doc"
fi
