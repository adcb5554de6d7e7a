"""System UI's Quick Settings shade (pulled down from the status bar), after real Pixel dumps."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from ..core import AppHost
from ..hierarchy import Callback, Node, SCREEN_H, SCREEN_W
from ..phone_clock import clock_text
from ..state import brightness_to_fraction, fraction_to_brightness
from .base import FL, IMAGE_VIEW, LL, SEEKBAR, SWITCH, TV, VIEW_GROUP, alert_dialog


PKG = "com.android.systemui"
S = PKG + ":id/"


def _to_settings(w: AppHost, *first: Callback) -> None:
    """Close what is open (the shade, after anything in `first`), then open Settings."""
    for close in (*first, w.close_shade):
        close()
    w.launch("com.android.settings")


def _tile(label: str, sub: str, desc: str, on: bool, x: int, y: int, act: Callback) -> Node:
    l, t, r, b = x, y, x + 487, y + 210
    return Node(SWITCH, (l, t, r, b), text=f"{label}, {sub}", desc=desc, checkable=True, checked=on,
                clickable=True, focusable=True, long_clickable=True, on_click=act, children=[
                    Node(VIEW_GROUP, (l + 42, t + 78, l + 95, t + 131), children=[
                        Node(IMAGE_VIEW, (l + 42, t + 78, l + 95, t + 131), rid="android:id/icon")]),
                    Node(LL, (l + 121, t + 54, r - 50, t + 156), children=[
                        Node(TV, (l + 121, t + 54, r - 50, t + 105), text=label, rid=S + "tile_label"),
                        Node(TV, (l + 121, t + 105, r - 50, t + 156), text=sub, rid=S + "app_label")])])


def shade(w: AppHost) -> Node:
    st = w.state

    def saver() -> None:
        st.set_battery_saver(not st.battery_saver)

    def dnd() -> None:
        st.put("global", "zen_mode", "0" if st.zen_mode else "1")

    def rotate() -> None:
        st.put("system", "accelerometer_rotation", "0" if st.auto_rotate else "1")

    internet_sub = "AndroidWifi" if st.wifi else ("Airplane mode" if st.airplane else "Off")
    tiles = [
        ("Internet", internet_sub, "Internet," + internet_sub, st.wifi, lambda: w.show_internet_dialog()),
        ("Bluetooth", "On" if st.bluetooth else "Off", "Bluetooth.", st.bluetooth,
         lambda: st.set_bluetooth(not st.bluetooth)),
        ("Do Not Disturb", "On" if st.zen_mode else "Off", "Do Not Disturb.", st.zen_mode != 0, dnd),
        ("Airplane mode", "On" if st.airplane else "Off", "Airplane mode", st.airplane,
         lambda: st.set_airplane(not st.airplane)),
        ("Auto-rotate", "On" if st.auto_rotate else "Off", "Auto-rotate", st.auto_rotate, rotate),
        ("Dark theme", "On" if st.dark else "Off", "Dark theme", st.dark, lambda: st.set_dark(not st.dark)),
        ("Battery Saver", "On" if st.battery_saver else "Off", "Battery Saver", st.battery_saver, saver),
        ("Flashlight", "Off", "Flashlight", False, lambda: None),
    ]
    nodes = [_tile(lbl, sub, desc, on, 42 + (k % 2) * 508, 525 + (k // 2) * 231, act)
             for k, (lbl, sub, desc, on, act) in enumerate(tiles)]

    def set_brightness(x: int, _y: int) -> None:
        st.put("system", "screen_brightness", str(fraction_to_brightness((x - 84) / (1038 - 84 - 84))))

    t = w.state.clock.gmtime()
    header = Node(VIEW_GROUP, (0, 0, SCREEN_W, 126), rid=S + "split_shade_status_bar", children=[
        Node(TV, (47, 20, 200, 110), text=clock_text(t.tm_hour, t.tm_min, st.time_24h, am_pm=False),
             rid=S + "clock"),
        Node(TV, (220, 20, 700, 110), text=time.strftime("%a, %b ", t) + str(t.tm_mday), rid=S + "date")])
    frac = brightness_to_fraction(st.brightness)
    panel = Node(LL, (42, 126, 1038, 1733), rid=S + "quick_settings_panel", children=[
        Node(FL, (42, 357, 1038, 483), rid=S + "brightness_slider", desc="Display brightness", children=[
            Node(SEEKBAR, (42, 357, 1038, 483), text=f"{frac * 100:.1f}", rid=S + "slider",
                 desc="Display brightness", focusable=True, on_tap_at=set_brightness)]),
        Node("androidx.viewpager.widget.ViewPager", (42, 525, 1038, 1482), rid=S + "qs_pager", children=[
            Node(VIEW_GROUP, (42, 525, 1038, 1482), rid=S + "tile_page", children=nodes)]),
        Node(LL, (42, 1540, 1038, 1680), rid=S + "qs_footer_actions", children=[
            Node("android.widget.ImageButton", (800, 1550, 926, 1676), rid=S + "settings_button_container",
                 desc="Open settings.", clickable=True, focusable=True,
                 on_click=partial(_to_settings, w)),
            Node("android.widget.ImageButton", (926, 1550, 1038, 1676), rid=S + "pm_lite",
                 desc="Power menu", clickable=True, focusable=True, on_click=lambda: None)])])
    root = Node(FL, (0, 0, SCREEN_W, SCREEN_H), children=[
        Node("android.view.View", (0, 0, SCREEN_W, SCREEN_H), rid=S + "scrim_behind", clickable=True,
             on_click=w.close_shade),
        Node(FL, (0, 0, SCREEN_W, SCREEN_H), rid=S + "notification_panel", children=[
            Node(FL, (0, 0, SCREEN_W, SCREEN_H), rid=S + "qs_frame", children=[
                Node("android.widget.ScrollView", (42, 0, 1038, 1733), rid=S + "expanded_qs_scroll_view",
                     children=[header, panel])])])])
    return root


def internet_dialog(w: AppHost) -> Node:
    """A14's Internet panel, reduced to what a task needs: the Wi-Fi switch and Done."""
    st = w.state

    def extra(y: int) -> tuple[list[Node], int]:
        row = Node(LL, (147, y, 933, y + 160), rid=S + "turn_on_wifi_layout", clickable=True, focusable=True,
                   on_click=lambda: st.set_wifi(not st.wifi), children=[
                       Node(TV, (147, y + 40, 600, y + 120), text="Wi-Fi", rid=S + "wifi_toggle_title"),
                       Node(SWITCH, (800, y + 35, 933, y + 125), rid=S + "wifi_toggle", checkable=True,
                            checked=st.wifi)])
        kids = [row]
        if st.wifi:
            kids.append(Node(TV, (147, y + 180, 933, y + 260), text="AndroidWifi", rid=S + "wifi_connected_title"))
        return kids, 300

    return alert_dialog("Internet", "", [("Done", S + "done_button", w.close_internet_dialog),
                                         ("Settings", S + "settings_button",
                                          partial(_to_settings, w, w.close_internet_dialog))], extra=extra)
