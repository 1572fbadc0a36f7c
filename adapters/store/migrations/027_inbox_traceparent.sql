-- The W3C traceparent of the message's span at ingress (src/telemetry), when traces are on: the
-- turn that answers several messages (one drain, jobs deduped per conversation) links each one's
-- span, so every message's trace reaches the turn that answered it. Null when traces are off.
alter table inbox add column if not exists traceparent text;
