'use strict';

// Drives a Zulip-compatible server with the zulip-js client, the way a Node integration
// would use it, and prints one JSON summary on stdout for tests/e2e/test_zulip_js.py to
// compare with the server's own state.
//
// Configuration comes from the environment, with the names zulip-js's README uses:
//   ZULIP_REALM     the server's URL (e.g. http://127.0.0.1:9991)
//   ZULIP_USERNAME  the acting user's email
//   ZULIP_API_KEY   that user's API key
// plus what to talk to:
//   ZULIP_JS_STREAM  a stream the user is subscribed to
//   ZULIP_JS_DM_TO   the email of the recipient of a direct message
//
// Every call's raw response is kept in the summary, so that a failing check shows what the
// server answered. A call that throws (a network error, a non-JSON body) is recorded under
// "errors" and the script goes on; the exit status is 0 when the summary was printed.

const zulipInit = require('zulip-js');

const EVENT_WAIT_MS = 20000;

function requireEnv(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}

async function main() {
  const realm = requireEnv('ZULIP_REALM');
  const username = requireEnv('ZULIP_USERNAME');
  const apiKey = requireEnv('ZULIP_API_KEY');
  const stream = requireEnv('ZULIP_JS_STREAM');
  const dmTo = requireEnv('ZULIP_JS_DM_TO');

  const summary = { responses: {}, errors: {} };

  async function step(name, call) {
    try {
      const response = await call();
      summary.responses[name] = response;
      return response;
    } catch (error) {
      summary.errors[name] = String(error && error.stack ? error.stack : error);
      return undefined;
    }
  }

  const client = await zulipInit({ username, apiKey, realm });

  await step('server_settings', () => client.server.settings());
  await step('profile', () => client.users.me.getProfile());
  await step('users', () => client.users.retrieve());
  await step('streams', () => client.streams.retrieve());
  await step('emojis', () => client.emojis.retrieve());

  const queue = await step('register', () =>
    client.queues.register({ event_types: ['message', 'reaction'] }),
  );

  const streamSent = await step('send_stream', () =>
    client.messages.send({
      type: 'stream',
      to: stream,
      topic: 'from zulip-js',
      content: 'Hello from **zulip-js**',
    }),
  );
  const dmSent = await step('send_dm', () =>
    client.messages.send({
      type: 'private',
      to: [dmTo],
      content: 'A direct message from zulip-js',
    }),
  );

  if (streamSent && streamSent.result === 'success') {
    await step('add_reaction', () =>
      client.reactions.add({
        message_id: streamSent.id,
        emoji_name: 'octopus',
        emoji_code: '1f419',
        reaction_type: 'unicode_emoji',
      }),
    );
  }

  // The queue's events: long-poll until both messages and the reaction arrived.
  summary.events = [];
  if (queue && queue.result === 'success') {
    let lastEventId = queue.last_event_id;
    const deadline = Date.now() + EVENT_WAIT_MS;
    const wanted = () => {
      const types = summary.events.map((event) => event.type);
      return types.filter((type) => type === 'message').length >= 2 && types.includes('reaction');
    };
    while (!wanted() && Date.now() < deadline) {
      const polled = await step('events', () =>
        client.events.retrieve({ queue_id: queue.queue_id, last_event_id: lastEventId }),
      );
      if (!polled || polled.result !== 'success') {
        break;
      }
      for (const event of polled.events) {
        lastEventId = Math.max(lastEventId, event.id);
        if (event.type !== 'heartbeat') {
          summary.events.push(event);
        }
      }
    }
    await step('deregister', () => client.queues.deregister({ queue_id: queue.queue_id }));
  }

  await step('stream_narrow', () =>
    client.messages.retrieve({
      anchor: 'newest',
      num_before: 20,
      num_after: 0,
      narrow: [
        { operator: 'stream', operand: stream },
        { operator: 'topic', operand: 'from zulip-js' },
      ],
    }),
  );
  // The legacy operator that older clients send for a one-on-one conversation.
  await step('pm_with_narrow', () =>
    client.messages.retrieve({
      anchor: 'newest',
      num_before: 20,
      num_after: 0,
      narrow: [{ operator: 'pm_with', operand: dmTo }],
    }),
  );
  summary.sent = {
    stream: streamSent && streamSent.id,
    dm: dmSent && dmSent.id,
  };

  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
