// A Patchwork bot for patchwork-arena, in JavaScript (Node.js), over stdio (JSON lines).
//
// The protocol is in protocol/PROTOCOL.md of the patchwork-arena repository (section 2 for
// stdio, section 5 for every message). Rules of the road: one JSON message per line on
// stdout; log to stderr (console.error), never to stdout (console.log would be read as a
// message); play games until "shutdown": one process plays many games.
"use strict";
const readline = require("readline");

const NAME = "@NAME@";

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

// Your strategy goes here. request.state is the position (PROTOCOL.md section 4),
// request.legal_moves every legal move (we asked for them in hello). This one buys a patch
// when it can, else advances.
function chooseMove(request) {
  const moves = request.legal_moves;
  const buys = moves.filter((m) => m.action === "buy");
  const pool = buys.length > 0 ? buys : moves;
  return pool[Math.floor(Math.random() * pool.length)];
}

send({type: "hello", name: NAME, version: "0.1", protocol: 1, capabilities: {legal_moves: true}});

const input = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
input.on("line", (line) => {
  const message = JSON.parse(line);
  switch (message.type) {
    case "move_request":
      send({type: "move", seq: message.seq, move: chooseMove(message)});
      break;
    case "new_game":
      console.error(`game ${message.game_id}: I am seat ${message.seat}`);
      break;
    case "game_over":
      console.error(`game ${message.game_id} over: ${JSON.stringify(message.result)}`);
      break;
    case "error":
      console.error(`the referee says: ${message.message}`);
      break;
    case "shutdown":
      process.exit(0);
      break;
    case "welcome":
      break;
    default:
      console.error(`ignoring a message of type ${message.type}`); // later versions may add some
  }
});
input.on("close", () => process.exit(0)); // end of input: the referee is gone
