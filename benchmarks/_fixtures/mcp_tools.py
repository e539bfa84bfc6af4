"""The **mcp40** tool set: 40 GitHub / Jira / Slack / shop / CRM tools with nested object parameters.

The five tools the tasks use have working bodies over the :class:`Fixture` data; the rest exist for
their schemas only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from _fixtures.dataset import REFUND_REASONS, Fixture
from _fixtures.schemas import NULLABLE, A, B, I, JsonObject, N, O, S, define
from toolrt import ToolDefinition

_OWNER_REPO = {
    "owner": S("Repository owner (user or organization login)."),
    "repo": S("Repository name without the owner."),
}
_PAGE = {
    "page": I("Page number of the results to fetch (1-based).", default=1),
    "per_page": I("Results per page (max 100).", default=30),
}
_GH_USER = O(
    {"login": S(), "id": I(), "type": S(enum=["User", "Bot", "Organization"])}, ["login", "id", "type"]
)
_GH_LABEL = O({"name": S(), "color": S("Hex color without '#'.")}, ["name", "color"])
_GH_ISSUE = O(
    {
        "number": I(),
        "title": S(),
        "state": S(enum=["open", "closed"]),
        "html_url": S(),
        "user": _GH_USER,
        "body": NULLABLE(S()),
        "labels": A(_GH_LABEL),
        "assignees": A(_GH_USER),
        "comments": I("Number of comments."),
        "created_at": S(),
        "updated_at": S(),
        "closed_at": NULLABLE(S()),
    },
    ["number", "title", "state", "html_url", "user", "body", "labels", "created_at", "updated_at"],
)
_GH_PR = O(
    {
        "number": I(),
        "title": S(),
        "state": S(enum=["open", "closed"]),
        "html_url": S(),
        "user": _GH_USER,
        "body": NULLABLE(S()),
        "labels": A(_GH_LABEL),
        "created_at": S(),
        "updated_at": S(),
        "closed_at": NULLABLE(S()),
        "merged_at": NULLABLE(S(), "Null when the pull request was closed without merging."),
        "merge_commit_sha": NULLABLE(S()),
        "head": O({"ref": S(), "sha": S()}, ["ref", "sha"]),
        "base": O({"ref": S()}, ["ref"]),
        "draft": B(),
        "comments": I(),
        "review_comments": I(),
        "commits": I(),
        "additions": I(),
        "deletions": I(),
        "changed_files": I(),
    },
    ["number", "title", "state", "user", "head", "base", "merged_at", "created_at", "updated_at"],
    closed=False,
)
_GH_FILE = O(
    {
        "filename": S(),
        "status": S(enum=["added", "removed", "modified", "renamed", "copied", "changed", "unchanged"]),
        "additions": I(),
        "deletions": I(),
        "changes": I(),
        "patch": S("Unified diff of the file; absent for binary or very large files."),
    },
    ["filename", "status", "additions", "deletions", "changes"],
)
_CHECK_RUNS = O(
    {
        "total_count": I(),
        "check_runs": A(
            O(
                {
                    "id": I(),
                    "name": S(),
                    "status": S(enum=["queued", "in_progress", "completed"]),
                    "conclusion": NULLABLE(
                        S(
                            enum=[
                                "success",
                                "failure",
                                "neutral",
                                "cancelled",
                                "skipped",
                                "timed_out",
                                "action_required",
                            ]
                        )
                    ),
                    "started_at": S(),
                    "completed_at": NULLABLE(S()),
                    "app": O({"slug": S()}, ["slug"]),
                    "output": O({"title": NULLABLE(S()), "summary": NULLABLE(S())}, ["title", "summary"]),
                },
                ["id", "name", "status", "conclusion", "started_at"],
            )
        ),
    },
    ["total_count", "check_runs"],
)
_JIRA_USER = O({"accountId": S(), "displayName": S()}, ["accountId"])
_JIRA_ISSUE = O(
    {
        "key": S("Issue key, e.g. PAY-123."),
        "id": S(),
        "fields": O(
            {
                "summary": S(),
                "status": O({"name": S(), "category": S(enum=["new", "indeterminate", "done"])}, ["name"]),
                "issuetype": O({"name": S()}, ["name"]),
                "priority": O({"name": S()}, ["name"]),
                "assignee": NULLABLE(_JIRA_USER),
                "reporter": _JIRA_USER,
                "labels": A(S()),
                "components": A(O({"name": S()}, ["name"])),
                "story_points": NULLABLE(N()),
                "duedate": NULLABLE(S()),
                "created": S(),
                "updated": S(),
                "description": NULLABLE(S("Plain-text rendering of the description.")),
            },
            ["summary", "status", "issuetype", "created", "updated"],
            closed=False,
        ),
    },
    ["key", "id", "fields"],
)
_JIRA_FIELDS = O(
    {
        "summary": S("One-line summary."),
        "description": S("Description in Markdown; converted to Atlassian Document Format."),
        "issuetype": O({"name": S("Issue type name, e.g. Bug, Story, Task.")}, ["name"]),
        "priority": O({"name": S(enum=["Highest", "High", "Medium", "Low", "Lowest"])}, ["name"]),
        "assignee": O(
            {"accountId": S("Atlassian account id; use jira_search_users to find it.")}, ["accountId"]
        ),
        "labels": A(S(), "Labels; created on first use."),
        "components": A(O({"name": S()}, ["name"]), "Components of the project."),
        "duedate": S("Due date as YYYY-MM-DD."),
        "story_points": N("Estimate in story points."),
        "parent": O({"key": S("Key of the parent epic or issue.")}, ["key"]),
    },
)
_SLACK_MESSAGE = O(
    {
        "ts": S("Message timestamp; also its id within the channel."),
        "user": S("User id of the author."),
        "text": S(),
        "thread_ts": S("Timestamp of the thread parent, for replies and parents."),
        "reply_count": I(),
        "reactions": A(O({"name": S(), "count": I(), "users": A(S())}, ["name", "count"])),
        "files": A(O({"id": S(), "name": S(), "mimetype": S()}, ["id", "name"])),
    },
    ["ts", "user", "text"],
)
_SLACK_BLOCK = O(
    {
        "type": S("Block type.", enum=["section", "header", "divider", "context", "actions"]),
        "text": O({"type": S(enum=["mrkdwn", "plain_text"]), "text": S()}, ["type", "text"]),
        "fields": A(O({"type": S(enum=["mrkdwn", "plain_text"]), "text": S()}, ["type", "text"])),
        "elements": A(
            O(
                {
                    "type": S(enum=["button", "mrkdwn", "plain_text", "image"]),
                    "text": S(),
                    "url": S(),
                    "action_id": S(),
                },
                ["type"],
            )
        ),
    },
    ["type"],
    "A Block Kit block.",
)
_ADDRESS = O(
    {"name": S(), "line1": S(), "city": S(), "postal_code": S(), "country": S("ISO 3166-1 alpha-2 code.")},
    ["name", "line1", "city", "postal_code", "country"],
)
_ORDER = O(
    {
        "id": S(),
        "number": I("Human-facing order number."),
        "created_at": S(),
        "status": S(enum=["open", "closed", "cancelled"]),
        "customer_id": S(),
        "email": S(),
        "currency": S("ISO 4217 code."),
        "line_items": A(
            O(
                {"sku": S(), "title": S(), "quantity": I(), "unit_price": N()},
                ["sku", "title", "quantity", "unit_price"],
            )
        ),
        "subtotal": N(),
        "discount_total": N(),
        "shipping_total": N(),
        "tax_total": N(),
        "total": N("Amount charged, after discounts, with shipping and tax."),
        "payment": O(
            {
                "method": S(enum=["card", "paypal", "bank_transfer", "apple_pay"]),
                "card_brand": S(),
                "last4": S(),
            },
            ["method"],
        ),
        "refunds": A(
            O(
                {"id": S(), "amount": N(), "reason": S(), "created_at": S()},
                ["id", "amount", "reason", "created_at"],
            )
        ),
        "shipping_address": _ADDRESS,
        "tags": A(S()),
    },
    [
        "id",
        "number",
        "created_at",
        "status",
        "customer_id",
        "currency",
        "line_items",
        "total",
        "payment",
        "refunds",
    ],
)
_CUSTOMER = O(
    {
        "id": S(),
        "name": S(),
        "email": S(),
        "company": S(),
        "segment": S(enum=["smb", "mid_market", "enterprise"]),
        "country": S(),
        "account_manager": O({"id": S(), "name": S(), "email": S()}, ["id", "name", "email"]),
        "created_at": S(),
        "tags": A(S()),
        "notes": S(),
    },
    ["id", "name", "email", "company", "segment", "country", "account_manager", "created_at", "tags"],
)
_PAGE_INFO = {"page": I(), "per_page": I(), "total_count": I(), "total_pages": I()}
_PRODUCT = O(
    {
        "sku": S(),
        "title": S(),
        "price": N(),
        "inventory": A(O({"location_id": S(), "available": I()}, ["location_id", "available"])),
        "status": S(enum=["active", "draft", "archived"]),
    },
    ["sku", "title", "price", "status"],
)
_DEAL = O(
    {
        "id": S(),
        "name": S(),
        "stage": S(enum=["lead", "qualified", "proposal", "negotiation", "won", "lost"]),
        "amount": N(),
        "customer_id": S(),
        "owner": O({"id": S(), "name": S()}, ["id", "name"]),
        "close_date": NULLABLE(S()),
    },
    ["id", "name", "stage", "amount", "customer_id", "owner"],
)


def _paged(items: Sequence[JsonObject], key: str, args: Mapping[str, Any]) -> JsonObject:
    page, per_page = args.get("page", 1), min(args.get("per_page", 50), 100)
    total_pages = max(1, -(-len(items) // per_page))
    chunk = list(items[(page - 1) * per_page : page * per_page])
    return {
        key: chunk,
        "page": page,
        "per_page": per_page,
        "total_count": len(items),
        "total_pages": total_pages,
    }


def mcp_tools(fixture: Fixture) -> list[ToolDefinition]:
    """The 40 MCP-like tools; the five the tasks call work over ``fixture``."""

    async def list_orders(args: Any, ctx: Any) -> JsonObject:
        chosen = [
            order
            for order in fixture.orders
            if args.get("created_at_min", "") <= order["created_at"] <= args.get("created_at_max", "9999")
            and args.get("status", "any") in ("any", order["status"])
            and args.get("customer_id", order["customer_id"]) == order["customer_id"]
        ]
        return _paged(chosen, "orders", args)

    async def list_customers(args: Any, ctx: Any) -> JsonObject:
        chosen = [c for c in fixture.customers if args.get("segment", c["segment"]) == c["segment"]]
        return _paged(chosen, "customers", args)

    async def list_pull_requests(args: Any, ctx: Any) -> list[JsonObject]:
        chosen = [pr for pr in fixture.pull_requests if args.get("state", "open") in ("all", pr["state"])]
        chosen = [pr for pr in chosen if args.get("base", pr["base"]["ref"]) == pr["base"]["ref"]]
        chosen.sort(key=lambda pr: pr["updated_at"], reverse=args.get("direction", "desc") == "desc")
        page, per_page = args.get("page", 1), min(args.get("per_page", 30), 100)
        return chosen[(page - 1) * per_page : page * per_page]

    async def pull_request_files(args: Any, ctx: Any) -> list[JsonObject]:
        return fixture.pr_files[args["pull_number"]]

    async def check_runs(args: Any, ctx: Any) -> JsonObject:
        return fixture.check_runs[args["ref"]]

    gh = "GitHub: "
    jira = "Jira: "
    slack = "Slack: "
    shop = "Shop: "
    crm = "CRM: "
    return [
        # GitHub (12)
        define(
            "github_list_issues",
            gh + "List issues in a repository. Pull requests are excluded. Results are sorted by `sort`.",
            O(
                {
                    **_OWNER_REPO,
                    "state": S("Issue state filter.", enum=["open", "closed", "all"], default="open"),
                    "labels": A(S(), "Only issues carrying all of these labels."),
                    "assignee": S("Login of the assignee, `none` or `*`."),
                    "since": S("Only issues updated at or after this ISO 8601 timestamp."),
                    "sort": S(enum=["created", "updated", "comments"], default="created"),
                    "direction": S(enum=["asc", "desc"], default="desc"),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            A(_GH_ISSUE),
        ),
        define(
            "github_get_issue",
            gh + "Get one issue with its body and labels.",
            O({**_OWNER_REPO, "issue_number": I("The issue number.")}, ["owner", "repo", "issue_number"]),
            _GH_ISSUE,
        ),
        define(
            "github_create_issue",
            gh + "Open a new issue.",
            O(
                {
                    **_OWNER_REPO,
                    "title": S(),
                    "body": S("Markdown body."),
                    "labels": A(S()),
                    "assignees": A(S(), "Logins to assign (max 10)."),
                    "milestone": I("Milestone number."),
                },
                ["owner", "repo", "title"],
            ),
            _GH_ISSUE,
            read_only=False,
        ),
        define(
            "github_update_issue",
            gh + "Update an issue's title, body, state, labels or assignees. Omitted fields are unchanged.",
            O(
                {
                    **_OWNER_REPO,
                    "issue_number": I(),
                    "title": S(),
                    "body": S(),
                    "state": S(enum=["open", "closed"]),
                    "state_reason": S(enum=["completed", "not_planned", "reopened"]),
                    "labels": A(S(), "Replaces all labels."),
                    "assignees": A(S(), "Replaces all assignees."),
                },
                ["owner", "repo", "issue_number"],
            ),
            _GH_ISSUE,
            read_only=False,
        ),
        define(
            "github_add_issue_comment",
            gh + "Comment on an issue or pull request.",
            O(
                {**_OWNER_REPO, "issue_number": I(), "body": S("Markdown comment.")},
                ["owner", "repo", "issue_number", "body"],
            ),
            O({"id": I(), "html_url": S(), "created_at": S()}, ["id", "html_url", "created_at"]),
            read_only=False,
        ),
        define(
            "github_list_pull_requests",
            gh + "List pull requests in a repository, most recently updated first by default.",
            O(
                {
                    **_OWNER_REPO,
                    "state": S(enum=["open", "closed", "all"], default="open"),
                    "head": S("Filter by head branch as `user:ref-name`."),
                    "base": S("Filter by base branch name."),
                    "sort": S(enum=["created", "updated", "popularity", "long-running"], default="created"),
                    "direction": S(enum=["asc", "desc"], default="desc"),
                    **_PAGE,
                },
                ["owner", "repo"],
            ),
            A(_GH_PR),
            list_pull_requests,
        ),
        define(
            "github_get_pull_request",
            gh + "Get one pull request, including merge state and branch refs.",
            O({**_OWNER_REPO, "pull_number": I()}, ["owner", "repo", "pull_number"]),
            _GH_PR,
        ),
        define(
            "github_get_pull_request_files",
            gh + "List the files a pull request changes, with per-file patches (max 3000 files).",
            O({**_OWNER_REPO, "pull_number": I(), **_PAGE}, ["owner", "repo", "pull_number"]),
            A(_GH_FILE),
            pull_request_files,
        ),
        define(
            "github_create_pull_request",
            gh + "Open a pull request from `head` into `base`.",
            O(
                {
                    **_OWNER_REPO,
                    "title": S(),
                    "head": S("Branch with the changes (`user:branch` for forks)."),
                    "base": S("Branch to merge into."),
                    "body": S(),
                    "draft": B(default=False),
                    "maintainer_can_modify": B(default=True),
                },
                ["owner", "repo", "title", "head", "base"],
            ),
            _GH_PR,
            read_only=False,
        ),
        define(
            "github_merge_pull_request",
            gh + "Merge a pull request.",
            O(
                {
                    **_OWNER_REPO,
                    "pull_number": I(),
                    "merge_method": S(enum=["merge", "squash", "rebase"], default="merge"),
                    "commit_title": S(),
                    "commit_message": S(),
                    "sha": S("Merge only if the head is still this commit."),
                },
                ["owner", "repo", "pull_number"],
            ),
            O({"merged": B(), "sha": S(), "message": S()}, ["merged", "sha", "message"]),
            read_only=False,
        ),
        define(
            "github_list_check_runs_for_ref",
            gh + "List the check runs (CI jobs) for a commit SHA, branch or tag.",
            O(
                {
                    **_OWNER_REPO,
                    "ref": S("Commit SHA, branch name or tag name."),
                    "check_name": S("Only check runs with this name."),
                    "status": S(enum=["queued", "in_progress", "completed"]),
                    "filter": S(enum=["latest", "all"], default="latest"),
                    **_PAGE,
                },
                ["owner", "repo", "ref"],
            ),
            _CHECK_RUNS,
            check_runs,
        ),
        define(
            "github_get_file_contents",
            gh + "Get a file's decoded text (or a directory listing) at a ref.",
            O(
                {**_OWNER_REPO, "path": S(), "ref": S("Branch, tag or commit; default branch if omitted.")},
                ["owner", "repo", "path"],
            ),
            O(
                {
                    "type": S(enum=["file", "dir"]),
                    "path": S(),
                    "sha": S(),
                    "text": S("File content (files only)."),
                    "entries": A(
                        O({"name": S(), "type": S(enum=["file", "dir"]), "size": I()}, ["name", "type"])
                    ),
                },
                ["type", "path", "sha"],
            ),
        ),
        # Jira (8)
        define(
            "jira_search_issues",
            jira + "Search issues with JQL. Returns up to `max_results` issues starting at `start_at`.",
            O(
                {
                    "jql": S("JQL query, e.g. `project = PAY AND status != Done ORDER BY updated DESC`."),
                    "fields": A(
                        S(), "Fields to return; default: summary, status, assignee, priority, labels."
                    ),
                    "start_at": I(default=0),
                    "max_results": I("Max 100.", default=50),
                    "expand": A(S(enum=["renderedFields", "changelog", "transitions"])),
                },
                ["jql"],
            ),
            O(
                {"issues": A(_JIRA_ISSUE), "start_at": I(), "max_results": I(), "total": I()},
                ["issues", "total"],
            ),
        ),
        define(
            "jira_get_issue",
            jira + "Get an issue by key, with comments if requested.",
            O({"issue_key": S(), "include_comments": B(default=False)}, ["issue_key"]),
            _JIRA_ISSUE,
        ),
        define(
            "jira_create_issue",
            jira + "Create an issue in a project.",
            O({"project_key": S(), "fields": _JIRA_FIELDS}, ["project_key", "fields"]),
            O({"key": S(), "id": S(), "url": S()}, ["key", "id", "url"]),
            read_only=False,
        ),
        define(
            "jira_update_issue",
            jira + "Update fields of an issue. Omitted fields are unchanged.",
            O(
                {"issue_key": S(), "fields": _JIRA_FIELDS, "notify_users": B(default=True)},
                ["issue_key", "fields"],
            ),
            O({"key": S(), "updated": B()}, ["key", "updated"]),
            read_only=False,
        ),
        define(
            "jira_transition_issue",
            jira + "Move an issue through its workflow (e.g. to In Progress or Done).",
            O(
                {
                    "issue_key": S(),
                    "transition": O({"id": S(), "name": S()}, description="Transition by id or by name."),
                    "resolution": S("Resolution name when moving to a done status."),
                    "comment": S(),
                },
                ["issue_key", "transition"],
            ),
            O({"key": S(), "status": S()}, ["key", "status"]),
            read_only=False,
        ),
        define(
            "jira_add_comment",
            jira + "Add a comment to an issue.",
            O(
                {
                    "issue_key": S(),
                    "body": S("Markdown comment."),
                    "visibility": O({"type": S(enum=["group", "role"]), "value": S()}, ["type", "value"]),
                },
                ["issue_key", "body"],
            ),
            O({"id": S(), "created": S()}, ["id", "created"]),
            read_only=False,
        ),
        define(
            "jira_list_sprints",
            jira + "List the sprints of a board.",
            O(
                {"board_id": I(), "state": S(enum=["future", "active", "closed"]), "start_at": I(default=0)},
                ["board_id"],
            ),
            A(
                O(
                    {"id": I(), "name": S(), "state": S(), "startDate": S(), "endDate": S(), "goal": S()},
                    ["id", "name", "state"],
                )
            ),
        ),
        define(
            "jira_get_project",
            jira + "Get a project with its components, issue types and versions.",
            O({"project_key": S()}, ["project_key"]),
            O(
                {
                    "key": S(),
                    "name": S(),
                    "lead": _JIRA_USER,
                    "components": A(O({"id": S(), "name": S()}, ["id", "name"])),
                    "issueTypes": A(O({"id": S(), "name": S(), "subtask": B()}, ["id", "name"])),
                    "versions": A(O({"id": S(), "name": S(), "released": B()}, ["id", "name"])),
                },
                ["key", "name"],
            ),
        ),
        # Slack (8)
        define(
            "slack_list_channels",
            slack + "List public channels the bot can see.",
            O(
                {
                    "types": A(S(enum=["public_channel", "private_channel", "mpim", "im"])),
                    "exclude_archived": B(default=True),
                    "limit": I("Max 1000.", default=100),
                    "cursor": S("Pagination cursor from `next_cursor`."),
                },
            ),
            O(
                {
                    "channels": A(
                        O(
                            {"id": S(), "name": S(), "topic": S(), "num_members": I(), "is_archived": B()},
                            ["id", "name"],
                        )
                    ),
                    "next_cursor": S(),
                },
                ["channels"],
            ),
        ),
        define(
            "slack_get_channel_history",
            slack + "Read a channel's messages, newest first.",
            O(
                {
                    "channel": S("Channel id."),
                    "oldest": S("Only messages after this timestamp."),
                    "latest": S("Only messages before this timestamp."),
                    "limit": I("Max 999.", default=100),
                    "cursor": S(),
                    "include_all_metadata": B(default=False),
                },
                ["channel"],
            ),
            O({"messages": A(_SLACK_MESSAGE), "has_more": B(), "next_cursor": S()}, ["messages", "has_more"]),
        ),
        define(
            "slack_post_message",
            slack + "Post a message to a channel, optionally with Block Kit blocks.",
            O(
                {
                    "channel": S("Channel id or name."),
                    "text": S("Fallback text, also used for notifications."),
                    "blocks": A(_SLACK_BLOCK),
                    "thread_ts": S("Reply in this thread."),
                    "unfurl_links": B(default=False),
                    "metadata": O(
                        {"event_type": S(), "event_payload": O({}, closed=False)},
                        ["event_type", "event_payload"],
                    ),
                },
                ["channel", "text"],
            ),
            O({"channel": S(), "ts": S()}, ["channel", "ts"]),
            read_only=False,
        ),
        define(
            "slack_reply_to_thread",
            slack + "Reply in a thread.",
            O(
                {"channel": S(), "thread_ts": S(), "text": S(), "reply_broadcast": B(default=False)},
                ["channel", "thread_ts", "text"],
            ),
            O({"channel": S(), "ts": S()}, ["channel", "ts"]),
            read_only=False,
        ),
        define(
            "slack_add_reaction",
            slack + "Add an emoji reaction to a message.",
            O(
                {"channel": S(), "timestamp": S(), "name": S("Emoji name without colons.")},
                ["channel", "timestamp", "name"],
            ),
            O({"ok": B()}, ["ok"]),
            read_only=False,
        ),
        define(
            "slack_search_messages",
            slack + "Search messages across the workspace with Slack search syntax (`in:#ops from:@kim`).",
            O(
                {
                    "query": S(),
                    "sort": S(enum=["score", "timestamp"], default="score"),
                    "sort_dir": S(enum=["asc", "desc"], default="desc"),
                    "count": I("Results per page (max 100).", default=20),
                    "page": I(default=1),
                },
                ["query"],
            ),
            O(
                {
                    "matches": A(
                        O(
                            {
                                "channel": O({"id": S(), "name": S()}, ["id", "name"]),
                                "ts": S(),
                                "user": S(),
                                "text": S(),
                                "permalink": S(),
                            },
                            ["channel", "ts", "text"],
                        )
                    ),
                    "total": I(),
                },
                ["matches", "total"],
            ),
        ),
        define(
            "slack_get_user_profile",
            slack + "Get a user's profile (name, title, timezone, status).",
            O({"user": S("User id.")}, ["user"]),
            O(
                {
                    "id": S(),
                    "real_name": S(),
                    "display_name": S(),
                    "title": S(),
                    "email": S(),
                    "tz": S(),
                    "status": O({"text": S(), "emoji": S(), "expiration": I()}, ["text", "emoji"]),
                },
                ["id", "real_name"],
            ),
        ),
        define(
            "slack_list_users",
            slack + "List workspace members.",
            O({"limit": I(default=200), "cursor": S(), "include_bots": B(default=False)}),
            O(
                {
                    "members": A(
                        O(
                            {"id": S(), "name": S(), "real_name": S(), "is_bot": B(), "deleted": B()},
                            ["id", "name"],
                        )
                    ),
                    "next_cursor": S(),
                },
                ["members"],
            ),
        ),
        # Shop (7)
        define(
            "shop_list_orders",
            shop + "List orders, oldest first, with line items, payment, refunds and shipping address.",
            O(
                {
                    "created_at_min": S("Only orders created at or after this ISO 8601 timestamp."),
                    "created_at_max": S("Only orders created at or before this ISO 8601 timestamp."),
                    "status": S(enum=["any", "open", "closed", "cancelled"], default="any"),
                    "customer_id": S("Only this customer's orders."),
                    "page": I(default=1),
                    "per_page": I("Max 100.", default=50),
                },
            ),
            O(
                {"orders": A(_ORDER), **_PAGE_INFO},
                ["orders", "page", "per_page", "total_count", "total_pages"],
            ),
            list_orders,
        ),
        define(
            "shop_get_order",
            shop + "Get one order by id.",
            O({"order_id": S()}, ["order_id"]),
            _ORDER,
        ),
        define(
            "shop_create_refund",
            shop + "Refund some or all of an order's line items and/or shipping.",
            O(
                {
                    "order_id": S(),
                    "line_items": A(
                        O({"sku": S(), "quantity": I(), "restock": B(default=True)}, ["sku", "quantity"])
                    ),
                    "shipping": O({"full_refund": B(), "amount": N()}),
                    "reason": S(enum=list(REFUND_REASONS)),
                    "notify_customer": B(default=True),
                    "note": S(),
                },
                ["order_id", "reason"],
            ),
            O(
                {"id": S(), "order_id": S(), "amount": N(), "created_at": S()},
                ["id", "order_id", "amount", "created_at"],
            ),
            read_only=False,
        ),
        define(
            "shop_list_products",
            shop + "List products with price and inventory per location.",
            O(
                {
                    "status": S(enum=["active", "draft", "archived"]),
                    "collection_id": S(),
                    "query": S("Search in title and SKU."),
                    "page": I(default=1),
                    "per_page": I(default=50),
                }
            ),
            O({"products": A(_PRODUCT), **_PAGE_INFO}, ["products", "total_count"]),
        ),
        define(
            "shop_update_inventory_level",
            shop + "Set or adjust the available quantity of a SKU at a location.",
            O(
                {
                    "sku": S(),
                    "location_id": S(),
                    "set_available": I("Absolute quantity."),
                    "adjust_by": I("Relative change; use instead of set_available."),
                    "reason": S(enum=["received", "correction", "damaged", "shrinkage", "restock"]),
                },
                ["sku", "location_id"],
            ),
            O({"sku": S(), "location_id": S(), "available": I()}, ["sku", "location_id", "available"]),
            read_only=False,
        ),
        define(
            "shop_create_discount_code",
            shop + "Create a discount code.",
            O(
                {
                    "code": S(),
                    "value": O(
                        {"type": S(enum=["percentage", "fixed_amount"]), "amount": N()},
                        ["type", "amount"],
                    ),
                    "applies_to": O({"skus": A(S()), "collection_ids": A(S()), "min_subtotal": N()}),
                    "starts_at": S(),
                    "ends_at": S(),
                    "usage_limit": I(),
                    "once_per_customer": B(default=False),
                },
                ["code", "value"],
            ),
            O({"id": S(), "code": S()}, ["id", "code"]),
            read_only=False,
        ),
        define(
            "shop_get_fulfillment",
            shop + "Get the fulfillments (shipments) of an order with carrier tracking.",
            O({"order_id": S()}, ["order_id"]),
            A(
                O(
                    {
                        "id": S(),
                        "status": S(enum=["pending", "in_transit", "delivered", "failure"]),
                        "carrier": S(),
                        "tracking_number": S(),
                        "line_items": A(O({"sku": S(), "quantity": I()}, ["sku", "quantity"])),
                        "events": A(O({"at": S(), "status": S(), "location": S()}, ["at", "status"])),
                    },
                    ["id", "status"],
                )
            ),
        ),
        # CRM (5)
        define(
            "crm_list_customers",
            crm + "List customer accounts with company, segment and account manager.",
            O(
                {
                    "segment": S(enum=["smb", "mid_market", "enterprise"]),
                    "country": S(),
                    "tag": S(),
                    "page": I(default=1),
                    "per_page": I("Max 100.", default=50),
                }
            ),
            O(
                {"customers": A(_CUSTOMER), **_PAGE_INFO},
                ["customers", "page", "per_page", "total_count", "total_pages"],
            ),
            list_customers,
        ),
        define(
            "crm_get_customer",
            crm + "Get one customer account.",
            O({"customer_id": S()}, ["customer_id"]),
            _CUSTOMER,
        ),
        define(
            "crm_update_customer",
            crm + "Update a customer account. Omitted fields are unchanged.",
            O(
                {
                    "customer_id": S(),
                    "changes": O(
                        {
                            "segment": S(enum=["smb", "mid_market", "enterprise"]),
                            "account_manager_id": S(),
                            "tags": A(S(), "Replaces all tags."),
                            "notes": S(),
                            "billing_address": _ADDRESS,
                        }
                    ),
                },
                ["customer_id", "changes"],
            ),
            _CUSTOMER,
            read_only=False,
        ),
        define(
            "crm_list_deals",
            crm + "List sales deals, optionally for one customer or stage.",
            O(
                {
                    "customer_id": S(),
                    "stage": S(enum=["lead", "qualified", "proposal", "negotiation", "won", "lost"]),
                    "owner_id": S(),
                    "page": I(default=1),
                    "per_page": I(default=50),
                }
            ),
            O({"deals": A(_DEAL), **_PAGE_INFO}, ["deals", "total_count"]),
        ),
        define(
            "crm_create_note",
            crm + "Attach a note to a customer, deal or contact.",
            O(
                {
                    "target": O({"type": S(enum=["customer", "deal", "contact"]), "id": S()}, ["type", "id"]),
                    "body": S("Markdown."),
                    "pinned": B(default=False),
                },
                ["target", "body"],
            ),
            O({"id": S(), "created_at": S()}, ["id", "created_at"]),
            read_only=False,
        ),
    ]
