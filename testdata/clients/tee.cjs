// A fetch for the SDKs that keeps a copy of every response body exactly as it arrived, so the
// Go test can compare it with the bytes the fake upstream sent. The SDK reads its own copy
// of the stream, untouched.
'use strict';

function teeFetch() {
  const exchanges = [];
  const pending = [];
  async function fetchAndKeep(url, init) {
    const slot = { path: new URL(String(url)).pathname, body: '' };
    exchanges.push(slot);
    const res = await fetch(url, init);
    if (!res.body) return res;
    const [mine, theirs] = res.body.tee();
    pending.push(new Response(mine).arrayBuffer().then((b) => { slot.body = Buffer.from(b).toString('utf8'); }));
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
  return { fetch: fetchAndKeep, exchanges, done: () => Promise.all(pending) };
}

// report prints what the Go test reads: the exchanges, the final text, the tool calls made.
async function report(tee, final, tools) {
  await tee.done();
  process.stdout.write(JSON.stringify({ exchanges: tee.exchanges, final, tools }) + '\n');
}

function load(name, exported) {
  const mod = require(name);
  return mod[exported] || mod.default || mod;
}

module.exports = { teeFetch, report, load };
