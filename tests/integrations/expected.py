# ruff: noqa: E501
"""What each payload fixture posts: (integration, fixture, topic as stored, content).

The texts are hubbub's own; topics past 60 characters are cut by the send path, and the
empty topic shows as "general chat".
"""

from __future__ import annotations

EXPECTED: list[tuple[str, str, str, str]] = [
    (
        "alertmanager",
        "firing",
        "DiskFull",
        ":alert: **Firing**: 2 alerts\n"
        "\n"
        "* :alert: [db-1:9100](http://prometheus.example.com:9090/graph?g0.expr=node_filesystem_avail_bytes) (firing): /var has 2 % free\n"
        "* :alert: [db-2:9100](http://prometheus.example.com:9090/graph?g0.expr=node_filesystem_avail_bytes) (firing): /var has 4 % free\n"
        "\n"
        "[Open Alertmanager](http://alertmanager.example.com:9093)",
    ),
    (
        "alertmanager",
        "resolved",
        "DiskFull",
        ":check: **Resolved**: 1 alert\n"
        "\n"
        "* :check: [db-1:9100](http://prometheus.example.com:9090/graph?g0.expr=node_filesystem_avail_bytes) (resolved)\n"
        "\n"
        "[Open Alertmanager](http://alertmanager.example.com:9093)",
    ),
    (
        "gitea",
        "issue_comment",
        "widgets / Issue #5 Widget does not stop",
        "[Alice](https://gitea.example.com/alice) [commented](https://gitea.example.com/acme/widgets/issues/5#issuecomment-4401) on [issue #5](https://gitea.example.com/acme/widgets/issues/5):\n"
        "\n"
        "~~~ quote\n"
        "I can reproduce this on version 2.1.\n"
        "~~~",
    ),
    (
        "gitea",
        "issues",
        "widgets / Issue #5 Widget does not stop",
        "[Alice](https://gitea.example.com/alice) closed issue [#5](https://gitea.example.com/acme/widgets/issues/5).",
    ),
    (
        "gitea",
        "pull_request",
        "widgets / PR #7 Add a stop button",
        "[Bob](https://gitea.example.com/bob) opened pull request [#7](https://gitea.example.com/acme/widgets/pulls/7) to merge `stop-button` into `main`:\n"
        "\n"
        "~~~ quote\n"
        "A widget that spins forever is a problem.\n"
        "~~~",
    ),
    (
        "gitea",
        "push",
        "widgets / main",
        "[Alice](https://gitea.example.com/alice) pushed [1 commit](https://gitea.example.com/acme/widgets/compare/28e1879d029cb852e4844d9c718537df08844e03...bffeb74224043ba2feb48d137756c8a9331c449a) to [main](https://gitea.example.com/acme/widgets/src/branch/main):\n"
        "\n"
        "* Make the widget spin faster ([bffeb74](https://gitea.example.com/acme/widgets/commit/bffeb74224043ba2feb48d137756c8a9331c449a))",
    ),
    (
        "gitea",
        "release",
        "widgets / v2.2.0",
        "[Alice](https://gitea.example.com/alice) published the release [Widgets 2.2](https://gitea.example.com/acme/widgets/releases/tag/v2.2.0) (tag `v2.2.0`).\n"
        "\n"
        "~~~ quote\n"
        "Adds the stop button.\n"
        "~~~",
    ),
    (
        "github",
        "issue_comment__created",
        "hello-world / PR #42 Speed up the test suite",
        "[mona](https://github.com/mona) [commented](https://github.com/octo-org/hello-world/pull/42#issuecomment-3300000001) on [pull request #42](https://github.com/octo-org/hello-world/pull/42):\n"
        "\n"
        "~~~ quote\n"
        "Looks good; can you add a note to the changelog?\n"
        "~~~",
    ),
    (
        "github",
        "issues__opened",
        "hello-world / Issue #40 Tests take ten minutes",
        "[mona](https://github.com/mona) opened issue [#40](https://github.com/octo-org/hello-world/issues/40):\n"
        "\n"
        "~~~ quote\n"
        "The suite got slow after the database tests landed.\n"
        "~~~",
    ),
    (
        "github",
        "ping",
        "hello-world",
        "GitHub now sends events of [octo-org/hello-world](https://github.com/octo-org/hello-world) here (events: issues, pull_request, push).",
    ),
    (
        "github",
        "pull_request__merged",
        "hello-world / PR #42 Speed up the test suite",
        "[mona](https://github.com/mona) merged pull request [#42](https://github.com/octo-org/hello-world/pull/42).",
    ),
    (
        "github",
        "pull_request__opened",
        "hello-world / PR #42 Speed up the test suite",
        "[hubot](https://github.com/hubot) opened pull request [#42](https://github.com/octo-org/hello-world/pull/42) to merge `parallel-tests` into `main`:\n"
        "\n"
        "~~~ quote\n"
        "Runs the slow tests in parallel.\n"
        "\n"
        "Closes #40.\n"
        "~~~",
    ),
    (
        "github",
        "push",
        "hello-world / main",
        "[mona](https://github.com/mona) pushed [2 commits](https://github.com/octo-org/hello-world/compare/6113728f27ae...a3f1c0e9b2d4) to [main](https://github.com/octo-org/hello-world/tree/main):\n"
        "\n"
        "* Add a greeting to the README ([b7e2d1c](https://github.com/octo-org/hello-world/commit/b7e2d1c4a9f8e3d2c1b0a9f8e7d6c5b4a3f2e1d0))\n"
        "* Fix the build badge link ([a3f1c0e](https://github.com/octo-org/hello-world/commit/a3f1c0e9b2d4476e8c1f0b9a7d5e3c2b1a0f9e8d))",
    ),
    (
        "github",
        "push__branch_deleted",
        "hello-world / old-experiment",
        "[mona](https://github.com/mona) deleted the branch old-experiment.",
    ),
    (
        "github",
        "release__published",
        "hello-world / v1.2.0",
        "[mona](https://github.com/mona) published the release [Version 1.2](https://github.com/octo-org/hello-world/releases/tag/v1.2.0) (tag `v1.2.0`).\n"
        "\n"
        "~~~ quote\n"
        "Faster tests and a friendlier README.\n"
        "~~~",
    ),
    (
        "github",
        "workflow_run__completed",
        "hello-world / CI",
        ":cross_mark: [CI #311](https://github.com/octo-org/hello-world/actions/runs/8800000001) finished with **failure** on `main` (commit a3f1c0e).",
    ),
    (
        "gitlab",
        "issue_hook",
        "gitlabhq/gitlab-test / Issue #23 New API: create/update/d...",
        "Administrator opened issue [#23](https://gitlab.example.com/gitlabhq/gitlab-test/-/issues/23):\n"
        "\n"
        "~~~ quote\n"
        "Create new API for manipulations with repository\n"
        "~~~",
    ),
    (
        "gitlab",
        "merge_request_hook",
        "gitlabhq/gitlab-test / MR #1 MS-Viewport",
        "Administrator opened merge request [!1](https://gitlab.example.com/gitlabhq/gitlab-test/-/merge_requests/1) to merge `ms-viewport` into `main`:\n"
        "\n"
        "~~~ quote\n"
        "Adds the viewport meta tag for phones.\n"
        "~~~",
    ),
    (
        "gitlab",
        "note_hook__merge_request",
        "gitlabhq/gitlab-test / MR #1 Tempora et eos debitis quae ...",
        "Administrator [commented](https://gitlab.example.com/gitlabhq/gitlab-test/-/merge_requests/1#note_1244) on [merge request !1](https://gitlab.example.com/gitlabhq/gitlab-test/-/merge_requests/1):\n"
        "\n"
        "~~~ quote\n"
        "This MR needs work.\n"
        "~~~",
    ),
    (
        "gitlab",
        "pipeline_hook",
        "gitlab-org/gitlab-test / main",
        ":cross_mark: [Pipeline #31](https://gitlab.example.com/gitlab-org/gitlab-test/-/pipelines/31) for `main` is **failed** after 128 s.\n"
        "\n"
        "* build / compile: success\n"
        "* test / unit: failed",
    ),
    (
        "gitlab",
        "push_hook",
        "mike/diaspora / main",
        "Jane Doe pushed 2 commits to [main](https://gitlab.example.com/mike/diaspora/-/tree/main):\n"
        "\n"
        "* Update Catalan translation to e38cb41. ([b6568db](https://gitlab.example.com/mike/diaspora/-/commit/b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327))\n"
        "* fixed readme ([da15608](https://gitlab.example.com/mike/diaspora/-/commit/da1560886d4f094c3e6c9ef40349f7d38b5d27d7))",
    ),
    (
        "gitlab",
        "tag_push_hook",
        "jsmith/example",
        "John Smith pushed the tag [v1.0.0](https://gitlab.example.com/jsmith/example/-/tags/v1.0.0).",
    ),
    (
        "grafana",
        "firing",
        "HighCPU",
        ":alert: **Firing**: 1 alert\n"
        "\n"
        "* :alert: [HighCPU](https://grafana.example.com/alerting/grafana/cdeqmlhvflz40f/view) (firing): CPU above 90 % for 5 minutes\n"
        "\n"
        "[Open Grafana](https://grafana.example.com/)",
    ),
    (
        "grafana",
        "legacy_alerting",
        "[Alerting] Test notification",
        ":alert: [Test notification](http://localhost:3000/) is **alerting**\n"
        "\n"
        "~~~ quote\n"
        "Someone is testing the alert notification within Grafana.\n"
        "~~~\n"
        "\n"
        "* High value: 100\n"
        "\n"
        "[Graph](https://grafana.com/assets/img/blog/mixed_styles.png)",
    ),
    (
        "grafana",
        "resolved",
        "HighCPU",
        ":check: **Resolved**: 1 alert\n"
        "\n"
        "* :check: [HighCPU](https://grafana.example.com/alerting/grafana/cdeqmlhvflz40f/view) (resolved)\n"
        "\n"
        "[Open Grafana](https://grafana.example.com/)",
    ),
    (
        "jira",
        "comment_created",
        "SHIP-17: Navigation console reboots in flight",
        "Philip Fry commented on [SHIP-17](https://acme.atlassian.net/browse/SHIP-17):\n"
        "\n"
        "~~~ quote\n"
        "Found it: the gyroscope driver leaks memory.\n"
        "~~~",
    ),
    (
        "jira",
        "issue_created",
        "SHIP-17: Navigation console reboots in flight",
        "Leela Turanga created bug [SHIP-17](https://acme.atlassian.net/browse/SHIP-17) **Navigation console reboots in flight**\n"
        "* **Priority:** High\n"
        "* **Assignee:** Philip Fry\n"
        "* **Status:** To Do\n"
        "\n"
        "~~~ quote\n"
        "Happens about once an hour, always during a course change.\n"
        "~~~",
    ),
    (
        "jira",
        "issue_deleted",
        "SHIP-18: Duplicate of SHIP-17",
        "Leela Turanga deleted SHIP-18 **Duplicate of SHIP-17**.",
    ),
    (
        "jira",
        "issue_updated",
        "SHIP-17: Navigation console reboots in flight",
        "Philip Fry updated [SHIP-17](https://acme.atlassian.net/browse/SHIP-17):\n"
        "* **status:** ~~To Do~~ → In Progress\n"
        "* **assignee:** set to Philip Fry",
    ),
    (
        "json",
        "object",
        "JSON",
        "```json\n"
        "{\n"
        '  "build": {\n'
        '    "id": 77,\n'
        '    "status": "passed",\n'
        '    "branch": "main"\n'
        "  },\n"
        '  "tags": [\n'
        '    "nightly",\n'
        '    "linux"\n'
        "  ],\n"
        '  "duration_seconds": 312.5\n'
        "}\n"
        "```",
    ),
    (
        "sentry",
        "event_alert",
        "ZeroDivisionError: division by zero",
        ":cross_mark: **error** [ZeroDivisionError: division by zero](https://sentry.io/organizations/acme/issues/4501234567/events/d3a1b2c4e5f6478899aabbccddeeff00/)\n"
        "* **Where:** `billing.invoice in total_per_seat`\n"
        "* **Environment:** production\n"
        "* **Release:** backend@2.4.1\n"
        "* **Alert rule:** Page the on-call engineer",
    ),
    (
        "sentry",
        "issue__resolved",
        "ZeroDivisionError: division by zero",
        "**Resolved:** [BACKEND-4F](https://sentry.io/organizations/acme/issues/4501234567/) (by Dana Scully)",
    ),
    (
        "sentry",
        "plugin",
        "TypeError: Cannot read properties of undefined (reading '...",
        ":warning: **warning** [TypeError: Cannot read properties of undefined (reading 'price')](https://sentry.io/organizations/acme/issues/4501234999/?referrer=webhooks_plugin)\n"
        "* **Where:** `app/components/cart.tsx in renderTotal`\n"
        "* **Environment:** staging\n"
        "* **Project:** frontend",
    ),
    (
        "slack_incoming",
        "attachments",
        "general chat",
        "Nightly backup report\n"
        "\n"
        "The nightly backup ran.\n"
        "**[Backup 2026-03-02](https://backup.example.com/runs/2026-03-02)**\n"
        "Everything was copied.\n"
        "* **Size:** 12 GB\n"
        "* **Duration:** 14 min",
    ),
    (
        "slack_incoming",
        "blocks",
        "general chat",
        "### New order\n"
        "\n"
        "Order **#1042** from [Ann](mailto:ann@example.com)\n"
        "* **Total:** 42.00 EUR\n"
        "* Items: 3\n"
        "\n"
        "---\n"
        "\n"
        "Sent by the shop",
    ),
    (
        "slack_incoming",
        "text",
        "general chat",
        "Deploy **finished** for [run 88](https://deploy.example.com/runs/88): *all green* ~~no rollbacks~~",
    ),
]
