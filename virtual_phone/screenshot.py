"""Screenshots drawn from the view tree: enough for a person to follow a trajectory."""

from __future__ import annotations

import io
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from PIL import Image, ImageDraw, ImageFont

from .hierarchy import SCREEN_H, SCREEN_W, Node
from .ui import Ui

ACCENT = (11, 87, 208)
RGB = tuple[int, int, int]


@dataclass(frozen=True)
class Style:
    """How views are painted: the light or dark (night mode) palette, and the font scale."""
    fg: RGB
    muted: RGB
    dark: bool = False
    text_scale: float = 1.0

    def fill(self, light: RGB) -> RGB:
        """A surface colour: `light` in the day palette, a dark tone of it at night."""
        return (light[0] // 5 + 20, light[1] // 5 + 20, light[2] // 5 + 24) if self.dark else light


@lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default()


# A view shows a few lines at most; measuring megabytes of typed text would only cost time.
MAX_DRAWN_CHARS = 400


def drawable(text: str) -> str:
    """`text` as one line a font can lay out: control characters (newline, tab, NUL...),
    line separators and lone surrogates become spaces (the text layout engine rejects them),
    and very long text is cut. Emoji, RTL and combining marks are kept."""
    out = []
    for ch in text[:MAX_DRAWN_CHARS]:
        cat = unicodedata.category(ch)
        out.append(" " if cat in ("Cc", "Cs", "Zl", "Zp", "Co", "Cn") else ch)
    return "".join(out)


def _text(d: ImageDraw.ImageDraw, xy: tuple[int, int], text: str, **kw: object) -> None:
    """Draw text; a layout failure leaves the text out rather than failing the screenshot."""
    try:
        d.text(xy, drawable(text), **kw)  # type: ignore[arg-type]
    except (OSError, ValueError):
        pass


def _length(font: ImageFont.FreeTypeFont | ImageFont.ImageFont, text: str) -> float:
    try:
        return float(font.getlength(drawable(text)))
    except (OSError, ValueError):
        return 0.0


def _wrapped(d: ImageDraw.ImageDraw, text: str, box: tuple[int, int, int, int], color: tuple[int, int, int],
             size: int = 38) -> None:
    """Long messages (dialogs, footers) wrap inside their view, as a TextView does."""
    l, t, r, b = box
    font = _font(size)
    text = drawable(text)
    lines: list[str] = []
    cur = ""
    for word in text.split():
        trial = f"{cur} {word}".strip()
        if cur and _length(font, trial) > (r - l):
            lines.append(cur)
            cur = word
        else:
            cur = trial
    if cur:
        lines.append(cur)
    y = t + 6
    for line in lines:
        if y + size + 8 > b + 20:
            break
        _text(d, (l, y), line, fill=color, font=font)
        y += size + 12


def _draw_node(d: ImageDraw.ImageDraw, n: Node, st: Style) -> None:
    fg, muted = st.fg, st.muted
    l, t, r, b = n.bounds
    cls = n.cls.rsplit(".", 1)[-1]
    if cls == "Switch" and b - t > 150:  # a Quick Settings tile
        d.rounded_rectangle((l + 8, t + 8, r - 8, b - 8), radius=60, fill=ACCENT if n.checked else (70, 72, 78))
    elif cls == "Switch":
        cy = (t + b) // 2
        box = (r - 110, cy - 30, r - 10, cy + 30)
        d.rounded_rectangle(box, radius=30, fill=ACCENT if n.checked else st.fill((200, 200, 200)))
        kx = box[2] - 30 if n.checked else box[0] + 30
        d.ellipse((kx - 22, cy - 22, kx + 22, cy + 22), fill=(255, 255, 255))
    elif cls == "SeekBar":
        cy = (t + b) // 2
        try:
            frac = max(0.0, min(1.0, float(n.text) / 100))
        except ValueError:
            frac = 0.0
        d.rounded_rectangle((l, cy - 14, r, cy + 14), radius=14, fill=(210, 215, 230))
        x = l + int((r - l) * frac)
        d.rounded_rectangle((l, cy - 14, x, cy + 14), radius=14, fill=ACCENT)
        d.ellipse((x - 24, cy - 24, x + 24, cy + 24), fill=ACCENT)
    elif cls == "RadioButton":
        d.ellipse((l, t, r, b), outline=ACCENT, width=5)
        if n.checked:
            d.ellipse((l + 14, t + 14, r - 14, b - 14), fill=ACCENT)
    elif cls == "EditText":
        d.rounded_rectangle((l, t, r, b), radius=12, outline=ACCENT if n.focused else muted, width=3)
    elif cls in ("Button",):
        d.rounded_rectangle((l, t, r, b), radius=(b - t) // 2, fill=st.fill((232, 238, 252)) if not n.checked else ACCENT)
    elif cls == "ImageButton" and n.desc in ("Add alarm", "Create contact", "Start"):
        d.rounded_rectangle((l, t, r, b), radius=40, fill=st.fill((211, 227, 253)))
        _text(d, ((l + r) // 2, (t + b) // 2), "+", fill=fg, font=_font(90), anchor="mm")
    elif cls == "ImageButton" and n.desc == "Navigate up":
        _text(d, ((l + r) // 2, (t + b) // 2), "\u2190", fill=fg, font=_font(60), anchor="mm")
    elif cls == "CardView":
        d.rounded_rectangle((l, t, r, b), radius=(b - t) // 2, fill=st.fill((228, 232, 244)))
    elif n.rid.endswith("collapsing_toolbar") and n.desc:
        _text(d, (63, 420), n.desc, fill=fg, font=_font(84))
    is_tile = cls == "Switch" and b - t > 150
    if n.text and cls != "SeekBar" and not is_tile:
        size = max(9, int(max(18, min(48, int((b - t) * 0.6))) * st.text_scale))
        color = fg if n.enabled else muted
        if cls == "EditText" and n.text == n.hint:
            color = muted
        if n.selected or (cls == "Button" and n.checked):
            color = (255, 255, 255) if cls == "Button" else ACCENT
        centred = cls == "Button" or (cls == "TextView" and n.clickable and (r - l) < 200)
        anchor_x = (l + r) // 2 if centred else l
        anchor = "mm" if anchor_x != l else "lm"
        font = _font(size)
        if anchor == "lm" and _length(font, n.text) > (r - l) and (b - t) > 90:
            _wrapped(d, n.text, (l, t, r, b), color, size=max(9, int(38 * st.text_scale)))
        else:
            _text(d, (anchor_x, (t + b) // 2), n.text, fill=color, font=font, anchor=anchor)
    for c in n.children:
        _draw_node(d, c, st)


def render(w: Ui, fmt: str = "PNG", quality: int = 80, scale: float = 1.0) -> bytes:
    dark = w.state.dark
    bg = (32, 33, 36) if dark else (248, 249, 255)
    fg = (232, 234, 237) if dark else (31, 31, 31)
    muted = (150, 150, 150)
    img = Image.new("RGB", (SCREEN_W, SCREEN_H), bg)
    d = ImageDraw.Draw(img)
    wins = w.shown_windows()
    k = w.density_scale          # the launcher's icons are drawn at the display's size
    fs = w.state.font_scale
    st = Style(fg, muted, dark, fs)
    for win in wins:
        if win.modal:
            overlay = Image.new("RGBA", (SCREEN_W, SCREEN_H), (0, 0, 0, 110))
            img.paste(overlay, (0, 0), overlay)
            d = ImageDraw.Draw(img)
            d.rounded_rectangle(win.root.bounds, radius=56, fill=(45, 46, 50) if dark else (240, 242, 250))
        elif win.kind == "overlay":   # a heads-up notification: a card over the app, no scrim
            d.rounded_rectangle(win.root.bounds, radius=40, fill=(45, 46, 50) if dark else (232, 236, 246))
        if win.kind == "app" and win.root.pkg == "com.android.systemui":  # the Quick Settings shade
            d.rectangle((0, 0, SCREEN_W, SCREEN_H), fill=(27, 28, 31))
            _draw_node(d, win.root, Style((232, 234, 237), muted, True, fs))
            continue
        if win.root.pkg == "com.google.android.apps.nexuslauncher":
            d.rectangle((0, 0, SCREEN_W, SCREEN_H), fill=(25, 38, 60) if dark else (60, 90, 140))
            for n in win.root.walk():
                if n.clickable and n.cls.endswith("TextView") and n.desc == n.text:
                    l, t, r, b = n.bounds
                    cx = (l + r) // 2
                    d.ellipse((cx - 80 * k, t + 20 * k, cx + 80 * k, t + 180 * k), fill=st.fill((230, 236, 250)))
                    _text(d, (cx, int(t + 100 * k)), n.text[:1], fill=ACCENT, font=_font(int(70 * k)), anchor="mm")
                    _text(d, (cx, int(t + 225 * k)), n.text, fill=(255, 255, 255), font=_font(int(34 * k * fs)),
                          anchor="mm")
                elif n.desc == "Google search":
                    d.rounded_rectangle(n.bounds, radius=int(70 * k), fill=st.fill((230, 236, 250)))
                elif n.rid.endswith(":id/date"):
                    _text(d, (n.bounds[0], n.bounds[1]), n.text, fill=(255, 255, 255), font=_font(int(56 * k * fs)))
            continue
        _draw_node(d, win.root, st if not win.modal or not dark else Style((232, 234, 237), muted, dark, fs))
    d.rounded_rectangle((400, SCREEN_H - 40, 680, SCREEN_H - 28), radius=6, fill=muted)
    if scale and scale != 1.0:
        img = img.resize((max(1, int(SCREEN_W * scale)), max(1, int(SCREEN_H * scale))))
    if fmt == "RGBA":     # raw pixels, as the framebuffer: service sends them
        return img.convert("RGBA").tobytes()
    buf = io.BytesIO()
    if fmt == "JPEG":
        img.save(buf, "JPEG", quality=quality)
    else:
        img.save(buf, "PNG", compress_level=1)
    return buf.getvalue()
