"""Command palette entries: every screen, the queue filter, help, what-if, report."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from quotatop.tui.views_registry import VIEW_IDS, VIEW_TITLES


class QuotatopCommands(Provider):
    def _commands(self) -> list[tuple[str, object, str]]:
        app = self.app
        out: list[tuple[str, object, str]] = []
        for i, (vid, title) in enumerate(zip(VIEW_IDS, VIEW_TITLES, strict=True), 1):
            out.append((f"Screen: {title}", partial(app.show_view, vid),  # type: ignore[attr-defined]
                        f"key {i}"))
        out.append(("Filter the queue", app.action_filter, "key /"))  # type: ignore[attr-defined]
        out.append(("Help: keys", app.action_help, "key ?"))  # type: ignore[attr-defined]
        out.append(("Refresh now", app.refresh_now, "key r"))  # type: ignore[attr-defined]
        out.append(("What-if: change a quota, QoS, weight or nodes",
                    app.action_whatif, "key w"))  # type: ignore[attr-defined]
        out.append(("Report: GPU-hours, quota, cost, waits",
                    app.action_report, "key m"))  # type: ignore[attr-defined]
        return out

    async def discover(self) -> Hits:
        for name, cb, help_text in self._commands():
            yield DiscoveryHit(name, cb, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, cb, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), cb, help=help_text)  # type: ignore[arg-type]
