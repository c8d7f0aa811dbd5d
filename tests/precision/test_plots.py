"""--show_graph writes readable plots (acceptance 3)."""
from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np

from graphs import tiny_cnn
from msprof_py.precision.compare import CompareOptions, compare_dump
from msprof_py.precision.dump import run_and_dump
from msprof_py.precision.numerics import Fault


def test_three_pngs_per_failing_node_open_and_are_not_blank(short_dir):
    d = str(short_dir / "d")
    run_and_dump(tiny_cnn(), d, seed=0, faults=(Fault("fc"),))
    res = compare_dump(d, CompareOptions(show_graph=True, max_bins=16, min_bins=4))
    failing = [n.npu_node for n in res.failed]
    assert "fc" in failing
    result = short_dir / "d" / "result"
    for node in failing:
        for suffix in ("_diff.png", "_diff_hist.png", "_hist.png"):
            p = result / f"{node}{suffix}"
            img = mpimg.imread(p)
            h, w = img.shape[:2]
            assert h >= 300 and w >= 500, (p, img.shape)
            rgb = img[..., :3]
            # not blank: data was drawn in colour (axes and text are black/grey)
            assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 20
            coloured = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.25
            assert coloured.sum() > 200, (p, int(coloured.sum()))
    passing = [n.npu_node for n in res.compared if n.cmp.passed]
    assert passing and not any((result / f"{n}_diff.png").exists() for n in passing)
