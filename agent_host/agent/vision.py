"""The screen as an image for a vision build: the screenshot shrunk to the build's size
(config/observation.py `image_size`), with numbered boxes over the listed elements in `som`
mode, encoded as PNG; and the user message's content parts that carry it.

A prompt's image is referenced as `images/<sha256>.png` (config/requests.py `IMAGE_DIR`) in
the conversation the loop keeps and requests.json stores; `config/requests.expand_images`
turns the references into data URLs when a request is sent or rebuilt.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from agent_host.config.observation import ObservationSpec, image_size
from agent_host.config.requests import IMAGE_DIR, Json
from agent_host.phone.device import png_bytes
from agent_host.phone.screen import Screen

if TYPE_CHECKING:
    from PIL.Image import Image

# set-of-marks colours: one per index, cycled, dark enough for white numbers
_MARKS = ((230, 25, 75), (60, 140, 60), (0, 90, 200), (200, 110, 0), (145, 30, 180), (0, 130, 130))


def shown_image(shot: Image, screen: Screen, spec: ObservationSpec) -> Image:
    """The screenshot as the model is shown it: the phone's screen (`screen.width` x
    `screen.height`, the frame's phone size) shrunk per `spec`, marked in `som` mode."""
    from PIL import Image as PILImage

    w, h = image_size(screen.width or shot.width, screen.height or shot.height, spec)
    img = shot.convert("RGB")
    if img.size != (w, h):
        img = img.resize((w, h), PILImage.Resampling.BILINEAR)
    if spec.mode == "som":
        mark(img, screen, w / (screen.width or shot.width), h / (screen.height or shot.height))
    return img


def mark(img: Image, screen: Screen, sx: float, sy: float) -> None:
    """Draw each element's box and its index (the text observation's), scaled by (sx, sy)."""
    from PIL import ImageDraw

    draw = ImageDraw.Draw(img)
    for e in screen.elements:
        l, t, r, b = e.bounds
        if r <= l or b <= t:
            continue
        color = _MARKS[e.index % len(_MARKS)]
        box = (int(l * sx), int(t * sy), max(int(l * sx), int(r * sx) - 1), max(int(t * sy), int(b * sy) - 1))
        draw.rectangle(box, outline=color, width=2)
        label = str(e.index)
        tw, th = draw.textbbox((0, 0), label)[2:]
        draw.rectangle((box[0], box[1], box[0] + tw + 3, box[1] + th + 3), fill=color)
        draw.text((box[0] + 2, box[1] + 1), label, fill=(255, 255, 255))


def encode(img: Image) -> tuple[str, bytes]:
    """(its reference `images/<sha256>.png`, its PNG bytes): stored once per content."""
    data = png_bytes(img)
    return f"{IMAGE_DIR}/{hashlib.sha256(data).hexdigest()}.png", data


def content(text: str, ref: str) -> list[Json]:
    """A user message's content: the text, then the image (referenced; sent as a data URL)."""
    return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": ref}}]


def observation_text(spec: ObservationSpec, rendered: str, size: tuple[int, int]) -> str:
    """What the text part says of the screen: `screenshot` mode names only the image's size;
    the others carry the text observation too."""
    if spec.mode == "screenshot":
        return f"(the screenshot, {size[0]}x{size[1]} pixels)"
    return rendered
