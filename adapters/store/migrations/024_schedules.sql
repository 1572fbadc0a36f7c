-- Scheduled and proactive messages. A schedule belongs to a conversation and fires a turn with a
-- system-authored prompt (src/schedules/). Each tick is one schedule_runs row: the unique
-- (schedule_id, tick_at) makes "exactly once per tick" one insert that only one worker wins, on
-- Postgres and PGlite alike; the run's inbox row (external id schedule:<id>:<tick>) is deduped too.
create table if not exists schedules (
  id               text primary key,
  conversation_id  text not null references conversations(id) on delete cascade,
  kind             text not null check (kind in ('cron', 'once')),
  cron             text,
  at               timestamptz,
  tz               text not null,
  prompt           text not null,
  runs_per_day     integer,
  next_at          timestamptz,
  created_by       text not null,
  created_at       timestamptz not null default now()
);
create index if not exists schedules_due on schedules (next_at) where next_at is not null;

-- status: pending (waiting for due_at, e.g. deferred past quiet hours), enqueued (its turn was
-- queued; what became of it is read from the turn and its deliveries), skipped, over_budget.
create table if not exists schedule_runs (
  id           bigserial primary key,
  schedule_id  text not null references schedules(id) on delete cascade,
  tick_at      timestamptz not null,
  due_at       timestamptz not null,
  status       text not null,
  coalesced    integer not null default 1,
  inbox_id     bigint,
  created_at   timestamptz not null default now(),
  fired_at     timestamptz,
  unique (schedule_id, tick_at)
);
create index if not exists schedule_runs_pending on schedule_runs (due_at) where status = 'pending';
