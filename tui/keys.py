"""Every key, once: the help screen lists this table and tests check that
every binding the app declares appears in it. No key changes a job."""

from __future__ import annotations

KEYS: tuple[tuple[str, str, str], ...] = (
    ("everywhere", "1 … 7", "Overview, Quota, Priority, Elastic, Queue, Nodes, Timeline"),
    ("everywhere", "8", "Incidents: open and closed, teams, jobs, suggested remedy"),
    ("everywhere", "← →", "previous / next screen"),
    ("everywhere", "esc", "back: dialog, filter, last screen"),
    ("everywhere", ": or ctrl+p", "command palette (screens, themes, help)"),
    ("everywhere", "/", "filter the queue (opens the Queue)"),
    ("everywhere", "space", "pause / resume refresh (replay: play / pause)"),
    ("everywhere", "r", "refresh now"),
    ("everywhere", "R", "start / stop recording this session (● REC in the header)"),
    ("everywhere", "t", "next theme"),
    ("everywhere", "w / m", "what-if on quotas, QoS, weights, nodes · period report, charts"),
    ("everywhere", "e / E / ctrl+s", "export table CSV / JSON · screenshot"),
    ("everywhere", "?", "this help"),
    ("everywhere", "q", "quit"),
    ("everywhere", "mouse", "click tabs, rows, column headers, the timeline bar"),
    ("tables", "↑ ↓ / k j", "move the cursor"),
    ("tables", "pgup pgdn / ctrl+b ctrl+f", "page"),
    ("tables", "home end / g G", "first / last row"),
    ("tables", "h l", "scroll columns"),
    ("tables", "shift+letter", "sort by that column; again reverses"),
    ("Overview", "enter / - +", "fold / unfold a parent account (▾ open, ▸ folded)"),
    ("Queue", "enter", "job detail (esc closes)"),
    ("Queue", "s / S", "sort by the next column / reverse"),
    ("Queue", "esc", "clear the filter"),
    ("replay", ", .", "step one frame back / forward (every screen)"),
    ("replay", "< >", "seek 5% back / forward (every screen)"),
    ("replay", "[ ]", "slower / faster: ×1 ×2 ×5 ×10 ×50 ×100 ×1000 (every screen)"),
    ("Timeline", "home end", "seek to start / end"),
    ("Timeline", "+ -", "faster / slower, as ] ["),
)
