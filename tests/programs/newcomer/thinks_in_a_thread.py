"""Too slow, computing in a thread of its own while the main thread waits for it (a JVM's
shape: the thread /proc/<pid>/stat shows is not the one computing); no flush hint for it."""
import json
import sys
import threading


def think() -> None:
    while True:
        pass


print(json.dumps({"type": "hello", "name": "thinks-in-a-thread", "version": "1", "protocol": 1,
                  "capabilities": {"legal_moves": True}}), flush=True)
for line in sys.stdin:
    if json.loads(line)["type"] == "move_request":
        worker = threading.Thread(target=think)
        worker.start()
        worker.join()
