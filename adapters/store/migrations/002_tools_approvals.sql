-- A parked turn keeps its loop state here until its approvals are decided.
alter table turns add column if not exists state jsonb;
-- Claims of action the honesty check corrected.
alter table turns add column if not exists honesty jsonb;

-- One row per tool call the approval engine answered "ask".
create table if not exists approvals (
  id               text primary key,
  code             text not null,
  conversation_id  text not null references conversations(id),
  turn_id          text not null,
  tool_call_id     text not null,
  tool             text not null,
  args             jsonb not null,
  args_hash        text not null,
  pattern          text not null,
  tier             text not null,
  reasons          jsonb not null default '[]',
  rule_permitted   boolean not null default true,
  requester        text,
  channel          text not null,
  status           text not null default 'pending',
  always           boolean not null default false,
  decided_by       text,
  decided_via      text,
  decided_at       timestamptz,
  expires_at       timestamptz not null,
  created_at       timestamptz not null default now(),
  unique (turn_id, tool_call_id)
);
create unique index if not exists approvals_pending_code on approvals (code) where status = 'pending';
create index if not exists approvals_code on approvals (code, created_at desc);
create index if not exists approvals_due on approvals (expires_at) where status = 'pending';
create index if not exists approvals_turn on approvals (turn_id);

-- Operator "always allow" rules, bound to a tool and a normalized pattern.
create table if not exists allow_rules (
  id          bigserial primary key,
  tool        text not null,
  pattern     text not null,
  created_by  text not null,
  created_at  timestamptz not null default now(),
  unique (tool, pattern)
);

-- Full tool results, for paging through what was capped.
create table if not exists tool_results (
  id          text primary key,
  turn_id     text not null,
  tool        text not null,
  content     text not null,
  created_at  timestamptz not null default now()
);
