"""The 110 tools that **mcp150** adds to mcp40, generated deterministically for eleven more SaaS services."""

from __future__ import annotations

import random

from _fixtures.schemas import NULLABLE, A, B, I, JsonObject, N, O, S, define
from toolrt import ToolDefinition

_GENERATED_SERVICES = (
    ("linear", "Linear", ("issue", "project", "cycle")),
    ("notion", "Notion", ("page", "database", "block")),
    ("gdrive", "Google Drive", ("file", "folder", "permission")),
    ("gcal", "Google Calendar", ("event", "calendar")),
    ("zendesk", "Zendesk", ("ticket", "user", "macro")),
    ("stripe", "Stripe", ("charge", "subscription", "invoice")),
    ("datadog", "Datadog", ("monitor", "dashboard", "incident")),
    ("pagerduty", "PagerDuty", ("incident", "schedule", "service")),
    ("confluence", "Confluence", ("page", "space")),
    ("salesforce", "Salesforce", ("opportunity", "lead", "account")),
    ("hubspot", "HubSpot", ("contact", "deal", "company")),
)
_VERBS_GENERATED = ("list", "get", "create", "update", "search", "delete")
_FIELD_POOL: tuple[tuple[str, JsonObject], ...] = (
    ("title", S("Title shown in lists and notifications.")),
    ("status", S("Lifecycle state.", enum=["open", "in_progress", "blocked", "resolved", "closed"])),
    ("priority", S(enum=["urgent", "high", "medium", "low", "none"])),
    ("description", S("Body in Markdown.")),
    ("owner", O({"id": S(), "name": S(), "email": S()}, ["id"], "The person responsible.")),
    ("labels", A(S(), "Free-form labels.")),
    ("due_date", S("Due date as YYYY-MM-DD.")),
    ("amount", N("Amount in the account's currency.")),
    ("currency", S("ISO 4217 currency code.")),
    ("url", S("Link to the item in the web app.")),
    ("parent_id", S("Id of the containing item.")),
    ("external_refs", A(O({"system": S(), "id": S()}, ["system", "id"]), "Links to other systems.")),
    ("custom_fields", O({}, description="Workspace-specific custom fields by key.", closed=False)),
    ("team", O({"id": S(), "key": S(), "name": S()}, ["id"], "Owning team.")),
    ("visibility", S(enum=["private", "team", "organization", "public"])),
    ("starts_at", S("ISO 8601 start time.")),
    ("ends_at", S("ISO 8601 end time.")),
    (
        "participants",
        A(O({"email": S(), "role": S(enum=["owner", "editor", "viewer"]), "optional": B()}, ["email"])),
    ),
    ("estimate", N("Effort estimate in points or hours.")),
    ("tags", A(O({"id": S(), "name": S()}, ["id", "name"]))),
    ("archived", B("Whether the item is archived.")),
    ("metrics", O({"views": I(), "comments": I(), "last_activity_at": S()}, description="Usage counters.")),
)
_DESCRIPTION_TAILS = (
    "Requires the read scope.",
    "Results respect the caller's permissions.",
    "Rate limit: 100 requests per minute.",
    "Timestamps are ISO 8601 in UTC.",
    "Deleted items are not returned unless asked for.",
)


def generated_tools(seed: int = 150) -> list[ToolDefinition]:
    """110 plausible SaaS tools (10 per service), deterministic for ``seed``. Schema-only."""
    rng = random.Random(seed)
    tools: list[ToolDefinition] = []
    for prefix, label, resources in _GENERATED_SERVICES:
        fields = {res: dict(rng.sample(_FIELD_POOL, rng.randint(5, 10))) for res in resources}
        records = {
            res: O(
                {"id": S(), **fields[res], "created_at": S(), "updated_at": S()},
                ["id", *list(fields[res])[:2], "created_at"],
            )
            for res in resources
        }
        made = 0
        for verb in _VERBS_GENERATED:
            for res in resources:
                if made == 10:
                    break
                made += 1
                plural = res[:-1] + "ies" if res.endswith("y") else res + "s"
                name = f"{prefix}_{verb}_{plural if verb in ('list', 'search') else res}"
                record, tail = records[res], rng.choice(_DESCRIPTION_TAILS)
                filterable = {
                    k: v for k, v in fields[res].items() if "enum" in v or k in ("owner", "team", "labels")
                }
                if verb == "list":
                    params = O(
                        {
                            **{
                                k: (O({"id": S()}, ["id"]) if v.get("type") == "object" else v)
                                for k, v in filterable.items()
                            },
                            "sort": S(enum=["created_at", "updated_at", "title"], default="updated_at"),
                            "page_size": I("Max 100.", default=25),
                            "cursor": S("Cursor from `next_cursor`."),
                        }
                    )
                    output = O({"items": A(record), "next_cursor": NULLABLE(S())}, ["items", "next_cursor"])
                    text = f"{label}: List {plural}, newest first, with optional filters."
                elif verb == "get":
                    params = O(
                        {
                            "id": S(f"The {res} id."),
                            "include": A(S(enum=["comments", "history", "attachments"])),
                        },
                        ["id"],
                    )
                    output, text = record, f"{label}: Get one {res} by id."
                elif verb == "create":
                    required = list(fields[res])[:1]
                    params = O(dict(fields[res]), required)
                    output, text = record, f"{label}: Create a {res}."
                elif verb == "update":
                    params = O(
                        {"id": S(), "patch": O(dict(fields[res]), description="Fields to change.")},
                        ["id", "patch"],
                    )
                    output, text = record, f"{label}: Update a {res}; omitted fields are unchanged."
                elif verb == "search":
                    params = O(
                        {
                            "query": S("Full-text query."),
                            "filters": O({k: v for k, v in filterable.items() if v.get("type") != "object"}),
                            "limit": I(default=20),
                        },
                        ["query"],
                    )
                    output = O(
                        {"results": A(O({"score": N(), "item": record}, ["score", "item"])), "total": I()},
                        ["results", "total"],
                    )
                    text = f"{label}: Search {plural} by text and filters."
                else:
                    params = O({"id": S(), "permanent": B("Skip the trash.", default=False)}, ["id"])
                    output = O({"id": S(), "deleted": B()}, ["id", "deleted"])
                    text = f"{label}: Delete a {res}."
                tools.append(
                    define(
                        name, f"{text} {tail}", params, output, read_only=verb in ("list", "get", "search")
                    )
                )
    return tools
