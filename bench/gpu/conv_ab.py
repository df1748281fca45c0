"""Ratios of two bench/gpu/run.py results of the same models (conv_ab.sh: A a peer kiln, B
the kiln under test, one GPU call): per row the graph replay A, B and B/A, and per model at
the largest batch every node whose time moved by more than 10% and 0.01 ms (profiled
medians; B's --conv im2col variant, where there is one, beside it as the per-node peer).
usage: python3 bench/gpu/conv_ab.py A/results.json B/results.json"""
import json
import sys


def nodes(row):
    """name -> (path, ms) of every convolution node (run.py's prof_conv_nodes) and of the
    ten most expensive nodes."""
    got = {n[0]: (n[1], n[2]) for n in row.get("prof_top_nodes", [])}
    got.update({n[0]: (n[1], n[2]) for n in row.get("prof_conv_nodes", [])})
    return got


def main():
    a = json.load(open(sys.argv[1]))["rows"]
    b = json.load(open(sys.argv[2]))["rows"]
    print(f"{'row':34} {'A ms':>8} {'B ms':>8} {'B/A':>6}")
    for key in sorted(k for k in b if k in a and "kiln_ms" in a[k] and "kiln_ms" in b[k]):
        print(f"{key:34} {a[key]['kiln_ms']:8.3f} {b[key]['kiln_ms']:8.3f} "
              f"{b[key]['kiln_ms'] / a[key]['kiln_ms']:6.2f}")
    for key in sorted(k for k in b if k in a and k.endswith("_b256_fp16")):
        na, nb = nodes(a[key]), nodes(b[key])
        ni = nodes(b.get(key + "_im2col", {}))
        print(f"\n{key}: nodes that moved (A -> B ms, B's im2col variant)")
        for name, (path, ms) in nb.items():
            if name not in na:
                continue
            old = na[name][1]
            if abs(ms - old) > 0.01 and abs(ms / old - 1) > 0.1:
                peer = f"{ni[name][1]:.3f}" if name in ni else "-"
                print(f"  {name[-58:]:58} {na[name][0]:>8} {old:7.3f} -> {path:>8} {ms:7.3f}"
                      f" ({ms / old:.2f}x)  im2col {peer}")


if __name__ == "__main__":
    main()
