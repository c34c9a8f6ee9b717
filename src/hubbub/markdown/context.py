"""Plain-data inputs and outputs of the renderer.

The renderer never touches the database: the caller (the message pipeline) loads the realm's
users, groups, streams, linkifiers and emoji into a :class:`RenderContext`, and reads what the
message mentions, links and matches from the :class:`RenderResult`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hubbub.markdown.images import UploadPreview


@dataclass(frozen=True)
class MentionableUser:
    id: int
    full_name: str
    email: str = ""
    is_active: bool = True


@dataclass(frozen=True)
class MentionableGroup:
    id: int
    name: str


@dataclass(frozen=True)
class LinkableStream:
    id: int
    name: str


@dataclass(frozen=True)
class Linkifier:
    """A realm linkifier: an RE2 pattern and an RFC 6570 URL template."""

    id: int
    pattern: str
    url_template: str


@dataclass(frozen=True)
class RealmEmoji:
    """A custom emoji of the realm, rendered as an image."""

    id: str
    name: str
    source_url: str


@dataclass
class RenderContext:
    """Everything rendering needs, loaded by the caller.

    ``realm_url`` is the realm's base URL without a trailing slash (for example
    ``https://chat.example.com``); links into the realm are rewritten to relative ones.
    """

    realm_url: str = ""
    users: list[MentionableUser] = field(default_factory=list)
    user_groups: list[MentionableGroup] = field(default_factory=list)
    streams: list[LinkableStream] = field(default_factory=list)
    linkifiers: list[Linkifier] = field(default_factory=list)
    realm_emoji: list[RealmEmoji] = field(default_factory=list)
    alert_words: list[str] = field(default_factory=list)
    translate_emoticons: bool = False
    inline_image_preview: bool = True
    # The thumbnails of the uploaded images the content links, by path id; None when the
    # caller did not look (uploads are then previewed by their file names).
    upload_previews: Mapping[str, UploadPreview] | None = None
    # For a topic link, by (channel name, topic) as written: the id of a message of the
    # topic that the writer may read, which the link's URL names with ``/with/``.
    topic_link_message_ids: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._users_by_name: dict[str, MentionableUser] = {}
        for user in self.users:
            # The first user with a name wins, as in Zulip (a name mention is ambiguous).
            self._users_by_name.setdefault(user.full_name.lower(), user)
        self._users_by_id = {user.id: user for user in self.users}
        self._groups_by_name = {group.name.lower(): group for group in self.user_groups}
        self._streams_by_name = {stream.name: stream for stream in self.streams}
        self._emoji_by_name = {emoji.name: emoji for emoji in self.realm_emoji}

    def user_by_name(self, name: str) -> MentionableUser | None:
        return self._users_by_name.get(name.lower())

    def user_by_id(self, user_id: int) -> MentionableUser | None:
        return self._users_by_id.get(user_id)

    def group_by_name(self, name: str) -> MentionableGroup | None:
        return self._groups_by_name.get(name.lower())

    def stream_by_name(self, name: str) -> LinkableStream | None:
        return self._streams_by_name.get(name)

    def topic_link_message_id(self, channel: str, topic: str) -> int | None:
        return self.topic_link_message_ids.get((channel, topic))

    def realm_emoji_by_name(self, name: str) -> RealmEmoji | None:
        return self._emoji_by_name.get(name)


@dataclass
class RenderResult:
    """The HTML and what the message pipeline derives flags and side tables from."""

    html: str = ""
    mentioned_user_ids: set[int] = field(default_factory=set)
    # "all", "everyone", "stream" or "channel" when a channel-wide wildcard was mentioned
    # (not silently).
    stream_wildcard_mention: str | None = None
    # "topic" when @**topic** was mentioned (not silently).
    topic_wildcard_mention: str | None = None
    mentioned_group_ids: set[int] = field(default_factory=set)
    alert_words: set[str] = field(default_factory=set)
    # The text alert words are matched in (fenced code blocks left out): ``find_alert_words``.
    alert_text: str = ""
    links: list[str] = field(default_factory=list)
    has_link: bool = False
    has_image: bool = False
    has_attachment: bool = False
    # Paths such as "2/ab/cdef/file.png" of /user_uploads/ links, for attachment bookkeeping.
    attachment_path_ids: list[str] = field(default_factory=list)

    @property
    def mentions_stream_wildcard(self) -> bool:
        return self.stream_wildcard_mention is not None

    @property
    def mentions_topic_wildcard(self) -> bool:
        return self.topic_wildcard_mention is not None

    @property
    def has_alert_word(self) -> bool:
        return bool(self.alert_words)
