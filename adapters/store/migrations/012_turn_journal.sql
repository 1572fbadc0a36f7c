-- The step journal of a running (or parked) turn, so that a retried attempt resumes
-- instead of running everything again: each model response that asked for tools
-- (kind 'model', key = its index in the turn: 0, 1, ...) and each tool call
-- (kind 'tool', key = its tool call id), 'started' before it runs and 'finished'
-- with what the model was given. Written only by the holder of the conversation's
-- lease; closing the turn (finishTurn) deletes its rows.
create table if not exists turn_journal (
  turn_id text not null,
  kind text not null,
  key text not null,
  status text not null,
  entry jsonb not null,
  recorded_at timestamptz not null default now(),
  primary key (turn_id, kind, key)
);
