"""Apps on the launcher that no task needs yet: one titled screen each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..hierarchy import SCREEN_W, Node
from .base import STATUS_H, TV, VIEW_GROUP, Screen, window_frame

if TYPE_CHECKING:
    from ..world import World


class StubApp(Screen):
    def __init__(self, pkg: str, activity: str, label: str) -> None:
        super().__init__()
        self.pkg, self.activity, self.label = pkg, activity, label

    @property
    def title(self) -> str:
        return self.label

    def build(self, w: World) -> Node:
        return window_frame([Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 2337), children=[
            Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 308), rid=f"{self.pkg}:id/toolbar", children=[
                Node(TV, (63, 180, 63 + 30 * len(self.label), 260), text=self.label)]),
            Node(TV, (63, 1100, 1017, 1200), text=f"{self.label} has nothing to show yet",
                 rid=f"{self.pkg}:id/empty_view")])])
