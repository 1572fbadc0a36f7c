-- The audit trail as an append-only, hash-chained ledger. Every row carries its place in the
-- chain (seq), the hash of the row before it and its own hash over its fields; a trigger fills
-- them in under one transaction-level lock, so concurrent writers chain in commit order and no
-- writer (raw SQL included) can add a row outside the chain. Updates and deletes are refused.
-- `switchboard audit verify` recomputes every hash in TypeScript (adapters/store/audit-hash.ts)
-- from the rows, so a changed trigger function cannot vouch for a changed row.
alter table audit add column if not exists seq bigint;
alter table audit add column if not exists prev_hash text;
alter table audit add column if not exists hash text;

-- The hash of one row: sha256 over each field as <octet length>:<utf-8 text>, in a fixed order.
create or replace function audit_row_hash(p_seq bigint, p_at timestamptz, p_actor text, p_action text, p_subject text, p_details jsonb, p_prev text)
returns text language sql immutable as $$
  select encode(sha256(convert_to(
    concat_ws('|',
      octet_length(p_prev) || ':' || p_prev,
      octet_length(p_seq::text) || ':' || p_seq::text,
      octet_length(to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || ':' || to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
      octet_length(p_actor) || ':' || p_actor,
      octet_length(p_action) || ':' || p_action,
      octet_length(coalesce(p_subject, '')) || ':' || coalesce(p_subject, ''),
      octet_length(coalesce(p_details::text, 'null')) || ':' || coalesce(p_details::text, 'null')
    ), 'UTF8')), 'hex')
$$;

create or replace function audit_chain() returns trigger language plpgsql as $$
declare
  last record;
begin
  perform pg_advisory_xact_lock(74201178);
  select seq, hash into last from audit where seq is not null order by seq desc limit 1;
  new.seq := coalesce(last.seq, 0) + 1;
  new.prev_hash := coalesce(last.hash, repeat('0', 64));
  new.at := date_trunc('microseconds', new.at);
  new.hash := audit_row_hash(new.seq, new.at, new.actor, new.action, new.subject, new.details, new.prev_hash);
  return new;
end
$$;

create or replace function audit_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'the audit ledger is append-only (% refused)', tg_op using errcode = '42501';
end
$$;

-- Rows written before the ledger existed join the chain in id order.
do $$
declare
  r record;
  prev text := repeat('0', 64);
  n bigint := 0;
begin
  for r in select id, at, actor, action, subject, details from audit where seq is null order by id loop
    n := n + 1;
    update audit set seq = n, prev_hash = prev, hash = audit_row_hash(n, r.at, r.actor, r.action, r.subject, r.details, prev) where id = r.id;
    select hash into prev from audit where id = r.id;
  end loop;
end
$$;

alter table audit alter column seq set not null;
alter table audit alter column prev_hash set not null;
alter table audit alter column hash set not null;
create unique index if not exists audit_seq on audit (seq);
drop trigger if exists audit_chain on audit;
create trigger audit_chain before insert on audit for each row execute function audit_chain();
drop trigger if exists audit_append_only on audit;
create trigger audit_append_only before update or delete on audit for each row execute function audit_append_only();
