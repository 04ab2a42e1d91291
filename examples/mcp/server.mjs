// A small MCP server written with the MCP TypeScript SDK, speaking stdio.
// `agentmesh agent --mcp 'node examples/mcp/server.mjs'` makes each of its
// tools a mesh agent (see docs/bridges.md):
//
//   word_count  counts the words of a text (structured result, progress)
//   reverse     reverses a text, word by word
//   fail        always answers with a tool error (isError)
//   toggle_echo adds the tool echo, or removes it when it is there: the
//               server then sends notifications/tools/list_changed
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "wordtools", version: "1.0.0" });

server.registerTool(
  "word_count",
  {
    title: "Word count",
    description: "Counts the words of a text and names the most frequent ones.",
    inputSchema: {
      text: z.string().describe("the text whose words to count"),
      top: z.number().int().min(1).max(20).optional().describe("how many frequent words to name"),
    },
    outputSchema: { words: z.number().int(), top: z.array(z.string()) },
  },
  async ({ text, top = 3 }, extra) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: 1, total: 2, message: "counting" },
      });
    }
    const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
    const freq = new Map();
    for (const w of words) freq.set(w, (freq.get(w) ?? 0) + 1);
    const most = [...freq.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, top).map(([w]) => w);
    const structured = { words: words.length, top: most };
    return { content: [{ type: "text", text: `${words.length} words; most frequent: ${most.join(", ")}` }], structuredContent: structured };
  },
);

server.registerTool(
  "reverse",
  {
    description: "Reverses the order of the words of a text.",
    inputSchema: { text: z.string().describe("the text to reverse") },
  },
  async ({ text }) => ({ content: [{ type: "text", text: text.split(/\s+/).filter(Boolean).reverse().join(" ") }] }),
);

server.registerTool(
  "fail",
  {
    description: "Always fails, to show how a tool error reaches the mesh.",
    inputSchema: { reason: z.string().optional() },
  },
  async ({ reason }) => ({ isError: true, content: [{ type: "text", text: `failed on purpose: ${reason ?? "no reason"}` }] }),
);

let echo = null;
server.registerTool(
  "toggle_echo",
  {
    description: "Adds the tool echo, or removes it when it is there.",
    inputSchema: {},
  },
  async () => {
    if (echo) {
      echo.remove();
      echo = null;
      return { content: [{ type: "text", text: "echo removed" }] };
    }
    echo = server.registerTool(
      "echo",
      { description: "Answers with its text.", inputSchema: { text: z.string() } },
      async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }),
    );
    return { content: [{ type: "text", text: "echo added" }] };
  },
);

await server.connect(new StdioServerTransport());
