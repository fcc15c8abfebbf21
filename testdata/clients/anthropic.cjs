// Drives @anthropic-ai/sdk against $CTXKIT_BASE_URL: a conversation that calls a tool until
// the model answers with text, turns alternately streamed and not. Run by clients_test.go.
'use strict';
const { teeFetch, report, load } = require('./tee.cjs');
const Anthropic = load('@anthropic-ai/sdk', 'Anthropic');

// CTXKIT_TURNS bounds the turns (default 8); CTXKIT_PAD pads each result with that many
// characters of forecast, so that a test can fill a window.
const maxTurns = Number(process.env.CTXKIT_TURNS || 8);
const pad = Number(process.env.CTXKIT_PAD || 0);
const weather = (city) => `sunny in ${city}` + (pad > 0 ? '\n' + `${city}: 21C, light wind from the west, no rain expected. `.repeat(Math.ceil(pad / 60)).slice(0, pad) : '');

async function main() {
  const tee = teeFetch();
  const client = new Anthropic({ baseURL: process.env.CTXKIT_BASE_URL, apiKey: 'sk-ant-test-not-a-key', fetch: tee.fetch, maxRetries: 0 });
  const tools = [{
    name: 'get_weather', description: 'The weather in a city',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  }];
  const messages = [{ role: 'user', content: 'What is the weather in Paris, Lyon and Nice? One city per call.' }];
  let final = '';
  let calls = 0;
  for (let turn = 0; turn < maxTurns; turn++) {
    const params = {
      model: 'claude-test', max_tokens: 1024, tools, messages,
      system: [{ type: 'text', text: 'Answer briefly.', cache_control: { type: 'ephemeral' } }],
    };
    const msg = turn % 2 === 0
      ? await client.messages.stream(params).finalMessage()
      : await client.messages.create(params);
    messages.push({ role: 'assistant', content: msg.content });
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) {
      final = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      break;
    }
    calls += uses.length;
    messages.push({
      role: 'user',
      content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: weather(u.input.city) })),
    });
  }
  await report(tee, final, calls);
}

main().catch((e) => { console.error(e); process.exit(1); });
