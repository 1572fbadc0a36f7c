-- Small durable state a channel keeps (SMS opt-outs, a mailbox cursor, a conversation generation).
create table if not exists channel_state (
  channel     text not null,
  key         text not null,
  value       jsonb not null,
  updated_at  timestamptz not null default now(),
  primary key (channel, key)
);
