"""zulip-term 0.7.0, the terminal client from PyPI, against a real ``hubbub serve``.

The client runs in a pseudo-terminal (tests/e2e/terminal.py) with the zuliprc ``serve``
wrote for the owner, and is driven with its documented keys, the way a person uses it:
it loads (POST /register with ``realm_emoji``, GET /messages), narrows to a stream from the
stream search, to all direct messages (``is:private``) and to one conversation (the
legacy ``pm_with`` operator), shows messages other users send while it is open, and
reacts with a custom emoji from its emoji picker. Its debug log of API calls must show no
failed request, and its stderr no traceback (but the client's own start-up race).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

import zulip

from tests.e2e import third_party
from tests.e2e.client import assert_ok
from tests.e2e.conftest import HubbubServer
from tests.e2e.terminal import Terminal
from tests.emoji_helpers import png_bytes

zulip_term_venv = third_party.zulip_term_venv_fixture

STARTUP_TIMEOUT = 60.0
STEP_TIMEOUT = 30.0
OWNER_EMAIL = "admin@hubbub.local"
MEMBER_EMAIL = "cordelia@example.com"

STREAM_TEXT = "The roses are blooming"
DM_TEXT = "Psst, a secret from Cordelia"
LIVE_STREAM_TEXT = "The tulips opened just now"
LIVE_DM_TEXT = "Are you still there, owner?"


class ZulipTerm:
    """One zulip-term session in a pseudo-terminal, with its logs for diagnostics."""

    def __init__(self, venv: Path, zuliprc: Path, work_dir: Path, server: HubbubServer):
        work_dir.mkdir()
        self.work_dir = work_dir
        self.server = server
        env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(work_dir),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        self.terminal = Terminal(
            # -d logs every API call to zulip-terminal-API-requests.log in the working
            # directory; the tests read it to name the request that failed.
            [str(third_party.zulip_term_executable(venv)), "-c", str(zuliprc), "--no-notify", "-d"],
            cwd=work_dir,
            env=env,
            stderr_path=work_dir / "stderr.log",
            describe=self.describe,
        )

    def _read(self, name: str) -> str:
        path = self.work_dir / name
        return path.read_text(errors="replace") if path.exists() else ""

    def requests(self) -> list[tuple[str, str, int]]:
        return third_party.api_requests(self._read("zulip-terminal-API-requests.log"))

    def failed_requests(self) -> list[tuple[str, str, int]]:
        return [request for request in self.requests() if request[2] >= 400]

    def problem(self) -> str | None:
        """A crash or a failed API call, as soon as one shows in the client's logs."""
        crash_log = self._read("zulip-terminal-tracebacks.log")
        if crash_log.strip():
            return "zulip-term crashed"
        if third_party.unexpected_tracebacks(self._read("stderr.log")):
            return "a zulip-term thread died"
        if self.failed_requests():
            return "hubbub answered a request with an error"
        return None

    def describe(self) -> str:
        failed = "\n".join(
            f"  {m} {urllib.parse.unquote(p)} -> {s}" for m, p, s in self.failed_requests()
        )
        crash_log = self._read("zulip-terminal-tracebacks.log")
        return (
            f"--- failed requests ---\n{failed or '  (none)'}\n"
            f"--- zulip-terminal-tracebacks.log ---\n{crash_log[-6000:]}\n"
            f"--- hubbub serve stderr (last 3000 chars) ---\n{self.server.stderr()[-3000:]}"
        )

    def wait_for(
        self, what: str, *texts: str, absent: tuple[str, ...] = (), timeout: float = STEP_TIMEOUT
    ) -> str:
        return self.terminal.wait_for(
            what,
            lambda screen: all(t in screen for t in texts) and not any(t in screen for t in absent),
            timeout=timeout,
            check=self.problem,
        )

    def wait_for_pattern(
        self,
        what: str,
        pattern: str,
        *,
        absent: tuple[str, ...] = (),
        timeout: float = STEP_TIMEOUT,
    ) -> str:
        regex = re.compile(pattern)
        return self.terminal.wait_for(
            what,
            lambda screen: bool(regex.search(screen)) and not any(t in screen for t in absent),
            timeout=timeout,
            check=self.problem,
        )

    def send(self, keys: str) -> None:
        self.terminal.send(keys)


def _narrow_of(path: str) -> list[list[str]] | None:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    return json.loads(query["narrow"][0]) if "narrow" in query else None


def test_zulip_term_streams_direct_messages_and_live_updates(
    owner_client: zulip.Client,
    member_client: zulip.Client,
    zulip_term_venv: Path,
    hubbub_server: HubbubServer,
    tmp_path: Path,
) -> None:
    image = tmp_path / "green_tick.png"
    image.write_bytes(png_bytes(64, 64, (0, 160, 0, 255)))
    with image.open("rb") as handle:
        assert_ok(owner_client.upload_custom_emoji("green_tick", handle))
    [emoji_id] = assert_ok(owner_client.get_realm_emoji())["emoji"]
    assert_ok(
        owner_client.add_subscriptions(
            streams=[{"name": "garden"}], principals=[OWNER_EMAIL, MEMBER_EMAIL]
        )
    )
    assert_ok(
        owner_client.send_message(
            {"type": "stream", "to": "garden", "topic": "roses", "content": STREAM_TEXT}
        )
    )
    assert_ok(
        member_client.send_message({"type": "private", "to": [OWNER_EMAIL], "content": DM_TEXT})
    )
    # Users with a recent presence are listed in the right-hand panel.
    assert_ok(member_client.update_presence({"status": "active", "new_user_input": "true"}))

    term = ZulipTerm(
        zulip_term_venv, hubbub_server.data_dir / "zuliprc", tmp_path / "zulip-term", hubbub_server
    )
    try:
        # The first screen: the realm in the title, the stream list, all messages, users.
        term.wait_for(
            "the first screen",
            f"Organization Owner ({OWNER_EMAIL}) - Hubbub",
            "Streams",
            "# garden",
            STREAM_TEXT,
            DM_TEXT,
            timeout=STARTUP_TIMEOUT,
        )
        # The users panel (right) lists Cordelia as active, from the presences in /register.
        term.wait_for_pattern("Cordelia in the users panel", r"│ ● Cordelia")

        # q searches the streams; enter shows the matches, enter again narrows to the one.
        term.send("q")
        term.send("garden\r")
        term.wait_for("the stream search", "Search Results")
        term.send("\r")
        term.wait_for_pattern("the stream narrow", r"garden\s+Search \[/\]")
        term.wait_for("the stream's messages only", STREAM_TEXT, absent=(DM_TEXT,))

        # A message another user sends now appears without any key press.
        assert_ok(
            member_client.send_message(
                {"type": "stream", "to": "garden", "topic": "roses", "content": LIVE_STREAM_TEXT}
            )
        )
        term.wait_for("the live stream message", LIVE_STREAM_TEXT)

        # P: all direct messages; S on the focused one: that one conversation (pm_with).
        term.send("P")
        term.wait_for(
            "all direct messages",
            "All private messages",
            DM_TEXT,
            absent=(STREAM_TEXT, LIVE_STREAM_TEXT),
        )
        term.send("S")
        term.wait_for(
            "the conversation with Cordelia",
            "Private conversation",
            DM_TEXT,
            absent=(STREAM_TEXT, LIVE_STREAM_TEXT),
        )

        assert_ok(
            member_client.send_message(
                {"type": "private", "to": [OWNER_EMAIL], "content": LIVE_DM_TEXT}
            )
        )
        term.wait_for("the live direct message", LIVE_DM_TEXT)

        # G focuses the last message; ":" opens the emoji picker with its search box.
        term.send("G")
        term.send(":")
        term.wait_for("the emoji picker", "Add/Remove Emojis")
        term.send("green_tick")
        # The search filters the list in a thread of its own: wait until the custom emoji
        # is the only entry, so that enter picks it and not the first of the full list.
        term.wait_for_pattern(
            "the custom emoji alone in the picker", r"▌ green_tick\s+▐", absent=("thumbs_up",)
        )
        term.send("\r")  # from the search box to the list
        term.send("\r")  # select the emoji
        term.send("\x1b")  # close the picker, which sends the selected reactions
        term.wait_for_pattern("the reaction on the message", r":green_tick:\s+You")

        requests = term.requests()
        narrows = [
            _narrow_of(path)
            for method, path, _ in requests
            if method == "GET" and path.startswith("/api/v1/messages?")
        ]
        assert [["stream", "garden"]] in narrows, requests
        assert [["is", "private"]] in narrows, requests
        assert [["pm_with", MEMBER_EMAIL]] in narrows, requests
        assert term.failed_requests() == [], term.describe()
        assert term.problem() is None, term.terminal.report("zulip-term reported a problem")
    finally:
        term.terminal.close()

    # The reaction went to the server as the custom emoji, on the message it was given on.
    messages = assert_ok(
        owner_client.get_messages(
            {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": [["dm", MEMBER_EMAIL]]}
        )
    )["messages"]
    [live_dm] = messages
    assert live_dm["content"] == f"<p>{LIVE_DM_TEXT}</p>"
    assert [
        (r["emoji_name"], r["emoji_code"], r["reaction_type"], r["user_id"])
        for r in live_dm["reactions"]
    ] == [("green_tick", emoji_id, "realm_emoji", owner_client.get_profile()["user_id"])]
