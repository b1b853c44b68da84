"""Mistake: reads a setting the arena does not give (a Rust bot's env::var("DEPTH").unwrap()),
and dies on its first move with a message holding its pid, another in every game; its trace
is indented with a tab, as a JVM's is."""
import json
import os
import sys

print(json.dumps({"type": "hello", "name": "panics-with-pid", "version": "1", "protocol": 1}), flush=True)
for line in sys.stdin:
    if json.loads(line)["type"] == "move_request":
        sys.stderr.write(f"thread 'main' ({os.getpid()}) panicked at src/main.rs:12:5:\n"
                         "called `Result::unwrap()` on an `Err` value: NotPresent\n"
                         "\tat bot::main (src/main.rs:12)\n")
        sys.exit(101)
