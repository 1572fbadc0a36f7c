-- Per-conversation override of what happens to messages that arrive mid-turn.
alter table conversations add column if not exists queue_mode text;
