"""Pixel launcher home screen (com.google.android.apps.nexuslauncher)."""

from __future__ import annotations

import random
from functools import partial

from ..core import AppHost, Screen
from ..hierarchy import SCREEN_H, SCREEN_W, Node
from .base import FL, TV, VIEW_GROUP


PKG = "com.google.android.apps.nexuslauncher"
L = PKG + ":id/"

COLS = 5
ROW_H = 300  # workspace rows beyond the first stack upwards, so the first row never moves


class Launcher(Screen):
    pkg = PKG
    activity = "com.google.android.apps.nexuslauncher.NexusLauncherActivity"

    def __init__(self) -> None:
        super().__init__()
        # `cmd vphone launcher-order SEED`: the workspace icons shuffled by SEED (0: registration order).
        self.order_seed = 0

    def build(self, w: AppHost) -> Node:
        col = SCREEN_W // 5

        def icon(label: str, pkg: str, x: int, y: int, rid: str = "") -> Node:
            return Node(TV, (x, y, x + col, y + 262), text=label, desc=label, rid=rid, clickable=True,
                        focusable=True, long_clickable=True, on_click=partial(w.launch, pkg))

        # Icons in registration order (or shuffled by the order seed): the workspace grid, and the
        # hotseat row centred from column 1.
        workspace = [a for a in w.apps.values() if not a.hotseat]
        if self.order_seed:
            random.Random(self.order_seed).shuffle(workspace)
        hotseat = [a for a in w.apps.values() if a.hotseat]
        cells = [icon(a.label, a.pkg, (i % COLS) * col, 1540 - (i // COLS) * ROW_H) for i, a in enumerate(workspace)]
        hot = [icon(a.label, a.pkg, (i + 1) * col, 1880) for i, a in enumerate(hotseat)]
        drag = Node(FL, (0, 0, SCREEN_W, SCREEN_H), rid=L + "drag_layer", children=[
            Node("android.widget.ScrollView", (0, 0, SCREEN_W, SCREEN_H), rid=L + "workspace", children=[
                Node(VIEW_GROUP, (0, 132, SCREEN_W, 1838), children=[
                    Node(VIEW_GROUP, (42, 200, 1038, 440), rid=L + "smartspace_card_pager", children=[
                        Node(TV, (84, 230, 700, 320), text=w.date_text(), rid=L + "date", clickable=True)]),
                    *cells])]),
            Node(VIEW_GROUP, (0, 1838, SCREEN_W, 2200), rid=L + "hotseat", children=[
                *hot]),
            Node(FL, (42, 2180, 1038, 2300), rid=L + "search_container_hotseat", desc="Google search",
                 clickable=True, focusable=True)])
        return Node(FL, (0, 0, SCREEN_W, SCREEN_H), children=[
            Node(FL, (0, 0, SCREEN_W, SCREEN_H), rid="android:id/content", children=[
                Node(FL, (0, 0, SCREEN_W, SCREEN_H), rid=L + "launcher", children=[drag])])])
