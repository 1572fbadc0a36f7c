-- "Always allow" rules bind one exact call within a scope: the conversation they were
-- made in (default), the sender, or everywhere (only when an operator says "global").
--   scope      conversation | sender | global
--   scope_key  the conversation id, '<channel>:<sender id>', or '' for global
--   variable   word positions of a command that may hold another plain operand
--   kind       command | args (null: made before this migration)
alter table allow_rules add column if not exists scope text not null default 'conversation';
alter table allow_rules add column if not exists scope_key text not null default '';
alter table allow_rules add column if not exists variable int[] not null default '{}';
alter table allow_rules add column if not exists kind text;

-- Existing rules were global, and a trailing " *" matched any continuation. Conservatively,
-- each one now allows exactly its own text (the engine no longer reads "*" as a wildcard),
-- and only in the conversation where it was approved. A rule whose approval is gone keeps
-- an empty conversation key: it matches nothing until an operator deletes or re-makes it.
update allow_rules r set scope_key = coalesce((select a.conversation_id from approvals a where a.always and a.tool = r.tool and a.pattern = r.pattern order by a.decided_at nulls last, a.created_at limit 1), '') where r.scope = 'conversation' and r.scope_key = '';

alter table allow_rules drop constraint if exists allow_rules_tool_pattern_key;
create unique index if not exists allow_rules_exact on allow_rules (tool, pattern, scope, scope_key, variable);
create index if not exists allow_rules_where on allow_rules (scope, scope_key);
