-- Who may talk to the agent on each channel: allowed senders, and pairing requests.
create table if not exists access (
  channel      text not null,
  sender       text not null,
  status       text not null,            -- allowed | pending | denied
  code         text,
  expires_at   timestamptz,
  decided_by   text,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  primary key (channel, sender)
);
create unique index if not exists access_pending_code on access (code) where status = 'pending';
