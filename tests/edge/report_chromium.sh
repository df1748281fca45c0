#!/usr/bin/env bash
# The compile report in a real browser: Debian's chromium renders the digits report
# headless and takes a screenshot. Passes when the page logs nothing to the console (no
# script error, no load that its Content-Security-Policy refused) and the screenshot is
# not blank. The checks are first shown to fail: a blank page must read as blank, and a page
# with a script error and a refused load must read as logging errors.
# Needs chromium and Debian's python3 with PIL (python3-pil; scripts/setup installs both).
# Usage: tests/edge/report_chromium.sh PATH/TO/kiln
set -u
KILN="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
CHROMIUM_TIMEOUT_S=120 # a cold start on 2 busy cores takes about 5 s
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

if ! command -v chromium >/dev/null; then
    echo "FAIL chromium not installed (scripts/setup installs it for scripts/test)"
    echo "0 passed, 1 failed"
    exit 1
fi

# shoot PAGE.html PNG LOG: renders the page; the console goes to LOG.
shoot() {
    # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start
    timeout "$CHROMIUM_TIMEOUT_S" chromium --headless --no-sandbox --disable-gpu \
        --hide-scrollbars --window-size=1280,2000 --enable-logging=stderr --v=0 \
        --user-data-dir="$TMP/profile" --screenshot="$2" "file://$1" >"$3" 2>&1 </dev/null
}

# console LOG: the page's console messages (chromium logs them as INFO:CONSOLE lines).
console() { grep -E ':CONSOLE[:(]' "$1" || true; }

# blank PNG: exit 0 when the image is blank (one colour covers all but 1% of it, or it
# has fewer than 16 colours); prints the figures.
blank() {
    /usr/bin/python3 - "$1" <<'PYEOF'
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
colours = im.getcolors(maxcolors=1 << 24)
top = max(c for c, _ in colours)
share = 1 - top / (im.width * im.height)
print(f"{im.width}x{im.height}, {len(colours)} colours, {share:.1%} not background")
sys.exit(0 if share < 0.01 or len(colours) < 16 else 1)
PYEOF
}

# The checks can fail: a blank page, and a page with a script error and a refused load.
printf '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body></body></html>\n' \
    >"$TMP/blank.html"
cat >"$TMP/broken.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">
</head><body><p>broken</p><img alt="" src="https://example.invalid/x.png">
<script>undefined_function();</script></body></html>
EOF
if shoot "$TMP/blank.html" "$TMP/blank.png" "$TMP/blank.log" && blank "$TMP/blank.png" >/dev/null &&
    shoot "$TMP/broken.html" "$TMP/broken.png" "$TMP/broken.log" &&
    [ "$(console "$TMP/broken.log" | wc -l)" -ge 2 ]; then
    ok "the checks catch a blank page and a page that logs errors"
else
    fail "the checks did not catch a blank page or a page with errors: $(console "$TMP/broken.log")"
fi

if "$KILN" compile "$ROOT/examples/digits/digits.onnx" -o "$TMP/digits" \
    --report "$TMP/report.html" >/dev/null 2>"$TMP/kiln.err"; then
    if shoot "$TMP/report.html" "$TMP/report.png" "$TMP/report.log"; then
        errors="$(console "$TMP/report.log")"
        if [ -z "$errors" ]; then
            ok "chromium renders the digits report with an empty console"
        else
            fail "the report logs to the console: $errors"
        fi
        if figures="$(blank "$TMP/report.png")"; then
            fail "the report's screenshot is blank: $figures"
        else
            ok "the report's screenshot is not blank: $figures"
        fi
        if [ -n "${KILN_REPORT_PNG:-}" ]; then cp "$TMP/report.png" "$KILN_REPORT_PNG"; fi
    else
        fail "chromium failed on the report: $(tail -n 5 "$TMP/report.log")"
    fi
else
    fail "kiln compile --report: $(cat "$TMP/kiln.err")"
fi

echo "$((3 - fails)) passed, $fails failed"
exit $((fails > 0))
