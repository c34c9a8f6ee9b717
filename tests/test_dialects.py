"""Per-dialect helpers of ``db/dialects`` that queries build on, on both databases."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.db.dialects import for_name, ids_argument
from hubbub.db.tables import user_profile
from tests.helpers import TestEnv


async def test_in_ids_matches_exactly_the_given_ids(env: TestEnv) -> None:
    ids = sorted(user.id for user in env.users.values())
    wanted = [ids[0], ids[-1], max(ids) + 1000]  # one that matches nothing
    async with env.services.db.read() as conn:
        in_ids = for_name(conn.dialect.name).in_ids
        statement = sa.select(user_profile.c.id).where(in_ids(user_profile.c.id, "ids"))

        async def matching(given: list[int]) -> list[int]:
            rows = await conn.execute(statement, {"ids": ids_argument(conn, given)})
            return sorted(rows.scalars())

        assert await matching(wanted) == [ids[0], ids[-1]]
        assert await matching([]) == []
        # A long list (the size of a big stream's subscribers) is one argument.
        assert await matching(list(range(-2000, 0)) + ids) == ids
