"""The seed article's Python demo, verbatim but for line breaks (the article
prints it on one line). It is the reference the core must reproduce exactly."""
# ruff: noqa
from collections import deque


class ClusterQuota:
    def __init__(self, quota_map):
        self.quota_map = quota_map
        self.usage = {team: 0 for team in quota_map}
        self.wait = {team: deque() for team in quota_map}
        self.granted = 0

    def submit(self, team, cpu):
        """提交任务：配额内有空位直接分配，否则进队等待。"""
        if self.wait[team] or self.usage[team] + cpu > self.quota_map[team]:
            self.wait[team].append(cpu)
            return "queued"
        self.usage[team] += cpu
        self.granted += 1
        return "running"

    def finish(self, team, cpu):
        """任务完成释放资源，并从等待队列中补位。"""
        self.usage[team] = max(0, self.usage[team] - cpu)
        moved = 0
        while self.wait[team] and self.usage[team] + self.wait[team][0] <= self.quota_map[team]:
            need = self.wait[team].popleft()
            self.usage[team] += need
            self.granted += 1
            moved += 1
        return moved

    def snapshot(self):
        return {t: {"使用": self.usage[t], "排队": len(self.wait[t])} for t in self.quota_map}


def demo():
    q = ClusterQuota({"alpha": 24, "beta": 16, "gamma": 16})
    steps = [
        ("submit", "alpha", 8), ("submit", "beta", 16), ("submit", "gamma", 8),
        ("submit", "alpha", 16), ("submit", "gamma", 12), ("submit", "beta", 4),
        ("finish", "alpha", 8), ("finish", "gamma", 8),
        ("submit", "alpha", 8), ("finish", "beta", 16),
    ]
    for step in steps:
        op, team, cpu = step
        if op == "submit":
            result = q.submit(team, cpu)
            print(f"[提交] {team} 申请 {cpu} 核 -> {result}")
        else:
            moved = q.finish(team, cpu)
            print(f"[完成] {team} 释放 {cpu} 核 -> 补位 {moved} 个任务")
        print("      状态:", q.snapshot())
    print("总成功分配任务数:", q.granted)


if __name__ == "__main__":
    demo()
