-- Conversations: one per thread-aware conversation key.
create table if not exists conversations (
  id          text primary key,
  key         text not null unique,
  channel     text not null,
  owner       text,
  agent       text not null default 'default',
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);

-- The durable inbox: every accepted inbound message, exactly once per (channel, external_id).
create table if not exists inbox (
  id               bigserial primary key,
  conversation_id  text not null references conversations(id),
  channel          text not null,
  external_id      text not null,
  sender           jsonb not null,
  text             text not null,
  attachments      jsonb not null default '[]',
  reply_to         jsonb,
  context          jsonb,
  received_at      timestamptz not null,
  created_at       timestamptz not null default now(),
  turn_id          text,
  consumed_at      timestamptz,
  unique (channel, external_id)
);
create index if not exists inbox_pending on inbox (conversation_id, id) where consumed_at is null;

-- One row per agent turn; a retried turn keeps its row and bumps attempt.
create table if not exists turns (
  id               text primary key,
  conversation_id  text not null references conversations(id),
  seq              integer not null,
  status           text not null,
  attempt          integer not null default 1,
  worker           text,
  started_at       timestamptz not null default now(),
  finished_at      timestamptz,
  finish_reason    text,
  error            text,
  usage            jsonb,
  provider         jsonb,
  unique (conversation_id, seq)
);
create index if not exists turns_running on turns (conversation_id) where status = 'running';

-- Append-only transcript, in pi-ai message shape.
create table if not exists messages (
  id               bigserial primary key,
  conversation_id  text not null references conversations(id),
  turn_id          text,
  role             text not null,
  content          jsonb not null,
  created_at       timestamptz not null default now()
);
create index if not exists messages_conversation on messages (conversation_id, id);

-- What a turn posted on a platform, so a retried turn edits instead of posting twice.
create table if not exists deliveries (
  id                   bigserial primary key,
  turn_id              text not null,
  channel              text not null,
  target               text not null,
  platform_message_id  text,
  state                text not null,
  body                 text,
  updated_at           timestamptz not null default now(),
  unique (turn_id, channel, target)
);

-- Durable notes by scope (sender, conversation, global).
create table if not exists memory (
  id          bigserial primary key,
  scope       text not null,
  scope_key   text not null,
  body        text not null,
  created_at  timestamptz not null default now()
);
create index if not exists memory_scope on memory (scope, scope_key, id);

create table if not exists audit (
  id       bigserial primary key,
  at       timestamptz not null default now(),
  actor    text not null,
  action   text not null,
  subject  text,
  details  jsonb
);
