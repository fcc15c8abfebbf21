// Drives the openai SDK against $CTXKIT_BASE_URL/v1 through the Responses API (argument
// "responses") or Chat Completions ("chat"): a conversation that calls a tool until the model
// answers with text, turns alternately streamed and not. Run by clients_test.go.
'use strict';
const { teeFetch, report, load } = require('./tee.cjs');
const OpenAI = load('openai', 'OpenAI');

const question = 'What is the weather in Paris, Lyon and Nice? One city per call.';
const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
// CTXKIT_TURNS bounds the turns (default 8); CTXKIT_PAD pads each result with that many
// characters of forecast, so that a test can fill a window.
const maxTurns = Number(process.env.CTXKIT_TURNS || 8);
const pad = Number(process.env.CTXKIT_PAD || 0);
const answer = (args) => {
  const city = JSON.parse(args).city;
  return `sunny in ${city}` + (pad > 0 ? '\n' + `${city}: 21C, light wind from the west, no rain expected. `.repeat(Math.ceil(pad / 60)).slice(0, pad) : '');
};

async function responses(client) {
  const tools = [{ type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: schema, strict: false }];
  const input = [{ role: 'user', content: question }];
  let calls = 0;
  for (let turn = 0; turn < maxTurns; turn++) {
    const params = { model: 'gpt-test', input, tools, store: false };
    const resp = turn % 2 === 0
      ? await client.responses.stream(params).finalResponse()
      : await client.responses.create(params);
    const fcs = resp.output.filter((i) => i.type === 'function_call');
    if (fcs.length === 0) {
      const text = resp.output.filter((i) => i.type === 'message')
        .flatMap((m) => m.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');
      return [text, calls];
    }
    calls += fcs.length;
    for (const fc of fcs) {
      input.push({ type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments });
      input.push({ type: 'function_call_output', call_id: fc.call_id, output: answer(fc.arguments) });
    }
  }
  return ['', calls];
}

async function chat(client) {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: schema } }];
  const messages = [{ role: 'user', content: question }];
  let calls = 0;
  for (let turn = 0; turn < maxTurns; turn++) {
    const params = { model: 'gpt-test', messages, tools };
    const completion = turn % 2 === 0
      ? await client.chat.completions.stream({ ...params, stream_options: { include_usage: true } }).finalChatCompletion()
      : await client.chat.completions.create(params);
    const msg = completion.choices[0].message;
    const tcs = msg.tool_calls || [];
    if (tcs.length === 0) return [msg.content || '', calls];
    calls += tcs.length;
    messages.push({ role: 'assistant', content: msg.content, tool_calls: tcs.map((c) => ({ id: c.id, type: 'function', function: c.function })) });
    for (const c of tcs) messages.push({ role: 'tool', tool_call_id: c.id, content: answer(c.function.arguments) });
  }
  return ['', calls];
}

async function main() {
  const tee = teeFetch();
  const client = new OpenAI({ baseURL: process.env.CTXKIT_BASE_URL + '/v1', apiKey: 'sk-test-not-a-key', fetch: tee.fetch, maxRetries: 0 });
  const [final, calls] = process.argv[2] === 'chat' ? await chat(client) : await responses(client);
  await report(tee, final, calls);
}

main().catch((e) => { console.error(e); process.exit(1); });
