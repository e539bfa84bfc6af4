"""The scripted tasks of ``tokens.py``, over the fixtures of :mod:`_fixtures`.

A :class:`Task` scripts the best trajectory in each mode: ``native(session)`` issues tool calls
batch by batch (parallel calls in one assistant message whenever they are independent) and
``program`` is the Python body one ``run_code`` call runs (under tool search, a first ``run_code``
call prints the signatures of ``uses``, the tools the program calls). ``expected`` is computed from
the data directly; the Code Mode output must equal it (checked), and the final answer both modes give is
written from it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from _fixtures.dataset import Fixture
from _fixtures.schemas import JsonObject

__all__ = ["TASKS", "NativeSession", "Task"]


class NativeSession(Protocol):
    """What a native trajectory drives: one assistant message of tool calls at a time."""

    async def call(self, calls: Sequence[tuple[str, JsonObject]]) -> list[Any]:
        """One assistant message making ``calls`` (in parallel); returns their canonical values."""
        ...


@dataclass(frozen=True)
class Task:
    """One scripted task: the user's request, the best native trajectory and the best Code Mode one."""

    name: str
    tool_set: str
    prompt: str
    native: Callable[[NativeSession, Fixture], Awaitable[None]]
    program: str
    description: str
    expected: Callable[[Fixture], str]
    answer_intro: str
    note: str = ""
    uses: tuple[str, ...] = ()  # the tools the program calls: what it describes under tool search

    def answer(self, fixture: Fixture) -> str:
        """The final answer both modes give: the intro, then the expected text."""
        return f"{self.answer_intro}\n\n{self.expected(fixture)}"


Q1 = {"created_at_min": "2026-01-01T00:00:00Z", "created_at_max": "2026-03-31T23:59:59Z", "per_page": 100}


def _refunded_cents(order: Mapping[str, Any]) -> int:
    return sum(round(refund["amount"] * 100) for refund in order["refunds"])


def _expected_refunds(fx: Fixture) -> str:
    by_method: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    count = 0
    for order in fx.orders:
        refunded = _refunded_cents(order)
        if 0 < refunded < round(order["total"] * 100):
            count += 1
            by_method[order["payment"]["method"]][0] += 1
            by_method[order["payment"]["method"]][1] += refunded
    lines = [f"partially refunded orders: {count} of {len(fx.orders)}"]
    lines += [
        f"{m}: {n} orders, {cents / 100:.2f} USD refunded" for m, (n, cents) in sorted(by_method.items())
    ]
    return "\n".join(lines)


async def _native_refunds(s: NativeSession, fx: Fixture) -> None:
    [first] = await s.call([("shop_list_orders", {**Q1, "page": 1})])
    await s.call([("shop_list_orders", {**Q1, "page": page}) for page in range(2, first["total_pages"] + 1)])


_PROGRAM_REFUNDS = """\
import asyncio

q1 = {"created_at_min": "2026-01-01T00:00:00Z", "created_at_max": "2026-03-31T23:59:59Z", "per_page": 100}
first = await tools.shop_list_orders({**q1, "page": 1})
rest = await asyncio.gather(
    *(tools.shop_list_orders({**q1, "page": p}) for p in range(2, first["total_pages"] + 1))
)
orders = [o for page in (first, *rest) for o in page["orders"]]
by_method = {}
for o in orders:
    refunded = sum(r["amount"] for r in o["refunds"])
    if 0 < refunded < o["total"]:
        n, amount = by_method.get(o["payment"]["method"], (0, 0.0))
        by_method[o["payment"]["method"]] = (n + 1, amount + refunded)
print(f"partially refunded orders: {sum(n for n, _ in by_method.values())} of {len(orders)}")
for method, (n, amount) in sorted(by_method.items()):
    print(f"{method}: {n} orders, {amount:.2f} USD refunded")
"""


def _expected_top_spenders(fx: Fixture) -> str:
    spend: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for order in fx.orders:
        if order["status"] != "cancelled":
            spend[order["customer_id"]][0] += round(order["total"] * 100) - _refunded_cents(order)
            spend[order["customer_id"]][1] += 1
    customers = {c["id"]: c for c in fx.customers}
    ranked = sorted(spend.items(), key=lambda kv: (-kv[1][0], kv[0]))[:5]
    lines = []
    for rank, (cid, (cents, n)) in enumerate(ranked, 1):
        c = customers[cid]
        lines.append(
            f"{rank}. {c['name']} ({c['company']}, {c['segment']}): {cents / 100:.2f} USD over {n} orders;"
            f" account manager {c['account_manager']['name']}"
        )
    return "\n".join(lines)


async def _native_top_spenders(s: NativeSession, fx: Fixture) -> None:
    first, customers = await s.call(
        [("shop_list_orders", {**Q1, "page": 1}), ("crm_list_customers", {"page": 1, "per_page": 100})]
    )
    more = [("shop_list_orders", {**Q1, "page": p}) for p in range(2, first["total_pages"] + 1)]
    more += [
        ("crm_list_customers", {"page": p, "per_page": 100}) for p in range(2, customers["total_pages"] + 1)
    ]
    await s.call(more)


_PROGRAM_TOP_SPENDERS = """\
import asyncio

q1 = {"created_at_min": "2026-01-01T00:00:00Z", "created_at_max": "2026-03-31T23:59:59Z", "per_page": 100}
first, people = await asyncio.gather(
    tools.shop_list_orders({**q1, "page": 1}), tools.crm_list_customers({"page": 1, "per_page": 100})
)
rest = await asyncio.gather(
    *(tools.shop_list_orders({**q1, "page": p}) for p in range(2, first["total_pages"] + 1))
)
customers = {c["id"]: c for c in people["customers"]}
assert people["total_pages"] == 1
spend = {}
for o in (o for page in (first, *rest) for o in page["orders"]):
    if o["status"] == "cancelled":
        continue
    net = round(o["total"] * 100) - sum(round(r["amount"] * 100) for r in o["refunds"])
    cents, n = spend.get(o["customer_id"], (0, 0))
    spend[o["customer_id"]] = (cents + net, n + 1)
top = sorted(spend.items(), key=lambda kv: (-kv[1][0], kv[0]))[:5]
for rank, (cid, (cents, n)) in enumerate(top, 1):
    c = customers[cid]
    print(f"{rank}. {c['name']} ({c['company']}, {c['segment']}): {cents / 100:.2f} USD over {n} orders;"
          f" account manager {c['account_manager']['name']}")
"""

_REPO = {"owner": "acme", "repo": "api"}


def _recent_merged(prs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    merged = [pr for pr in prs if pr["merged_at"] and pr["base"]["ref"] == "main"]
    return sorted(merged, key=lambda pr: pr["merged_at"], reverse=True)[:10]


def _expected_migrations(fx: Fixture) -> str:
    lines = []
    recent = _recent_merged(fx.pull_requests)
    for pr in recent:
        migrations = [
            f["filename"] for f in fx.pr_files[pr["number"]] if f["filename"].startswith("db/migrations/")
        ]
        if migrations:
            runs = fx.check_runs[pr["head"]["sha"]]["check_runs"]
            failed = [run["name"] for run in runs if run["conclusion"] == "failure"]
            lines.append(
                f"#{pr['number']} {pr['title']}: {', '.join(migrations)}; "
                f"failed checks: {', '.join(failed) or 'none'}"
            )
    return f"{len(lines)} of {len(recent)} recently merged PRs touch migrations\n" + "\n".join(lines)


async def _native_migrations(s: NativeSession, fx: Fixture) -> None:
    listing = {
        **_REPO,
        "state": "closed",
        "base": "main",
        "sort": "updated",
        "direction": "desc",
        "per_page": 30,
    }
    [prs] = await s.call([("github_list_pull_requests", listing)])
    recent = _recent_merged(prs)
    files = await s.call(
        [("github_get_pull_request_files", {**_REPO, "pull_number": pr["number"]}) for pr in recent]
    )
    touched = [
        pr
        for pr, changed in zip(recent, files, strict=True)
        if any(f["filename"].startswith("db/migrations/") for f in changed)
    ]
    await s.call([("github_list_check_runs_for_ref", {**_REPO, "ref": pr["head"]["sha"]}) for pr in touched])


_PROGRAM_MIGRATIONS = """\
import asyncio

repo = {"owner": "acme", "repo": "api"}
prs = await tools.github_list_pull_requests(
    {**repo, "state": "closed", "base": "main", "sort": "updated", "direction": "desc", "per_page": 30}
)
recent = sorted((p for p in prs if p["merged_at"]), key=lambda p: p["merged_at"], reverse=True)[:10]
files = await asyncio.gather(
    *(tools.github_get_pull_request_files({**repo, "pull_number": p["number"]}) for p in recent)
)
touched = []
for pr, changed in zip(recent, files):
    migrations = [f["filename"] for f in changed if f["filename"].startswith("db/migrations/")]
    if migrations:
        touched.append((pr, migrations))
checks = await asyncio.gather(
    *(tools.github_list_check_runs_for_ref({**repo, "ref": pr["head"]["sha"]}) for pr, _ in touched)
)
print(f"{len(touched)} of {len(recent)} recently merged PRs touch migrations")
for (pr, migrations), runs in zip(touched, checks):
    failed = [r["name"] for r in runs["check_runs"] if r["conclusion"] == "failure"]
    print(f"#{pr['number']} {pr['title']}: {', '.join(migrations)}; "
          f"failed checks: {', '.join(failed) or 'none'}")
"""

_LARGEST_COMMAND = "find packages -type f -exec wc -lc {} + | grep -v ' total$' | sort -k2,2nr | head -n 3"


def _expected_largest(fx: Fixture) -> str:
    sizes = [
        (len(text.encode()), text.count("\n"), path)
        for path, text in fx.files.items()
        if path.startswith("packages/")
    ]
    sizes.sort(key=lambda entry: -entry[0])
    return "\n".join(f"{path}: {size} bytes, {lines} lines" for size, lines, path in sizes[:3])


async def _native_largest(s: NativeSession, fx: Fixture) -> None:
    await s.call(
        [
            (
                "bash",
                {"command": _LARGEST_COMMAND, "description": "List the three largest files with line counts"},
            )
        ]
    )


_PROGRAM_LARGEST = f'''\
out = await tools.bash({{
    "command": "{_LARGEST_COMMAND}",
    "description": "List the three largest files with line counts",
}})
for line in out["stdout"].splitlines():
    lines, size, path = line.split()
    print(f"{{path}}: {{size}} bytes, {{lines}} lines")
'''


def _expected_todos(fx: Fixture) -> str:
    counts: dict[str, int] = defaultdict(int)
    for path, text in fx.files.items():
        if path.startswith("packages/"):
            counts[path.split("/")[1]] += sum("TODO" in line for line in text.splitlines())
    ranked = sorted(((p, c) for p, c in counts.items() if c), key=lambda kv: (-kv[1], kv[0]))
    return "\n".join(f"{package}: {count}" for package, count in ranked)


async def _native_todos(s: NativeSession, fx: Fixture) -> None:
    await s.call([("grep", {"pattern": "TODO", "path": "packages", "output_mode": "count"})])


_PROGRAM_TODOS = """\
found = await tools.grep({"pattern": "TODO", "path": "packages", "output_mode": "count"})
per_package = {}
for entry in found["counts"]:
    package = entry["path"].split("/")[1]
    per_package[package] = per_package.get(package, 0) + entry["count"]
for package, count in sorted(per_package.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{package}: {count}")
"""

_TEST_COMMAND = "python3 -m unittest discover -s tests"
_IMPORT_LINE = re.compile(r"^(?:from|import) (app(?:\.\w+)?)")


def _expected_failing(fx: Fixture) -> str:
    lines = [f"{len(fx.failing_tests)} failing tests"]
    for test_id, module in sorted(fx.failing_tests):
        text = fx.files[f"tests/{module}.py"]
        found = [m.group(1) for line in text.splitlines() if (m := _IMPORT_LINE.match(line))]
        lines.append(f"{test_id} -> {', '.join(dict.fromkeys(f.replace('.', '/') + '.py' for f in found))}")
    return "\n".join(lines)


def _failing_from_output(output: str) -> list[str]:
    failed = []
    for line in output.splitlines():
        match = re.match(r"(?:FAIL|ERROR): (\w+) \(([\w.]+)\)", line)
        if match:
            parts = match.group(2).split(".")
            failed.append(".".join(parts if parts[-1] == match.group(1) else [*parts, match.group(1)]))
    return sorted(failed)


async def _native_failing(s: NativeSession, fx: Fixture) -> None:
    [run] = await s.call([("bash", {"command": _TEST_COMMAND, "description": "Run the unit test suite"})])
    modules = sorted({test.split(".")[0] for test in _failing_from_output(run["stdout"] + run["stderr"])})
    glob = "{" + ",".join(f"{m}.py" for m in modules) + "}"
    await s.call(
        [("grep", {"pattern": "^(from|import) app", "path": "tests", "glob": glob, "output_mode": "content"})]
    )


_PROGRAM_FAILING = f'''\
import re

run = await tools.bash({{"command": "{_TEST_COMMAND}", "description": "Run the unit test suite"}})
failed = []
for line in (run["stdout"] + run["stderr"]).splitlines():
    m = re.match(r"(?:FAIL|ERROR): (\\w+) \\(([\\w.]+)\\)", line)
    if m:
        parts = m.group(2).split(".")
        failed.append(".".join(parts if parts[-1] == m.group(1) else [*parts, m.group(1)]))
modules = sorted({{t.split(".")[0] for t in failed}})
found = await tools.grep({{
    "pattern": "^(from|import) app", "path": "tests",
    "glob": "{{" + ",".join(m + ".py" for m in modules) + "}}", "output_mode": "content",
}})
imports = {{}}
for hit in found["matches"]:
    module = re.match(r"(?:from|import) (app(?:\\.\\w+)?)", hit["text"]).group(1)
    imports.setdefault(hit["path"].split("/")[-1][:-3], {{}})[module.replace(".", "/") + ".py"] = None
print(f"{{len(failed)}} failing tests")
for test in sorted(failed):
    print(f"{{test}} -> {{', '.join(imports[test.split('.')[0]])}}")
'''

TASKS: tuple[Task, ...] = (
    Task(
        "refunds",
        "mcp40",
        "Which of our Q1 2026 orders (Jan 1 - Mar 31) were partially refunded, i.e. some money was refunded "
        "but less than the order total? Give me the count and the refunded amount per payment method.",
        _native_refunds,
        _PROGRAM_REFUNDS,
        "Sum partial refunds by payment method",
        _expected_refunds,
        "Here are the partially refunded Q1 2026 orders:",
        "200 order records (2 pages of 100); filter + group-by the API cannot do",
        ("shop_list_orders",),
    ),
    Task(
        "top-spenders",
        "mcp40",
        "Who were our top 5 customers by net spend in Q1 2026 (order totals minus refunds, cancelled orders "
        "excluded)? Include their company, segment and account manager.",
        _native_top_spenders,
        _PROGRAM_TOP_SPENDERS,
        "Rank customers by net Q1 spend",
        _expected_top_spenders,
        "Top 5 customers by net Q1 2026 spend:",
        "join 200 orders with 60 customers",
        ("shop_list_orders", "crm_list_customers"),
    ),
    Task(
        "migration-prs",
        "mcp40",
        "Look at the 10 most recently merged pull requests into main in acme/api. Which of them added or "
        "changed database migrations (files under db/migrations/), and did any CI check fail on their head "
        "commit?",
        _native_migrations,
        _PROGRAM_MIGRATIONS,
        "Find merged PRs touching migrations and their CI",
        _expected_migrations,
        "Migration changes among the last 10 merged PRs:",
        "3 dependent hops: list PRs, 10 file lists (with patches), check runs",
        ("github_list_pull_requests", "github_get_pull_request_files", "github_list_check_runs_for_ref"),
    ),
    Task(
        "largest-files",
        "file6",
        "What are the 3 largest files under packages/, and how many lines does each have?",
        _native_largest,
        _PROGRAM_LARGEST,
        "List the three largest files with line counts",
        _expected_largest,
        "The three largest files under packages/:",
        "one shell pipeline answers it natively: no intermediate data to hide",
    ),
    Task(
        "todo-counts",
        "file6",
        "Count the TODO comments in each package under packages/ and list the packages from most to "
        "fewest TODOs.",
        _native_todos,
        _PROGRAM_TODOS,
        "Count TODO markers per package",
        _expected_todos,
        "TODO counts per package (most first):",
        "grep's count mode does most of the work natively (per-file counts)",
    ),
    Task(
        "failing-tests",
        "file6",
        "Run the test suite, then tell me which tests fail and which app modules each failing test's "
        "file imports.",
        _native_failing,
        _PROGRAM_FAILING,
        "Run tests and map failures to imports",
        _expected_failing,
        "Failing tests and the app modules their test files import:",
        "full unittest output (tracebacks) natively; a targeted grep for imports",
    ),
)
