"""All synthetic data of one benchmark run (:class:`Fixture`, built by :func:`build_fixture`).

The monorepo's files and its failing tests, 60 customers, 200 orders, and 20 pull requests with their
files and check runs. Every value comes from a seeded ``random.Random``, so a run is deterministic.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from _fixtures.monorepo import NOUNS, ident, workspace_files
from _fixtures.schemas import JsonObject

_FIRST = (  # noqa: SIM905
    "Ada Ben Chloe Dev Elena Farid Grace Hiro Ines Jonas Kira Liam Mona Nils Omar Priya Quinn Rosa Sam Tara"
).split()
_LAST = (  # noqa: SIM905
    "Okafor Schmidt Nakamura Rossi Dubois Kowalski Silva Haddad Jensen Murphy Novak Garcia Chen Patel"
).split()
_COMPANY_A = (  # noqa: SIM905
    "Globex Initech Umbrella Hooli Vandelay Stark Wayne Tyrell Soylent Cyberdyne Wonka Acme"
).split()
_COMPANY_B = ("GmbH", "Ltd", "Inc", "SAS", "BV", "AB", "LLC")
_COUNTRIES = ("US", "DE", "GB", "FR", "NL", "SE", "CA", "JP")
_CITIES = {
    "US": "Austin",
    "DE": "Berlin",
    "GB": "Leeds",
    "FR": "Lyon",
    "NL": "Utrecht",
    "SE": "Malmö",
    "CA": "Toronto",
    "JP": "Osaka",
}
_PRODUCTS = [
    (f"SKU-{1000 + k}", title, price)
    for k, (title, price) in enumerate(
        [
            ("Ergonomic Desk Lamp", 49.0),
            ("Standing Desk Frame", 389.0),
            ("Walnut Desktop 160x80", 219.0),
            ("Monitor Arm, Dual", 129.0),
            ("Cable Tray", 24.5),
            ("Mesh Office Chair", 459.0),
            ("Chair Mat, Hard Floor", 39.9),
            ("Acoustic Panel 4-pack", 89.0),
            ("USB-C Dock 12-in-1", 179.0),
            ("Wireless Keyboard", 99.0),
            ("Vertical Mouse", 59.0),
            ("Laptop Stand", 45.0),
            ("Desk Drawer Unit", 149.0),
            ("Footrest", 35.0),
            ("Whiteboard 120x90", 119.0),
            ("LED Light Bar", 69.0),
        ]
    )
]
_MANAGERS = [
    {"id": f"am_{k:02d}", "name": name, "email": f"{name.split()[0].lower()}@acme-sales.example"}
    for k, name in enumerate(
        ["Priya Patel", "Jonas Schmidt", "Rosa Garcia", "Hiro Nakamura", "Mona Haddad"], 1
    )
]
REFUND_REASONS = (
    "damaged_in_transit",
    "wrong_item",
    "customer_changed_mind",
    "late_delivery",
    "price_adjustment",
)


def _money(cents: int) -> float:
    return round(cents / 100, 2)


def _customers(rng: random.Random) -> list[JsonObject]:
    customers = []
    for k in range(1, 61):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        country = rng.choice(_COUNTRIES)
        company = f"{rng.choice(_COMPANY_A)} {rng.choice(_COMPANY_B)}"
        customers.append(
            {
                "id": f"cus_{k:04d}",
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{last.lower()}{k}@{company.split(maxsplit=1)[0].lower()}.example",
                "company": company,
                "segment": rng.choices(["smb", "mid_market", "enterprise"], [6, 3, 1])[0],
                "country": country,
                "account_manager": rng.choice(_MANAGERS),
                "created_at": f"202{rng.randint(2, 5)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                "T09:00:00Z",
                "tags": rng.sample(
                    ["newsletter", "net30", "vip", "reseller", "tax_exempt", "churn_risk"], rng.randint(0, 3)
                ),
                "notes": rng.choice(
                    ["", "Prefers invoices by email.", "Ships to a warehouse; call ahead.", ""]
                ),
            }
        )
    return customers


def _orders(rng: random.Random, customers: Sequence[JsonObject]) -> list[JsonObject]:
    orders = []
    weights = [rng.choice([1, 1, 1, 2, 3, 6]) for _ in customers]
    for k in range(200):
        customer = rng.choices(customers, weights)[0]
        day = rng.randint(0, 89)
        month, mday = (1, day + 1) if day < 31 else ((2, day - 30) if day < 59 else (3, day - 58))
        items: list[JsonObject] = []
        for sku, title, price in rng.sample(_PRODUCTS, rng.randint(1, 4)):
            items.append({"sku": sku, "title": title, "quantity": rng.randint(1, 3), "unit_price": price})
        subtotal = sum(round(item["unit_price"] * 100) * item["quantity"] for item in items)
        discount = rng.choice([0, 0, 0, subtotal // 10])
        shipping = rng.choice([0, 995, 1495])
        tax = round((subtotal - discount) * (0.19 if customer["country"] == "DE" else 0.08))
        total = subtotal - discount + shipping + tax
        status = rng.choices(["closed", "open", "cancelled"], [70, 22, 8])[0]
        refunds = []
        if status != "cancelled" and rng.random() < 0.2:
            amount = total if rng.random() < 0.3 else rng.randint(total // 20, total // 2)
            refunds.append(
                {
                    "id": f"re_{k:05d}",
                    "amount": _money(amount),
                    "reason": rng.choice(REFUND_REASONS),
                    "created_at": f"2026-04-{rng.randint(1, 20):02d}T12:00:00Z",
                }
            )
        method = rng.choices(["card", "paypal", "bank_transfer", "apple_pay"], [55, 20, 15, 10])[0]
        payment: JsonObject = {"method": method}
        if method == "card":
            payment.update(
                card_brand=rng.choice(["visa", "mastercard", "amex"]), last4=f"{rng.randint(0, 9999):04d}"
            )
        orders.append(
            {
                "id": f"ord_{10001 + k}",
                "number": 10001 + k,
                "created_at": f"2026-{month:02d}-{mday:02d}T{rng.randint(7, 22):02d}:"
                f"{rng.randint(0, 59):02d}:00Z",
                "status": status,
                "customer_id": customer["id"],
                "email": customer["email"],
                "currency": "USD",
                "line_items": items,
                "subtotal": _money(subtotal),
                "discount_total": _money(discount),
                "shipping_total": _money(shipping),
                "tax_total": _money(tax),
                "total": _money(total),
                "payment": payment,
                "refunds": refunds,
                "shipping_address": {
                    "name": customer["name"],
                    "line1": f"{rng.randint(1, 240)} "
                    + rng.choice(["Main St", "Hauptstr.", "High St", "Rue Verte"]),
                    "city": _CITIES[customer["country"]],
                    "postal_code": f"{rng.randint(10000, 99999)}",
                    "country": customer["country"],
                },
                "tags": rng.sample(["wholesale", "gift", "priority", "b2b", "repeat"], rng.randint(0, 2)),
            }
        )
    return sorted(orders, key=lambda order: order["created_at"])


_PR_TOPICS = [
    ("Add index on invoices.customer_id", True),
    ("Refactor webhook retry loop", False),
    ("Add refunds.reason column", True),
    ("Bump httpx to 0.28", False),
    ("Split billing service settings", False),
    ("Backfill customer segments", True),
    ("Fix flaky test_export_csv", False),
    ("Drop legacy coupons table", True),
    ("Add rate limiting to /v2/search", False),
    ("Rename order.total_price to order.total", True),
    ("Document the release process", False),
    ("Cache product lookups", False),
    ("Add audit_log partitioning", True),
    ("Remove unused feature flags", False),
    ("Speed up CI with test sharding", False),
    ("Add tax_exempt flag to customers", True),
    ("Handle 429s from the payment gateway", False),
    ("Upgrade to Python 3.12", False),
    ("Add GIN index for search", True),
    ("Fix timezone bug in reports", False),
]
_PR_SENTENCES = [
    "This change is behind the `billing_v2` flag and is safe to roll back.",
    "Measured on staging: p95 latency drops from 840 ms to 210 ms for the affected endpoint.",
    "The migration is additive; the old column stays until the follow-up PR removes it.",
    "Reviewers: please look closely at the error handling in the retry path.",
    "Closes #318 and #322. Related to the Q1 reliability OKR.",
    "No API changes. Existing clients keep working without a redeploy.",
    "I tested this locally against a copy of production data (anonymised).",
    "The backfill runs in batches of 5,000 rows and takes about 12 minutes on production.",
    "Follow-up work is tracked in JIRA PAY-1432.",
    "Screenshots of the new dashboard panels are attached below.",
]
_CHECKS = ("lint", "unit-tests", "integration-tests", "build", "security-scan")
_USERS = ["mkowalski", "ainaba", "tdubois", "ejensen", "rsilva", "dependabot[bot]"]


def _pull_requests(
    rng: random.Random,
) -> tuple[list[JsonObject], dict[int, list[JsonObject]], dict[str, JsonObject]]:
    prs, files, checks = [], {}, {}
    for k, (title, migration) in enumerate(_PR_TOPICS):
        number = 431 - k * 2 - rng.randint(0, 1)
        merged = rng.random() < 0.75 or migration
        sha = "".join(rng.choice("0123456789abcdef") for _ in range(40))
        day = 28 - k
        login = rng.choice(_USERS)
        prs.append(
            {
                "number": number,
                "title": title,
                "state": "closed",
                "html_url": f"https://github.com/acme/api/pull/{number}",
                "user": {
                    "login": login,
                    "id": 1000 + _USERS.index(login),
                    "type": "Bot" if "[bot]" in login else "User",
                },
                "body": "## Summary\n" + " ".join(rng.sample(_PR_SENTENCES, rng.randint(3, 7))),
                "labels": [
                    {"name": name, "color": "d73a4a"}
                    for name in rng.sample(["db", "perf", "backend", "ci", "docs"], 2)
                ],
                "created_at": f"2026-03-{max(1, day - rng.randint(1, 6)):02d}T10:00:00Z",
                "updated_at": f"2026-03-{day:02d}T16:{k:02d}:00Z",
                "closed_at": f"2026-03-{day:02d}T15:{k:02d}:00Z",
                "merged_at": f"2026-03-{day:02d}T15:{k:02d}:00Z" if merged else None,
                "merge_commit_sha": sha[::-1] if merged else None,
                "head": {"ref": title.lower().replace(" ", "-")[:30], "sha": sha},
                "base": {"ref": "main"},
                "draft": False,
                "comments": rng.randint(0, 9),
                "review_comments": rng.randint(0, 14),
                "commits": rng.randint(1, 8),
                "additions": rng.randint(5, 900),
                "deletions": rng.randint(0, 400),
                "changed_files": 0,
            }
        )
        changed = []
        if migration:
            stamp = f"2026{3:02d}{day:02d}"
            changed.append(f"db/migrations/{stamp}_{title.lower().split()[0]}_{k}.sql")
        for _ in range(rng.randint(2, 9)):
            changed.append(
                f"src/api/{rng.choice(['billing', 'orders', 'search', 'auth', 'reports'])}/"
                f"{rng.choice(NOUNS)}_{rng.choice(['service', 'routes', 'models', 'tasks'])}.py"
            )
        pr_files = []
        for name in dict.fromkeys(changed):
            lines = [
                f"@@ -{rng.randint(1, 300)},{rng.randint(3, 9)} "
                f"+{rng.randint(1, 300)},{rng.randint(3, 12)} @@"
            ]
            for _ in range(rng.randint(4, 24)):
                sign = rng.choice(["+", "-", " "])
                code = f"{rng.choice(NOUNS)} = {ident(rng)}({rng.choice(NOUNS)}, limit={rng.randint(1, 99)})"
                if name.endswith(".sql"):
                    code = f"ALTER TABLE {rng.choice(NOUNS)}s ADD COLUMN {rng.choice(NOUNS)}_id bigint;"
                lines.append(f"{sign}    {code}")
            added = sum(line.startswith("+") for line in lines)
            removed = sum(line.startswith("-") for line in lines)
            status = "added" if name.endswith(".sql") else rng.choice(["modified", "modified", "added"])
            pr_files.append(
                {
                    "filename": name,
                    "status": status,
                    "additions": added,
                    "deletions": removed,
                    "changes": added + removed,
                    "patch": "\n".join(lines),
                }
            )
        prs[-1]["changed_files"] = len(pr_files)
        files[number] = pr_files
        runs = []
        for index, check in enumerate(_CHECKS):
            failed = rng.random() < 0.12
            runs.append(
                {
                    "id": 9_000_000 + k * 10 + index,
                    "name": check,
                    "status": "completed",
                    "conclusion": "failure" if failed else "success",
                    "started_at": f"2026-03-{day:02d}T14:{index * 7:02d}:00Z",
                    "completed_at": f"2026-03-{day:02d}T14:{index * 7 + 5:02d}:00Z",
                    "app": {"slug": "github-actions"},
                    "output": {
                        "title": f"{check} {'failed' if failed else 'passed'}",
                        "summary": f"{rng.randint(1, 40)} problems found" if failed else "All checks passed.",
                    },
                }
            )
        checks[sha] = {"total_count": len(runs), "check_runs": runs}
    return prs, files, checks


@dataclass
class Fixture:
    """All synthetic data of one benchmark run (deterministic)."""

    files: dict[str, str]
    failing_tests: list[tuple[str, str]]  # (test id, test module)
    customers: list[JsonObject]
    orders: list[JsonObject]
    pull_requests: list[JsonObject]
    pr_files: dict[int, list[JsonObject]]
    check_runs: dict[str, JsonObject]


def build_fixture(seed: int = 20260301) -> Fixture:
    """The data of one run: the monorepo files, the tests they fail, customers, orders and pull requests."""
    rng = random.Random(seed)
    files = workspace_files(seed)
    failing = []
    pattern = re.compile(
        r"    def (test_\w+)\(self\):\n        self.assertEqual\((\w+)\(([\d.]+)\), ([-\d.]+)\)"
    )
    modules = {}
    for path, text in files.items():
        if path.startswith("app/") and path != "app/__init__.py":
            modules[path[4:-3]] = text
    for path, text in sorted(files.items()):
        if not path.startswith("tests/test_"):
            continue
        module = path[len("tests/") : -3]
        subject = module[len("test_") :]
        for test, function, amount, expected in pattern.findall(text):
            body = re.search(
                rf"def {function}\(amount: float\) -> float:\n.*\n"
                r"    return round\(amount \* (\d+) / 10 \+ (\d+), 2\)\n",
                modules[subject],
            )
            assert body is not None
            scale, offset = int(body.group(1)), int(body.group(2))
            actual = round(float(amount) * scale / 10 + offset, 2)  # the generated formula, evaluated
            if actual != float(expected):
                failing.append((f"{module}.{subject.capitalize()}Tests.{test}", module))
    customers = _customers(rng)
    prs, pr_files, checks = _pull_requests(rng)
    return Fixture(files, failing, customers, _orders(rng, customers), prs, pr_files, checks)
