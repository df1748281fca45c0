#!/usr/bin/env bash
# kiln compile --report and the progress line:
# - the report of the digits model is one self-contained page (a CSP that forbids every
#   load, no script, no address of anything), with every pass of the pipeline, node counts
#   that add up (before - fused - removed + inserted = after), one row per compiled node,
#   the fused convolutions made from their Conv and Relu, the layout pass's two transposes
#   as inserted, and a bar per arena tensor;
# - names from a hostile model come out escaped (no markup of theirs reaches the page);
# - the progress line shows on a terminal (script(1) gives it one), not in a pipe, not
#   with --quiet (which also drops the summary).
# tests/edge/report_chromium.sh renders the page in a browser.
# Usage: test_report.sh PATH/TO/kiln
set -u
KILN="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${KILN_PY:-$HOME/.cache/kiln/venv/bin/python}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

if "$KILN" compile "$ROOT/examples/digits/digits.onnx" -o "$TMP/digits" --report "$TMP/digits.html" \
    >"$TMP/out.txt" 2>"$TMP/err.txt"; then
    ok "kiln compile --report exits 0"
else
    fail "kiln compile --report failed: $(cat "$TMP/err.txt")"
fi
n_passes="$("$KILN" compile --list-passes | wc -l)"

if "$PY" - "$TMP/digits.html" "$n_passes" <<'PYEOF'; then
import re
import sys
from html.parser import HTMLParser

text = open(sys.argv[1], encoding="utf-8").read()
n_passes = int(sys.argv[2])
assert text.startswith("<!DOCTYPE html>"), "no doctype"
assert "Content-Security-Policy" in text and "default-src 'none'" in text, "no CSP"
low = text.lower()
assert "<script" not in low, "a script"
assert "http:" not in low and "https:" not in low and "//" not in re.sub(r"<[^>]*>", "", low), \
    "an address"
for bad in ("src=", "href=", "url(", "@import"):
    assert bad not in low, f"something to load: {bad}"


class Tables(HTMLParser):
    """Rows of every table, as lists of cell texts."""
    def __init__(self):
        super().__init__()
        self.tables, self.cell, self.rects = [], None, 0

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = ""
        elif tag == "rect" and "bar" in (dict(attrs).get("class") or ""):
            self.rects += 1

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


p = Tables()
p.feed(text)
summary, passes, nodes = p.tables
rows = [r for r in passes[1:] if len(r) == 8]
assert len(rows) == n_passes, f"{len(rows)} pass rows, want {n_passes}"
for r in rows:
    before, after, fused, removed, inserted = map(int, r[1:6])
    assert before - fused - removed + inserted == after, f"pass {r[0]}: counts do not add up"
fuse = next(r for r in rows if r[0] == "fuse")
assert (int(fuse[1]), int(fuse[2]), int(fuse[3])) == (7, 5, 2), f"fuse row {fuse}"
assert len(nodes) - 1 == 7, f"{len(nodes) - 1} node rows, want the 7 compiled nodes"
fused = [r for r in nodes[1:] if r[1] == "FusedConv"]
assert len(fused) == 2 and all("Conv '" in r[7] and "Relu '" in r[7] for r in fused), fused
# the layout pass: two boundary Transposes inserted, the MaxPool kept (now channels-last)
inserted = [r[1] for r in nodes[1:] if "inserted by layout" in r[7]]
assert inserted == ["Transpose", "Transpose"], f"inserted by layout: {inserted}"
assert all("as in the model" in r[7] for r in nodes[1:] if r[1] in ("MaxPool", "Gemm")), \
    "MaxPool or Gemm not shown as the model's own node"
# the arena tensors: every non-output result with an offset
arena_rows = sum(1 for r in nodes[1:] if re.match(r"^[0-9,]+ \+[0-9]+", r[6]))
assert p.rects == arena_rows, f"{p.rects} bars for {arena_rows} arena tensors"
assert "not quantized" in text
PYEOF
    ok "the digits report is self-contained, lists every pass with counts that add up, one row per node, a bar per arena tensor"
else
    fail "the digits report's content"
fi

# A model with hostile names: a node, an input and an output named with markup.
if "$PY" - "$TMP/hostile.onnx" <<'PYEOF'; then
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info('x"&<b>', TensorProto.FLOAT, [1, 4])
y = helper.make_tensor_value_info("y<script>alert(1)</script>", TensorProto.FLOAT, [1, 4])
n1 = helper.make_node("Relu", ['x"&<b>'], ["t"], name="<script>alert(2)</script>")
n2 = helper.make_node("Sigmoid", ["t"], ["y<script>alert(1)</script>"], name="n\x01\xff")
g = helper.make_graph([n1, n2], "g", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PYEOF
    if "$KILN" compile "$TMP/hostile.onnx" -o "$TMP/hostile" --name hostile \
        --report "$TMP/hostile.html" >/dev/null 2>"$TMP/err.txt" &&
        ! grep -qi '<script\|<b>' "$TMP/hostile.html" &&
        grep -q '&lt;script&gt;alert(2)&lt;/script&gt;' "$TMP/hostile.html" &&
        grep -q 'x&quot;&amp;&lt;b&gt;' "$TMP/hostile.html" &&
        iconv -f UTF-8 -t UTF-8 "$TMP/hostile.html" >/dev/null 2>&1; then
        ok "names with markup, control bytes and invalid UTF-8 come out escaped"
    else
        fail "hostile names reached the page unescaped ($(head -c 300 "$TMP/err.txt"))"
    fi
else
    fail "could not write the hostile model"
fi

# Progress: on a terminal only, and never with --quiet.
if command -v script >/dev/null; then
    script -qec "$KILN compile $ROOT/examples/digits/digits.onnx -o $TMP/p1" "$TMP/tty.log" \
        >/dev/null 2>&1
    if grep -q "kiln compile: pass 1/$n_passes lower-constants" "$TMP/tty.log" &&
        grep -q "writing the bundle" "$TMP/tty.log"; then
        ok "a terminal gets the progress line"
    else
        fail "no progress line on a terminal: $(head -c 300 "$TMP/tty.log" | cat -v)"
    fi
    script -qec "$KILN compile $ROOT/examples/digits/digits.onnx -o $TMP/p2 --quiet" \
        "$TMP/quiet.log" >/dev/null 2>&1
    if ! grep -q "kiln compile:\|arena:" "$TMP/quiet.log" && [ -f "$TMP/p2/digits.c" ]; then
        ok "--quiet on a terminal: no progress, no summary, the bundle written"
    else
        fail "--quiet still printed: $(head -c 300 "$TMP/quiet.log" | cat -v)"
    fi
else
    fail "script(1) not found (util-linux): cannot give kiln a terminal"
fi
"$KILN" compile "$ROOT/examples/digits/digits.onnx" -o "$TMP/p3" >/dev/null 2>"$TMP/pipe.err"
if [ ! -s "$TMP/pipe.err" ]; then
    ok "stderr that is no terminal gets no progress"
else
    fail "progress written to a pipe: $(head -c 200 "$TMP/pipe.err" | cat -v)"
fi

echo "test_report: $fails failed"
exit $((fails > 0))
