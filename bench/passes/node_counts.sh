#!/usr/bin/env bash
# Node counts of the real-model suite (tests/models/models.txt) through the pass pipeline:
# per model and exporter, the nodes `kiln compile` starts from (the ONNX graph after
# loading), the kernels it emits with every pass on and with --passes=none, the Transpose
# and Gather nodes left in each (counted from the per-node comments of the generated C),
# and, for a dynamo export, the kernels of the TorchScript export of the same network.
# Models come from the suite's export caches (tests/models/run.sh exports what is missing;
# so does this script; models whose exporter venv is absent are left out).
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

# name<TAB>exporter<TAB>twin<TAB>path<TAB>--dim options, from the suite's own list and caches
# (exports what is missing; a model whose exporter venv is absent is left out). twin: the
# TorchScript export of the same network (for the dynamo exports), else "-".
"$PY" - "$ROOT/tests/models" "$WORK" >"$WORK/models.tsv" <<'PY'
import contextlib, io, pathlib, sys
sys.path.insert(0, sys.argv[1])
import run
models = run.read_models(run.HERE / "models.txt")
with contextlib.redirect_stdout(io.StringIO()):
    paths, _ = run.ensure_models(models, pathlib.Path(sys.argv[2]))
by_base = {run.source_of(m)[1]: m["name"] for m in models if m["source"] == "export"}
for m in models:
    p = paths.get(m["name"])
    if p and pathlib.Path(p).exists():
        kind, base = run.source_of(m)
        twin = by_base.get(base, "-") if kind not in (None, "export") else "-"
        dims = " ".join(f"--dim {d}" for d in m["dims"])
        print(f"{m['name']}\t{run.exporter_of(m)}\t{twin}\t{p}\t{dims}")
PY

count_op() { grep -c "/\* $2 '" "$1" || true; }

table="$WORK/table.md"
{
    printf '| model | exporter | ONNX nodes | kernels, passes off | kernels, all passes |'
    printf ' kernels / ONNX nodes | Transposes: off -> on | Gathers: off -> on |'
    printf ' TorchScript twin, all passes |\n'
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    while IFS=$'\t' read -r name exporter twin path dims; do
        # shellcheck disable=SC2086  # dims is a list of options
        if ! "$KILN" compile "$path" -o "$WORK/$name-on" --name m $dims >"$WORK/on.log" 2>&1 ||
            ! "$KILN" compile "$path" -o "$WORK/$name-off" --name m --passes=none $dims \
                >"$WORK/off.log" 2>&1; then
            echo "| $name | $exporter | does not compile | | | | | | |"
            continue
        fi
        before="$(sed -n 's/.* (\([0-9]*\) before the passes).*/\1/p' "$WORK/on.log")"
        on="$(sed -n 's/.*: \([0-9]*\) nodes (.*/\1/p' "$WORK/on.log")"
        off="$(sed -n 's/.*: \([0-9]*\) nodes (.*/\1/p' "$WORK/off.log")"
        echo "$on" >"$WORK/$name.kernels"
        t_off="$(count_op "$WORK/$name-off/m.c" Transpose)"
        t_on="$(count_op "$WORK/$name-on/m.c" Transpose)"
        g_off="$(count_op "$WORK/$name-off/m.c" Gather)"
        g_on="$(count_op "$WORK/$name-on/m.c" Gather)"
        ratio="$(awk -v a="$on" -v b="$before" 'BEGIN { printf "%.2f", a / b }')"
        twin_on="-"
        if [ "$twin" != - ] && [ -f "$WORK/$twin.kernels" ]; then
            twin_on="$(cat "$WORK/$twin.kernels") ($twin)"
        fi
        echo "| $name | $exporter | $before | $off | $on | $ratio | $t_off -> $t_on |" \
            "$g_off -> $g_on | $twin_on |"
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
