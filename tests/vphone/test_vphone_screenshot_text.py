"""The virtual phone draws any text a model can type: a screenshot never fails on it.

Before: `"Ada\\nLovelace"` in a text field made every screenshot raise (`raqm_layout()
failed` in Pillow's getlength), so the episode ended `error` on a model action."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageChops

from virtual_phone.fs import VirtualFS
from virtual_phone.screenshot import MAX_DRAWN_CHARS, drawable
from virtual_phone.world import World

from test_vphone_world import sel, tap_text


def typed(text: str) -> World:
    w = World(VirtualFS())
    w.shell("am start -a android.intent.action.INSERT -t vnd.android.cursor.dir/contact")
    tap_text(w, "First name")
    w.rpc("setText", [sel(focused=True), text])
    return w


def png(w: World) -> Image.Image:
    return Image.open(io.BytesIO(w.screenshot_png())).convert("RGB")


@pytest.mark.parametrize("text", [
    "Ada\nLovelace", "tab\there\r\n", "nul\x00byte", "\U0001F600 \U0001F469\u200D\U0001F4BB smile",
    "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627", "x" * 100_000, "sep\u2028par\u2029end",
    "lone \ud800 surrogate",
])
def test_any_typed_text_renders(text: str) -> None:
    before = png(World(VirtualFS()))
    img = png(typed(text))
    assert img.size == (1080, 2400)
    assert ImageChops.difference(before, img).getbbox() is not None


def test_a_newline_is_drawn_as_a_space_not_dropped() -> None:
    assert drawable("Ada\nLovelace") == "Ada Lovelace"
    assert ImageChops.difference(png(typed("Ada\nLovelace")), png(typed("Ada Lovelace"))).getbbox() is None
    assert ImageChops.difference(png(typed("Ada\nLovelace")), png(typed("Ada"))).getbbox() is not None


def test_long_text_is_cut_and_emoji_rtl_kept() -> None:
    assert len(drawable("y" * 10_000)) == MAX_DRAWN_CHARS
    s = "\u05e9\u05dc\u05d5\u05dd \U0001F600 e\u0301"
    assert drawable(s) == s
