-- What an HTTP request asked of its own turn, kept with the message so that any worker applies it:
-- `overrides` ({temperature?, maxTokens?}, see kernel/envelope.ts TurnOverrides), and `request_hash`,
-- a hash of the request's semantic body: a retry with the same Idempotency-Key but another body is
-- refused (422) instead of being answered from the first request's turn. Null on other channels.
alter table inbox add column if not exists overrides jsonb;
alter table inbox add column if not exists request_hash text;
