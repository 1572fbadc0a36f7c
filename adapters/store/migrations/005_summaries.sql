-- Compaction: a running summary of the oldest part of a conversation. The model sees the
-- summary plus the messages after summary_upto; the full transcript stays in messages.
alter table conversations add column if not exists summary text;
alter table conversations add column if not exists summary_upto bigint not null default 0;
