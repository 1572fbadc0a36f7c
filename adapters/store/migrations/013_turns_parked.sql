-- Parked turns, found cheaply: the recovery sweep looks for parked turns whose approvals are
-- all decided (every worker, every queue.recoverIntervalMs), and startTurn asks whether a
-- conversation has a parked turn.
create index if not exists turns_parked on turns (conversation_id) where status = 'parked';
