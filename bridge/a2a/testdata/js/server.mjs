// A small A2A 1.0 agent built with the official SDK: it answers a text
// with the text's words reversed, upper-cased, as a task with one artifact.
// It prints {"url": "<base URL>"} once it listens (on the port in argv[2],
// 0 for any). With argv[3] "legacy" it speaks A2A 0.3 only, through the
// SDK's compatibility layer.
import express from 'express';
import { randomUUID } from 'node:crypto';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { Role, TaskState } from '@a2a-js/sdk';

const textPart = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });

const executor = {
  async execute(ctx, bus) {
    const input = ctx.userMessage.parts
      .filter((p) => p.content?.$case === 'text')
      .map((p) => p.content.value)
      .join(' ');
    const base = { id: ctx.taskId, contextId: ctx.contextId };
    bus.publish(AgentEvent.task({ ...base, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    const answer = input.split(/\s+/).filter(Boolean).reverse().join(' ').toUpperCase();
    bus.publish(AgentEvent.artifactUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: randomUUID(), name: 'reversed', description: '', parts: [textPart(answer)], metadata: undefined, extensions: [] },
    }));
    bus.publish(AgentEvent.statusUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
      status: {
        state: TaskState.TASK_STATE_COMPLETED, timestamp: new Date().toISOString(),
        message: { messageId: randomUUID(), contextId: ctx.contextId, taskId: ctx.taskId, role: Role.ROLE_AGENT, parts: [textPart('reversed ' + input.length + ' characters')], metadata: undefined, extensions: [], referenceTaskIds: [] },
      },
    }));
    bus.finished();
  },
  async cancelTask() {},
};

const legacy = process.argv[3] === 'legacy';
const legacyCompat = { enabled: legacy };
const app = express();
const server = app.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'Word Reverser',
    description: 'Reverses the order of the words of a text and shouts them.',
    supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: legacy ? '0.3' : '1.0' }],
    provider: { organization: 'agentmesh tests', url: 'https://github.com/agentmesh/agentmesh' },
    version: '1.2.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'reverse', name: 'reverse words', description: 'Reverses the words of a text, upper-cased.', tags: ['text'], examples: ['one two three'], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  console.log(JSON.stringify({ url }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
