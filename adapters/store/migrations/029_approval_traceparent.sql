-- The W3C traceparent of the turn that parked on the approval (src/telemetry), when traces are on:
-- its `approval wait <tool>` span is recorded at the decision, in whichever process decides, as a
-- child of that turn in the trace of the message that asked; the resumed turn links it. Null when
-- traces are off.
alter table approvals add column if not exists traceparent text;
