-- Human takeover (src/handoffs/): an operator takes a conversation over from the agent, or the agent
-- asks for one (request_handoff). At most one open handoff (requested or taken) per conversation: the
-- partial unique index makes two operators taking it at once one winner. While one is open, the
-- ingress records the user's messages (an inbox row consumed at once, turn_id 'handoff:<id>', and a
-- transcript message) and wakes no turn. The SLA of a request is its sla_deadline: the sweep fires a
-- due one exactly once (one update that sets sla_fired_at only while it is null), on Postgres and
-- PGlite alike, however many workers look and across restarts.
create table if not exists handoffs (
  id             text primary key,
  conversation_id text not null references conversations(id) on delete cascade,
  state          text not null check (state in ('requested', 'taken', 'returned', 'expired')),
  reason         text,
  urgency        text not null default 'normal' check (urgency in ('low', 'normal', 'high')),
  requested_by   text not null,
  operator       text,
  requested_at   timestamptz not null default now(),
  taken_at       timestamptz,
  returned_at    timestamptz,
  returned_by    text,
  note           text,
  sla_deadline   timestamptz,
  sla_fired_at   timestamptz
);
create unique index if not exists handoffs_open on handoffs (conversation_id) where state in ('requested', 'taken');
create index if not exists handoffs_sla_due on handoffs (sla_deadline) where state = 'requested' and sla_fired_at is null;
