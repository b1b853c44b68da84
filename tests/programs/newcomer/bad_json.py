"""Not a newcomer's mistake, but one-line JSON the referee cannot parse, as its first move:
argv[1] is "bigint" (a 4,400-digit seq), "nan" (NaN in the move) or "deep" (an array
nested 2,000 deep). None of these is a pretty-printed message."""
import json
import sys


def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


send(json.dumps({"type": "hello", "name": "bad-json", "version": "1", "protocol": 1,
                 "capabilities": {"legal_moves": True}}))
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "move_request":
        head = f'{{"type": "move", "seq": {message["seq"]}, "move": {json.dumps(message["legal_moves"][0])}'
        if sys.argv[1] == "bigint":
            send(f'{{"type": "move", "seq": {"9" * 4400}, "move": {json.dumps(message["legal_moves"][0])}}}')
        elif sys.argv[1] == "nan":
            send(head + ', "info": {"eval": NaN}}')
        else:
            send(head + ', "info": ' + "[" * 2000 + "]" * 2000 + "}")
    elif message["type"] == "shutdown":
        break
