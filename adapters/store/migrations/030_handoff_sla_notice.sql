-- The SLA expiry notice to the user is durable (src/handoffs/service.ts): the statement that fires a
-- request's SLA (sets sla_fired_at) also leases its notice to that worker (sla_notice_lease_until);
-- once the notice is in the delivery queue (durable, retried, dead-lettered) sla_notice_sent_at is
-- set. A worker that died in between leaves the notice unsent: past the lease, any worker's sweep
-- claims it (one update: one winner) and queues it again. The delivery is one per (handoff, target):
-- its deliveries row ("op_<handoff>:sla") makes a second queueing edit, not post again.
alter table handoffs add column if not exists sla_notice_lease_until timestamptz;
alter table handoffs add column if not exists sla_notice_sent_at timestamptz;
-- Requests fired before this migration were told then (or never will be): not sent again.
update handoffs set sla_notice_sent_at = sla_fired_at where sla_fired_at is not null and sla_notice_sent_at is null;
create index if not exists handoffs_sla_notice_unsent on handoffs (sla_notice_lease_until) where sla_fired_at is not null and sla_notice_sent_at is null;
