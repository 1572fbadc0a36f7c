-- Turn replies the delivery queue gave up on (a permanent channel error, or its last attempt failed):
-- one row per turn and channel, for the operator (GET /v1/deliveries/dead-letters).
create table if not exists delivery_dead_letters (
  id               bigserial primary key,
  turn_id          text not null,
  conversation_id  text not null,
  channel          text not null,
  code             text not null,
  error            text not null,
  attempts         integer not null,
  created_at       timestamptz not null default now(),
  unique (turn_id, channel)
);
