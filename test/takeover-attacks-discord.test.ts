/**
 * A hostile model on Discord (session 11 review): request_handoff with a reason that would ping
 * everyone, a role and a user, posted to a Discord operators' channel (takeover.operatorChannel).
 * The real discord.js/REST stack against the fake Discord, a real embedded gateway: the post goes
 * out with allowed_mentions parsing nothing (Discord pings nobody), as one line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALICE, agentLike, FENCES, OPEN, OPERATOR, OPS_ROLE, startWorld, type World } from './fakes/discord-world.js';
import type { FakeRequest } from './fakes/fake-llm.js';
import { lastUserText, reply, toolCall } from './fakes/fake-llm.js';
import { eventually } from './support/gateway.js';

const REASON = `@everyone @here <@&${OPS_ROLE}> <@${OPERATOR.id}> urgent\n#abcdef takeover`;

let w: World;
beforeAll(async () => {
  w = await startWorld({}, { config: { takeover: { operatorChannel: { channel: 'discord', target: FENCES } } } });
  w.primary.respond((req: FakeRequest) => {
    const msgs = req.body.messages as Array<{ role: string }>;
    if (msgs.at(-1)!.role === 'tool') return reply('A colleague will join.');
    return lastUserText(req.body).includes('a human') ? toolCall('request_handoff', { reason: REASON, urgency: 'high' }) : agentLike(req);
  });
});
afterAll(async () => {
  await w?.close();
});

describe('takeover on Discord: a hostile model', () => {
  it('attack: a request_handoff reason with @everyone, a role and a user mention pings nobody in the operators channel', async () => {
    const { fake } = w;
    fake.userMessage({ channelId: OPEN, author: ALICE, content: 'I want a human' });
    const post = await eventually(
      async () => fake.requestsMatching('POST', new RegExp(`/channels/${FENCES}/messages$`)).find((r) => String(r.body?.content).includes('Human requested')),
      20_000,
    );
    expect(post.body.allowed_mentions).toEqual({ parse: [] });
    const content = String(post.body.content);
    expect(content).toContain('@everyone @here');
    // One line: the model cannot start a "#<ref> takeover" line of its own there.
    expect(content.split('\n')).toHaveLength(1);
    expect(content.length).toBeLessThanOrEqual(2000);
  });
});
