// A stand-in of the Anthropic Messages API for the real Claude Code CLI (ANTHROPIC_BASE_URL):
// a prompt `run: COMMAND` gets one Bash call of exactly COMMAND, and once the conversation holds
// that call's result (run, or denied) the turn ends with the text `Done. What next?`. Any other
// request (Claude Code's side requests, which carry no Bash tool) gets that text too. Served by
// the test's own process on 127.0.0.1; it answers streaming requests as server-sent events.
//
//   const model = await startModelApi();   // model.url for ANTHROPIC_BASE_URL
//   model.log                               // what each request got, for a failure's message
//   await model.close();

import { createHash } from 'node:crypto';
import { createServer } from 'node:http';

/** The text that ends every turn; its first line is the session's needs-input title. */
export const TURN_END_TEXT = 'Done. What next?';

/** The largest request body read (Claude Code's requests with the tool schemas are ~100 KB). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Starts the stand-in on an ephemeral loopback port. */
export async function startModelApi() {
  const log = [];
  const server = createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      const path = new URL(req.url, 'http://stand-in').pathname;
      const json = (value) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST' || path !== '/v1/messages') {
        json(path === '/v1/messages/count_tokens' ? { input_tokens: 10 } : {});
        return;
      }
      let request;
      try {
        request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        request = {};
      }
      const [block, stop] = answer(request);
      log.push(`tools=${request.tools?.length ?? 0} stream=${request.stream} -> ${stop} ${block.input?.command ?? ''}`);
      if (request.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(sse(block, stop));
      } else {
        json({
          id: 'msg_0', type: 'message', role: 'assistant', model: 'stand-in', content: [block],
          stop_reason: stop, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 },
        });
      }
    });
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The id of the one call made for `command`. */
const callId = (command) => `toolu_${createHash('sha256').update(command).digest('hex').slice(0, 24)}`;

/** `[content block, stop reason]`: the Bash call for a new prompt, else the closing text. */
function answer(request) {
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const hasBash = Array.isArray(request.tools) && request.tools.some((t) => t?.name === 'Bash');
  // The last user message (Claude Code may put a system message after it), and its prompt.
  const last = [...messages].reverse().find((m) => m?.role === 'user');
  const blocks = Array.isArray(last?.content) ? last.content : [{ type: 'text', text: String(last?.content ?? '') }];
  const prompts = blocks.filter((b) => b?.type === 'text').flatMap((b) => [...String(b.text).matchAll(/^run: (.+)$/gm)].map((m) => m[1].trim()));
  const command = prompts.at(-1);
  // Once the conversation holds the call's result, however Claude Code orders its blocks, the
  // turn ends.
  const answered = (id) => messages.some((m) => Array.isArray(m?.content) && m.content.some((b) => b?.type === 'tool_result' && b.tool_use_id === id));
  if (hasBash && command && !answered(callId(command))) {
    return [{ type: 'tool_use', id: callId(command), name: 'Bash', input: { command, description: `Run ${command.split(' ')[0]}` } }, 'tool_use'];
  }
  return [{ type: 'text', text: TURN_END_TEXT }, 'end_turn'];
}

/** The streamed form of one content block (Messages API server-sent events). */
function sse(block, stop) {
  const start = block.type === 'tool_use' ? { ...block, input: {} } : { ...block, text: '' };
  const delta = block.type === 'tool_use' ? { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } : { type: 'text_delta', text: block.text };
  const events = [
    ['message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'stand-in', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: start }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ['message_stop', { type: 'message_stop' }],
  ];
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');
}
