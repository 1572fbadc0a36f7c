-- The drain lease: which drain (a random token) may run this conversation's
-- turns, until when. Kept on the conversation row so that taking it, reading
-- what waits and opening the turn are one statement.
alter table conversations add column if not exists lease_token text;
alter table conversations add column if not exists lease_until timestamptz;
