"""report.html looked at as a person would: Debian's chromium renders it headless to a
screenshot, which must show the page (the table and the coloured plots), not a blank or broken
page. Skips when chromium is not installed (it is not in scripts/setup.sh: ~300 MB). Set
SIXND_SCREENSHOT=FILE to keep the screenshot."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import png  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def main():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: chromium is not installed (apt-get install chromium to look at report.html)")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        abl = os.path.join(tmp, "abl")
        tiny_text.sixnd("ablate", "--out", abl, "--vary", "lr=2e-3,8e-3", "--seeds", "2",
                        *tiny_text.train_flags(p, steps=8))
        out = os.path.join(tmp, "report")
        tiny_text.sixnd("report", abl, "--out", out)
        shot = os.path.join(tmp, "shot.png")
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--user-data-dir={tmp}/chromium-profile", "--window-size=1100,2400", f"--screenshot={shot}",
                            "file://" + os.path.join(out, "report.html")], capture_output=True, text=True, timeout=180)
        if not os.path.exists(shot):
            return sixnd_files.report([f"chromium wrote no screenshot (exit {r.returncode}): {r.stderr[-500:]}"],
                                      "report.html screenshot")
        if os.environ.get("SIXND_SCREENSHOT"):
            shutil.copy(shot, os.environ["SIXND_SCREENSHOT"])
        w, h, ch, rows = png.read(shot)
        frac = png.colored_fraction(rows, ch)
        dark = sum(1 for row in rows[::8] for x in range(0, len(row), ch * 8) if max(row[x:x + 3]) < 80)
        print(f"screenshot {w}x{h}: {frac:.2%} coloured pixels, {dark} dark (text) samples")
        if (w, h) != (1100, 2400):
            failures.append(f"screenshot is {w}x{h}")
        if frac < 0.005:
            failures.append(f"the rendered page shows no coloured plots ({frac:.3%} coloured pixels)")
        if dark < 200:
            failures.append(f"the rendered page shows almost no text ({dark} dark samples)")
    return sixnd_files.report(failures, "report.html rendered by headless chromium")


if __name__ == "__main__":
    sys.exit(main())
