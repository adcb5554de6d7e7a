"""report.html in headless Chromium (Debian's chromium, driven by the playwright package)."""

from __future__ import annotations

import os
import shutil

import pytest
from PIL import Image

from agent_host.report import write_reports
from fixtures_report import XSS, lengthen_episode, make_run

CHROMIUM = os.environ.get("AGENT_HOST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.chromium


@pytest.fixture(scope="module")
def browser():
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install -y chromium; scripts/bootstrap.sh does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e .[test])")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium"),
                              args=ARGS, headless=True)
        yield b
        b.close()


def shown(page, panel: str = "#main-panel") -> None:
    """Wait until the panel shows an episode: its page (trajectories/NNNN.js) loads
    asynchronously, and the step counter is empty meanwhile."""
    page.wait_for_function("s => document.querySelector(s).textContent !== ''", arg=panel + " .step-counter")


def test_report_html_in_chromium(browser, tmp_path):
    run = make_run(tmp_path)
    html = write_reports(run)["html"]
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    problems, requests, dialogs = [], [], []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(html.as_uri(), wait_until="load")
    shown(page)

    # the viewer came up on the first episode, first frame
    counter = page.locator("#main-panel .step-counter")
    assert counter.text_content().startswith("1 / 4")
    assert page.locator("#ep-counter").text_content() == "1 / 18"
    # next step, next step by keyboard, next episode
    page.click("#main-panel .step-next")
    assert counter.text_content().startswith("2 / 4 (step 1)")
    assert page.locator("#main-panel .overlay circle").count() == 2              # tap drawn
    # the overlay covers exactly the screenshot, so the tap lands where it was made
    boxes = page.evaluate("""() => ['.shotbox img', '.shotbox svg'].map(s => {
        const r = document.querySelector('#main-panel ' + s).getBoundingClientRect();
        return [r.x, r.y, r.width, r.height].map(Math.round); })""")
    assert boxes[0] == boxes[1], boxes
    page.keyboard.press("ArrowRight")
    assert counter.text_content().startswith("3 / 4 (step 2)")
    assert page.locator("#main-panel .overlay polygon").count() == 1             # swipe arrow
    page.click("#ep-next")
    shown(page)
    assert page.locator("#ep-counter").text_content() == "2 / 18"
    assert counter.text_content().startswith("1 / 4")
    page.keyboard.press("j")
    shown(page)
    assert page.locator("#ep-counter").text_content() == "3 / 18"

    # phone and model text shows as text, never as markup
    page.click("#main-panel .step-next")
    obs = page.locator("#main-panel pre.observation")
    assert XSS in obs.text_content()
    assert XSS in page.locator("#main-panel pre.raw").text_content()
    # the report's two scripts, and the episode pages the viewer loaded beside it
    srcs = page.evaluate("() => Array.from(document.scripts, s => s.getAttribute('src'))")
    assert srcs[:2] == [None, None] and all(x.startswith("trajectories/") for x in srcs[2:]), srcs
    assert page.evaluate("() => document.querySelectorAll('b script, pre script, .panel script').length") == 0

    # a task in the per-task table opens its episodes in the viewer
    page.click('#per-task a.viewer-filter[data-task="wifi-on@verify"]')
    shown(page)
    assert page.locator("#ep-counter").text_content() == "1 / 6"
    assert "wifi-on@verify" in page.locator("#main-panel .head").text_content()

    # side by side: all three tasks disagree between the builds in some repeat
    assert page.locator("#cmp-tasks button").count() == 3
    shown(page, "#cmp-left")
    page.click("#cmp-left .step-next")
    assert page.locator("#cmp-left .step-counter").text_content().startswith("2 / 4")

    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    with Image.open(shot) as im:
        im.load()
        assert im.size[0] >= 1300 and im.size[1] > 900
    page.close()

    assert dialogs == [], dialogs
    assert problems == [], problems
    # nothing but the report and its own episode pages, read from disk
    pages = (html.parent / "trajectories").as_uri() + "/"
    assert requests[0] == html.as_uri() and all(u.startswith(pages) for u in requests[1:]), requests


LONG_REASON = "bluetooth_is_off_" * 18 + "END"        # 309 characters, nowhere to wrap


def _long_reason_run(tmp_path):
    """The fixture run, every episode's reason replaced by one long unbreakable word (as the
    demo's bluetooth-off@verify episode, whose reason was a 300-character repetition)."""
    import json

    run = make_run(tmp_path, xss=False)
    log = run / "episodes.jsonl"
    lines = []
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        rec["reason"] = LONG_REASON
        lines.append(json.dumps(rec))
    log.write_text("".join(x + "\n" for x in lines))
    return run


@pytest.mark.parametrize("width", [1024, 1366, 1920])
def test_viewer_header_keeps_long_text_inside_with_the_full_text_a_click_away(browser, tmp_path, width):
    """Issue 14: a long reason pushed the viewer's header and step controls off screen."""
    html = write_reports(_long_reason_run(tmp_path))["html"]
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.goto(html.as_uri(), wait_until="load")

    def overflow():
        return page.evaluate("""() => {
            const vw = document.documentElement.clientWidth, out = [];
            if (document.documentElement.scrollWidth > vw) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + vw);
            for (const id of ['main-panel', 'cmp-left', 'cmp-right']) {
              const panel = document.getElementById(id), box = panel.getBoundingClientRect();
              if (panel.scrollWidth > panel.clientWidth) out.push(id + ' scrolls sideways');
              for (const e of panel.querySelectorAll('.head, .head *, .kv, .kv *, .nav, .nav *')) {
                const r = e.getBoundingClientRect();
                if (r.width && (r.right > box.right + 0.5 || r.right > vw)) out.push(id + ' ' + e.className + ' ' + e.tagName + ' ends at ' + Math.round(r.right) + ' > ' + Math.round(Math.min(box.right, vw)));
              }
            }
            return out; }""")

    assert overflow() == [], overflow()
    nxt = page.locator("#main-panel .step-next").bounding_box()
    assert nxt["x"] + nxt["width"] <= width
    meta = page.locator("#main-panel .kv").first
    assert LONG_REASON not in meta.text_content()               # shortened ...
    more = page.locator("#main-panel .kv .more").first
    more.click()                                                 # ... and one click shows all of it
    assert LONG_REASON in meta.text_content()
    assert overflow() == [], overflow()
    shot = tmp_path / f"viewer-{width}.png"
    top = page.evaluate("() => document.getElementById('viewer').getBoundingClientRect().top + window.scrollY")
    # full_page: page coordinates, so the sticky page header does not cover the viewer's
    page.screenshot(path=str(shot), full_page=True, clip={"x": 0, "y": top, "width": width, "height": 420})
    print(f"screenshot: {shot}")
    more.click()                                                 # and one more hides it again
    assert LONG_REASON not in meta.text_content()
    page.close()


def test_kind_and_app_filters_and_breakdown_links(browser, tmp_path):
    """Issue 12: a user sees where a build fails: filter the viewer by task kind and app, and a
    group in the breakdown table opens its episodes."""
    import json

    from test_report_breakdown import TASKS

    run = make_run(tmp_path, xss=False)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["tasks"] = TASKS
    (run / "manifest.json").write_text(json.dumps(manifest))
    html = write_reports(run)["html"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(html.as_uri(), wait_until="load")
    counter = page.locator("#ep-counter")
    assert counter.text_content() == "1 / 18"
    page.select_option("#f-kind", "infeasible")
    assert counter.text_content() == "1 / 6"                     # impossible x 2 builds x 3 repeats
    assert "impossible" in page.locator("#main-panel .head").text_content()
    page.select_option("#f-kind", "")
    page.select_option("#f-app", "settings")
    assert counter.text_content() == "1 / 12"                    # wifi-on and wifi-on@verify
    page.click('#breakdown a.viewer-filter[data-kind="infeasible"]')
    assert counter.text_content() == "1 / 6" and page.locator("#f-app").input_value() == ""
    assert page.locator("#f-kind").input_value() == "infeasible"
    page.close()
    assert problems == []


@pytest.mark.parametrize("width", [1024, 1366])
def test_builds_as_configured_fits_the_window(browser, tmp_path, width):
    """The demo's report scrolled sideways at 1366 px: the "Builds as configured" table held
    the builds' args and env on unbreakable lines (a JSON argument, VLLM_... variable names)."""
    import json

    run = make_run(tmp_path, xss=False)
    manifest = json.loads((run / "manifest.json").read_text())
    for b in manifest["builds"]:
        b.update({"model": "smollm2-135m-w4a16", "kernel": "CPUWNA16LinearKernel (cpu_gemm_wna16)",
                  "bits_per_weight": 4.5, "group_size": 64,
                  "args": ["--enforce-eager", "--structured-outputs-config",
                           '{"backend":"xgrammar","disable_any_whitespace":true}', "--max-num-seqs", "4",
                           "--dtype", "bfloat16", "--max-model-len", "8192"],
                  "env": {"VLLM_ENFORCE_STRICT_TOOL_CALLING": "0", "VLLM_CPU_INT4_W4A8": "0"},
                  "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 256}})
    (run / "manifest.json").write_text(json.dumps(manifest))
    html = write_reports(run)["html"]
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.goto(html.as_uri(), wait_until="load")
    out = page.evaluate("""() => {
        const vw = document.documentElement.clientWidth, out = [];
        if (document.documentElement.scrollWidth > vw) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + vw);
        const t = document.querySelector('table.config');
        if (!t) return ['no table.config'];
        const r = t.getBoundingClientRect();
        if (r.right > vw) out.push('builds as configured ends at ' + Math.round(r.right) + ' > ' + vw);
        return out; }""")
    assert out == [], out
    assert "disable_any_whitespace" in page.locator("table.config").text_content()   # all of it still shown
    page.close()


def test_viewer_shows_every_step_of_a_long_trajectory(browser, tmp_path):
    """Issue 24: the steps are a page beside report.html, loaded from disk (file://) when the
    episode is shown; all 2,000 of them, the last one included."""
    run = make_run(tmp_path, xss=False)
    lengthen_episode(run, "w4a16__impossible__base__r0", 2000)
    html = write_reports(run)["html"]
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(html.as_uri(), wait_until="load")
    page.click('#per-task a.viewer-filter[data-task="impossible"]')
    page.wait_for_function("() => /^1 \\/ 2001 /.test(document.querySelector('#main-panel .step-counter').textContent)")
    assert page.locator("#main-panel .timeline button").count() == 2001       # after setup, steps 1-2000
    page.click("#main-panel .timeline button >> nth=-1")
    assert page.locator("#main-panel .step-counter").text_content().startswith("2001 / 2001 (step 2000)")
    assert "long step 2000" in page.locator("#main-panel pre.observation").text_content()
    page.close()
    assert problems == []


def test_viewer_shows_a_steps_change_to_the_scope_as_lines(browser, tmp_path):
    """A collateral episode: the step's diff of the task's scope reads as added and removed rows
    with the expected counts (not JSON), beside the goal's two halves; the state after setup is
    a click away, and a stray's step is marked on the timeline."""
    from fixtures_report import STRAY, add_collateral_episode

    run = make_run(tmp_path, xss=False)
    add_collateral_episode(run)
    html = write_reports(run)["html"]
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(html.as_uri(), wait_until="load")
    page.select_option("#f-outcome", "collateral")
    shown(page)
    assert page.locator("#ep-counter").text_content() == "1 / 1"
    assert page.locator("#main-panel .timeline button.stray").count() == 2
    page.click("#main-panel .step-next")
    page.click("#main-panel .step-next")                       # step 3: task_complete, the stray there
    detail = page.locator("#main-panel .detail")
    text = detail.text_content()
    assert "asked-for change: there" in text and "rest of the scope: changed" in text
    assert "event: 2 added, 0 removed (expected 1 added, 0 removed)" in text
    assert "file: 0 added, 1 removed (no change expected)" in text
    assert page.locator("#main-panel .state pre.diff .add").nth(1).text_content() == f"+ {STRAY}\n"
    assert page.locator("#main-panel .state pre.diff .del").text_content() == "− f /sdcard/Download/Taxes 2026\n"
    assert '"kinds"' not in text                                  # no raw JSON of the diff
    state = page.locator("#main-panel details.start-state")
    assert not state.evaluate("d => d.open")
    state.locator("summary").click()
    assert "Dentist" in state.text_content()
    page.close()
    assert problems == []
