"""What the display variations do to the screen: font scale and display density.

Screens are built in the phone's own coordinates (the 1080x2400 screen at its physical 420 dpi),
and input is hit-tested there. The dump, the screenshot and the uiautomator2 lookups see the
windows as these functions make them:

- font scale (`settings put system font_scale F`): every text view or button (a view whose
  width wraps its text; a slider or a text field is as wide as its layout says) is F times as
  wide, from its left edge, clipped to its parent's right edge (never cut below its own width);
  the screenshot draws its text F times as large.
- density (`wm density N`): every window's content laid out N/420 times as tall from the top
  (layouts are in dp: a smaller display size fits more rows, each still the screen's width); a
  window that fills the screen still fills it; what falls off the screen (N > 420) clipped as
  Android reports visible bounds. Input coordinates go back through
  `to_logical` (edge gestures excepted: they stay in screen coordinates).

A tap at a node's new centre lands inside its old bounds (F < 2), so it hits the same node.
"""

from __future__ import annotations

from dataclasses import replace

from .hierarchy import SCREEN_H, SCREEN_W, Node, Window, clip

PHYSICAL_DENSITY = 420
# the views whose width follows their text; a SeekBar's text is its value, and its track does
# not grow with the font
WRAPS_TEXT = frozenset({"android.widget.TextView", "android.widget.Button", "android.widget.CheckedTextView"})


def scale_text(node: Node, f: float, right: int = SCREEN_W) -> Node:
    """`node` with each text-carrying node's width times `f` (see the module docstring)."""
    l, t, r, b = node.bounds
    nr = r
    if node.text and f != 1.0 and node.cls in WRAPS_TEXT:
        nr = min(l + max(1, round((r - l) * f)), max(right, r))
    kids = [scale_text(c, f, nr) for c in node.children]
    if nr == r and all(k is c for k, c in zip(kids, node.children)):
        return node
    return replace(node, bounds=(l, t, nr, b), children=kids)


def scale_bounds(node: Node, s: float) -> Node:
    """`node` laid out `s` times as tall, from the top: layouts are in dp, so a smaller display
    size fits more rows, each as wide as the screen still is."""
    l, t, r, b = node.bounds
    return replace(node, bounds=(l, round(t * s), r, round(b * s)),
                   children=[scale_bounds(c, s) for c in node.children])


def shown(windows: list[Window], font_scale: float, density_scale: float) -> list[Window]:
    """The windows as the dump and screenshot show them; the same list when nothing varies."""
    if font_scale == 1.0 and density_scale == 1.0:
        return windows
    out = []
    for win in windows:
        root = scale_text(win.root, font_scale) if font_scale != 1.0 else win.root
        if density_scale != 1.0:
            full = win.root.bounds == (0, 0, SCREEN_W, SCREEN_H)
            root = scale_bounds(root, density_scale)
            if full:    # a window that fills the screen still does (its content is what moves)
                root = replace(root, bounds=win.root.bounds)
            if density_scale > 1.0:
                root = clip(root, (0, 0, SCREEN_W, SCREEN_H)) or replace(root, bounds=(0, 0, 0, 0), children=[])
        out.append(replace(win, root=root))
    return out


def to_logical(x: int, y: int, density_scale: float) -> tuple[int, int]:
    """A point on the screen in the coordinates screens are built in."""
    if density_scale == 1.0:
        return x, y
    return x, int((y + 0.5) / density_scale)
