"""alert_word: an index of the realm's alert words

Every send reads its realm's alert words (``alert_words_in_realm``). With no index on
``realm_id``, SQLite's planner read every account of the realm and looked each one's
words up, even with no alert words at all, and PostgreSQL reads every realm's words.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_alert_word_realm_id", "alert_word", ["realm_id"])


def downgrade() -> None:
    op.drop_index("ix_alert_word_realm_id", table_name="alert_word")
