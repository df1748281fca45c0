"""Lets the project's Python scripts run as shown from a plain shell: a script that needs the
pinned packages (numpy, onnx, onnxruntime) calls use_venv() before importing them, and when
the Python that started it lacks one, it starts itself again under the project's venv.

The venv is $KILN_PY, else $KILN_PYTHON, else $KILN_VENV/bin/python, else
~/.cache/kiln/venv/bin/python (what scripts/setup makes). Without one, the script stops
with a line that says how to get it, not an ImportError traceback.
"""
import importlib.util
import os
import sys

PACKAGES = ("numpy", "onnx", "onnxruntime")
REEXEC_MARK = "KILN_VENV_REEXEC"  # set for the second start, so that it happens only once


def venv_python():
    """The venv's python, or None when there is none."""
    venv = os.environ.get("KILN_VENV") or os.path.expanduser("~/.cache/kiln/venv")
    for cand in (os.environ.get("KILN_PY"), os.environ.get("KILN_PYTHON"),
                 os.path.join(venv, "bin", "python")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def use_venv(packages=PACKAGES):
    """Returns when every package is importable here; else runs this script again under the
    venv's python (never returns), or exits 2 with a hint."""
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if not missing:
        os.environ.pop(REEXEC_MARK, None)  # the scripts this one starts begin afresh
        return
    py = venv_python()
    if py is None or os.environ.get(REEXEC_MARK):
        sys.stderr.write("%s: Python %s has no %s; run scripts/setup (it makes the venv "
                         "~/.cache/kiln/venv) or point KILN_PY at a Python that has them\n"
                         % (os.path.basename(sys.argv[0]), sys.executable, ", ".join(missing)))
        sys.exit(2)
    os.environ[REEXEC_MARK] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(py, [py] + sys.argv)
