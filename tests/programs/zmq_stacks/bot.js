// A ZeroMQ bot in Node.js with zeromq.js 6 (tests/channel/test_zmq_stacks.py): hello, then
// the first legal move of each request.
const zmq = require("zeromq");

async function main() {
  const sock = new zmq.Dealer({ routingId: process.env.ARENA_TOKEN, linger: 0 });
  sock.connect(process.env.ARENA_ENDPOINT);
  await sock.send(JSON.stringify({ type: "hello", name: "js-zeromq", version: "0.1", protocol: 1,
                                   capabilities: { legal_moves: true } }));
  for await (const [frame] of sock) {
    const msg = JSON.parse(frame.toString());
    if (msg.type === "move_request") {
      await sock.send(JSON.stringify({ type: "move", seq: msg.seq, move: msg.legal_moves[0] }));
    } else if (msg.type === "shutdown") {
      break;
    }
  }
  sock.close();
}

main().catch((err) => { console.error(err); process.exit(1); });
