// Drives an A2A agent with the official SDK's client: fetch its card from
// the base URL in argv[2], send argv[3] (and argv[4], JSON, as a data
// part) with SendMessage, then again with SendStreamingMessage, then
// GetTask. With A2A_LEGACY=1 it speaks A2A 0.3 through the SDK's
// compatibility layer: it reads the card a 0.3 client reads (no A2A-Version
// header) and calls message/send, message/stream and tasks/get. Prints one
// JSON line per step for the Go test to check; exits 1 on any error,
// printing it.
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

const [base, text, dataJSON] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
const stateName = (s) => TaskState[s];

const partsOf = () => {
  const parts = [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }];
  if (dataJSON) parts.push({ content: { $case: 'data', value: JSON.parse(dataJSON) }, metadata: undefined, filename: '', mediaType: 'application/json' });
  return parts;
};
const message = () => ({
  messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER,
  parts: partsOf(), metadata: undefined, extensions: [], referenceTaskIds: [],
});
const texts = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : JSON.stringify(p.content?.value)));
const summary = (t) => ({
  id: t.id, contextId: t.contextId, state: stateName(t.status?.state),
  status: texts(t.status?.message?.parts).join('\n'),
  artifacts: (t.artifacts ?? []).map((a) => ({ name: a.name, text: texts(a.parts).join('\n') })),
  history: (t.history ?? []).length,
});

try {
  let client;
  if (process.env.A2A_LEGACY === '1') {
    const legacyCompat = { enabled: true };
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ legacyCompat })], cardResolver: new DefaultAgentCardResolver({ legacyCompat }) });
    const res = await fetch(new URL('.well-known/agent-card.json', base));
    client = await factory.createFromAgentCard(await res.json());
  } else {
    client = await new ClientFactory().createFromUrl(base);
  }
  out({ step: 'version', version: client.protocolVersion });
  const card = client.agentCard;
  out({ step: 'card', name: card.name, skills: card.skills.map((s) => s.id), streaming: card.capabilities?.streaming, url: card.supportedInterfaces[0]?.url });

  const sent = await client.sendMessage({ tenant: '', message: message(), configuration: undefined, metadata: undefined });
  if (!('status' in sent)) throw new Error('SendMessage answered a message, not a task: ' + JSON.stringify(sent));
  out({ step: 'send', ...summary(sent) });

  const kinds = [];
  let last;
  for await (const ev of client.sendMessageStream({ tenant: '', message: message(), configuration: undefined, metadata: undefined })) {
    const { $case: kind, value } = ev.payload ?? {};
    switch (kind) {
      case 'task': kinds.push('task:' + stateName(value.status?.state)); last = value; break;
      case 'artifactUpdate': kinds.push('artifact:' + texts(value.artifact?.parts).join('\n')); break;
      case 'statusUpdate': kinds.push('status:' + stateName(value.status?.state)); break;
      default: kinds.push(String(kind));
    }
  }
  out({ step: 'stream', kinds, taskId: last?.id });

  const got = await client.getTask({ tenant: '', id: last.id, historyLength: undefined });
  out({ step: 'get', ...summary(got) });
} catch (err) {
  out({ step: 'error', error: String(err?.stack ?? err) });
  process.exit(1);
}
