// writes_beside.py in Node: a correct stdio bot that keeps a log of its moves next to itself.
// Fine under --sandbox none; under strict the folder is read-only: EROFS for a new file, EACCES
// for one left there (by a run under none: another user's). It should write in $TMPDIR.
const fs = require("fs");
const readline = require("readline");

fs.appendFileSync("moves.log", "started\n");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
send({type: "hello", name: "writes-beside-js", version: "1", protocol: 1, capabilities: {legal_moves: true}});
readline.createInterface({input: process.stdin}).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.type === "move_request") {
    fs.appendFileSync("moves.log", JSON.stringify(message.legal_moves[0]) + "\n");
    send({type: "move", seq: message.seq, move: message.legal_moves[0]});
  } else if (message.type === "shutdown") {
    process.exit(0);
  }
});
