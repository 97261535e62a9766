"""The grey relevance scale of the native roles: raw cosine evidence mapped onto [0, 1].

Multilingual USE v3 gives related short sentences a cosine of about 0.4–0.7 and unrelated ones
about 0.0–0.25, so raw cosines would put "clearly related" under the spec's 0.7 ("应该引用").
Every native threshold (the topic window's reference threshold, the splitter's continuity and
match) is therefore read on this calibrated scale, so 0.5 means "moderately related"
everywhere. The raw value is mapped piecewise-linearly through

    raw   0.00  0.25  0.35  0.45  0.60  0.80  1.00
    score 0.00  0.15  0.35  0.55  0.75  0.95  1.00

so unrelated material (raw ≤ 0.3) lands under 0.3 and clearly related material (raw ≥ 0.45) at
0.55 or more.
"""

from __future__ import annotations

CALIBRATION: tuple[tuple[float, float], ...] = (
    (0.00, 0.00),
    (0.25, 0.15),
    (0.35, 0.35),
    (0.45, 0.55),
    (0.60, 0.75),
    (0.80, 0.95),
    (1.00, 1.00),
)
"""Knots ``(raw, score)`` of the piecewise-linear map."""


def calibrate(raw: float) -> float:
    """Map a raw (weighted) cosine onto the grey relevance scale in [0, 1]."""
    if raw <= CALIBRATION[0][0]:
        return 0.0
    for (x0, y0), (x1, y1) in zip(CALIBRATION, CALIBRATION[1:], strict=False):
        if raw <= x1:
            return round(y0 + (y1 - y0) * (raw - x0) / (x1 - x0), 4)
    return 1.0
