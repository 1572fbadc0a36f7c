-- Outbound event webhooks: subscribers added at run time, and events that could not be delivered.
create table if not exists webhook_subscribers (
  id          text primary key,
  url         text not null,
  secret_env  text not null,
  events      jsonb not null,
  created_at  timestamptz not null default now()
);
create table if not exists webhook_dead_letters (
  id          bigserial primary key,
  subscriber  text not null,
  event       jsonb not null,
  error       text not null,
  attempts    integer not null,
  created_at  timestamptz not null default now()
);
