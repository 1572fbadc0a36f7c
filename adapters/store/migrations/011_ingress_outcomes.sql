-- What the ingress made of each inbound event, by (channel, external id), so that a
-- redelivered event (a Slack retry, a Twilio retry, a webhook sent again) gets the same
-- outcome replayed instead of being handled twice: commands, approval answers and
-- refusals never reach the inbox, whose unique key covers only accepted messages.
-- A row is claimed first (outcome null) and completed after; a second delivery waits
-- for the first. Rows are pruned after a few days (src/ingress/retention.ts).
create table if not exists ingress_outcomes (
  channel text not null,
  external_id text not null,
  outcome jsonb,
  claimed_at timestamptz not null default now(),
  completed_at timestamptz,
  -- A transient outcome (rate limited) is replayed only until then; after it the event is handled anew.
  expires_at timestamptz,
  primary key (channel, external_id)
);

create index if not exists ingress_outcomes_claimed_at on ingress_outcomes (claimed_at);
