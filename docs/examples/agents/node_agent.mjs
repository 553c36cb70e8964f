// An agent on the npm `openai` package with one tool, run as a command:
//   agent = "cmd:node node_agent.mjs {prompt}"
// The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY, which evaltape sets.
import OpenAI from "openai";

const tools = [
  {
    type: "function",
    function: {
      name: "add",
      description: "Add two integers.",
      parameters: {
        type: "object",
        properties: { a: { type: "integer" }, b: { type: "integer" } },
        required: ["a", "b"],
      },
    },
  },
];

const client = new OpenAI();
const messages = [{ role: "user", content: process.argv[2] }];
for (let turn = 0; turn < 5; turn++) {
  const reply = await client.chat.completions.create({
    model: process.env.EVALTAPE_MODEL,
    messages,
    tools,
  });
  const message = reply.choices[0].message;
  if (!message.tool_calls) {
    console.log(message.content);
    process.exit(0);
  }
  messages.push(message);
  for (const call of message.tool_calls) {
    const args = JSON.parse(call.function.arguments);
    messages.push({ role: "tool", tool_call_id: call.id, content: String(args.a + args.b) });
  }
}
console.log("gave up");
