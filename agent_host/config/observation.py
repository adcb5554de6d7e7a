"""What a build is shown of the screen and in which frame it names points: the observation
mode, the image size, the images of history kept, the coordinate frame (docs/builds.md,
"Vision builds").

Pure arithmetic, so every layer can ask it: the size of the image a phone screen is shrunk to
(`image_size`), the frame a model's coordinates are in (`Frame`) and a point in it mapped back
to the phone's pixels (`Frame.to_phone`). The image itself is made in agent/vision.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

ObservationMode = Literal["text", "screenshot", "screenshot+text", "som"]
OBSERVATION_MODES: tuple[ObservationMode, ...] = ("text", "screenshot", "screenshot+text", "som")
CoordinateFrame = Literal["pixels", "normalized"]
NORMALIZED = 1000     # the normalized frame's extent, 0..1000 on both axes (UI-TARS' convention)


@dataclass(frozen=True)
class ObservationSpec:
    """A build's observation: `text` is today's (no image, no coordinate tools unless
    `coordinates` is named); the other modes send the screenshot and offer coordinate tools,
    in `pixels` by default."""
    mode: ObservationMode = "text"
    coordinates: CoordinateFrame | None = None
    max_pixels: int | None = None      # shrink the screenshot to at most this many pixels
    long_side: int | None = None       # or to this long side (whichever is smaller wins)
    history_images: int = 1            # images kept in a prompt (the newest ones)

    @property
    def images(self) -> bool:
        return self.mode != "text"

    @property
    def frame(self) -> CoordinateFrame | None:
        """The coordinate frame the model's tap_xy/long_press_xy/swipe_xy use; None: none offered."""
        if self.coordinates is not None:
            return self.coordinates
        return "pixels" if self.images else None


TEXT = ObservationSpec()


def image_size(width: int, height: int, spec: ObservationSpec) -> tuple[int, int]:
    """The size the phone's `width` x `height` screen is shown at: its own size shrunk (never
    grown), aspect kept, to `long_side` and to `max_pixels`."""
    scale = 1.0
    if spec.long_side is not None:
        scale = min(scale, spec.long_side / max(width, height))
    if spec.max_pixels is not None:
        scale = min(scale, math.sqrt(spec.max_pixels / (width * height)))
    return max(1, int(width * scale)), max(1, int(height * scale))


@dataclass(frozen=True)
class Frame:
    """The space a model's coordinates are in: `width` x `height` (valid x in 0..width-1,
    normalized: 0..1000 inclusive), and the phone's pixels they map to."""
    kind: CoordinateFrame
    width: int
    height: int
    phone_width: int
    phone_height: int

    @classmethod
    def of(cls, spec: ObservationSpec, phone_width: int, phone_height: int) -> Frame | None:
        kind = spec.frame
        if kind is None:
            return None
        if kind == "normalized":
            return cls(kind, NORMALIZED, NORMALIZED, phone_width, phone_height)
        w, h = image_size(phone_width, phone_height, spec) if spec.images else (phone_width, phone_height)
        return cls(kind, w, h, phone_width, phone_height)

    def extent(self) -> tuple[int, int]:
        """The largest valid x and y."""
        if self.kind == "normalized":
            return NORMALIZED, NORMALIZED
        return self.width - 1, self.height - 1

    def outside(self, x: int, y: int) -> str | None:
        """Why (x, y) is not on the screen, in words for the model; None when it is."""
        mx, my = self.extent()
        if 0 <= x <= mx and 0 <= y <= my:
            return None
        unit = "normalized 0-1000" if self.kind == "normalized" else f"pixels of the {self.width}x{self.height} screen"
        return f"point ({x}, {y}) is off the screen: x must be 0-{mx} and y 0-{my} ({unit})"

    def to_phone(self, x: int, y: int) -> tuple[int, int]:
        """(x, y) in this frame as the phone's pixel: the center of the phone pixels the image
        pixel (or normalized step) covers, so a point on an element in any image size lands on it."""
        if self.kind == "normalized":
            sx, sy = self.phone_width / NORMALIZED, self.phone_height / NORMALIZED
            px, py = x * sx, y * sy
        else:
            sx, sy = self.phone_width / self.width, self.phone_height / self.height
            px, py = (x + 0.5) * sx, (y + 0.5) * sy
        return min(int(px), self.phone_width - 1), min(int(py), self.phone_height - 1)

    def from_phone(self, px: int, py: int) -> tuple[int, int]:
        """A phone pixel as a point of this frame (scripts and tests aim with it)."""
        if self.kind == "normalized":
            return round(px * NORMALIZED / self.phone_width), round(py * NORMALIZED / self.phone_height)
        return int(px * self.width / self.phone_width), int(py * self.height / self.phone_height)

    def describe(self) -> str:
        """The frame in one line of the prompt."""
        if self.kind == "normalized":
            return "x and y are normalized: 0-1000 across the screen's width and height, whatever its size"
        return f"x and y are pixels of the {self.width}x{self.height} screen, from its top-left corner"
