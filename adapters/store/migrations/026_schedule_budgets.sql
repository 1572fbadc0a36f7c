-- Token budgets and cheap checks for schedules (src/schedules/policy.ts, src/schedules/check.ts).
-- tokens_per_day: the most tokens this schedule's runs may use per local day (turns.usage totals);
-- check_prompt: a yes/no question the cheap check slot (schedules.checkSlot) answers before a run
-- spends the agent's model: "no" records the run as nothing_to_say without a turn.
alter table schedules add column if not exists tokens_per_day integer;
alter table schedules add column if not exists check_prompt text;
