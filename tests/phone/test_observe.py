"""Observation over the 40 real dumps in tests/data/ui-dumps: nothing informative is lost.

The expected sets are computed here straight from the XML with ElementTree, by the rules the
observation documents (visible-to-user not false, non-zero area on screen; a text of only
invisible characters or "null" is empty), never through agent_host.phone.parse's own walk.
"""

from __future__ import annotations

import re
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agent_host.phone.explain import explain
from agent_host.phone.parse import parse
from agent_host.phone.render import parse_rendered, render
from agent_host.phone.select import find

REPO = Path(__file__).resolve().parents[2]


# Real dumps from public repositories, byte for byte (sources in MANIFEST.tsv beside them).
DUMPS = REPO / "tests" / "data" / "ui-dumps"
FILES = sorted(DUMPS.glob("*.xml"))


def dump(prefix: str) -> bytes:
    (f,) = [f for f in FILES if f.name.startswith(prefix + "-")]
    return f.read_bytes()


def test_all_forty_dumps_present():
    assert len(FILES) == 40


# ------------------------------------------------------------------ independent expectations

_B = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


def _clean(s):
    s = (s or "").strip()
    if s == "null" or all(unicodedata.category(c)[0] in "CZ" for c in s):
        return ""
    return s


def _alnum(s):
    return "".join(c for c in s.casefold() if c.isalnum())


def expected(data: bytes):
    """Visible nodes of the dump, each with what must survive: (kind, node info)."""
    text = data.decode("utf-8-sig")
    root = ET.fromstring(text[text.index("<"):])
    wins = [n for n in root if n.tag == "node"]
    wb = [tuple(map(int, _B.match(w.get("bounds")).groups())) for w in wins]
    if any(b[0] == 0 and b[1] == 0 for b in wb):
        rect = (0, 0, max(b[2] for b in wb), max(b[3] for b in wb))
    else:
        rect = (0, 0, 10**9, 10**9)
    out = []
    for n in root.iter("node"):
        if n.get("visible-to-user") == "false":
            continue
        l, t, r, b = map(int, _B.match(n.get("bounds")).groups())
        l, t, r, b = max(l, rect[0]), max(t, rect[1]), min(r, rect[2]), min(b, rect[3])
        if r <= l or b <= t:
            continue
        info = {"bounds": (l, t, r, b), "text": _clean(n.get("text")), "desc": _clean(n.get("content-desc")),
                "checked": n.get("checked") == "true", "cls": n.get("class", "")}
        if n.get("clickable") == "true":
            out.append(("tap", info))
        if n.get("long-clickable") == "true":
            out.append(("long-press", info))
        if n.get("scrollable") == "true":
            out.append(("scroll", info))
        if info["cls"].endswith("EditText"):
            out.append(("type", info))
        if n.get("checkable") == "true":
            out.append(("checked", info))
        if info["text"]:
            out.append(("text", info))
        if info["desc"]:
            out.append(("desc", info))
    return out


def _inside(inner, outer):
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def _overlap(a, b):
    return max(a[0], b[0]) < min(a[2], b[2]) and max(a[1], b[1]) < min(a[3], b[3])


def _kept(kind, info, elements) -> bool:
    nb = info["bounds"]
    if kind in ("tap", "long-press", "scroll", "type"):
        return any(e.bounds == nb and kind in e.affordances for e in elements)
    if kind == "checked":
        return any(e.checkable and e.checked == info["checked"] and _inside(nb, e.bounds) and "tap" in e.affordances
                   for e in elements)
    if kind == "text":
        return any(any(info["text"] in t for t in e.texts) and _overlap(nb, e.bounds) for e in elements)
    # desc: shown as a desc, or every comma-separated part of it is already in the texts
    for e in elements:
        if not _overlap(nb, e.bounds):
            continue
        if info["desc"] in e.descs:
            return True
        joined = _alnum(" ".join(e.texts))
        parts = [_alnum(p) for p in re.split(r"[,，;；\n]", info["desc"])]
        parts = [p for p in parts if p and p != "null"]
        if joined and parts and all(p in joined for p in parts):
            return True
    return False


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:2])
def test_every_dump_keeps_all_actionable_text_and_checked(path):
    data = path.read_bytes()
    screen = parse(data)
    text = render(screen)
    assert text.splitlines()[0].startswith(f"app: {screen.package}  screen: {screen.width}x{screen.height}")
    assert screen.elements, path.name
    assert [e.index for e in screen.elements] == list(range(len(screen.elements)))
    exp = expected(data)
    assert exp
    lost = [(k, i["text"] or i["desc"] or i["cls"], i["bounds"]) for k, i in exp if not _kept(k, i, screen.elements)]
    assert lost == [], path.name
    # far fewer lines than nodes, one per element
    assert len(text.splitlines()) <= len(screen.elements) + 1 + len(screen.windows)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:2])
def test_parse_rendered_round_trip(path):
    screen = parse(path.read_bytes())
    back = parse_rendered(render(screen)).elements
    assert len(back) == len(screen.elements)
    for d, e in zip(back, screen.elements):
        assert d.index == e.index and d.cls == e.cls
        assert d.texts == [t if len(t) <= 200 else t[:199] + "…" for t in e.texts]
        assert d.descs == [t if len(t) <= 200 else t[:199] + "…" for t in e.descs]
        assert (d.checkable, d.checked) == (e.checkable, e.checked if e.checkable else False)
        assert d.affordances == e.affordances
        assert d.enabled == (e.enabled or not (e.affordances or e.list_item))
        assert d.rid in ("", e.rid)
        assert d.package == screen.windows[e.window].package
    assert render(parse_rendered(render(screen))) == render(screen)


def test_render_is_deterministic_and_indices_stable():
    data = dump("01")
    assert render(parse(data)) == render(parse(data))


# ------------------------------------------------------------------ specific dumps


def lines(prefix: str) -> list[str]:
    return render(parse(dump(prefix))).splitlines()


def test_pixel_settings_home_rows_merge_title_and_summary():
    s = parse(dump("01"))
    out = render(s)
    assert s.package == "com.android.settings"  # not the status bar's systemui
    assert (s.width, s.height, s.rotation) == (1080, 2400, 0)
    assert re.search(r'^\[\d+\] LinearLayout "Battery" \| "100%" tap$', out, re.M)
    assert re.search(r'^\[\d+\] LinearLayout "Display" \| "Dark theme, font size, brightness" tap$', out, re.M)
    assert not re.search(r'TextView "Battery"', out)  # merged, not repeated
    assert "-- com.android.systemui --" in out
    assert re.search(r'"Search settings" id=search_action_bar tap', out)
    # wrappers are gone: 93 nodes become a couple of dozen lines
    assert len(s.elements) < 25


def test_oppo_switches_named_by_their_rows():
    out = "\n".join(lines("04"))
    assert re.search(r'Switch "Back Up My Data" id=switch_widget checked=off tap', out)
    assert re.search(r'Switch "Automatic Restore" id=switch_widget checked=on disabled tap', out)
    s = parse(dump("04"))
    sw = [e for e in s.elements if e.cls == "Switch"]
    assert [(e.text, e.checked, e.enabled, e.label_from_row) for e in sw] == [
        ("Back Up My Data", False, True, True), ("Automatic Restore", True, False, True)]


def test_vivo_switches_state_word_kept_title_first():
    s = parse(dump("10"))
    sw = [e for e in s.elements if e.cls == "Switch"]
    assert ("不锁定屏幕", False) in [(e.text, e.checked) for e in sw]
    assert ("开发者选项", True) in [(e.text, e.checked) for e in sw]
    s11 = parse(dump("11"))
    rows = [e for e in s11.elements if e.cls == "Switch"]
    assert len(rows) == 9 and not any(e.checked for e in rows)
    assert rows[0].texts[0] == "autoTask" and rows[0].descs == []  # "autoTask,...,null" adds nothing


def test_aosp_switch_preference_merges_into_row_with_switch_id():
    out = "\n".join(lines("07"))
    assert re.search(r'^\[\d+\] Switch "Use wireless debugging" id=switch_widget checked=on tap$', out, re.M)


def test_landscape_rotation():
    s = parse(dump("07"))
    assert (s.width, s.height, s.rotation) == (1280, 734, 1)
    assert render(s).splitlines()[0] == "app: com.android.settings  screen: 1280x734  rotation: 1"


@pytest.mark.parametrize(
    "prefix,size,window",
    [("13", (720, 1392), "[18,498][702,894]"), ("22", (1080, 2400), "[28,432][1052,1968]"),
     ("26", (1440, 3120), "[55,2621][1385,3120]"), ("06", (720, 1456), "[0,1165][720,1456]")],
)
def test_dialog_window_not_at_origin(prefix, size, window):
    s = parse(dump(prefix))
    assert (s.width, s.height) == size and s.size_estimated
    head = render(s).splitlines()[0]
    assert head.endswith(f"  window: {window}")
    for e in s.elements:
        l, t, r, b = e.bounds
        assert 0 <= l < r <= s.width and 0 <= t < b <= s.height


def test_explicit_screen_size_overrides_the_estimate():
    s = parse(dump("25"), screen=(1080, 2400))
    assert (s.width, s.height, s.size_estimated) == (1080, 2400, False)
    assert render(s).splitlines()[0] == "app: android  screen: 1080x2400  window: [28,1030][1052,1536]"


def test_bom_file_parses_from_bytes_and_str():
    raw = dump("10")
    assert raw.startswith(b"\xef\xbb\xbf")
    assert render(parse(raw)) == render(parse(raw.decode("utf-8"))) == render(parse(raw.decode("utf-8-sig")))


def test_crlf_pretty_printed_whitespace_is_not_text():
    raw = dump("01")
    assert b"\r\n" in raw
    s = parse(raw)
    assert all(t.strip() == t and t for e in s.elements for t in e.texts)
    assert render(s) == render(parse(raw.replace(b"\r\n", b"\n")))


def test_compose_checkable_view():
    out = "\n".join(lines("09"))
    assert re.search(r'^\[\d+\] View "Allow display over other apps" checked=off tap$', out, re.M)
    assert re.search(r'^\[\d+\] View desc="Navigate up" tap$', out, re.M)


def test_radio_rows_and_dialog_buttons():
    out = "\n".join(lines("12"))
    assert re.search(r'RadioButton "5G preferencial" id=checkbox checked=on tap', out)
    assert re.search(r'RadioButton "Apenas 2G" id=checkbox checked=off tap', out)
    out22 = "\n".join(lines("22"))
    assert re.search(r'RadioButton "Precise" id=permission_location_accuracy_radio_fine checked=on tap', out22)
    assert re.search(r'Button "Don’t allow" id=permission_deny_button tap', out22)


def test_quick_settings_tiles_keep_state_without_repeating_labels():
    s = parse(dump("14"))
    tiles = {e.texts[0]: e for e in s.elements if e.cls == "Switch"}
    assert tiles["Internet, AndroidWifi"].checked and not tiles["Flashlight, Off"].checked
    assert tiles["Internet, AndroidWifi"].texts == ["Internet, AndroidWifi"]
    assert tiles["Auto-rotate, On / folded"].descs == ["Auto-rotate screen"]
    assert s.package == "com.android.systemui"


def test_text_fields_password_seekbar_and_anonymous_classes():
    out40 = "\n".join(lines("40"))
    assert re.search(r'EditText desc="PIN edit box" id=pinEntry .*focused password tap type', out40)
    out02 = "\n".join(lines("02"))
    assert re.search(r'SeekBar "5.0" desc="Media volume" id=seekbar slide', out02)
    out31 = "\n".join(lines("31"))
    assert re.search(r'EditText "\(555\) 010-00" hint="Phone Number" id=digits tap long-press type', out31)
    out39 = "\n".join(lines("39"))
    assert not re.search(r"^\[\d+\] \d", out39, re.M)  # Outer$2 is shown as Outer


def test_icon_font_glyphs_and_null_are_not_text():
    assert '""' not in render(parse(dump("38")))
    assert 'desc="null"' not in render(parse(dump("20")))


def test_unlabeled_actionable_elements_get_their_center():
    s = parse(dump("29"))
    grid = next(e for e in s.elements if e.cls == "GridView")
    assert f"at={grid.center[0]},{grid.center[1]}" in render(s)


# ------------------------------------------------------------------ synthetic edge cases

H = '<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="{rot}">{body}</hierarchy>'


def node(cls="android.widget.TextView", bounds="[0,0][100,100]", kids="", **attrs):
    a = {"text": "", "resource-id": "", "class": cls, "package": "com.example", "content-desc": "",
         "checkable": "false", "checked": "false", "clickable": "false", "enabled": "true",
         "scrollable": "false", "long-clickable": "false", "selected": "false", "bounds": bounds}
    a.update({k.replace("_", "-"): v for k, v in attrs.items()})
    s = " ".join(f'{k}="{v}"' for k, v in a.items())
    return f"<node {s}>{kids}</node>" if kids else f"<node {s} />"


def screen_of(*kids, rot=0):
    root = node("android.widget.FrameLayout", "[0,0][1000,2000]", "".join(kids))
    return parse(H.format(rot=rot, body=root))


def test_drops_invisible_zero_area_offscreen_and_wrappers():
    s = screen_of(
        node(text="shown", bounds="[0,0][100,50]"),
        node(text="hidden", bounds="[0,50][100,100]", visible_to_user="false"),
        node(text="flat", bounds="[0,100][100,100]"),
        node(text="away", bounds="[0,2100][100,2200]"),
        node("android.widget.LinearLayout", "[0,200][500,300]"),
    )
    assert [e.text for e in s.elements] == ["shown"]


def test_offscreen_part_is_clipped_so_the_center_is_tappable():
    s = screen_of(node(text="half", bounds="[0,1900][1000,2100]", clickable="true"))
    (e,) = s.elements
    assert e.bounds == (0, 1900, 1000, 2000) and e.center == (500, 1950)


def test_missing_attributes_and_junk_around_the_xml():
    xml = ('UI hierchary dumped to: /dev/tty\n<hierarchy><node class="android.widget.Button" text="Go" '
           'bounds="[10,10][90,40]" clickable="true"/><node bounds="[0,0][100,100]"/></hierarchy>\njunk')
    s = parse(xml)
    assert [(e.cls, e.text, e.affordances, e.enabled) for e in s.elements] == [("Button", "Go", ["tap"], True)]


def test_bad_input_raises_value_error():
    for bad in ("", "hello", "<hierarchy><node", "<html></html>"):
        with pytest.raises(ValueError):
            parse(bad)


def test_big_clickable_container_does_not_swallow_its_texts():
    texts = "".join(node(text=f"t{i}", bounds=f"[0,{i * 100}][500,{i * 100 + 50}]") for i in range(5))
    s = screen_of(node("android.widget.FrameLayout", "[0,0][1000,2000]", texts, clickable="true"))
    assert [e.text for e in s.elements] == ["", "t0", "t1", "t2", "t3", "t4"]
    assert s.elements[0].affordances == ["tap"]


def test_row_with_two_clickables_is_a_container():
    row = node("android.widget.LinearLayout", "[0,0][1000,200]",
               node(text="Title", bounds="[0,0][500,100]")
               + node("android.widget.Button", "[500,0][700,100]", text="A", clickable="true")
               + node("android.widget.Button", "[700,0][900,100]", text="B", clickable="true"),
               clickable="true")
    s = screen_of(row)
    assert [(e.cls, e.text) for e in s.elements] == [("LinearLayout", ""), ("TextView", "Title"), ("Button", "A"),
                                                     ("Button", "B")]


def test_non_clickable_switch_merges_into_clickable_row():
    row = node("android.widget.LinearLayout", "[0,0][1000,200]",
               node(text="Wi-Fi", bounds="[0,0][500,100]", resource_id="android:id/title")
               + node(text="AndroidWifi", bounds="[0,100][500,200]", resource_id="android:id/summary")
               + node("android.widget.Switch", "[800,50][900,150]", resource_id="android:id/switch_widget",
                      checkable="true", checked="true"),
               clickable="true")
    s = screen_of(row)
    (e,) = s.elements
    assert render(s).splitlines()[1] == '[0] Switch "Wi-Fi" | "AndroidWifi" id=switch_widget checked=on tap'
    assert e.resource_ids == ["android:id/title", "android:id/summary", "android:id/switch_widget"]
    assert find(s.elements, resource_id="android:id/switch_widget") is e
    assert find(parse_rendered(render(s)).elements, resource_id="android:id/switch_widget").index == 0


def test_rotation_and_multiple_windows_pick_the_app():
    bar = node("android.widget.FrameLayout", "[0,0][1000,100]", node(text="9:41", bounds="[0,0][100,100]"),
               package="com.android.systemui")
    app = node("android.widget.FrameLayout", "[0,0][1000,2000]", node(text="Hello", bounds="[0,200][300,300]"))
    s = parse(H.format(rot=3, body=bar + app))
    assert s.package == "com.example" and s.rotation == 3
    out = render(s).splitlines()
    assert out[0] == "app: com.example  screen: 1000x2000  rotation: 3"
    assert out[1:] == ["-- com.android.systemui --", '[0] TextView "9:41"', "-- com.example --",
                       '[1] TextView "Hello"']
    assert [d.package for d in parse_rendered("\n".join(out)).elements] == ["com.android.systemui", "com.example"]


def test_long_text_is_cut_in_the_render_only():
    s = screen_of(node(text="x" * 300, bounds="[0,0][100,100]"))
    assert s.elements[0].text == "x" * 300
    assert parse_rendered(render(s)).elements[0].text == "x" * 199 + "…"


def test_quotes_and_newlines_round_trip():
    s = screen_of(node(text='say &quot;hi&quot; | there&#10;next', bounds="[0,0][100,100]", content_desc="a=b"))
    d = parse_rendered(render(s)).elements[0]
    assert d.text == 'say "hi" | there\nnext' and d.desc == "a=b"


# ------------------------------------------------------------------ find


def _els():
    return parse_rendered("\n".join([
        "app: x  screen: 100x100",
        '[0] TextView "Wi-Fi"',
        '[1] LinearLayout "Wi-Fi" | "Connected" id=row tap',
        '[2] Switch "Wi-Fi hotspot" id=switch_widget checked=off tap',
        '[3] LinearLayout "Internet" | "Wi-Fi" tap',
        '[4] ImageView desc="Add alarm" id=fab tap',
        '[5] EditText hint="First name" id=first tap type',
        '[6] TextView "wi-fi  calling"',
    ])).elements


def test_find_exact_text_beats_contains_and_actionable_beats_label():
    els = _els()
    assert find(els, text="Wi-Fi").index == 1  # exact primary, actionable over the label at 0
    assert find(els, text="Connected").index == 1  # a secondary text
    assert find(els, text="wi-fi").index == 1  # case-insensitive after exact ones
    assert find(els, text_contains="hotspot").index == 2
    assert find(els, text_contains="wi-fi").index == 1
    assert find(els, text_contains="calling").index == 6
    assert find(els, text="Wi-Fi hot") is None


def test_find_resource_id_full_or_short_desc_hint_and_combined():
    els = _els()
    assert find(els, resource_id="android:id/switch_widget").index == 2
    assert find(els, resource_id="switch_widget").index == 2
    assert find(els, desc="Add alarm").index == 4
    assert find(els, desc="add alarm").index == 4
    assert find(els, text="Add alarm").index == 4  # text falls back to desc last
    assert find(els, text_contains="First name").index == 5  # hints count
    assert find(els, text="Wi-Fi", resource_id="row").index == 1
    assert find(els, text="Internet", resource_id="switch_widget") is None
    with pytest.raises(ValueError):
        find(els)


def test_find_on_elements_uses_every_merged_id():
    s = parse(dump("01"))
    e = find(s.elements, text="Battery")
    assert e.texts == ["Battery", "100%"]
    assert find(s.elements, resource_id="android:id/title").texts[0] == s.elements[find(
        s.elements, resource_id="android:id/title").index].texts[0]
    assert find(s.elements, desc="Battery 100 percent.").package == "com.android.systemui"


# ------------------------------------------------------------------ CLI


def test_cli_prints_observation_and_json(capsys):
    import json

    from agent_host.cli import main

    path = str(next(f for f in FILES if f.name.startswith("04-")))
    assert main(["observe", path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("app: com.android.settings  screen: 720x1456\n")
    assert 'Switch "Back Up My Data" id=switch_widget checked=off tap' in out
    assert main(["observe", path, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["package"] == "com.android.settings" and d["width"] == 720
    sw = [e for e in d["elements"] if e["cls"] == "Switch"]
    assert [(e["text"], e["checked"], e["affordances"]) for e in sw] == [
        ("Back Up My Data", False, ["tap"]), ("Automatic Restore", True, ["tap"])]
    assert main(["observe", path, "--elements"]) == 0
    assert "android:id/switch_widget" in capsys.readouterr().out


def test_cli_errors_and_help(tmp_path, capsys):
    from agent_host.cli import main

    assert main(["observe", str(tmp_path / "missing.xml")]) == 2
    bad = tmp_path / "bad.xml"
    bad.write_text("not xml")
    assert main(["observe", str(bad)]) == 2
    assert "not a UI hierarchy dump" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["observe", "--help"])
    assert exc.value.code == 0
    assert "why a label is not shown" in capsys.readouterr().out


def test_explain_says_where_a_label_went_or_why_not(capsys):
    from agent_host.cli import main

    data = dump("07")
    out = explain(data, "Currently connected")
    assert len(out) == 1 and "not shown: zero area ([0,0][0,0])" in out[0]
    (sw,) = explain(data, "android:id/switch_widget")
    assert "merged into element [2]" in sw and 'Switch "Use wireless debugging"' in sw
    (title,) = explain(data, "Paired devices")
    assert title.endswith('is element [8]: [8] TextView "Paired devices"')
    hidden = H.format(rot=0, body=node("android.widget.FrameLayout", "[0,0][1000,2000]",
                                       node(text="Ghost", visible_to_user="false")
                                       + node(text="Far", bounds="[0,3000][10,3100]")))
    assert [x.split(": not shown: ")[1] for x in explain(hidden, "o") + explain(hidden, "Far")] == [
        'visible-to-user="false"', "off the 1000x2000 screen ([0,3000][10,3100])"]
    path = str(next(f for f in FILES if f.name.startswith("07-")))
    assert main(["observe", path, "--why", "wireless debugging"]) == 0
    assert "element [2]" in capsys.readouterr().out
    assert main(["observe", path, "--why", "no such label"]) == 1


def test_state_word_switch_borrows_row_title_but_a_real_label_is_kept():
    row = node("android.view.ViewGroup", "[0,0][1000,200]",
               node(text="Dark theme", bounds="[0,0][500,100]")
               + node("android.widget.Switch", "[800,50][900,150]", text="Off", checkable="true"))
    am = node("android.widget.LinearLayout", "[0,300][1000,400]",
              node(text=":", bounds="[0,300][100,400]")
              + node("android.widget.Button", "[200,300][300,400]", text="AM", checkable="true", clickable="true"))
    s = screen_of(row, am)
    assert [(e.cls, e.texts, e.label_from_row) for e in s.elements if e.checkable] == [
        ("Switch", ["Dark theme", "Off"], True), ("Button", ["AM"], False)]


def test_virtual_phone_internet_page_wifi_switch():
    """The contract with the virtual phone (docs/architecture.md labels): the Wi-Fi row is one
    element a selector can find by text or by android:id/switch_widget."""
    from virtual_phone.fs import VirtualFS
    from virtual_phone.world import World

    w = World(VirtualFS())
    w.launch("com.android.settings")
    for label in ("Network & internet", "Internet"):
        e = find(parse(w.dump()).elements, text=label)
        assert e is not None and "tap" in e.affordances, label
        w.tap(*e.center)
    s = parse(w.dump())
    assert s.package == "com.android.settings" and (s.width, s.height) == (1080, 2400)
    by_text = find(parse_rendered(render(s)).elements, text="Wi-Fi")
    by_id = find(parse_rendered(render(s)).elements, resource_id="android:id/switch_widget")
    assert by_text == by_id and by_text.cls == "Switch"
    # the rendered state is the phone's: off at first, on after a tap on the row (it was
    # `checked in (True, False)`, which held whatever the render said)
    assert w.shell("settings get global wifi_on").stdout == b"0\n" and by_text.checked is False
    w.tap(*find(s.elements, text="Wi-Fi").center)
    on = find(parse_rendered(render(parse(w.dump()))).elements, resource_id="android:id/switch_widget")
    assert w.shell("settings get global wifi_on").stdout == b"1\n" and on.checked is True
    assert on.index == by_text.index and on.texts == ["Wi-Fi"]
