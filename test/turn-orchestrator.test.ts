/**
 * The turn orchestrator (src/turn/) alone: in-memory ports (test/support/turn-fakes.ts),
 * a scripted model behind the real fallback chain, and a recording sink. What is
 * asserted is what a channel would be sent and what the store would keep.
 */
import type { Message, ToolResultMessage } from '@mariozechner/pi-ai';
import { describe, expect, it } from 'vitest';
import type { TurnEvent } from '../kernel/turn-events.js';
import { NO_PROVIDER_REPLY, runTurn } from '../src/turn/index.js';
import { fanOut } from '../src/turn/sinks/fan-out.js';
import { countingTool, job, RecordingSink, ScriptedModel, silentLog, turnDeps } from './support/turn-fakes.js';

const noPlanner = { tools: { planner: false } };
// Built at run time so no literal token sits in the repository.
const GH_TOKEN = 'ghp_' + 'Zq8vR2mXw4LpT7nKc9BsY3hJd6FgA1eUoQ5i';

function transcriptRoles(messages: unknown[]): string[] {
  return (messages as Message[]).map((m) => m.role);
}

describe('the turn orchestrator', () => {
  it('answers plainly: events in order, the sink flushed before the one finishTurn with the transcript', async () => {
    const model = new ScriptedModel({ a: [{ text: 'Hello there.' }] });
    const deps = turnDeps({ model, config: noPlanner });
    const sink = new RecordingSink();
    const next = await runTurn({ job: job('hi'), deps, sink });

    expect(sink.types()).toEqual(['turn_start', 'text_delta', 'done']);
    expect(sink.shownText()).toBe('Hello there.');
    const done = sink.of('done')[0]!;
    expect(done).toMatchObject({ text: 'Hello there.', finishReason: 'stop', provider: { slot: 'a', fallbackActivated: false } });
    expect(deps.store.finished).toHaveLength(1);
    const f = deps.store.finished[0]!;
    expect(f).toMatchObject({ turnId: 't_1', status: 'done', finishReason: 'stop', lease: 'lease-1' });
    expect(transcriptRoles(f.messages)).toEqual(['user', 'assistant']);
    expect((f.messages[0] as Message).content).toBe('hi');
    // Flushed once, after the text and before done (which follows the close).
    expect(sink.flushes).toEqual([2]);
    expect(next).toEqual([]);
    expect(deps.store.parked).toHaveLength(0);
  });

  it('runs a tool call, then answers with what it returned', async () => {
    const lookup = countingTool('lookup', 'read', () => 'the office opens at 9');
    const model = new ScriptedModel({ a: [{ toolCalls: [{ name: 'lookup', args: { to: 'office' } }] }, { text: 'It opens at 9.' }] });
    const deps = turnDeps({ model, tools: [lookup.tool], config: noPlanner });
    const sink = new RecordingSink();
    await runTurn({ job: job('when does the office open?'), deps, sink });

    expect(sink.types()).toEqual(['turn_start', 'tool_start', 'tool_end', 'text_delta', 'done']);
    expect(sink.of('tool_end')[0]).toMatchObject({ name: 'lookup', isError: false });
    expect(sink.of('tool_end')[0]).not.toHaveProperty('pending');
    expect(lookup.runs).toEqual([{ to: 'office' }]);
    // The model saw the output, marked as untrusted data.
    expect(model.sentTexts(1).join('\n')).toMatch(/<untrusted[\s\S]*the office opens at 9/);
    expect(transcriptRoles(deps.store.finished[0]!.messages)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(sink.of('done')[0]!.text).toBe('It opens at 9.');
  });

  it('journals a response with tool calls before they run, and a retry replays it: the model is asked only what was not answered', async () => {
    const lookup = countingTool('lookup', 'read', () => 'the office opens at 9');
    const first = new ScriptedModel({ a: [{ text: 'Let me look.', toolCalls: [{ name: 'lookup', args: { to: 'office' } }] }, { hang: '' }] });
    const deps = turnDeps({ model: first, tools: [lookup.tool], config: noPlanner });
    const stop = new AbortController();
    // The first attempt dies while the second model call streams (as its worker would).
    const died = runTurn({ job: job('when?'), deps, sink: new RecordingSink(), signal: stop.signal });
    await new Promise((r) => setTimeout(r, 50));
    stop.abort();
    await died;
    expect(deps.store.journalWrites).toEqual(['model 0', 'started call_1', 'finished call_1']);
    expect(lookup.runs).toHaveLength(1);

    const model = new ScriptedModel({ a: [{ text: 'It opens at 9.' }] });
    const retry = turnDeps({ model, tools: [lookup.tool], config: noPlanner });
    retry.store.journal.set('t_1', deps.store.journal.get('t_1')!);
    const sink = new RecordingSink();
    await runTurn({ job: job('when?', { turn: { attempt: 2 } }), deps: retry, sink });
    expect(lookup.runs).toHaveLength(1); // answered from the journal
    expect(model.calls).toHaveLength(1); // only the call the first attempt never got an answer to
    expect(JSON.stringify(model.calls[0]!.messages)).toContain('the office opens at 9');
    expect(sink.shownText()).toBe('Let me look.\n\nIt opens at 9.');
    expect(retry.store.journalWrites).toEqual([]); // nothing new that asks for tools; the text answer is stored by settle
    expect(transcriptRoles(retry.store.finished[0]!.messages)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
  });

  it('stops at once when a journal write finds the lease lost: the tool does not run, nothing is closed', async () => {
    const lookup = countingTool('lookup', 'read');
    const model = new ScriptedModel({ a: [{ toolCalls: [{ name: 'lookup', args: {} }] }, { text: 'never' }] });
    const deps = turnDeps({ model, tools: [lookup.tool], config: noPlanner });
    deps.store.leaseLost = true;
    await expect(runTurn({ job: job('look'), deps, sink: new RecordingSink() })).rejects.toMatchObject({ code: 'lease_lost', retryable: true });
    expect(lookup.runs).toEqual([]);
    expect(model.calls).toHaveLength(1);
    expect(deps.store.finished).toEqual([]);
    expect(deps.store.parked).toEqual([]);
  });

  it('withdraws a partial answer when the provider fails mid-stream, and the fallback slot answers', async () => {
    const model = new ScriptedModel({ a: [{ fail: '500 upstream broke', afterText: 'Half an ans' }], b: [{ text: 'A whole answer.' }] });
    const deps = turnDeps({ model, config: { ...noPlanner, fallback: { notice: true } } });
    const sink = new RecordingSink();
    const attempts: string[] = [];
    sink.attempt = (a) => void attempts.push(`${a.slot}:${a.error}`);
    await runTurn({ job: job('hi'), deps, sink });

    expect(sink.types()).toEqual(['turn_start', 'text_delta', 'reset', 'text_delta', 'notice', 'done']);
    expect(sink.shownText()).toBe('A whole answer.');
    expect(sink.of('notice')[0]!.text).toBe('(answered by the fallback model b)');
    expect(attempts).toEqual(['a:server', 'b:ok']);
    const done = sink.of('done')[0]!;
    expect(done.text).toBe('A whole answer.');
    expect(done.provider).toMatchObject({
      slot: 'b',
      fallbackActivated: true,
      attempts: [
        { slot: 'a', error: 'server' },
        { slot: 'b', error: 'ok' },
      ],
    });
    expect(deps.store.finished[0]!.provider).toMatchObject({ slot: 'b', fallbackActivated: true });
  });

  it('parks a call that needs approval: approval_requested and a pending tool_end, parkTurn, no finishTurn, no request text in the reply', async () => {
    const send = countingTool('send_email', 'external_send');
    const model = new ScriptedModel({ a: [{ text: 'I will send it.', toolCalls: [{ name: 'send_email', args: { to: 'x@example.com' }, id: 'call_mail' }] }] });
    const deps = turnDeps({ model, tools: [send.tool], config: noPlanner });
    const sink = new RecordingSink();
    const next = await runTurn({ job: job('mail x'), deps, sink });

    expect(next).toBeNull();
    expect(send.runs).toEqual([]);
    expect(sink.types()).toEqual(['turn_start', 'text_delta', 'tool_start', 'tool_end', 'approval_requested', 'done']);
    const code = sink.of('approval_requested')[0]!.approval.code;
    expect(sink.of('approval_requested')[0]!.approval).toMatchObject({ tool: 'send_email', tier: expect.any(String), args: { to: 'x@example.com' } });
    expect(sink.of('tool_end')[0]).toMatchObject({ toolCallId: 'call_mail', name: 'send_email', isError: false, pending: { code } });
    const done = sink.of('done')[0]!;
    expect(done).toMatchObject({ finishReason: 'approval_pending', text: 'I will send it.', approvals: [{ code, tool: 'send_email' }] });
    // The request is structure only: no text carries its code.
    expect(
      sink
        .of('text_delta')
        .map((e) => e.delta)
        .join(''),
    ).not.toContain(code);
    expect(deps.store.finished).toHaveLength(0);
    expect(deps.store.parked).toHaveLength(1);
    expect(deps.store.parked[0]!.state).toMatchObject({ pending: [{ toolCallId: 'call_mail', tool: 'send_email' }], text: 'I will send it.' });
    expect(JSON.stringify(deps.store.parked[0]!.state)).not.toContain(code);
    expect(deps.approvals.resumeChecks).toEqual(['t_1']);
    expect(sink.flushes).toEqual([5]); // flushed with the request shown, before parking
  });

  it('a store failure while asking for an approval abandons the attempt: a retryable error, never the tool result', async () => {
    const send = countingTool('send_email', 'external_send');
    const lookup = countingTool('lookup', 'read', () => 'looked up');
    const model = new ScriptedModel({
      a: [
        {
          toolCalls: [
            { name: 'send_email', args: { to: 'x@example.com' }, id: 'call_mail' },
            { name: 'lookup', args: { to: 'y' }, id: 'call_lookup' },
          ],
        },
        { text: 'should never be asked' },
      ],
    });
    const deps = turnDeps({ model, tools: [send.tool, lookup.tool], config: noPlanner });
    deps.approvals.request = async () => {
      throw new Error('terminating connection due to administrator command');
    };
    const sink = new RecordingSink();
    const failed = await runTurn({ job: job('mail x'), deps, sink }).catch((err: unknown) => err);

    expect(failed).toMatchObject({ code: 'tool_gate_failed', retryable: true });
    expect((failed as Error).message).toMatch(/creating the approval request: terminating connection/);
    expect(model.calls).toHaveLength(1); // the model never read the failure
    expect(send.runs).toEqual([]);
    expect(lookup.runs).toEqual([]); // the rest of the attempt's calls are not run either
    expect(sink.types()).toEqual(['turn_start', 'tool_start', 'tool_start']); // neither ran nor failed: no tool_end
    expect(deps.store.finished).toHaveLength(0);
    expect(deps.store.parked).toHaveLength(0);
  });

  /** Parks a send_email call, then resumes the same turn after the operator's answer. */
  async function parkThenResume(decision: 'approved' | 'denied', after: string) {
    const send = countingTool('send_email', 'external_send');
    const model = new ScriptedModel({ a: [{ toolCalls: [{ name: 'send_email', args: { to: 'x@example.com' }, id: 'call_mail' }] }, { text: after }] });
    const deps = turnDeps({ model, tools: [send.tool], config: noPlanner });
    await runTurn({ job: job('mail x'), deps, sink: new RecordingSink() });
    const { state } = deps.store.parked[0]!;
    const code = [...deps.approvals.rows.values()][0]!.code;
    deps.approvals.decide(code, decision);
    deps.store.unpark('t_1');
    const sink = new RecordingSink();
    const next = await runTurn({ job: job('mail x', { turn: { state, attempt: 1 } }), deps, sink });
    return { send, model, deps, sink, next, state, code };
  }

  it('resumes a parked turn with an approved call: it runs exactly once, with the approved arguments', async () => {
    const { send, model, deps, sink, next, state, code } = await parkThenResume('approved', 'Sent.');
    expect(next).toEqual([]);
    expect(send.runs).toEqual([{ to: 'x@example.com' }]);
    expect(sink.types()).toEqual(['turn_start', 'tool_start', 'tool_end', 'text_delta', 'done']);
    expect(sink.of('tool_end')[0]).toMatchObject({ toolCallId: 'call_mail', isError: false });
    expect(sink.of('done')[0]).toMatchObject({ finishReason: 'stop', text: 'Sent.' });
    // The model's second call got the real result in place of the placeholder.
    expect(model.calls).toHaveLength(2);
    const result = model.calls[1]!.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect(JSON.stringify(result.content)).toContain('done for x@example.com');
    expect(deps.store.finished).toHaveLength(1);
    expect(transcriptRoles(deps.store.finished[0]!.messages)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect([...deps.approvals.rows.values()][0]!.status).toBe('executed');

    // Another attempt of the same resume (a worker died after running it, before closing the turn)
    // does not run it again: the journal gives the model the same result.
    deps.store.unpark('t_1');
    const again = turnDeps({ model: new ScriptedModel({ a: [{ text: 'ok' }] }), tools: [send.tool], config: noPlanner });
    again.store.journal.set('t_1', deps.store.journal.get('t_1')!);
    const retry = { ...again, approvals: deps.approvals, approvalStore: deps.approvals };
    const retrySink = new RecordingSink();
    await runTurn({ job: job('mail x', { turn: { state, attempt: 2 } }), deps: retry, sink: retrySink });
    expect(send.runs).toHaveLength(1);
    expect(retrySink.of('tool_start')).toHaveLength(0);
    expect(JSON.stringify(again.store.finished[0]!.messages)).toContain('done for x@example.com');
    expect(code).toMatch(/^K7Q/);
  });

  it('an approved call claimed by an attempt that died before it started runs once on the retry', async () => {
    const { send, deps, state } = await parkThenResume('approved', 'Sent.');
    expect(send.runs).toHaveLength(1);
    // The same claim, but the journal never saw the call start: it never ran.
    const again = turnDeps({ model: new ScriptedModel({ a: [{ text: 'Sent now.' }] }), tools: [send.tool], config: noPlanner });
    const retry = { ...again, approvals: deps.approvals, approvalStore: deps.approvals };
    const sink = new RecordingSink();
    await runTurn({ job: job('mail x', { turn: { state, attempt: 2 } }), deps: retry, sink });
    expect(send.runs).toHaveLength(2); // once per store: here the first run is unknown to the journal
    expect(sink.of('tool_end')[0]).toMatchObject({ toolCallId: 'call_mail', isError: false });
    expect(again.store.journalWrites).toEqual(['started call_mail', 'finished call_mail']);
  });

  it('an approved call started but not finished before a restart is not run again: the model is told, and so is everyone', async () => {
    const { send, deps, state } = await parkThenResume('approved', 'Sent.');
    const again = turnDeps({ model: new ScriptedModel({ a: [{ text: 'I will check.' }] }), tools: [send.tool], config: noPlanner });
    again.store.journal.set('t_1', {
      models: new Map(),
      tools: new Map([['call_mail', { turnId: 't_1', toolCallId: 'call_mail', tool: 'send_email', status: 'started' }]]),
    });
    const retry = { ...again, approvals: deps.approvals, approvalStore: deps.approvals };
    const sink = new RecordingSink();
    await runTurn({ job: job('mail x', { turn: { state, attempt: 2 } }), deps: retry, sink });
    expect(send.runs).toHaveLength(1);
    expect(JSON.stringify(again.store.finished[0]!.messages)).toContain('may or may not have completed before a restart');
    expect(sink.of('notice').map((n) => n.text)).toEqual([expect.stringContaining('send_email (call call_mail) may or may not have completed')]);
  });

  it('a retry of a resumed turn that parked again finds the same approval: the replayed response carries the same call id', async () => {
    const send = countingTool('send_email', 'external_send');
    const model = new ScriptedModel({
      a: [
        { toolCalls: [{ name: 'send_email', args: { to: 'a@example.com' }, id: 'call_a' }] },
        { toolCalls: [{ name: 'send_email', args: { to: 'b@example.com' }, id: 'call_b' }] },
      ],
    });
    const deps = turnDeps({ model, tools: [send.tool], config: noPlanner });
    await runTurn({ job: job('mail a and b'), deps, sink: new RecordingSink() });
    const firstPark = deps.store.parked[0]!.state;
    deps.approvals.decide([...deps.approvals.rows.values()][0]!.code, 'approved');
    deps.store.unpark('t_1');
    await runTurn({ job: job('mail a and b', { turn: { state: firstPark, attempt: 2 } }), deps, sink: new RecordingSink() });
    expect(deps.store.parked).toHaveLength(2);
    const second = [...deps.approvals.rows.values()][1]!;
    expect(second).toMatchObject({ toolCallId: 'call_b', status: 'pending' });
    expect(deps.store.parked[1]!.state).toMatchObject({ modelCalls: 2, pending: [{ toolCallId: 'call_b', approvalId: second.id }] });

    // The worker died before the second park took (the row still holds the first park's state): the retry
    // replays both model calls from the journal, reuses the first call's result and asks for the same approval.
    deps.store.unpark('t_1');
    const retry = { ...deps, chain: new ScriptedModel({ a: [] }).chain() };
    const sink = new RecordingSink();
    await runTurn({ job: job('mail a and b', { turn: { state: firstPark, attempt: 3 } }), deps: retry, sink });
    expect(send.runs).toEqual([{ to: 'a@example.com' }]);
    expect(model.calls).toHaveLength(2);
    expect(deps.approvals.rows.size).toBe(2);
    expect(sink.of('approval_requested').map((e) => e.approval.code)).toEqual([second.code]);
    expect(deps.store.parked[2]!.state).toMatchObject({ modelCalls: 2, pending: [{ toolCallId: 'call_b', approvalId: second.id }] });
  });

  it('resumes a parked turn with a denied call: not run, and the model is told who said no', async () => {
    const { send, model, deps, sink } = await parkThenResume('denied', 'Understood, I did not send it.');
    expect(send.runs).toEqual([]);
    expect(sink.of('tool_start')).toHaveLength(0);
    const result = model.calls[1]!.messages.find((m): m is ToolResultMessage => m.role === 'toolResult')!;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('Not approved: slack:T1:UOPS said no. It was not run.');
    expect(sink.of('done')[0]).toMatchObject({ finishReason: 'stop', text: 'Understood, I did not send it.' });
    expect(deps.store.finished[0]!.status).toBe('done');
  });

  it('stops when aborted: the text so far, then "(Stopped.)", and the aborted message is not kept', async () => {
    const model = new ScriptedModel({ a: [{ hang: 'Let me think' }] });
    const deps = turnDeps({ model, config: noPlanner });
    const stop = new AbortController();
    const sink = new RecordingSink();
    const push = sink.push.bind(sink);
    sink.push = (e: TurnEvent) => {
      push(e);
      if (e.type === 'text_delta') stop.abort();
    };
    await runTurn({ job: job('think hard'), deps, sink, signal: stop.signal });

    const done = sink.of('done')[0]!;
    expect(done.finishReason).toBe('aborted');
    expect(done.text).toBe('Let me think\n\n(Stopped.)');
    expect(sink.shownText()).toBe('Let me think\n\n(Stopped.)');
    expect(transcriptRoles(deps.store.finished[0]!.messages)).toEqual(['user']);
  });

  it('says so when no provider is configured, and keeps the prompt', async () => {
    const deps = turnDeps({ model: null });
    const sink = new RecordingSink();
    const next = await runTurn({ job: job('hi'), deps, sink });
    expect(sink.types()).toEqual(['turn_start', 'text_delta', 'done']);
    expect(sink.of('done')[0]).toMatchObject({ text: NO_PROVIDER_REPLY, finishReason: 'no_provider' });
    expect(deps.store.finished[0]).toMatchObject({ finishReason: 'no_provider', status: 'done' });
    expect(transcriptRoles(deps.store.finished[0]!.messages)).toEqual(['user']);
    expect(next).toEqual([]);
  });

  it('refuses a message carrying a secret under policy "block": the model is never called, nothing is stored', async () => {
    const model = new ScriptedModel({ a: [{ text: 'never' }] });
    const deps = turnDeps({ model, config: { ...noPlanner, moat: { secrets: 'block' } } });
    const sink = new RecordingSink();
    await runTurn({ job: job(`deploy with ${GH_TOKEN}`), deps, sink });
    expect(model.calls).toHaveLength(0);
    const done = sink.of('done')[0]!;
    expect(done.finishReason).toBe('blocked_secret');
    expect(done.text).not.toContain(GH_TOKEN);
    expect(done.text.length).toBeGreaterThan(0);
    expect(deps.store.finished[0]).toMatchObject({ finishReason: 'blocked_secret', messages: [] });
  });

  it('a sink that throws is dropped and logged; the turn and the other sinks go on', async () => {
    const model = new ScriptedModel({ a: [{ text: 'Still here.' }] });
    const deps = turnDeps({ model, config: noPlanner });
    let calls = 0;
    const broken = {
      push: () =>
        void (calls++,
        (() => {
          throw new Error('sink down');
        })()),
    };
    const warnings: unknown[] = [];
    const log = Object.assign(Object.create(silentLog), { warn: (o: unknown) => void warnings.push(o) });
    const good = new RecordingSink();
    await runTurn({
      job: job('hi'),
      deps,
      sink: fanOut(
        [
          { name: 'broken', sink: broken },
          { name: 'good', sink: good },
        ],
        log,
      ),
    });
    expect(calls).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ sink: 'broken', event: 'turn_start' });
    expect(good.types()).toEqual(['turn_start', 'text_delta', 'done']);
    expect(good.flushes).toEqual([2]);
    expect(deps.store.finished).toHaveLength(1);
  });

  it('tells nothing more when another attempt closed the turn first', async () => {
    const model = new ScriptedModel({ a: [{ text: 'late' }] });
    const deps = turnDeps({ model, config: noPlanner });
    await deps.store.finishTurn({ turnId: 't_1', status: 'done', messages: [], finishReason: 'stop' });
    const sink = new RecordingSink();
    const next = await runTurn({ job: job('hi'), deps, sink });
    expect(next).toBeNull();
    expect(sink.of('done')).toHaveLength(0);
  });
});
