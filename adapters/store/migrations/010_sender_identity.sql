-- Identities are tied to their channel (issue #19). Every look-up by sender now compares the
-- sender's whole identity in its canonical form (kernel/identity.ts): '<channel>:<id>', and
-- 'slack:<team>:<user>' for Slack, whose user ids belong to a team ('-' when the team is not
-- known). Before, the store matched 'sender'->>'id' alone, so the same string sent from another
-- channel (a webhook's sender, an SMS From) read that person's conversations and notes.
--
-- 1. Inbox rows carry their sender's canonical identity (the store writes it from now on).
--    A Slack row's team is the one its reply target names (the team of the message), else the
--    conversation key's workspace part.
alter table inbox add column if not exists sender_identity text;

update inbox i set sender_identity = case
    when i.channel = 'slack' then 'slack:' || (
      select case when w.ws = '-' then '-' else replace(replace(w.ws, '%', '%25'), ':', '%3A') end
      from (select coalesce(nullif(i.sender->>'workspace', ''), nullif(i.reply_to->>'team', ''),
                            (select nullif(replace(replace(split_part(c.key, '/', 2), '%2F', '/'), '%25', '%'), '-') from conversations c where c.id = i.conversation_id and c.key like 'slack/%'),
                            '-') as ws) w
    ) || ':' || (i.sender->>'id')
    else i.channel || ':' || (i.sender->>'id')
  end
where i.sender_identity is null and i.sender->>'id' is not null;

create index if not exists inbox_sender_identity on inbox (sender_identity);

-- 2. Sender notes were keyed by the bare id. A note goes to the identity whose turn wrote it (its
--    memory_remember result "remembered (#N, sender)" is in that turn's transcript), else to the
--    one identity that ever used that id. A note whose id several identities used and whose
--    writer is not known keeps its bare key: it is shown to nobody until an operator re-files or
--    deletes it (GET /v1/memory?scope=sender lists it).
with ids as (
  select sender->>'id' as raw, min(sender_identity) as identity, count(distinct sender_identity) as n
  from inbox where sender_identity is not null group by sender->>'id'
), written as (
  select distinct on (note_id) note_id, identity, raw from (
    select (regexp_match(m.content::text, 'remembered \(#([0-9]+), sender\)'))[1]::bigint as note_id,
           h.sender_identity as identity, h.sender->>'id' as raw, m.id as message_id
    from messages m
    cross join lateral (select i.sender_identity, i.sender from inbox i where i.turn_id = m.turn_id order by i.id limit 1) h
    where m.role = 'toolResult' and m.content->>'toolName' = 'memory_remember' and m.content::text ~ 'remembered \(#[0-9]+, sender\)'
  ) x where note_id is not null and identity is not null order by note_id, message_id
), target as (
  select n.id, coalesce(case when w.raw = n.scope_key then w.identity end, case when ids.n = 1 then ids.identity end) as identity
  from memory n
  left join written w on w.note_id = n.id
  left join ids on ids.raw = n.scope_key
  where n.scope = 'sender'
)
update memory n set scope_key = t.identity from target t where t.id = n.id and t.identity is not null;

-- 3. An approval's requester was the bare id of the turn's sender: it becomes the identity of the
--    turn's first message with that id (what the turn ran for), else '<channel>:<id>' of the
--    approval's channel ('slack:-:<id>' on Slack, which no one answering with a team matches).
update approvals a set requester = coalesce(
    (select i.sender_identity from inbox i where i.turn_id = a.turn_id and i.sender->>'id' = a.requester and i.sender_identity is not null order by i.id limit 1),
    case when a.channel = 'slack' then 'slack:-:' || a.requester else a.channel || ':' || a.requester end)
where a.requester is not null and a.requester <> '';

-- 4. Sender-scoped rules already hold '<channel>:<id>', which is the canonical form everywhere but
--    on Slack: 'slack:<user>' becomes 'slack:<team>:<user>' when exactly one team is known for that
--    user (else the rule matches no one until it is made again).
with slack_ids as (
  select sender->>'id' as raw, min(sender_identity) as identity, count(distinct sender_identity) as n
  from inbox where channel = 'slack' and sender_identity is not null group by sender->>'id'
)
update allow_rules r set scope_key = s.identity from slack_ids s
where r.scope = 'sender' and s.n = 1 and r.scope_key = 'slack:' || s.raw
  and not exists (select 1 from allow_rules o where o.tool = r.tool and o.pattern = r.pattern and o.scope = r.scope and o.scope_key = s.identity and o.variable = r.variable);

-- 5. Access rows are (channel, the identity's local form). Only Slack's changes: a bare user id
--    becomes '<team>:<user>' when exactly one team is known for it. A bare id that stays
--    (an operator's `access allow slack U1`, a pending pairing) names that user in any team.
with slack_ids as (
  select sender->>'id' as raw, min(substr(sender_identity, 7)) as local, count(distinct sender_identity) as n
  from inbox where channel = 'slack' and sender_identity is not null group by sender->>'id'
)
update access a set sender = s.local, updated_at = now() from slack_ids s
where a.channel = 'slack' and a.sender = s.raw and s.n = 1 and s.local not like '-:%'
  and not exists (select 1 from access o where o.channel = 'slack' and o.sender = s.local);
